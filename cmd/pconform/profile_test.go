package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pconform/pconform/bridge"
	"github.com/pconform/pconform/profile"
	"github.com/pconform/pconform/traces"
)

// TestProfileUsage: a bad profile is a usage error naming what is wrong; a missing command too.
func TestProfileUsage(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(bad, []byte("{\n  \"ack\": \"drops\"\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"profile", "check", bad}, `line 2: unknown value "drops" for choice "ack"`},
		{[]string{"profile", "reexpect", bad, okTrace, "--out", t.TempDir()}, `unknown value "drops"`},
		{[]string{"profile", "reexpect", "../../profiles/ack-deletes.json", okTrace}, "--out DIR is required"},
		{[]string{"profile", "check"}, "expected one profile FILE"},
		{[]string{"profile"}, "expected a profile command"},
	} {
		var out, errOut bytes.Buffer
		if code := run(c.args, &out, &errOut); code != exitUsage || !strings.Contains(errOut.String(), c.want) {
			t.Errorf("%q: exit %d, stderr %q; want %d and %q", c.args, code, errOut.String(), exitUsage, c.want)
		}
	}
}

// TestProfileReexpect re-expects the corpus under ack-deletes: some traces change, each re-expected
// trace is written and reads back under the profile.
func TestProfileReexpect(t *testing.T) {
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	code := run([]string{"profile", "reexpect", "../../profiles/ack-deletes.json", "../../traces/corpus", "--out", out}, &stdout, &stderr)
	if code != exitPass {
		t.Fatalf("exit %d\n%s%s", code, stdout.String(), stderr.String())
	}
	if !strings.Contains(stdout.String(), "changed, first at step #") {
		t.Errorf("no trace changed under ack-deletes:\n%s", stdout.String())
	}
	written, err := filepath.Glob(filepath.Join(out, "*.json"))
	if err != nil || len(written) < 50 {
		t.Fatalf("%d traces written, %v", len(written), err)
	}
	b, err := os.ReadFile(written[0])
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte(`"profile": {"name": "ack-deletes"`)) {
		t.Errorf("%s does not record its profile", written[0])
	}
}

// TestProfileCheck runs profile check with the real P checker on one shipped profile, on one test
// case with a small budget: under no-fetch-sweep, a crash on the last leased attempt leaves the
// message exhausted with no sweep to dead-letter it (schedule 40 of tcCrashRestart, seed 1). It needs the P tool: skipped without it, failed without it when CI=true.
// The compile (about a minute) is cached in a temporary directory, so the test pays it once.
func TestProfileCheck(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles the P model under a profile (about a minute); not in -short")
	}
	if _, err := exec.LookPath("p"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("the P tool is not on PATH (CI=true requires it): . scripts/env.sh")
		}
		t.Skip("the P tool is not on PATH; . scripts/env.sh puts it there")
	}
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	code := run([]string{"profile", "check", "../../profiles/no-fetch-sweep.json", "--models", "../../models/p",
		"--tests", "tcCrashRestart", "--schedules", "40", "--out", out, "--cache", t.TempDir()}, &stdout, &stderr)
	if code != exitPass {
		t.Fatalf("exit %d\n%s%s", code, stdout.String(), stderr.String())
	}
	report := stdout.String()
	for _, want := range []string{
		"EveryMessageEventuallyResolved: gives up",
		"it needs: fetch_sweep=none",
	} {
		if !strings.Contains(report, want) {
			t.Errorf("the report lacks %q:\n%s", want, report)
		}
	}
	traces, _ := filepath.Glob(filepath.Join(out, "*.json"))
	if len(traces) == 0 {
		t.Errorf("no counterexample trace written in %s:\n%s", out, report)
	}
}

