package bridge_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/pconform/pconform/bridge"
	"github.com/pconform/pconform/traces"
)

func fixtureOrigin(tc string, schedule int) traces.Origin {
	return traces.Origin{Kind: bridge.OriginKind, TestCase: tc, Seed: 1, Schedule: schedule, Command: bridge.CheckCommand(tc, 1, 4), Model: "sha256:fixture"}
}

// TestConvertGreenFixture converts every schedule of the real green log and golden-tests the
// traces; the assertions below pin what the golden files must say independently of them.
func TestConvertGreenFixture(t *testing.T) {
	schedules, err := bridge.ReadVerboseLog(bytes.NewReader(readFixture(t, "green_verbose.json")))
	if err != nil {
		t.Fatal(err)
	}
	var all bytes.Buffer
	for i, events := range schedules {
		tr, err := bridge.Convert(events, fixtureOrigin("tcBridgeGreen", i+1), "tcBridgeGreen")
		if err != nil {
			t.Fatalf("schedule %d: %v", i+1, err)
		}
		if want := fmt.Sprintf("tcBridgeGreen-s1-%d-ok", i+1); tr.Name != want {
			t.Errorf("name %q, want %q", tr.Name, want)
		}
		if tr.Expect != (traces.Expect{DivergesAt: -1}) {
			t.Errorf("%s: expect %+v, want no variant and diverges_at -1", tr.Name, tr.Expect)
		}
		if len(tr.Steps) != 8 {
			t.Fatalf("%s: %d steps, want 8 (eObsFinal is not a step)", tr.Name, len(tr.Steps))
		}
		if tr.Steps[0].Op != traces.OpEnqueue || tr.Steps[6].Op != traces.OpAdvanceClock || tr.Steps[7].Op != traces.OpPeek {
			t.Errorf("%s: ops %v", tr.Name, ops(tr))
		}
		if tr.Steps[7].At != 3 || tr.Steps[7].Result.Message != nil {
			t.Errorf("%s: final peek %+v, want at 3 with no message", tr.Name, tr.Steps[7])
		}
		if tr.Final == nil {
			t.Fatalf("%s: no final state", tr.Name)
		}
		// The checker writes the effects key as "\"inbox\""; the trace must say inbox.
		if diff := cmp.Diff(map[string][]string{"inbox": {"m1"}}, tr.Final.Effects); diff != "" {
			t.Errorf("%s: effects (-want +got):\n%s", tr.Name, diff)
		}
		if len(tr.Final.Messages) != 2 || tr.Final.Messages[0].State != traces.StateAcked || tr.Final.Outbox[0].State != traces.StateCompleted {
			t.Errorf("%s: final %+v", tr.Name, tr.Final)
		}
		data, err := traces.Marshal(tr)
		if err != nil {
			t.Fatal(err)
		}
		all.Write(data)
	}
	checkGolden(t, "golden/green_traces.json", all.Bytes())
}

func ops(tr *traces.Trace) []traces.Op {
	var out []traces.Op
	for _, s := range tr.Steps {
		out = append(out, s.Op)
	}
	return out
}

