package bridge

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/pconform/pconform/profile"
	"github.com/pconform/pconform/traces"
)

// TestSpecEventsFitTheirTypes derives the spec events of every committed trace (the corpus, and
// the hand-written wake traces: no checker trace has a wake or a poll tick) and checks each
// event's values against its type's fields, in number and kind: both drivers rely on it.
func TestSpecEventsFitTheirTypes(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "traces", "corpus", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no corpus traces: %v", err)
	}
	wakes, err := filepath.Glob(filepath.Join("..", "traces", "testdata", "good", "wake-*.json"))
	if err != nil || len(wakes) == 0 {
		t.Fatalf("no hand-written wake traces: %v", err)
	}
	files = append(files, wakes...)
	seen := map[SpecKind]bool{}
	for _, f := range files {
		tr, err := traces.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		d := NewSpecDeriver(tr.Expect.Profile)
		var evs []SpecEvent
		for i, st := range tr.Steps {
			evs = d.Step(st, evs[:0])
			for _, ev := range evs {
				seen[ev.Kind] = true
				if err := fits(ev); err != "" {
					t.Fatalf("%s step %d: %s: %s", f, i, SpecEventTypes[ev.Kind].Event, err)
				}
			}
		}
	}
	for k := range numSpecKinds {
		if !seen[k] && k != SpecSaveCheckpoint && k != SpecLoadCheckpoint && k != SpecMarkProcessed {
			t.Errorf("no corpus trace raises %s", SpecEventTypes[k].Event)
		}
	}
}

// fits says how ev's values disagree with its type's fields, "" when they agree.
func fits(ev SpecEvent) string {
	var kinds []SpecFieldKind
	var flat func(fs []SpecField)
	flat = func(fs []SpecField) {
		for _, f := range fs {
			switch f.Kind {
			case SpecTuple:
				flat(f.Sub)
			case SpecSeq:
				// Its length, then each element's fields.
				kinds = append(kinds, SpecInt)
				if len(kinds) > len(ev.Values) {
					return
				}
				n, ok := ev.Values[len(kinds)-1].(int64)
				if !ok {
					return
				}
				for range n {
					flat(f.Sub)
				}
			default:
				kinds = append(kinds, f.Kind)
			}
		}
	}
	flat(SpecEventTypes[ev.Kind].Fields)
	if len(kinds) != len(ev.Values) {
		return "wrong number of values"
	}
	for i, v := range ev.Values {
		ok := false
		switch v.(type) {
		case int64:
			ok = kinds[i] == SpecInt
		case string:
			ok = kinds[i] == SpecString
		case bool:
			ok = kinds[i] == SpecBool
		}
		if !ok {
			return "value " + string(rune('0'+i)) + " has the wrong kind"
		}
	}
	return ""
}

func TestAppendSpecLine(t *testing.T) {
	for _, tc := range []struct {
		ev   SpecEvent
		want string
	}{
		{SpecEvent{SpecMsgInserted, []any{int64(3), "inbox", "m1"}}, "1\tT\t3\tinbox\tm1\n"},
		{SpecEvent{SpecMarkProcessed, []any{int64(0), "g", "a\tb\\c\nd", int64(5), true, false}}, "7\tT\t0\tg\ta\\tb\\\\c\\nd\t5\t1\t0\n"},
	} {
		if got := string(AppendSpecLine(nil, tc.ev, "T")); got != tc.want {
			t.Errorf("%v: %q, want %q", tc.ev, got, tc.want)
		}
	}
}

// TestPStreamDriver: the streaming driver hands every spec event type, with its fields read in
// order, to the monitors directly or by announce, and asserts the observed monitors.
func TestPStreamDriver(t *testing.T) {
	src := PStreamDriver()
	for _, want := range []string{
		"direct = StreamDirect();\n      k = StreamNext();",
		"if (k == 1) {\n          if (direct) {\n            StreamAnnounce(eSpecMsgInserted, (at = StreamInt(0), mailbox = StreamStr(1), id = StreamStr(2)));\n" +
			"          } else {\n            announce eSpecMsgInserted, (at = StreamInt(0), mailbox = StreamStr(1), id = StreamStr(2));\n          }",
		"announce eSpecOutboxRow, (at = StreamInt(0), row = (id = StreamStr(1), target = StreamStr(2), key = StreamStr(3), priority = StreamInt(4),",
		"dead_reason = StreamStr(14)));",
		"announce eObsMarkProcessed, (at = StreamInt(0), consumer = StreamStr(1), id = StreamStr(2), ttl = StreamInt(3), duplicate = StreamBool(4), bug = StreamBool(5));",
		"n = StreamInt(2);\n          j = 0;\n          while (j < n) {\n            seq_redrives += (j, (id = StreamStr(2 + 1 + j * 7), kind = StreamStr(2 + 2 + j * 7),",
		// A seq in the middle: the fields after it are counted from its elements' end (o1).
		"seq_messages += (j, (mailbox = StreamStr(6 + 1 + j * 5), id = StreamStr(6 + 2 + j * 5),",
		"o1 = 6 + 1 + n * 5;",
		"messages = seq_messages, bug = StreamBool(o1 + 0))",
		// Seqs of scalars, two in one event.
		"seq_outcomes += (j, StreamStr(4 + 1 + j * 1));",
		"n = StreamInt(o1 + 2);",
		"seq_actions += (j, StreamStr(o1 + 2 + 1 + j * 1));",
		"retry_delay = StreamInt(o1 + 0), fault = StreamStr(o1 + 1), actions = seq_actions, bug = StreamBool(o2 + 0)",
		"announce eSpecRedrivesListed, (at = StreamInt(0), id = StreamStr(1), redrives = seq_redrives);",
		"announce eObsCrash, (at = StreamInt(0),);",
		"test tcObservedStream [main=ObservedStream]: assert " + strings.Join(StreamMonitors, ", ") + " in { ObservedStream };",
	} {
		if !strings.Contains(src, want) {
			t.Errorf("driver lacks %s\n%s", want, src)
		}
	}
	for _, stmt := range []string{"  announce ", "  StreamAnnounce("} {
		if n := strings.Count(src, stmt); n != int(numSpecKinds) {
			t.Errorf("%d %q statements, want %d", n, stmt, numSpecKinds)
		}
	}
}

