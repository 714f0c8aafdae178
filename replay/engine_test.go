package replay_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/pconform/pconform/replay"
	"github.com/pconform/pconform/traces"
)

// scripted is a fake Target: it answers each Do with the next scripted observation and records
// the arguments it was given, the reopens and the snapshot requests.
type scripted struct {
	answers []replay.Observation
	errAt   int   // index of the Do call that fails with err (-1: none)
	err     error // returned by Do at errAt
	snap    replay.Snapshot
	calls   []replay.Args
	ops     []traces.Op
	reopens []int // number of Do calls made before each Reopen
}

func (s *scripted) Do(_ context.Context, op traces.Op, _ int64, a replay.Args) (replay.Observation, error) {
	i := len(s.calls)
	s.calls = append(s.calls, a)
	s.ops = append(s.ops, op)
	if i == s.errAt {
		return replay.Observation{}, s.err
	}
	if i >= len(s.answers) {
		return replay.Observation{}, fmt.Errorf("scripted: no answer for call %d", i)
	}
	return s.answers[i], nil
}
func (s *scripted) Snapshot(context.Context) (replay.Snapshot, error) { return s.snap, nil }
func (s *scripted) Reopen(context.Context) error {
	s.reopens = append(s.reopens, len(s.calls))
	return nil
}
func (s *scripted) Close() error { return nil }

func newScripted(answers ...replay.Observation) *scripted {
	return &scripted{answers: answers, errAt: -1}
}

// leaseTrace: enqueue two messages, lease both (symbols 1 and 2), ack the first with symbol 1 and
// the second with symbol 2.
func leaseTrace() *traces.Trace {
	return &traces.Trace{
		Format: traces.Format, Origin: traces.Origin{Kind: "hand"}, Name: "lease-two", Expect: traces.Expect{DivergesAt: -1},
		Steps: []traces.Step{
			{Op: traces.OpEnqueue, At: 0, Args: traces.Args{Mailbox: "a", ID: "m1", MaxAttempts: 3}},
			{Op: traces.OpEnqueue, At: 0, Args: traces.Args{Mailbox: "a", ID: "m2", MaxAttempts: 3}},
			{Op: traces.OpLease, At: 1, Args: traces.Args{Mailbox: "a", LeaseFor: 10},
				Result: traces.Result{Message: &traces.Message{ID: "m1", Attempts: 1, Token: 1}}},
			{Op: traces.OpLease, At: 1, Args: traces.Args{Mailbox: "a", LeaseFor: 10},
				Result: traces.Result{Message: &traces.Message{ID: "m2", Attempts: 1, Token: 2}}},
			{Op: traces.OpAck, At: 2, Args: traces.Args{ID: "m1", Token: 1}},
			{Op: traces.OpAck, At: 2, Args: traces.Args{ID: "m2", Token: 2}},
		},
	}
}

func leaseAnswers(tok1, tok2 string) []replay.Observation {
	return []replay.Observation{
		{}, {},
		{Message: &replay.Message{ID: "m1", Attempts: 1, Token: tok1}},
		{Message: &replay.Message{ID: "m2", Attempts: 1, Token: tok2}},
		{}, {},
	}
}

func mustRun(t *testing.T, tr *traces.Trace, target replay.Target, opts replay.Options) replay.Verdict {
	t.Helper()
	v, err := replay.Run(context.Background(), tr, target, opts)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return v
}

func TestBindingTranslatesArgs(t *testing.T) {
	target := newScripted(leaseAnswers("tokA", "tokB")...)
	v := mustRun(t, leaseTrace(), target, replay.Options{})
	if v.Outcome != replay.Match {
		t.Fatalf("outcome %v, want match: %s", v.Outcome, v)
	}
	if got := []string{target.calls[4].Token, target.calls[5].Token}; !reflect.DeepEqual(got, []string{"tokA", "tokB"}) {
		t.Errorf("ack tokens sent %q, want the bound real tokens [tokA tokB]", got)
	}
	if want := map[int]string{1: "tokA", 2: "tokB"}; !reflect.DeepEqual(v.Tokens.Lease, want) {
		t.Errorf("bindings %v, want %v", v.Tokens, want)
	}
	if v.FinalCompared || v.Step != 6 {
		t.Errorf("final compared %t step %d, want false and 6 (trace has no final)", v.FinalCompared, v.Step)
	}
}

