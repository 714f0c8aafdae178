package properties

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/pconform/pconform/bridge"
)

// The markers around the table of docs/models.md that maps the P monitors to the Go checks.
const (
	monitorTableBegin = "<!-- BEGIN monitors: kept complete by properties/monitors_test.go -->"
	monitorTableEnd   = "<!-- END monitors -->"
)

// monitorRow is one row of that table.
type monitorRow struct {
	line    int
	monitor string // "" for a Go check that no monitor corresponds to
	kind    string // "safety", "liveness", or "" with monitor
	checks  []Check
}

// TestMonitorTable keeps the table in docs/models.md that maps the P spec monitors
// (models/p/PSpec) to the Go checks (Check) complete both ways: every monitor is in exactly one
// row, under its kind (liveness when it has a hot state), every Go check is in some row, and
// every name in the table exists. Every monitor is also one the P oracle judges traces with
// (bridge.ObservedMonitors, bridge.LivenessMonitors).
func TestMonitorTable(t *testing.T) {
	monitors := specMonitors(t, filepath.Join("..", "models", "p", "PSpec"))
	if len(monitors) == 0 {
		t.Fatal("no spec monitor found in models/p/PSpec")
	}
	rows := readMonitorTable(t, filepath.Join("..", "docs", "models.md"))

	listed := map[string]int{}
	covered := map[Check]bool{}
	for _, r := range rows {
		for _, c := range r.checks {
			if _, ok := statements[c]; !ok {
				t.Errorf("docs/models.md:%d: %q is not a Go check (checks: %v)", r.line, c, allChecks())
			}
			covered[c] = true
		}
		if len(r.checks) == 0 {
			t.Errorf("docs/models.md:%d: the row names no Go check", r.line)
		}
		if r.monitor == "" {
			if r.kind != "" {
				t.Errorf("docs/models.md:%d: a row without a monitor has kind %q, want —", r.line, r.kind)
			}
			continue
		}
		if prev, dup := listed[r.monitor]; dup {
			t.Errorf("docs/models.md:%d: monitor %s is listed again (first at line %d)", r.line, r.monitor, prev)
		}
		listed[r.monitor] = r.line
		kind, ok := monitors[r.monitor]
		if !ok {
			t.Errorf("docs/models.md:%d: %s is not a spec monitor of models/p/PSpec", r.line, r.monitor)
			continue
		}
		if r.kind != kind {
			t.Errorf("docs/models.md:%d: monitor %s has kind %q, want %q", r.line, r.monitor, r.kind, kind)
		}
		// The P oracle holds observed histories to every monitor (liveness ones only where an
		// execution ended), so a monitor whose events it does not raise is a gap.
		if observed := bridge.ObservedMonitors; kind == "safety" && !slices.Contains(observed, r.monitor) {
			t.Errorf("safety monitor %s is not in bridge.ObservedMonitors: the P oracle never judges it on a trace", r.monitor)
		}
		if kind == "liveness" && !slices.Contains(bridge.LivenessMonitors, r.monitor) {
			t.Errorf("liveness monitor %s is not in bridge.LivenessMonitors", r.monitor)
		}
	}
	for m := range monitors {
		if _, ok := listed[m]; !ok {
			t.Errorf("docs/models.md: monitor %s (models/p/PSpec) is not in the table", m)
		}
	}
	for _, c := range allChecks() {
		if !covered[c] {
			t.Errorf("docs/models.md: Go check %q is not in the table", c)
		}
	}
}

// allChecks lists every Check, sorted.
func allChecks() []Check {
	var out []Check
	for c := range statements {
		out = append(out, c)
	}
	slices.Sort(out)
	return out
}

// specMonitors reads the `spec NAME observes ...` declarations of the .p files in dir and returns
// each monitor's kind: "liveness" when its body has a hot state, else "safety".
func specMonitors(t *testing.T, dir string) map[string]string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.p"))
	if err != nil {
		t.Fatal(err)
	}
	spec := regexp.MustCompile(`(?m)^\s*spec\s+([A-Za-z_][A-Za-z0-9_]*)\s+observes\b`)
	out := map[string]string{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		locs := spec.FindAllSubmatchIndex(data, -1)
		for i, loc := range locs {
			end := len(data)
			if i+1 < len(locs) {
				end = locs[i+1][0]
			}
			name := string(data[loc[2]:loc[3]])
			kind := "safety"
			if bytes.Contains(data[loc[1]:end], []byte("hot state")) {
				kind = "liveness"
			}
			out[name] = kind
		}
	}
	return out
}

// readMonitorTable parses the table between the markers of path.
func readMonitorTable(t *testing.T, path string) []monitorRow {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	begin, end := slices.Index(lines, monitorTableBegin), slices.Index(lines, monitorTableEnd)
	if begin < 0 || end < begin {
		t.Fatalf("%s: no table between %q and %q", path, monitorTableBegin, monitorTableEnd)
	}
	var rows []monitorRow
	for i := begin + 1; i < end; i++ {
		line := strings.TrimSpace(lines[i])
		if line == "" || strings.HasPrefix(line, "| P monitor") || strings.HasPrefix(line, "|---") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if len(cells) != 4 {
			t.Errorf("%s:%d: want 4 cells, got %d: %s", path, i+1, len(cells), line)
			continue
		}
		for j := range cells {
			cells[j] = strings.TrimSpace(cells[j])
		}
		r := monitorRow{line: i + 1, monitor: unquote(cells[0]), kind: unquote(cells[1])}
		for _, c := range strings.Split(cells[2], ",") {
			if c = unquote(strings.TrimSpace(c)); c != "" {
				r.checks = append(r.checks, Check(c))
			}
		}
		rows = append(rows, r)
	}
	if len(rows) == 0 {
		t.Fatalf("%s: the table between the markers has no rows", path)
	}
	return rows
}

// unquote strips a cell's backquotes; "—" is the empty cell.
func unquote(s string) string {
	if s == "—" {
		return ""
	}
	return strings.Trim(s, "`")
}