func TestConvertBugFixture(t *testing.T) {
	events, err := bridge.ReadBugLog(bytes.NewReader(readFixture(t, "bad_bug.json")))
	if err != nil {
		t.Fatal(err)
	}
	const tc = "tcLeaselessRawAttemptsCounterexample"
	tr, err := bridge.Convert(events, fixtureOrigin(tc, 1), tc)
	if err != nil {
		t.Fatal(err)
	}
	want := &traces.Trace{
		Format: traces.Format,
		Name:   tc + "-s1-1-bad",
		Origin: fixtureOrigin(tc, 1),
		Expect: traces.Expect{Variant: "raw-attempts", DivergesAt: 2, Violates: "bug observed: retried attempt 0 (PSpec/NoBug.p:7:7)"},
		Steps: []traces.Step{
			{Op: traces.OpEnqueue, Args: traces.Args{Mailbox: "inbox", ID: "m1", Key: "k", Priority: 2, MaxAttempts: 1, Payload: "hello"}},
			{Op: traces.OpConsumerFetch, Args: traces.Args{Worker: 1, Mailbox: "inbox", Profile: traces.ProfileLeaseless},
				Result: traces.Result{Message: &traces.Message{ID: "m1"}}},
			{Op: traces.OpConsumerHandle, Args: traces.Args{Worker: 1, Mailbox: "inbox", Profile: traces.ProfileLeaseless, Outcome: traces.OutcomeFail, RetryDelay: 5},
				Result: traces.Result{Action: traces.ActionRetried}},
		},
	}
	if diff := cmp.Diff(want, tr); diff != "" {
		t.Errorf("bug trace (-want +got):\n%s", diff)
	}

	// The verbose log of the same run ends with the same schedule.
	schedules, err := bridge.ReadVerboseLog(bytes.NewReader(readFixture(t, "bad_verbose.json")))
	if err != nil {
		t.Fatal(err)
	}
	tr2, err := bridge.Convert(schedules[len(schedules)-1], fixtureOrigin(tc, 1), tc)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(tr, tr2); diff != "" {
		t.Errorf("bug log and verbose log disagree (-bug +verbose):\n%s", diff)
	}
}

// observationsP holds the P model's declarations of the per-op observation events: the contract
// the bridge reads, on the model's side. It is generated (internal/gen), so this test checks the
// P text as the compiler sees it against the table the bridge derives at run time.
const observationsP = "../models/p/PSrc/ObservationEvents_gen.p"

// handObservationsP holds the hand-declared observation events (bridge.HandDeclared).
const handObservationsP = "../models/p/PSrc/Observations.p"

// pObservations reads the eObs* event declarations (but eObsFinal) of observationsP: event name to
// payload field names.
func pObservations(t *testing.T) map[string][]string {
	t.Helper()
	src, err := os.ReadFile(observationsP)
	if err != nil {
		t.Fatal(err)
	}
	// The batch steps' events are declared by hand, beside the other hand-written events.
	hand, err := os.ReadFile(handObservationsP)
	if err != nil {
		t.Fatal(err)
	}
	src = append(src, hand...)
	decl := regexp.MustCompile(`(?s)event (eObs\w+)\s*:\s*\((.*?)\);`)
	out := map[string][]string{}
	for _, m := range decl.FindAllStringSubmatch(string(src), -1) {
		if m[1] == "eObsFinal" {
			continue
		}
		var names []string
		for _, member := range strings.Split(m[2], ",") {
			name, _, ok := strings.Cut(member, ":")
			if !ok {
				t.Fatalf("%s: %s: cannot read the payload member %q", observationsP, m[1], member)
			}
			names = append(names, strings.TrimSpace(name))
		}
		out[m[1]] = names
	}
	if len(out) == 0 {
		t.Fatalf("%s declares no eObs event", observationsP)
	}
	return out
}

func TestViolatedProperty(t *testing.T) {
	cases := []struct{ in, want string }{
		{"Assertion Failed: PSpec/Outbox.p:16:7 outbox row o1 completed at t=0 but no message o1 was ever enqueued in mailbox inbox",
			"outbox row o1 completed at t=0 but no message o1 was ever enqueued in mailbox inbox (PSpec/Outbox.p:16:7)"},
		{"Assertion Failed: something without a position", "something without a position"},
		{"Monitor 'Liveness' detected liveness bug in hot state 'Waiting' at the end of program execution.",
			"Monitor 'Liveness' detected liveness bug in hot state 'Waiting' at the end of program execution."},
		{"  ", ""},
	}
	for _, tc := range cases {
		if got := bridge.ViolatedProperty(tc.in); got != tc.want {
			t.Errorf("ViolatedProperty(%q)\n got %q\nwant %q", tc.in, got, tc.want)
		}
	}
}

