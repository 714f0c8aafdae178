package traces_test

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/pconform/pconform/traces"
)

// A producer builds a trace in memory and writes it; the writer validates it first.
func ExampleWrite() {
	t := &traces.Trace{
		Format: traces.Format,
		Name:   "enqueue-then-lease",
		Origin: traces.Origin{Kind: traces.OriginHand},
		Expect: traces.Expect{DivergesAt: -1},
		Steps: []traces.Step{
			{Op: traces.OpEnqueue, At: 0, Args: traces.Args{Mailbox: "inbox", ID: "m1", MaxAttempts: 3}},
			{Op: traces.OpLease, At: 1, Args: traces.Args{Mailbox: "inbox", LeaseFor: 30},
				Result: traces.Result{Message: &traces.Message{ID: "m1", Attempts: 1, Token: 1}}},
			{Op: traces.OpAck, At: 2, Args: traces.Args{ID: "m1", Token: 1}},
		},
		Final: &traces.Snapshot{
			Messages: []traces.MessageRow{{Mailbox: "inbox", ID: "m1", State: traces.StateAcked, Attempts: 1, MaxAttempts: 3}},
		},
	}
	traces.Canonicalize(t.Final)
	if err := traces.Write(os.Stdout, t); err != nil {
		fmt.Println(err)
	}
	// Output:
	// {
	//   "format": "pconform.trace/v2",
	//   "name": "enqueue-then-lease",
	//   "origin": {
	//     "kind": "hand"
	//   },
	//   "expect": {
	//     "diverges_at": -1
	//   },
	//   "steps": [
	//     {"op": "enqueue", "at": 0, "args": {"mailbox": "inbox", "id": "m1", "max_attempts": 3}, "result": {}},
	//     {"op": "lease", "at": 1, "args": {"mailbox": "inbox", "lease_for": 30}, "result": {"message": {"id": "m1", "attempts": 1, "token": 1}}},
	//     {"op": "ack", "at": 2, "args": {"id": "m1", "token": 1}, "result": {}}
	//   ],
	//   "final": {
	//     "messages": [
	//       {"mailbox": "inbox", "id": "m1", "state": "acked", "attempts": 1, "max_attempts": 3, "available_at": 0}
	//     ],
	//     "outbox": [],
	//     "dead_letters": [],
	//     "effects": {}
	//   }
	// }
}

// Errors name the file, the step and the field; a *ParseError carries them as values.
func ExampleRead() {
	const file = `{"format": "pconform.trace/v2", "name": "x", "origin": {"kind": "hand"},
 "expect": {"diverges_at": -1}, "final": null, "steps": [
  {"op": "lease", "at": 3, "args": {"mailbox": "inbox", "lease_for": 0}, "result": {"message": null}}]}`
	_, err := traces.Read(strings.NewReader(file), "corpus/x.json")
	fmt.Println(err)

	_, err = traces.Read(strings.NewReader(`{"format": `), "corpus/y.json")
	var pe *traces.ParseError
	if errors.As(err, &pe) {
		fmt.Println(pe.Line, pe.Col, errors.Is(err, traces.ErrSyntax))
	}
	// Output:
	// traces: corpus/x.json: step 0 (lease): args.lease_for: must be >= 1, got 0
	// 1 12 true
}