func TestUnboundSymbolMatchesNothing(t *testing.T) {
	tr := leaseTrace()
	tr.Steps[4].Args.Token = 7 // never bound
	tr.Steps[4].Result.Err = traces.ErrKindLeaseLost
	answers := leaseAnswers("tokA", "tokB")
	answers[4] = replay.Observation{Err: traces.ErrKindLeaseLost}
	target := newScripted(answers...)
	v := mustRun(t, tr, target, replay.Options{})
	if v.Outcome != replay.Match {
		t.Fatalf("outcome %v: %s", v.Outcome, v)
	}
	if got := target.calls[4].Token; got != "forged-lease-7" {
		t.Errorf("unbound symbol sent as %q, want forged-lease-7", got)
	}
}

func TestOneRealTokenForTwoSymbolsDiverges(t *testing.T) {
	v := mustRun(t, leaseTrace(), newScripted(leaseAnswers("tokA", "tokA")...), replay.Options{})
	if v.Outcome != replay.Diverged || v.Step != 3 {
		t.Fatalf("got %s, want a divergence at step #3", v)
	}
	if v.Observed.Message.Token != 1 {
		t.Errorf("observed token symbol %d, want 1 (the symbol tokA is already bound to)", v.Observed.Message.Token)
	}
	if !strings.Contains(v.Diff, "token=1") {
		t.Errorf("diff does not name the token:\n%s", v.Diff)
	}
}

func TestBoundSymbolMustComeBackTheSame(t *testing.T) {
	tr := &traces.Trace{Format: traces.Format, Origin: traces.Origin{Kind: "hand"}, Name: "claim", Expect: traces.Expect{DivergesAt: -1}, Steps: []traces.Step{
		{Op: traces.OpOutboxEnqueue, Args: traces.Args{ID: "o1", Target: "a", MaxAttempts: 1}},
		{Op: traces.OpOutboxEnqueue, Args: traces.Args{ID: "o2", Target: "a", MaxAttempts: 1}},
		{Op: traces.OpOutboxClaim, Args: traces.Args{Limit: 2, ClaimFor: 5}, Result: traces.Result{Claimed: []traces.Claimed{
			{ID: "o1", DeliveryAttempts: 1, Token: 1}, {ID: "o2", DeliveryAttempts: 1, Token: 1}}}},
	}}
	claim := func(t1, t2 string) replay.Observation {
		return replay.Observation{Claimed: []replay.ClaimedRow{{ID: "o1", DeliveryAttempts: 1, Token: t1}, {ID: "o2", DeliveryAttempts: 1, Token: t2}}}
	}
	if v := mustRun(t, tr, newScripted(replay.Observation{}, replay.Observation{}, claim("x", "x")), replay.Options{}); v.Outcome != replay.Match {
		t.Errorf("one token for the batch: %s, want match", v)
	}
	v := mustRun(t, tr, newScripted(replay.Observation{}, replay.Observation{}, claim("x", "y")), replay.Options{})
	if v.Outcome != replay.Diverged || v.Step != 2 {
		t.Fatalf("two tokens for one symbol: %s, want a divergence at step #2", v)
	}
	if got := v.Observed.Claimed[1].Token; got != -1 {
		t.Errorf("the stray token shows as symbol %d, want -1", got)
	}
}

func TestDivergesAtTheFirstDifferentStep(t *testing.T) {
	answers := leaseAnswers("tokA", "tokB")
	answers[3].Message.Attempts = 2
	answers[5].Err = traces.ErrKindLeaseLost // later differences are not reached
	target := newScripted(answers...)
	v := mustRun(t, leaseTrace(), target, replay.Options{})
	if v.Outcome != replay.Diverged || v.Step != 3 || v.Op != traces.OpLease {
		t.Fatalf("got %s, want a divergence at step #3 (lease)", v)
	}
	if len(target.calls) != 4 {
		t.Errorf("target ran %d steps, want 4 (the run stops at the divergence)", len(target.calls))
	}
	if len(v.History) != 4 || !strings.HasPrefix(v.History[3], "#3 @1 lease") || !strings.Contains(v.History[3], "attempts=2") {
		t.Errorf("history does not end with the observed step #3:\n%s", strings.Join(v.History, "\n"))
	}
	if want := (traces.Result{Message: &traces.Message{ID: "m2", Attempts: 2, Token: 2}}); !cmp.Equal(*v.Observed, want) {
		t.Errorf("observed %+v, want %+v", *v.Observed, want)
	}
}