// TestObservationTableMatchesContract checks the observation table the bridge derives from
// traces.Spec against the events the P model declares, so a Spec row and its P event cannot
// drift apart unnoticed.
func TestObservationTableMatchesContract(t *testing.T) {
	// Field order carries no meaning in a named tuple's JSON object, so compare sets.
	got := bridge.ObservationFields()
	for _, fields := range got {
		slices.Sort(fields)
	}
	want := pObservations(t)
	for _, fields := range want {
		slices.Sort(fields)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("observation fields derived from traces.Spec differ from the P model's %s (-P +derived):\n%s", observationsP, diff)
	}
}

// payloadFor builds a payload carrying every field of ev, each set by value (absent keys get a
// distinct non-zero value so a field mapped to the wrong place shows up).
func payloadFor(t *testing.T, ev string, set map[string]any) json.RawMessage {
	t.Helper()
	fields, ok := bridge.ObservationFields()[ev]
	if !ok {
		t.Fatalf("no observation %s", ev)
	}
	obj := map[string]any{}
	for i, f := range fields {
		if v, ok := set[f]; ok {
			if v != nil {
				obj[f] = v
			}
			continue
		}
		switch f {
		case "duplicate", "bug":
			obj[f] = false
		case "claimed":
			obj[f] = []any{}
		case "redrives":
			obj[f] = []any{map[string]any{"id": "r-id", "kind": "outbox", "mailbox": "r-mb", "attempts": 3,
				"dead_reason": "r-dead", "reason": "r-why", "at": 0}}
		case "msg_id", "mailbox", "id", "key", "payload", "reason", "target", "profile", "outcome", "fault", "err", "action",
			"consumer", "actor":
			obj[f] = fmt.Sprintf("%s-%d", f, i)
		default:
			obj[f] = 10 + i
		}
	}
	for k, v := range set {
		if _, ok := obj[k]; !ok && v != nil {
			obj[k] = v // a field the event does not have: the test wants it refused
		}
	}
	data, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func announce(entry int, ev string, payload json.RawMessage) bridge.Event {
	return bridge.Event{Entry: entry, Type: bridge.TypeAnnounce, Name: ev, Machine: "Store(2)", Payload: payload}
}

// TestConvertEveryOp converts one observation of every event with every field set to a distinct
// value and checks each value lands in the step field of the same JSON name.
func TestConvertEveryOp(t *testing.T) {
	for ev, fields := range bridge.ObservationFields() {
		if bridge.HandDeclared(opOf(ev)) {
			continue // TestConvertBatchSteps
		}
		t.Run(ev, func(t *testing.T) {
			payload := payloadFor(t, ev, map[string]any{"at": 0})
			step, _, err := bridge.ConvertObservation(ev, payload)
			if err != nil {
				t.Fatal(err)
			}
			var obj map[string]any
			if err := json.Unmarshal(payload, &obj); err != nil {
				t.Fatal(err)
			}
			data, err := json.Marshal(step)
			if err != nil {
				t.Fatal(err)
			}
			var got struct {
				Op     string         `json:"op"`
				Args   map[string]any `json:"args"`
				Result map[string]any `json:"result"`
			}
			if err := json.Unmarshal(data, &got); err != nil {
				t.Fatal(err)
			}
			if bridge.EventName(traces.Op(got.Op)) != ev {
				t.Errorf("op %q for event %s", got.Op, ev)
			}
			for _, f := range fields {
				want := obj[f]
				var have any
				switch f {
				case "at", "bug", "duplicate", "claimed":
					continue
				case "msg_id":
					have = got.Result["message"].(map[string]any)["id"]
				case "msg_attempts":
					have = got.Result["message"].(map[string]any)["attempts"]
				case "msg_token":
					have = got.Result["message"].(map[string]any)["token"]
				default:
					if v, ok := got.Args[f]; ok {
						have = v
					} else {
						have = got.Result[f]
					}
				}
				if fmt.Sprint(have) != fmt.Sprint(want) {
					t.Errorf("field %s: step has %v, payload %v", f, have, want)
				}
			}
		})
	}
}

func TestConvertClaimedAndFlags(t *testing.T) {
	claimed := []any{
		map[string]any{"id": "o1", "delivery_attempts": 1, "token": 3},
		map[string]any{"id": "o2", "delivery_attempts": 2, "token": 3},
	}
	step, _, err := bridge.ConvertObservation("eObsOutboxClaim", payloadFor(t, "eObsOutboxClaim", map[string]any{"claimed": claimed}))
	if err != nil {
		t.Fatal(err)
	}
	want := []traces.Claimed{{ID: "o1", DeliveryAttempts: 1, Token: 3}, {ID: "o2", DeliveryAttempts: 2, Token: 3}}
	if diff := cmp.Diff(want, step.Result.Claimed); diff != "" {
		t.Errorf("claimed (-want +got):\n%s", diff)
	}
	step, bug, err := bridge.ConvertObservation("eObsPublisherDeliver", payloadFor(t, "eObsPublisherDeliver", map[string]any{"duplicate": true, "bug": true}))
	if err != nil {
		t.Fatal(err)
	}
	if !step.Result.Duplicate || !bug {
		t.Errorf("duplicate %v bug %v, want both true", step.Result.Duplicate, bug)
	}
}

// obs is a shorthand for a schedule of observations built in the test.
type obs struct {
	ev  string
	set map[string]any
}

func schedule(t *testing.T, list ...obs) []bridge.Event {
	t.Helper()
	var events []bridge.Event
	// Interleave an ignored entry so entry indexes differ from step indexes.
	for i, o := range list {
		events = append(events, bridge.Event{Entry: 2 * i, Type: "DequeueEvent", Name: "eRequest", Machine: "Store(2)", Payload: json.RawMessage(`"Client(3)"`)})
		var payload json.RawMessage
		if raw, ok := o.set["raw"]; ok {
			payload = json.RawMessage(raw.(string))
		} else {
			payload = payloadFor(t, o.ev, o.set)
		}
		events = append(events, announce(2*i+1, o.ev, payload))
	}
	return events
}

var validFinal = `{"messages":[{"mailbox":"inbox","id":"m1","key":"","priority":0,"payload":"","state":"ready","attempts":0,"max_attempts":1,"available_at":0,"token":0,"lease_until":0}],"outbox":[],"dead_letters":[],"effects":{}}`

func enqueue(at int) obs {
	return obs{"eObsEnqueue", map[string]any{"at": at, "mailbox": "inbox", "id": "m1", "key": "", "priority": 0, "max_attempts": 1, "delay": 0, "payload": ""}}
}

func TestConvertErrors(t *testing.T) {
	final := obs{"eObsFinal", map[string]any{"raw": validFinal}}
	handleBug := obs{"eObsConsumerHandle", map[string]any{"at": 0, "worker": 1, "mailbox": "inbox", "profile": "leaseless", "outcome": "fail", "retry_delay": 0, "action": "retried", "attempt": 0, "bug": true}}
	for _, tc := range []struct {
		name     string
		testCase string
		events   []obs
		want     string // substring of the error
		sentinel error
	}{
		{"unknown eObs event", "tcGreen", []obs{enqueue(0), {"eObsTeleport", map[string]any{"raw": `{"at":0}`}}}, "schedule 7, entry 3 (eObsTeleport): observation breaks the bridge contract: unknown observation event", bridge.ErrBadObservation},
		{"missing field", "tcGreen", []obs{{"eObsEnqueue", map[string]any{"key": nil}}}, "entry 1 (eObsEnqueue): field key: observation breaks the bridge contract: missing", bridge.ErrBadObservation},
		{"unexpected field", "tcGreen", []obs{{"eObsAck", map[string]any{"attempt": 3}}}, "field attempt: observation breaks the bridge contract: not part of the contract", bridge.ErrBadObservation},
		{"string for int", "tcGreen", []obs{{"eObsLease", map[string]any{"lease_for": "10"}}}, "field lease_for: observation breaks the bridge contract: want an integer, got string \"10\"", bridge.ErrBadObservation},
		{"fraction for int", "tcGreen", []obs{{"eObsExpire", map[string]any{"affected": 1.5}}}, "field affected: observation breaks the bridge contract: want an integer, got number 1.5", bridge.ErrBadObservation},
		{"huge int", "tcGreen", []obs{{"eObsExpire", map[string]any{"raw": `{"at":0,"affected":99999999999}`}}}, "field affected: observation breaks the bridge contract: integer 99999999999 out of range", bridge.ErrBadObservation},
		{"string for bool", "tcGreen", []obs{{"eObsEnqueue", map[string]any{"duplicate": "False"}}}, "field duplicate: observation breaks the bridge contract: want a bool", bridge.ErrBadObservation},
		{"int for string", "tcGreen", []obs{{"eObsAckById", map[string]any{"id": 5}}}, "field id: observation breaks the bridge contract: want a string, got number 5", bridge.ErrBadObservation},
		{"payload not an object", "tcGreen", []obs{{"eObsCrash", map[string]any{"raw": `"null"`}}}, "field payload: observation breaks the bridge contract: want an object, got string \"null\"", bridge.ErrBadObservation},
		{"claimed not an array", "tcGreen", []obs{{"eObsOutboxClaim", map[string]any{"claimed": map[string]any{}}}}, "field claimed: observation breaks the bridge contract: want an array", bridge.ErrBadObservation},
		{"claimed row missing token", "tcGreen", []obs{{"eObsOutboxClaim", map[string]any{"claimed": []any{map[string]any{"id": "o1", "delivery_attempts": 1}}}}}, "field claimed[0].token: observation breaks the bridge contract: missing", bridge.ErrBadObservation},
		{"claimed row extra field", "tcGreen", []obs{{"eObsOutboxClaim", map[string]any{"claimed": []any{map[string]any{"id": "o1", "delivery_attempts": 1, "token": 1, "seq": 4}}}}}, "field claimed[0].seq: observation breaks the bridge contract: not part of the contract", bridge.ErrBadObservation},
		{"no message but attempts", "tcGreen", []obs{{"eObsPeek", map[string]any{"msg_id": "", "msg_attempts": 2, "msg_token": 0}}}, "field msg_id: observation breaks the bridge contract: empty (no message) but msg_attempts = 2, msg_token = 0", bridge.ErrBadObservation},
		{"observation after final", "tcGreen", []obs{enqueue(0), final, {"eObsCrash", map[string]any{"at": 1}}}, "entry 5 (eObsCrash): observation breaks the bridge contract: observation after eObsFinal (entry 3)", bridge.ErrBadObservation},
		{"two finals", "tcGreen", []obs{enqueue(0), final, final}, "entry 5 (eObsFinal): observation breaks the bridge contract: observation after eObsFinal (entry 3)", bridge.ErrBadObservation},
		{"bug in green test", "tcGreen", []obs{enqueue(0), handleBug}, "entry 3 (eObsConsumerHandle): observation breaks the bridge contract: bug == true in green test case tcGreen", bridge.ErrBadObservation},
		{"unknown counterexample", "tcMysteryCounterexample", []obs{enqueue(0)}, `unknown counterexample test case "tcMysteryCounterexample"`, bridge.ErrUnknownTestCase},
		{"no observations", "tcGreen", nil, "schedule 7: schedule announced no observations", bridge.ErrNoObservations},
		{"final missing effects", "tcGreen", []obs{enqueue(0), {"eObsFinal", map[string]any{"raw": `{"messages":[],"outbox":[],"dead_letters":[]}`}}}, "entry 3 (eObsFinal): field effects: observation breaks the bridge contract: missing", bridge.ErrBadObservation},
		{"final row missing state", "tcGreen", []obs{{"eObsFinal", map[string]any{"raw": strings.Replace(validFinal, `"state":"ready",`, ``, 1)}}}, "field messages[0].state: observation breaks the bridge contract: missing (also accepted: row_state)", bridge.ErrBadObservation},
		{"final row state twice", "tcGreen", []obs{{"eObsFinal", map[string]any{"raw": strings.Replace(validFinal, `"state":"ready",`, `"state":"ready","row_state":"ready",`, 1)}}}, "field messages[0].state: observation breaks the bridge contract: given twice, as state and row_state", bridge.ErrBadObservation},
		{"final row wrong type", "tcGreen", []obs{{"eObsFinal", map[string]any{"raw": strings.Replace(validFinal, `"attempts":0`, `"attempts":"0"`, 1)}}}, "field messages[0].attempts: observation breaks the bridge contract: want an integer", bridge.ErrBadObservation},
		{"final effects not a list", "tcGreen", []obs{{"eObsFinal", map[string]any{"raw": strings.Replace(validFinal, `"effects":{}`, `"effects":{"\"inbox\"":"m1"}`, 1)}}}, "field effects.\"inbox\": observation breaks the bridge contract: want an array", bridge.ErrBadObservation},
		{"final effects duplicate mailbox", "tcGreen", []obs{{"eObsFinal", map[string]any{"raw": strings.Replace(validFinal, `"effects":{}`, `"effects":{"\"inbox\"":[],"inbox":[]}`, 1)}}}, "mailbox \"inbox\" given twice", bridge.ErrBadObservation},
		{"final extra field", "tcGreen", []obs{{"eObsFinal", map[string]any{"raw": strings.Replace(validFinal, `"effects":{}`, `"effects":{},"clock":3`, 1)}}}, "field clock: observation breaks the bridge contract: not part of the contract", bridge.ErrBadObservation},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := bridge.Convert(schedule(t, tc.events...), traces.Origin{Kind: bridge.OriginKind, Schedule: 7}, tc.testCase)
			if err == nil {
				t.Fatal("no error")
			}
			if !errors.Is(err, tc.sentinel) {
				t.Errorf("error %v does not wrap %v", err, tc.sentinel)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error\n\t%v\ndoes not contain\n\t%s", err, tc.want)
			}
		})
	}
}

