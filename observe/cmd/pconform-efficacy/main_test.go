package main

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/pconform/pconform/internal/targets"
)

// TestEfficacyVariants: the efficacy table observes every broken variant of the registry but the
// ones notObserved names, and notObserved names only variants the registry has, each with a reason,
// so a variant added to the registry is in the table until someone says why it cannot be.
func TestEfficacyVariants(t *testing.T) {
	broken := targets.BrokenVariants()
	for v, why := range notObserved {
		if !slices.Contains(broken, v) {
			t.Errorf("notObserved names %q, which is not a broken variant of the registry (%v)", v, broken)
		}
		if why == "" {
			t.Errorf("notObserved gives no reason for %q", v)
		}
	}
	observed := efficacyVariants()
	for _, v := range broken {
		_, skipped := notObserved[v]
		if in := slices.Contains(observed, v); in == skipped {
			t.Errorf("variant %q: in the efficacy table %v, in notObserved %v; want exactly one", v, in, skipped)
		}
	}
}

// TestUsage: bad flags and arguments exit 2 before anything is observed.
func TestUsage(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"unknown variant", []string{"-variants", "no-such-variant", "-models", "../../../models/p"}, `unknown -variants entry "no-such-variant"`},
		{"not observed", []string{"-variants", notObservedName(t), "-models", "../../../models/p"}, "unknown -variants entry"},
		{"no P project", []string{"-models", t.TempDir()}, "is not a P project with spec monitors"},
		{"argument", []string{"extra"}, `unexpected arguments ["extra"]`},
		{"bad flag", []string{"-seeds", "x"}, `invalid value "x"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := run(context.Background(), tc.args, &stdout, &stderr); code != 2 {
				t.Errorf("exit %d, want 2; stderr:\n%s", code, stderr.String())
			}
			if !strings.Contains(stderr.String(), tc.want) {
				t.Errorf("stderr does not say %q:\n%s", tc.want, stderr.String())
			}
		})
	}
}

// notObservedName is one variant the table leaves out.
func notObservedName(t *testing.T) string {
	t.Helper()
	for v := range notObserved {
		return v
	}
	t.Skip("every broken variant is observed")
	return ""
}
