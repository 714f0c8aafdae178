package adapter_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/pconform/pconform/adapter"
	"github.com/pconform/pconform/internal/targets"
	"github.com/pconform/pconform/models"
	"github.com/pconform/pconform/profile"
	"github.com/pconform/pconform/replay"
	"github.com/pconform/pconform/traces"
)

// ownConsumer and ownPublisher stand for a store's own runtime: they record what the kit asked.
type ownConsumer struct{ calls []traces.Op }

func (c *ownConsumer) Fetch(_ context.Context, _ int64, a replay.Args) (*replay.Message, error) {
	c.calls = append(c.calls, traces.OpConsumerFetch)
	return &replay.Message{ID: "m-" + a.Mailbox, Attempts: 1, Token: "7"}, nil
}

func (c *ownConsumer) Handle(context.Context, int64, replay.Args) (replay.Observation, error) {
	c.calls = append(c.calls, traces.OpConsumerHandle)
	return replay.Observation{Action: traces.ActionAcked}, nil
}

func (c *ownConsumer) Crash() { c.calls = append(c.calls, traces.OpCrash) }

// ownPublisher commits commits times through the step's faults and reports delivered, or the
// first commit error.
type ownPublisher struct{ commits int }

func (p ownPublisher) Deliver(_ context.Context, _ int64, _ replay.Args, f *adapter.Faults) (replay.Observation, error) {
	if f.Undeliverable() {
		return replay.Observation{Action: traces.ActionDeadLettered}, nil
	}
	for range p.commits {
		if err := f.Commit(); err != nil {
			return replay.Observation{Action: traces.ActionCommitFailed}, err
		}
	}
	return replay.Observation{Action: traces.ActionDelivered}, nil
}

func model() replay.Target { return storeLevel{targets.NewModelTarget(models.Config{})} }

// TestWithRuntimeRunsTheStoresOwn: the protocol steps go to the store's own consumer and
// publisher where the runtime has them, and say so; the rest stays the kit's.
func TestWithRuntimeRunsTheStoresOwn(t *testing.T) {
	ctx := context.Background()
	c := &ownConsumer{}
	tg := adapter.WithRuntime(model(), profile.Profile{}, adapter.Runtime{Consumer: c})
	if got, want := adapter.OwnersOf(tg), (adapter.Owners{Consumer: adapter.OwnerStore, Publisher: adapter.OwnerKit}); got != want {
		t.Errorf("OwnersOf = %v, want %v", got, want)
	}
	fetch := replay.Args{Worker: 1, Mailbox: "inbox", Profile: traces.ProfileLeased, LeaseFor: 2}
	o, err := tg.Do(ctx, traces.OpConsumerFetch, 0, fetch)
	if err != nil || o.Message == nil || o.Message.ID != "m-inbox" {
		t.Fatalf("consumer_fetch = %+v, %v; want the store's consumer's message", o, err)
	}
	if _, err := tg.Do(ctx, traces.OpConsumerHandle, 0, replay.Args{Worker: 1, Mailbox: "inbox", Profile: traces.ProfileLeased, Outcome: traces.OutcomeOK}); err != nil {
		t.Fatal(err)
	}
	if _, err := tg.Do(ctx, traces.OpCrash, 0, replay.Args{}); err != nil {
		t.Fatal(err)
	}
	want := []traces.Op{traces.OpConsumerFetch, traces.OpConsumerHandle, traces.OpCrash}
	if len(c.calls) != len(want) || c.calls[0] != want[0] || c.calls[1] != want[1] || c.calls[2] != want[2] {
		t.Errorf("the store's consumer was asked %v, want %v", c.calls, want)
	}
	// The kit's reference publisher runs the delivery: on an outbox row no enqueue made, it says so.
	if _, err := tg.Do(ctx, traces.OpPublisherDeliver, 0, replay.Args{ID: "o1", Profile: traces.ProfileFold, Fault: traces.FaultNone}); err == nil {
		t.Error("the reference publisher delivered a row no outbox_enqueue inserted")
	}
}