func TestConvertIgnoresOtherEvents(t *testing.T) {
	events := []bridge.Event{
		{Entry: 0, Type: "SendEvent", Name: "eObsBogus", Payload: json.RawMessage(`"x"`)},             // not an Announce
		announce(1, "eSpecRow", json.RawMessage(`{"anything":1}`)),                                    // not an observation
		announce(2, "eObsEnqueue", payloadFor(t, "eObsEnqueue", map[string]any{"at": 0, "id": "m1"})), // the one step
	}
	tr, err := bridge.Convert(events, traces.Origin{Kind: bridge.OriginKind, Schedule: 1}, "tcGreen")
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Steps) != 1 || tr.Final != nil {
		t.Errorf("got %d steps, final %v; want 1 step and no final", len(tr.Steps), tr.Final)
	}
}

func TestConvertDivergesAtFirstBug(t *testing.T) {
	fetch := func(bug bool) obs {
		return obs{"eObsConsumerFetch", map[string]any{"at": 0, "worker": 1, "mailbox": "inbox", "profile": "leaseless", "lease_for": 0, "msg_id": "m1", "msg_attempts": 0, "msg_token": 0, "bug": bug}}
	}
	tr, err := bridge.Convert(schedule(t, enqueue(0), fetch(false), fetch(true), fetch(true)), traces.Origin{Kind: bridge.OriginKind, Schedule: 1}, "tcFifoOvertakeCounterexample")
	if err != nil {
		t.Fatal(err)
	}
	if tr.Expect != (traces.Expect{Variant: "fifo-overtake", DivergesAt: 2}) {
		t.Errorf("expect %+v, want fifo-overtake at 2", tr.Expect)
	}
	if tr.Name != "tcFifoOvertakeCounterexample-s0-1-bad" {
		t.Errorf("name %q", tr.Name)
	}
}

