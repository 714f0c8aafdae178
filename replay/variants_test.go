package replay_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/pconform/pconform/internal/targets"
	"github.com/pconform/pconform/internal/tracefmt"
	"github.com/pconform/pconform/replay"
	"github.com/pconform/pconform/traces"
)

// drive runs steps on a fresh target of the named kind, numbering tokens in order of first
// appearance, and returns each step's result and the final state.
func drive(t *testing.T, target string, steps []traces.Step) ([]traces.Result, replay.Snapshot) {
	t.Helper()
	tg, err := targets.New(target, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close()
	ctx := context.Background()
	b := replay.NewBinding()
	var results []traces.Result
	for i, s := range steps {
		obs, err := tg.Do(ctx, s.Op, s.At, b.Args(s.Op, s.Args))
		if err != nil {
			t.Fatalf("%s: step #%d: %v", target, i, err)
		}
		results = append(results, b.Result(nil, obs))
	}
	snap, err := tg.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return results, snap
}

func step(op traces.Op, at int64, a traces.Args) traces.Step {
	return traces.Step{Op: op, At: at, Args: a}
}

// TestVariantSymptoms drives each broken variant and the correct store through the scenario
// that exposes the variant's bug, and checks the bug shows on the variant only.
func TestVariantSymptoms(t *testing.T) {
	leaseless := func(at int64, outcome string) []traces.Step {
		return []traces.Step{
			step(traces.OpConsumerFetch, at, traces.Args{Worker: 1, Mailbox: "in", Profile: traces.ProfileLeaseless}),
			step(traces.OpConsumerHandle, at, traces.Args{Worker: 1, Mailbox: "in", Profile: traces.ProfileLeaseless, Outcome: outcome}),
		}
	}
	raw := slices.Concat(
		[]traces.Step{step(traces.OpEnqueue, 0, traces.Args{Mailbox: "in", ID: "m1", MaxAttempts: 2})},
		leaseless(1, traces.OutcomeFail), leaseless(2, traces.OutcomeFail), leaseless(3, traces.OutcomeFail),
	)
	split := []traces.Step{
		step(traces.OpOutboxEnqueue, 0, traces.Args{ID: "o1", Target: "in", MaxAttempts: 1}),
		step(traces.OpOutboxClaim, 0, traces.Args{Limit: 1, ClaimFor: 10}),
		step(traces.OpPublisherDeliver, 1, traces.Args{Publisher: 1, ID: "o1", Token: 1, Profile: traces.ProfileSplit, Fault: traces.FaultCommitFails}),
	}
	leased := func(worker int, at int64) traces.Step {
		return step(traces.OpConsumerFetch, at, traces.Args{Worker: worker, Mailbox: "in", Profile: traces.ProfileLeased, LeaseFor: 2})
	}
	handle := func(worker int, at int64) traces.Step {
		return step(traces.OpConsumerHandle, at, traces.Args{Worker: worker, Mailbox: "in", Profile: traces.ProfileLeased, Outcome: traces.OutcomeOK})
	}
	unfenced := []traces.Step{
		step(traces.OpEnqueue, 0, traces.Args{Mailbox: "in", ID: "m1", MaxAttempts: 3}),
		leased(1, 0), leased(2, 3), handle(2, 3), handle(1, 4),
	}

	for _, tc := range []struct {
		name, target string
		steps        []traces.Step
		// check returns what is wrong with the run, "" when it shows what it must.
		check func(rs []traces.Result, s replay.Snapshot) string
	}{
		{"raw-attempts strands the message", targets.RawAttempts, raw, func(rs []traces.Result, s replay.Snapshot) string {
			if found := symptom(targets.RawAttempts, s); len(found) != 1 {
				return "want one stranded message"
			}
			if rs[2].Attempt != 0 {
				return "the first failure should hand the raw stored count 0 to the retry decision"
			}
			return ""
		}},
		{"store dead-letters it", targets.Store, raw, func(rs []traces.Result, s replay.Snapshot) string {
			if len(symptom(targets.RawAttempts, s)) != 0 || len(s.DeadLetters) != 1 || s.DeadLetters[0].Attempts != 2 {
				return "want m1 dead-lettered with attempts 2 and nothing stranded"
			}
			if rs[4].Action != traces.ActionDeadLettered || rs[6].Action != traces.ActionIdle {
				return "want dead_lettered on the second failure, then idle"
			}
			return ""
		}},
		{"split-write completes an undelivered row", targets.SplitWrite, split, func(rs []traces.Result, s replay.Snapshot) string {
			if rs[2].Action != traces.ActionDelivered || len(symptom(targets.SplitWrite, s)) != 1 {
				return "want action delivered and a completed row whose message never arrived"
			}
			return ""
		}},
		{"store keeps the row pending", targets.Store, split, func(rs []traces.Result, s replay.Snapshot) string {
			if rs[2].Action != traces.ActionCommitFailed || len(symptom(targets.SplitWrite, s)) != 0 || s.Outbox[0].State != traces.StatePending {
				return "want commit_failed and the row still pending"
			}
			return ""
		}},
		{"unfenced-ack commits the effect twice", targets.UnfencedAck, unfenced, func(rs []traces.Result, s replay.Snapshot) string {
			if rs[4].Action != traces.ActionAcked || !slices.Equal(s.Effects["in"], []string{"m1", "m1"}) {
				return "want the stale worker's handle acked and the effect logged twice"
			}
			return ""
		}},
		{"store fences the stale ack", targets.Store, unfenced, func(rs []traces.Result, s replay.Snapshot) string {
			if rs[4].Action != traces.ActionLeaseLost || !slices.Equal(s.Effects["in"], []string{"m1"}) {
				return "want the stale worker's handle lease_lost and the effect logged once"
			}
			return ""
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rs, s := drive(t, tc.target, tc.steps)
			if problem := tc.check(rs, s); problem != "" {
				lines := make([]string, len(rs))
				for i, r := range rs {
					lines[i] = tracefmt.Step(i, tc.steps[i].Op, tc.steps[i].At, tc.steps[i].Args, r)
				}
				t.Errorf("%s: %s\n%s", tc.target, problem, strings.Join(lines, "\n"))
			}
		})
	}
}

func TestNewTargetUnknown(t *testing.T) {
	if _, err := targets.New("no-such-target", t.TempDir()); err == nil || !strings.Contains(err.Error(), "no-such-target") {
		t.Errorf("err = %v, want an unknown-target error naming it", err)
	}
	dir := t.TempDir()
	tg, err := targets.New(targets.Store, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close()
	if _, err := targets.New(targets.Store, dir); err == nil {
		t.Errorf("a second store target in the same directory was accepted")
	}
}
