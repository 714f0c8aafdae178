package bridge_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/pconform/pconform/bridge"
)

// checkerOutput is a checker's standard output for one run of test case tc.
func checkerOutput(tc, bugs, schedules string) string {
	return "..... Checking PConform.dll\n.. Test case :: " + tc + "\n... Checker run:\n" +
		"..... Found " + bugs + " bug.\n... Explored " + schedules + " schedules\n... Elapsed 1.5 sec.\n"
}

func TestParseCheckOutput(t *testing.T) {
	tests := []struct {
		name, out, tc string
		want          bridge.CheckOutcome
	}{
		{"green", checkerOutput("tcA", "0", "10"), "tcA", bridge.CheckOutcome{Schedules: 10, Found: true, Seconds: 1.5, Sections: 1}},
		{"other section only", checkerOutput("tcAB", "1", "3"), "tcA", bridge.CheckOutcome{Seconds: -1, Sections: 1}},
		{"two sections", checkerOutput("tcA", "0", "10") + checkerOutput("tcAB", "1", "3"), "tcAB",
			bridge.CheckOutcome{Schedules: 3, Bugs: 1, Found: true, Seconds: 1.5, Sections: 2}},
		{"no counts", ".. Test case :: tcA\n", "tcA", bridge.CheckOutcome{Seconds: -1, Sections: 1}},
		{"empty", "", "tcA", bridge.CheckOutcome{Seconds: -1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := bridge.ParseCheckOutput([]byte(tt.out), tt.tc); got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestVerdict(t *testing.T) {
	dir := t.TempDir()
	summary := func(bugs, schedules string) {
		if err := os.MkdirAll(filepath.Join(dir, "BugFinding"), 0o755); err != nil {
			t.Fatal(err)
		}
		data := "bugs:" + bugs + "\nschedules:" + schedules + "\n"
		if err := os.WriteFile(filepath.Join(dir, "BugFinding", "P_pchecker_summary.txt"), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	outcome := func(schedules, bugs, sections int) bridge.CheckOutcome {
		return bridge.CheckOutcome{Schedules: schedules, Bugs: bugs, Found: true, Seconds: 1, Sections: sections}
	}
	tests := []struct {
		name, tc        string
		budget, exit    int
		o               bridge.CheckOutcome
		sumBugs, sumSch string
		pass            bool
		note            string
	}{
		{"green passes", "tcA", 10, 0, outcome(10, 0, 1), "0", "10", true, ""},
		{"green with a bug", "tcA", 10, 1, outcome(4, 1, 1), "1", "4", false, "bug found"},
		{"green short of its budget", "tcA", 10, 0, outcome(7, 0, 1), "0", "7", false, "only 7 of 10 schedules explored"},
		{"counterexample finds its bug", "tcXCounterexample", 100, 1, outcome(3, 1, 1), "1", "3", true, "bug found at schedule 3"},
		{"counterexample without a bug", "tcXCounterexample", 100, 0, outcome(100, 0, 1), "0", "100", false, "no bug within 100 schedules"},
		{"no result", "tcA", 10, -1, bridge.CheckOutcome{Seconds: -1}, "0", "10", false, "no result in the checker output (exit ?); -tc matched 0 tests"},
		{"internal error", "tcA", 10, 2, outcome(10, 0, 1), "0", "10", false, "checker internal error (exit 2)"},
		{"unknown exit code", "tcA", 10, 3, outcome(10, 0, 1), "0", "10", false, "exit code 3"},
		{"exit 1 without a bug", "tcA", 10, 1, outcome(10, 0, 1), "0", "10", false, "exit 1 but no bug found"},
		{"exit 0 with a bug", "tcXCounterexample", 100, 0, outcome(3, 1, 1), "1", "3", false, "exit 0 but a bug found"},
		{"summary disagrees", "tcA", 10, 0, outcome(10, 0, 1), "0", "9", false, "summary file disagrees with the checker output"},
		{"summary without its bugs line", "tcA", 10, 0, outcome(10, 0, 1), "", "10", false, "summary file disagrees with the checker output"},
		{"prefix match", "tcA", 10, 0, outcome(10, 0, 2), "0", "1", false, "-tc matched 2 tests"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			summary(tt.sumBugs, tt.sumSch)
			pass, note := bridge.Verdict(tt.tc, tt.budget, tt.exit, tt.o, filepath.Join(dir, "BugFinding", "P_pchecker_summary.txt"))
			if pass != tt.pass || note != tt.note {
				t.Errorf("Verdict = %v %q, want %v %q", pass, note, tt.pass, tt.note)
			}
		})
	}
}

func TestBudget(t *testing.T) {
	if got := bridge.Budget("tcXCounterexample", 1000, 100); got != 100 {
		t.Errorf("counterexample budget %d, want 100", got)
	}
	if got := bridge.Budget("tcX", 1000, 100); got != 1000 {
		t.Errorf("green budget %d, want 1000", got)
	}
}