func TestVariant(t *testing.T) {
	for _, tc := range []struct {
		testCase       string
		variant        string
		counterexample bool
		err            error
	}{
		{"tcMailboxBasic", "", false, nil},
		{"tcOutboxSplitWriteCounterexample", "split-write", true, nil},
		{"tcLeaselessRawAttemptsCounterexample", "raw-attempts", true, nil},
		{"tcUnfencedAckCounterexample", "unfenced-ack", true, nil},
		{"tcFifoOvertakeCounterexample", "fifo-overtake", true, nil},
		{"tcOtherCounterexample", "", true, bridge.ErrUnknownTestCase},
		{"tcCounterexampleFirst", "", false, nil},
	} {
		v, ce, err := bridge.Variant(tc.testCase)
		if v != tc.variant || ce != tc.counterexample || !errors.Is(err, tc.err) {
			t.Errorf("Variant(%q) = %q, %v, %v; want %q, %v, %v", tc.testCase, v, ce, err, tc.variant, tc.counterexample, tc.err)
		}
	}
}

// TestUntraced: each untraced test case is a green test case that models/p/PTst declares, with a
// reason; Convert refuses it with ErrUntraced and names it, and a traced test case is not
// untraced.
func TestUntraced(t *testing.T) {
	untraced := bridge.UntracedTestCases()
	src, err := os.ReadFile("../models/p/PTst/TestCases.p")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range untraced {
		why, ok := bridge.Untraced(tc)
		if !ok || why == "" {
			t.Errorf("Untraced(%q) = %q, %v; want a reason", tc, why, ok)
		}
		if bridge.IsCounterexample(tc) {
			t.Errorf("%s is a counterexample; an untraced counterexample belongs in variants.ModelOnlyCounterexamples", tc)
		}
		if !regexp.MustCompile(`(?m)^test ` + regexp.QuoteMeta(tc) + ` \[`).Match(src) {
			t.Errorf("%s is not declared in models/p/PTst/TestCases.p", tc)
		}
		_, err := bridge.Convert([]bridge.Event{{Type: bridge.TypeAnnounce, Name: bridge.FinalEvent}}, fixtureOrigin(tc, 1), tc)
		if !errors.Is(err, bridge.ErrUntraced) || !strings.Contains(err.Error(), tc) {
			t.Errorf("Convert(%s): err = %v, want ErrUntraced naming the test case", tc, err)
		}
	}
	if _, ok := bridge.Untraced("tcLeasedWorkers"); ok {
		t.Error("tcLeasedWorkers reads as untraced")
	}
}

