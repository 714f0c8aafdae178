package report

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestEveryLivenessMonitorHasPlainWords: each spec of models/p with a hot state (a liveness
// monitor) has a plain statement, and each statement names such a monitor.
func TestEveryLivenessMonitorHasPlainWords(t *testing.T) {
	files, err := filepath.Glob("../../models/p/PSpec/*.p")
	if err != nil || len(files) == 0 {
		t.Fatalf("no P specs in ../../models/p/PSpec (%v)", err)
	}
	spec := regexp.MustCompile(`(?m)^spec (\w+) observes`)
	liveness := map[string]bool{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		src := string(b)
		starts := spec.FindAllStringSubmatchIndex(src, -1)
		for k, at := range starts {
			end := len(src)
			if k+1 < len(starts) {
				end = starts[k+1][0]
			}
			name := src[at[2]:at[3]]
			if strings.Contains(src[at[0]:end], "hot state ") {
				liveness[name] = true
			}
			if _, ok := livenessStatement(name); ok && !strings.Contains(src[at[0]:end], "hot state ") {
				t.Errorf("%s has a liveness statement but no hot state in %s", name, f)
			}
		}
	}
	if len(liveness) == 0 {
		t.Fatal("no liveness monitor found in models/p/PSpec: the scan is broken")
	}
	for name := range liveness {
		if _, ok := livenessStatement(name); !ok {
			t.Errorf("liveness monitor %s has no plain statement in livenessStatement", name)
		}
	}
}

func TestPlainProperty(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"PImplementation.RedrivenDeadLettersDeliverable detected liveness bug in hot state 'Awaiting' at the end of program execution.",
			`a redriven dead letter comes back deliverable (a ready message with attempts 0 and no lease, or a pending outbox row with no delivery attempts), but the run ended with a redriven row never seen so (P monitor RedrivenDeadLettersDeliverable, a liveness property: the run ended in its hot state "Awaiting")`},
		{"outbox row o1 completed at t=0 but no message o1 was ever enqueued in mailbox inbox (PSpec/Outbox.p:16:7)",
			"outbox row o1 completed at t=0 but no message o1 was ever enqueued in mailbox inbox (PSpec/Outbox.p:16:7)"},
		{"Monitor 'Liveness' detected liveness bug in hot state 'Waiting' at the end of program execution.",
			"Monitor 'Liveness' detected liveness bug in hot state 'Waiting' at the end of program execution."},
	} {
		if got := PlainProperty(tc.in); got != tc.want {
			t.Errorf("PlainProperty(%q)\n got %q\nwant %q", tc.in, got, tc.want)
		}
	}
}