// TestFaults: each fault fails the commits it names, and a crash after the first commit is
// reported as crashed whatever the publisher goes on to say.
func TestFaults(t *testing.T) {
	for _, c := range []struct {
		fault   string
		commits int
		action  string
	}{
		{traces.FaultNone, 2, traces.ActionDelivered},
		{traces.FaultCommitFails, 1, traces.ActionCommitFailed},
		{traces.FaultCrashBetween, 1, traces.ActionCrashed}, // the fold: a crash after its one commit
		{traces.FaultCrashBetween, 2, traces.ActionCrashed}, // the split: the second commit never happens
		{traces.FaultUndeliverable, 1, traces.ActionDeadLettered},
	} {
		tg := adapter.WithRuntime(model(), profile.Profile{}, adapter.Runtime{Publisher: ownPublisher{c.commits}})
		o, err := tg.Do(context.Background(), traces.OpPublisherDeliver, 0, replay.Args{ID: "o1", Profile: traces.ProfileSplit, Fault: c.fault})
		if err != nil || o.Action != c.action {
			t.Errorf("fault %s over %d commits: %q, %v; want %q and no error", c.fault, c.commits, o.Action, err, c.action)
		}
	}
	var f adapter.Faults // the zero value injects nothing
	if err := f.Commit(); err != nil || f.Undeliverable() {
		t.Errorf("the zero Faults: Commit = %v, Undeliverable = %v", err, f.Undeliverable())
	}
}

func TestOwnersOf(t *testing.T) {
	kit := adapter.Owners{Consumer: adapter.OwnerKit, Publisher: adapter.OwnerKit}
	for _, c := range []struct {
		name   string
		target replay.Target
		want   adapter.Owners
	}{
		{"WithProtocol", adapter.WithProtocol(model(), profile.Profile{}), kit},
		{"WithRuntime, none of its own", adapter.WithRuntime(model(), profile.Profile{}, adapter.Runtime{}), kit},
		{"WithRuntime, its own publisher", adapter.WithRuntime(model(), profile.Profile{}, adapter.Runtime{Publisher: ownPublisher{}}),
			adapter.Owners{Consumer: adapter.OwnerKit, Publisher: adapter.OwnerStore}},
		{"a target running its steps itself", targets.NewModelTarget(models.Config{}),
			adapter.Owners{Consumer: adapter.OwnerStore, Publisher: adapter.OwnerStore}},
		{"a target without protocol steps", declared{model(), []traces.Op{traces.OpConsumerHandle, traces.OpPublisherDeliver}},
			adapter.Owners{Consumer: adapter.OwnerNone, Publisher: adapter.OwnerNone}},
	} {
		if got := adapter.OwnersOf(c.target); got != c.want {
			t.Errorf("%s: OwnersOf = %v, want %v", c.name, got, c.want)
		}
	}
	if adapter.ErrUndeliverable.Error() != traces.ReasonUndeliverable {
		t.Errorf("ErrUndeliverable's message is %q, want the trace's reason %q", adapter.ErrUndeliverable, traces.ReasonUndeliverable)
	}
}

// declared is a target declaring ops unsupported.
type declared struct {
	replay.Target
	unsupported []traces.Op
}

func (d declared) Capabilities() replay.Capabilities {
	return replay.Capabilities{Unsupported: d.unsupported}
}

// failing is a publisher whose first commit fails (fault commit_fails) and that returns what
// wrap makes of the commit's error.
type failing struct{ wrap func(commit error) error }

func (p failing) Deliver(_ context.Context, _ int64, _ replay.Args, f *adapter.Faults) (replay.Observation, error) {
	return replay.Observation{Action: traces.ActionCommitFailed}, p.wrap(f.Commit())
}