func TestEventName(t *testing.T) {
	for op, want := range map[traces.Op]string{
		traces.OpAckByID: "eObsAckById", traces.OpOutboxEnqueue: "eObsOutboxEnqueue", traces.OpCrash: "eObsCrash",
		traces.OpConsumerHandle: "eObsConsumerHandle",
	} {
		if got := bridge.EventName(op); got != want {
			t.Errorf("EventName(%s) = %s, want %s", op, got, want)
		}
	}
}

// opOf is the op whose observation event is ev.
func opOf(ev string) traces.Op {
	for _, op := range traces.Ops {
		if bridge.EventName(op) == ev {
			return op
		}
	}
	return ""
}

// TestConvertBatchSteps converts one observation of each batch step, as the P model announces
// it, and checks the step the trace format gets; and that a malformed batch payload is refused
// with the field named.
func TestConvertBatchSteps(t *testing.T) {
	for _, tc := range []struct {
		ev, payload string
		want        traces.Step
		bug         bool
	}{
		{"eObsConsumerFetchBatch",
			`{"at": 3, "worker": 1, "mailbox": "inbox", "profile": "leased", "size": 3, "lease_for": 5, "bug": false,
			  "messages": [{"mailbox": "inbox", "id": "m4", "attempts": 1, "max_attempts": 2, "token": 7},
			               {"mailbox": "inbox", "id": "m1", "attempts": 2, "max_attempts": 2, "token": 8}]}`,
			traces.Step{Op: traces.OpConsumerFetchBatch, At: 3,
				Args:   traces.Args{Worker: 1, Mailbox: "inbox", Profile: "leased", Size: 3, LeaseFor: 5},
				Result: traces.Result{Messages: []traces.Message{{ID: "m4", Attempts: 1, Token: 7}, {ID: "m1", Attempts: 2, Token: 8}}}},
			false},
		{"eObsConsumerHandleBatch",
			`{"at": 4, "worker": 1, "mailbox": "inbox", "profile": "leased", "outcomes": ["ok", "fail"], "retry_delay": 2,
			  "fault": "", "actions": ["acked", "acked"], "bug": true}`,
			traces.Step{Op: traces.OpConsumerHandleBatch, At: 4,
				Args:   traces.Args{Worker: 1, Mailbox: "inbox", Profile: "leased", Outcomes: []string{"ok", "fail"}, RetryDelay: 2, Fault: "none"},
				Result: traces.Result{Actions: []string{"acked", "acked"}}},
			true},
		{"eObsConsumerEffectsBatch",
			`{"at": 4, "worker": 1, "mailbox": "inbox", "fault": "commit_fails", "ids": ["m1", "m2"], "bug": true}`,
			traces.Step{Op: traces.OpConsumerEffectsBatch, At: 4,
				Args:   traces.Args{Worker: 1, Mailbox: "inbox", Fault: "commit_fails"},
				Result: traces.Result{Effects: []string{"m1", "m2"}}},
			true},
		{"eObsPublisherDeliverBatch",
			`{"at": 5, "publisher": 1, "fault": "none", "retry_delay": 0, "bug": false,
			  "rows": [{"id": "o1", "delivery_attempts": 1, "token": 2}, {"id": "o2", "delivery_attempts": 1, "token": 2}],
			  "actions": ["delivered", "claim_lost"], "duplicates": [false, true]}`,
			traces.Step{Op: traces.OpPublisherDeliverBatch, At: 5,
				Args:   traces.Args{Publisher: 1, IDs: []string{"o1", "o2"}, Token: 2, Fault: "none"},
				Result: traces.Result{Actions: []string{"delivered", "claim_lost"}, Duplicates: []bool{false, true}}},
			false},
	} {
		t.Run(tc.ev, func(t *testing.T) {
			got, bug, err := bridge.ConvertObservation(tc.ev, json.RawMessage(tc.payload))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" || bug != tc.bug {
				t.Errorf("bug %v (want %v), step (-want +got):\n%s", bug, tc.bug, diff)
			}
		})
	}
	for _, tc := range []struct{ ev, payload, field string }{
		{"eObsPublisherDeliverBatch", `{"at": 5, "publisher": 1, "fault": "none", "retry_delay": 0, "bug": false,
			"rows": [{"id": "o1", "delivery_attempts": 1, "token": 2}, {"id": "o2", "delivery_attempts": 1, "token": 3}],
			"actions": ["delivered", "delivered"], "duplicates": [false, false]}`, "rows[1].token"},
		{"eObsConsumerFetchBatch", `{"at": 3, "worker": 1, "mailbox": "inbox", "profile": "leaseless", "size": 3, "lease_for": 0, "bug": false,
			"messages": [{"mailbox": "other", "id": "m4", "attempts": 1, "max_attempts": 2, "token": 0}]}`, "messages[0].mailbox"},
		{"eObsConsumerHandleBatch", `{"at": 4, "worker": 1, "mailbox": "inbox", "profile": "leased", "outcomes": ["ok"], "retry_delay": 2,
			"fault": "", "actions": [3], "bug": false}`, "actions[0]"},
		{"eObsConsumerEffectsBatch", `{"at": 4, "worker": 1, "mailbox": "inbox", "fault": "", "ids": [], "bug": false, "extra": 1}`, "extra"},
	} {
		_, _, err := bridge.ConvertObservation(tc.ev, json.RawMessage(tc.payload))
		var le *bridge.LogError
		if !errors.As(err, &le) || le.Field != tc.field || !errors.Is(err, bridge.ErrBadObservation) {
			t.Errorf("%s: err = %v, want a LogError naming field %s", tc.ev, err, tc.field)
		}
	}
}