// TestChoicesInPlay: the choices a counterexample is said to need are those the Go model's run
// of its steps depends on, in its results or in the state after any step. A choice that shows
// only in a row's state (an uncapped nack_by_id returns ok either way) is needed too; a wording
// is never named.
func TestChoicesInPlay(t *testing.T) {
	// The SQL store's profile of issue 25, as profiles/live-at-until-ack-deletes.json has it.
	store, err := profile.ReadFile("../../profiles/live-at-until-ack-deletes.json")
	if err != nil {
		t.Fatal(err)
	}
	const enqueue = `{"op": "enqueue", "at": 0, "args": {"mailbox": "inbox", "id": "m1", "max_attempts": 1, "payload": "p"}, "result": {}}`
	for _, tc := range []struct {
		name, steps string
		want        []profile.Setting
	}{
		{"a bump past max_attempts shows in no result", enqueue + `,
			{"op": "nack_by_id", "at": 0, "args": {"id": "m1"}, "result": {}},
			{"op": "nack_by_id", "at": 0, "args": {"id": "m1"}, "result": {}}`,
			[]profile.Setting{{Choice: "nack_by_id", Value: "uncapped"}}},
		{"a deleted ack shows in the next enqueue's result", enqueue + `,
			{"op": "ack_by_id", "at": 0, "args": {"id": "m1"}, "result": {}},
			` + enqueue,
			[]profile.Setting{{Choice: "ack", Value: "deletes"}}},
		{"an enqueue alone needs nothing", enqueue, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := `{"format": "pconform.trace/v2", "name": "t", "origin": {"kind": "hand"}, "expect": {"diverges_at": -1}, "steps": [` + tc.steps + `], "final": null}`
			tr, err := traces.Unmarshal([]byte(src), tc.name)
			if err != nil {
				t.Fatal(err)
			}
			got, err := choicesInPlay(tr, store)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("choicesInPlay = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestReportSections: a monitor whose counterexample needs one of the profile's choices is given
// up by a declared choice; one whose counterexample the profile's choices do not explain (here
// the Go model does not even follow it under the default profile) is violated by the model.
func TestReportSections(t *testing.T) {
	// A counterexample profile check found under no-fetch-sweep (profiles/check), kept here.
	const file = "testdata/report-sections-no-fetch-sweep.json"
	noSweep, err := profile.ReadFile("../../profiles/no-fetch-sweep.json")
	if err != nil {
		t.Fatal(err)
	}
	m := monitorInfo{name: "EveryMessageEventuallyResolved", tests: []string{"tcCrashRestart"}}
	for _, tc := range []struct {
		name    string
		p       profile.Profile
		section int
		verdict string
	}{
		{"no-fetch-sweep", noSweep, byChoice, "EveryMessageEventuallyResolved: gives up\n"},
		{"default", profile.Profile{}, byModel, "EveryMessageEventuallyResolved: violated by the model\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr, err := traces.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			o := bridge.Outcome{TestCase: "tcCrashRestart", Schedules: 40, Bug: true, Monitor: m.name, Trace: tr}
			var b bytes.Buffer
			got := reportMonitor(&b, m, []bridge.Outcome{o}, tc.p, t.TempDir())
			if got != tc.section {
				t.Errorf("section %d, want %d:\n%s", got, tc.section, b.String())
			}
			if !strings.HasPrefix(b.String(), tc.verdict) {
				t.Errorf("the report does not start with %q:\n%s", tc.verdict, b.String())
			}
		})
	}
}

// TestChoicesInPlayNamesTheNewChoices: under a profile that makes the five choices of issue 39
// (a real store's), a counterexample is said to need exactly the one its steps depend on.
func TestChoicesInPlayNamesTheNewChoices(t *testing.T) {
	var store profile.Profile
	for _, s := range []profile.Setting{
		{Choice: "completed_claim", Value: "kept"}, {Choice: "outbox_dead_letter_fence", Value: "silent"},
		{Choice: "processed_scope", Value: "id"}, {Choice: "dead_letter_id", Value: "free"},
		{Choice: "checkpoint_save", Value: "overwrites"},
	} {
		if err := store.Set(s.Choice, s.Value); err != nil {
			t.Fatal(err)
		}
	}
	const (
		outbox  = `{"op": "outbox_enqueue", "at": 0, "args": {"id": "o1", "target": "inbox", "max_attempts": 1}, "result": {}}`
		claim   = `{"op": "outbox_claim", "at": 0, "args": {"limit": 1, "claim_for": 5}, "result": {"claimed": [{"id": "o1", "delivery_attempts": 1, "token": 1}]}}`
		enqueue = `{"op": "enqueue", "at": 0, "args": {"mailbox": "inbox", "id": "m1", "max_attempts": 1}, "result": {}}`
	)
	for _, tc := range []struct {
		name, steps string
		want        profile.Setting
	}{
		{"a completed row's claim shows in no result", outbox + `,` + claim + `,
			{"op": "outbox_complete", "at": 1, "args": {"id": "o1", "token": 1}, "result": {}}`,
			profile.Setting{Choice: "completed_claim", Value: "kept"}},
		{"a stale outbox dead letter reports nothing", outbox + `,` + claim + `,
			{"op": "outbox_dead_letter", "at": 1, "args": {"id": "o1", "token": 0, "reason": "r"}, "result": {}}`,
			profile.Setting{Choice: "outbox_dead_letter_fence", Value: "silent"}},
		{"another consumer's mark is a duplicate", `
			{"op": "mark_processed", "at": 0, "args": {"consumer": "c1", "id": "m1", "ttl": 3}, "result": {}},
			{"op": "mark_processed", "at": 0, "args": {"consumer": "c2", "id": "m1", "ttl": 3}, "result": {"duplicate": true}}`,
			profile.Setting{Choice: "processed_scope", Value: "id"}},
		{"a dead letter's id is enqueued again", enqueue + `,
			{"op": "dead_letter", "at": 0, "args": {"id": "m1", "reason": "r"}, "result": {}},
			` + enqueue,
			profile.Setting{Choice: "dead_letter_id", Value: "free"}},
		{"a second first save overwrites", `
			{"op": "save_checkpoint", "at": 0, "args": {"actor": "a1", "payload": "s1"}, "result": {"version": 1}},
			{"op": "save_checkpoint", "at": 0, "args": {"actor": "a1", "payload": "s2"}, "result": {"version": 2}}`,
			profile.Setting{Choice: "checkpoint_save", Value: "overwrites"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := `{"format": "pconform.trace/v2", "name": "t", "origin": {"kind": "hand"}, "expect": {"diverges_at": -1}, "steps": [` + tc.steps + `], "final": null}`
			tr, err := traces.Unmarshal([]byte(src), tc.name)
			if err != nil {
				t.Fatal(err)
			}
			got, err := choicesInPlay(tr, store)
			if err != nil {
				t.Fatal(err)
			}
			if want := []profile.Setting{tc.want}; !slices.Equal(got, want) {
				t.Errorf("choicesInPlay = %v, want %v", got, want)
			}
			if line := needsLine(got, nil); !strings.Contains(line, tc.want.Choice+"="+tc.want.Value) {
				t.Errorf("the report line %q does not name %s", line, tc.want.Choice)
			}
		})
	}
}
