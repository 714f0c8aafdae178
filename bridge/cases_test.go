package bridge_test

import (
	"context"
	"strings"
	"testing"

	"github.com/pconform/pconform/bridge"
	"github.com/pconform/pconform/profile"
)

// TestCheckCasesRefusesBadInput: CheckCases refuses, before any compile, a call with no P file or
// no test case prefix and a case file outside PCases/ or not a P file. internal/rulecopies runs
// it on the checker.
func TestCheckCasesRefusesBadInput(t *testing.T) {
	cfg := bridge.Config{ProjectDir: modelsDir, P: "no-such-p"}
	src := []byte("// nothing\n")
	for _, c := range []struct {
		name   string
		cases  map[string][]byte
		prefix string
		want   string
	}{
		{"no file", nil, "tcX", "needs P files"},
		{"no prefix", map[string][]byte{"A.p": src}, "", "needs P files"},
		{"a directory", map[string][]byte{"../PSrc/Rules.p": src}, "tcX", "without a directory"},
		{"not a P file", map[string][]byte{"A.cs": src}, "tcX", "without a directory"},
	} {
		_, err := bridge.CheckCases(context.Background(), cfg, profile.Profile{}, c.cases, c.prefix, t.TempDir())
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error saying %q", c.name, err, c.want)
		}
	}
}