// TestFaultBesideAnotherError: an injected fault alone, however wrapped, is no failure of the
// step; a fault that the publisher wrapped or joined with another error is, and names it.
func TestFaultBesideAnotherError(t *testing.T) {
	errRelease := errors.New("the release's commit failed: disk full")
	for _, c := range []struct {
		name string
		wrap func(commit error) error
		// other is the error the step's failure must name; nil when the step must not fail.
		other error
	}{
		{"the fault", func(err error) error { return err }, nil},
		{"the fault, wrapped", func(err error) error { return fmt.Errorf("delivering o1: %w", err) }, nil},
		{"the fault joined with nothing", func(err error) error { return errors.Join(fmt.Errorf("delivering o1: %w", err), nil) }, nil},
		{"both faults", func(err error) error { return errors.Join(err, adapter.ErrCrashed) }, nil},
		{"the fault joined with a failed release", func(err error) error { return errors.Join(fmt.Errorf("delivering o1: %w", err), errRelease) }, errRelease},
		{"the fault wrapped with a failed release", func(err error) error { return fmt.Errorf("%w, after %w", errRelease, err) }, errRelease},
		{"a failed release, wrapped beside the joined fault", func(err error) error {
			return fmt.Errorf("deliver: %w", errors.Join(err, fmt.Errorf("release: %w", errRelease)))
		}, errRelease},
		{"another error alone", func(error) error { return errRelease }, errRelease},
	} {
		t.Run(c.name, func(t *testing.T) {
			tg := adapter.WithRuntime(model(), profile.Profile{}, adapter.Runtime{Publisher: failing{c.wrap}})
			o, err := tg.Do(context.Background(), traces.OpPublisherDeliver, 0, replay.Args{ID: "o1", Profile: traces.ProfileSplit, Fault: traces.FaultCommitFails})
			switch {
			case c.other == nil && err != nil:
				t.Errorf("the step failed: %v; an injected fault alone is no failure", err)
			case c.other == nil && o.Action != traces.ActionCommitFailed:
				t.Errorf("action %q, want %q", o.Action, traces.ActionCommitFailed)
			case c.other != nil && err == nil:
				t.Errorf("the step did not fail; the fault hid %q", c.other)
			case c.other != nil && (!errors.Is(err, c.other) || !strings.Contains(err.Error(), c.other.Error())):
				t.Errorf("the step failed with %q, which does not name %q", err, c.other)
			case c.other != nil && strings.Contains(err.Error(), adapter.ErrCommitFailed.Error()):
				t.Errorf("the failure %q names the injected fault, not only the other error", err)
			}
		})
	}
}

// TestRuntimeFailedCommit: a handle whose commit fails is not the store's consumer's to run (it
// changes nothing): the kit answers commit_failed, and the worker holds nothing after it.
func TestRuntimeFailedCommit(t *testing.T) {
	ctx := context.Background()
	c := &ownConsumer{}
	tg := adapter.WithRuntime(model(), profile.Profile{}, adapter.Runtime{Consumer: c})
	fetch := replay.Args{Worker: 1, Mailbox: "inbox", Profile: traces.ProfileLeased, LeaseFor: 2}
	if _, err := tg.Do(ctx, traces.OpConsumerFetch, 0, fetch); err != nil {
		t.Fatal(err)
	}
	handle := replay.Args{Worker: 1, Mailbox: "inbox", Profile: traces.ProfileLeased, Outcome: traces.OutcomeOK, Fault: traces.FaultCommitFails}
	if o, err := tg.Do(ctx, traces.OpConsumerHandle, 0, handle); err != nil || o.Action != traces.ActionCommitFailed {
		t.Fatalf("the failed handle = %+v, %v; want commit_failed", o, err)
	}
	handle.Fault = ""
	if o, err := tg.Do(ctx, traces.OpConsumerHandle, 0, handle); err != nil || o.Action != traces.ActionIdle {
		t.Fatalf("the handle after it = %+v, %v; want idle (the worker holds nothing)", o, err)
	}
	if len(c.calls) != 1 || c.calls[0] != traces.OpConsumerFetch {
		t.Errorf("the store's consumer was asked %v, want only the fetch", c.calls)
	}
}