func TestFinalSnapshot(t *testing.T) {
	tr := leaseTrace()
	tr.Final = &traces.Snapshot{Messages: []traces.MessageRow{
		{Mailbox: "a", ID: "m1", State: "acked", Attempts: 1, MaxAttempts: 3},
		{Mailbox: "a", ID: "m2", State: "acked", Attempts: 1, MaxAttempts: 3},
	}}
	before := replay.CloneSnapshot(*tr.Final)
	good := replay.Snapshot{Messages: []replay.MessageRow{
		{Mailbox: "a", ID: "m2", State: "acked", Attempts: 1, MaxAttempts: 3},
		{Mailbox: "a", ID: "m1", State: "acked", Attempts: 1, MaxAttempts: 3},
	}}
	target := newScripted(leaseAnswers("tokA", "tokB")...)
	target.snap = good
	if v := mustRun(t, tr, target, replay.Options{}); v.Outcome != replay.Match || !v.FinalCompared {
		t.Errorf("equal snapshots in another order: %s, want a match with the final compared", v)
	}
	if !cmp.Equal(before, *tr.Final) {
		t.Errorf("Run reordered the trace's final snapshot")
	}

	bad := good
	bad.Messages = append([]replay.MessageRow(nil), good.Messages...)
	bad.Messages[0].State, bad.Messages[0].Token = "ready", "tokZ"
	target = newScripted(leaseAnswers("tokA", "tokB")...)
	target.snap = bad
	v := mustRun(t, tr, target, replay.Options{})
	if v.Outcome != replay.Diverged || v.Step != replay.FinalStep {
		t.Fatalf("got %s, want a divergence at the final snapshot", v)
	}
	if v.ObservedFinal.Messages[1].Token != -1 {
		t.Errorf("an unbound token in the final snapshot shows as %d, want -1", v.ObservedFinal.Messages[1].Token)
	}
	if v.Reason != "the final snapshot differs: message a/m2" {
		t.Errorf("reason %q does not name exactly the differing row a/m2", v.Reason)
	}
	if !strings.Contains(v.Diff, "ready") {
		t.Errorf("diff does not show the state:\n%s", v.Diff)
	}
}

func TestTargetErrorIsAnError(t *testing.T) {
	target := newScripted(leaseAnswers("a", "b")...)
	target.errAt, target.err = 2, errors.New("disk on fire")
	_, err := replay.Run(context.Background(), leaseTrace(), target, replay.Options{})
	if err == nil || !strings.Contains(err.Error(), "disk on fire") || !strings.Contains(err.Error(), "step #2") {
		t.Fatalf("err = %v, want the target's error naming step #2", err)
	}
}

func TestInconclusive(t *testing.T) {
	target := newScripted(leaseAnswers("a", "b")...)
	target.errAt, target.err = 1, fmt.Errorf("fake: peek: %w", replay.ErrUnsupported)
	v := mustRun(t, leaseTrace(), target, replay.Options{})
	if v.Outcome != replay.Inconclusive || v.Step != 1 {
		t.Errorf("unsupported op: %s, want inconclusive at step #1", v)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	v, err := replay.Run(ctx, leaseTrace(), newScripted(leaseAnswers("a", "b")...), replay.Options{})
	if err != nil || v.Outcome != replay.Inconclusive || v.Step != 0 {
		t.Errorf("cancelled context: %s, %v; want inconclusive at step #0 and no error", v, err)
	}
}

func TestCrashOptionsReopen(t *testing.T) {
	tr := leaseTrace()
	tr.Final = &traces.Snapshot{}
	for _, tc := range []struct {
		name string
		opts replay.Options
		want []int
	}{
		{"none", replay.Options{}, nil},
		{"before step 3", replay.Options{ReopenBefore: []int{3}}, []int{3}},
		{"before the final snapshot", replay.Options{ReopenBefore: []int{6}}, []int{6}},
		{"every step", replay.Options{ReopenEveryStep: true}, []int{0, 1, 2, 3, 4, 5, 6}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			target := newScripted(leaseAnswers("a", "b")...)
			if v := mustRun(t, tr, target, tc.opts); v.Outcome != replay.Match {
				t.Fatalf("%s", v)
			}
			if !reflect.DeepEqual(target.reopens, tc.want) {
				t.Errorf("reopened after %v Do calls, want %v", target.reopens, tc.want)
			}
		})
	}
}