// TestSpecDeriverLeaseAtUntil: the deriver's sweep judges a lease by the profile's lease_at_until
// choice (profile.Held). m1 is leased at t=0 until t=10; an expire() at t=10 finds the lease run
// out under the default (the copy announces m1 without its token) and still live under "live"
// (no row event); a second expire() at t=11 finds it run out under both.
func TestSpecDeriverLeaseAtUntil(t *testing.T) {
	steps := []traces.Step{
		{Op: traces.OpEnqueue, Args: traces.Args{Mailbox: "inbox", ID: "m1", MaxAttempts: 2}},
		{Op: traces.OpLease, Args: traces.Args{Mailbox: "inbox", LeaseFor: 10},
			Result: traces.Result{Message: &traces.Message{ID: "m1", Attempts: 1, Token: 1}}},
		{Op: traces.OpExpire, At: 10},
		{Op: traces.OpExpire, At: 11},
	}
	// released gives the step at which the copy announced m1 with its lease taken off, -1 for none.
	released := func(p profile.Profile) int {
		d := NewSpecDeriver(p)
		var evs []SpecEvent
		for i, st := range steps {
			evs = d.Step(st, evs[:0])
			for _, ev := range evs {
				// eSpecRow's values: at, mailbox, id, key, priority, payload, state, attempts,
				// max_attempts, available_at, token, lease_until, seq.
				if ev.Kind == SpecRow && ev.Values[2] == "m1" && ev.Values[6] == "ready" && ev.Values[10] == int64(0) && i >= 2 {
					return i
				}
			}
		}
		return -1
	}
	for _, c := range []struct {
		p    profile.Profile
		want int
	}{
		{profile.Profile{}, 2},
		{profile.Profile{LeaseLiveAtUntil: true}, 3},
	} {
		if got := released(c.p); got != c.want {
			t.Errorf("profile %s: the lease is taken off at step %d, want step %d", c.p, got, c.want)
		}
	}
}

// TestSpecDeriverSilentOutboxDeadLetter: under outbox_dead_letter_fence "silent" an
// outbox_dead_letter that reports nothing may have changed nothing (a stale token), so the deriver
// must not take the row as dead-lettered with that reason: a later redrive is not raised with the
// stale call's reason. Under the default the same report means the fence held.
func TestSpecDeriverSilentOutboxDeadLetter(t *testing.T) {
	steps := []traces.Step{
		{Op: traces.OpOutboxEnqueue, Args: traces.Args{ID: "o1", Target: "inbox", MaxAttempts: 1, MaxDeliveryAttempts: 2}},
		{Op: traces.OpOutboxClaim, At: 1, Args: traces.Args{Limit: 1, ClaimFor: 2},
			Result: traces.Result{Claimed: []traces.Claimed{{ID: "o1", DeliveryAttempts: 1, Token: 1}}}},
		{Op: traces.OpOutboxClaim, At: 3, Args: traces.Args{Limit: 1, ClaimFor: 2},
			Result: traces.Result{Claimed: []traces.Claimed{{ID: "o1", DeliveryAttempts: 2, Token: 2}}}},
		{Op: traces.OpOutboxDeadLetter, At: 4, Args: traces.Args{ID: "o1", Token: 1, Reason: "stale"}},
		{Op: traces.OpOutboxClaim, At: 6, Args: traces.Args{Limit: 1, ClaimFor: 2}},
		{Op: traces.OpRedrive, At: 7, Args: traces.Args{ID: "o1", Reason: "fixed"}},
	}
	// redrivenFrom is the dead reason the redrive was raised with, "" when none was raised.
	redrivenFrom := func(p profile.Profile) string {
		d := NewSpecDeriver(p)
		var evs []SpecEvent
		for _, st := range steps {
			evs = d.Step(st, evs[:0])
			for _, ev := range evs {
				// eSpecRedriven's values: at, id, kind, mailbox, attempts, dead_reason, reason.
				if ev.Kind == SpecRedriven {
					return ev.Values[5].(string)
				}
			}
		}
		return ""
	}
	if got := redrivenFrom(profile.Profile{}); got != "stale" {
		t.Errorf("default profile: the redrive is raised from dead reason %q, want \"stale\"", got)
	}
	if got := redrivenFrom(profile.Profile{OutboxDeadLetterFenceSilent: true}); got == "stale" {
		t.Errorf("outbox_dead_letter_fence silent: the redrive is raised from the stale call's reason %q", got)
	}
}
