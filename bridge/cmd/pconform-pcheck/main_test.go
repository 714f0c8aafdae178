package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestUsage: a missing or unknown command, a bad flag, a part of the runs that cannot be made
// and a bad budget in the environment are usage errors (exit 2), found before anything runs.
func TestUsage(t *testing.T) {
	cases := []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"no command", nil, nil, "want a command: models"},
		{"an unknown command", []string{"plan"}, nil, `unknown command "plan"`},
		{"an unknown flag", []string{"models", "-fast"}, nil, "flag provided but not defined: -fast"},
		{"an unknown part", []string{"models", "-root", "/nonexistent", "--logs", "--part", "wide"}, nil, `unknown part "wide" of the models stage`},
		{"a part without records", []string{"models", "-root", "/nonexistent", "--part", "verdicts"}, nil, `the part "verdicts" of the models stage needs the recorded runs`},
		{"a bad budget", []string{"models"}, map[string]string{"PCONFORM_SCHEDULES": "lots"}, "PCONFORM_SCHEDULES must be a non-negative integer"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), c.args, func(k string) string { return c.env[k] }, &stdout, &stderr)
			if code != 2 || !strings.Contains(stderr.String(), c.want) {
				t.Errorf("exit %d, stderr %q; want 2 and %q", code, stderr.String(), c.want)
			}
		})
	}
}