func TestRowsInvolved(t *testing.T) {
	answers := leaseAnswers("tokA", "tokB")
	answers[4] = replay.Observation{Err: traces.ErrKindLeaseLost}
	target := newScripted(answers...)
	target.snap = replay.Snapshot{
		Messages: []replay.MessageRow{
			{Mailbox: "a", ID: "m1", State: "ready", Attempts: 1, MaxAttempts: 3, Token: "tokA", LeaseUntil: 11},
			{Mailbox: "a", ID: "m2", State: "ready", Attempts: 1, MaxAttempts: 3, Token: "tokB", LeaseUntil: 11},
		},
		Effects: map[string][]string{"a": {"m0", "m1", "m2"}},
	}
	v := mustRun(t, leaseTrace(), target, replay.Options{})
	if v.Outcome != replay.Diverged || v.Step != 4 {
		t.Fatalf("got %s, want a divergence at step #4", v)
	}
	// Of the mailbox's effect log only the involved message's entry: the log grows with the
	// trace, and a long trace's report must not repeat it whole.
	want := traces.Snapshot{
		Messages: []traces.MessageRow{{Mailbox: "a", ID: "m1", State: "ready", Attempts: 1, MaxAttempts: 3, Token: 1, LeaseUntil: 11}},
		Effects:  map[string][]string{"a": {"m1"}},
	}
	if diff := cmp.Diff(want, v.Rows, replay.CmpOptions); diff != "" {
		t.Errorf("rows involved (-want +got):\n%s", diff)
	}
}

// TestArgsMirrorTraces keeps Args, Observation and the snapshot rows in step with their traces
// counterparts: same field names and types, except that tokens are strings.
func TestArgsMirrorTraces(t *testing.T) {
	for _, pair := range []struct{ ours, theirs any }{
		{replay.Args{}, traces.Args{}},
		{replay.Observation{}, traces.Result{}},
		{replay.Message{}, traces.Message{}},
		{replay.ClaimedRow{}, traces.Claimed{}},
		{replay.MessageRow{}, traces.MessageRow{}},
		{replay.OutboxRow{}, traces.OutboxRow{}},
		{replay.Snapshot{}, traces.Snapshot{}},
	} {
		ours, theirs := reflect.TypeOf(pair.ours), reflect.TypeOf(pair.theirs)
		if ours.NumField() != theirs.NumField() {
			t.Errorf("%v has %d fields, %v has %d", ours, ours.NumField(), theirs, theirs.NumField())
			continue
		}
		for i := range ours.NumField() {
			o, th := ours.Field(i), theirs.Field(i)
			if o.Name != th.Name {
				t.Errorf("%v field %d is %s, %v's is %s", ours, i, o.Name, theirs, th.Name)
			}
			if o.Name == "Token" && o.Type.Kind() == reflect.String && th.Type.Kind() == reflect.Int {
				continue
			}
			if o.Type.Kind() != th.Type.Kind() {
				t.Errorf("%v.%s is a %v, %v's is a %v", ours, o.Name, o.Type.Kind(), theirs, th.Type.Kind())
			}
		}
	}
}

func TestAfterStep(t *testing.T) {
	target := newScripted(leaseAnswers("tokA", "tokB")...)
	target.snap = replay.Snapshot{Messages: []replay.MessageRow{{Mailbox: "a", ID: "m1", State: "ready", Attempts: 1, MaxAttempts: 3, Token: "tokA", LeaseUntil: 11}}}
	var steps []int
	var last traces.Snapshot
	opts := replay.Options{}
	opts.AfterStep = func(i int, s traces.Snapshot) { steps, last = append(steps, i), s }
	if v := mustRun(t, leaseTrace(), target, opts); v.Outcome != replay.Match {
		t.Fatalf("%s", v)
	}
	if !reflect.DeepEqual(steps, []int{0, 1, 2, 3, 4, 5}) {
		t.Errorf("AfterStep called for steps %v, want 0..5", steps)
	}
	if len(last.Messages) != 1 || last.Messages[0].Token != 1 {
		t.Errorf("AfterStep snapshot %+v, want m1 with token symbol 1", last)
	}
}
