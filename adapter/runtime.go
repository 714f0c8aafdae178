package adapter

import (
	"context"
	"errors"
	"fmt"

	"github.com/pconform/pconform/profile"
	"github.com/pconform/pconform/replay"
	"github.com/pconform/pconform/traces"
)

// Consumer is a store's own consumer, driven one half-iteration at a time: what a store author
// implements so that the kit checks the author's retry, dead-letter and acknowledgement code, not
// the kit's reference consumer. Each method runs at logical time at (traces.At converts it).
//
// The args are the step's (docs/trace-format.md): Worker, Mailbox, Profile (traces.ProfileLeased
// or traces.ProfileLeaseless), LeaseFor on a leased fetch; Outcome and RetryDelay on a handle.
type Consumer interface {
	// Fetch is one consumer_fetch: on the leased path the consumer's sweep and lease, on the
	// leaseless path its peek. It returns the message as the trace reports it (leased: the
	// attempts after the lease's bump and the token; leaseless: the stored attempts, no token),
	// nil when none was eligible. The consumer keeps the delivery for the worker's next Handle; a
	// worker that fetches again drops what it held.
	Fetch(ctx context.Context, at int64, a replay.Args) (*replay.Message, error)
	// Handle is one consumer_handle of what the worker's last Fetch got. The handler returns
	// HandlerError(a) unless a.Succeeds(); its effect, on success, is the message id appended
	// to the mailbox's effects log in the acknowledgement's transaction (docs/semantics.md,
	// "Effects"). The retry policy retries after a.RetryDelay seconds when a.Retries(), and
	// declines otherwise. It reports the Action and, for a failure, the effective Attempt handed
	// to the retry decision. Handle is called only for a worker whose last Fetch got a message
	// and that has not handled it since (nor crashed): the kit reports any other handle idle
	// (traces.ActionIdle) itself. Nor is it called for a handle whose commit fails (fault
	// commit_fails): that changes nothing, so the kit reports commit_failed itself and the
	// worker's delivery is dropped, as when it fetches again.
	Handle(ctx context.Context, at int64, a replay.Args) (replay.Observation, error)
	// Crash forgets every fetched, unhandled delivery: the process died. The kit reopens the
	// store right after.
	Crash()
}

// Publisher is a store's own outbox publisher, driven one delivery at a time.
type Publisher interface {
	// Deliver is one publisher_deliver of outbox row a.ID under claim token a.Token, on the path
	// a.Profile names (traces.ProfileFold or traces.ProfileSplit); a.RetryDelay is the delay of a
	// row released after a failed delivery. Every commit the delivery makes goes through
	// f.Commit, which injects the step's fault; under traces.FaultUndeliverable the publisher's
	// check of the row refuses it with ErrUndeliverable. It reports the Action and whether the
	// target enqueue found the id present (Duplicate). An error wrapping ErrCommitFailed or
	// ErrCrashed, the injected faults, is not a failure of the step; one that also wraps or
	// joins another error is, and the failure names the other error.
	Deliver(ctx context.Context, at int64, a replay.Args, f *Faults) (replay.Observation, error)
}

// Runtime is a store's own consumer and publisher for [WithRuntime]. A nil one is replaced by the
// kit's reference ([WithProtocol]'s).
type Runtime struct {
	Consumer  Consumer
	Publisher Publisher

	_ struct{}
}

var (
	// ErrCommitFailed is what [Faults.Commit] returns for the commit a commit_fails step fails.
	ErrCommitFailed = errors.New("adapter: injected fault: the commit failed")
	// ErrCrashed is what [Faults.Commit] returns for every commit after the first in a
	// crash_between step: the process died after its first commit.
	ErrCrashed = errors.New("adapter: injected fault: the process died after its first commit")
	// ErrUndeliverable is the refusal of the publisher's check in an undeliverable step; its
	// message is the reason the trace expects.
	ErrUndeliverable = errors.New(traces.ReasonUndeliverable)
)

// Faults injects one publisher_deliver step's fault at the publisher's commits.
type Faults struct {
	fault   string
	commits int
	crashed bool
}

// Commit is called by the publisher at each commit point, after the transaction's body ran and
// right before it commits. On nil the publisher commits; on an error (ErrCommitFailed, ErrCrashed)
// it rolls the transaction back and handles the error as a failed commit. commit_fails fails the
// step's first commit; crash_between lets the first commit through and fails every later one,
// as a process that died after it.
func (f *Faults) Commit() error {
	f.commits++
	switch {
	case f.fault == traces.FaultCommitFails && f.commits == 1:
		return ErrCommitFailed
	case f.fault == traces.FaultCrashBetween && f.commits > 1:
		return ErrCrashed
	case f.fault == traces.FaultCrashBetween:
		f.crashed = true // the process dies right after its first commit
	}
	return nil
}

// Undeliverable reports whether the publisher's check refuses the row (fault undeliverable).
func (f *Faults) Undeliverable() bool { return f.fault == traces.FaultUndeliverable }

// Owner says whose code runs a target's consumer or publisher steps.
type Owner string

const (
	// OwnerStore: the store's own consumer or publisher runs the steps.
	OwnerStore Owner = "the store's own"
	// OwnerKit: the kit's reference consumer or publisher runs them, on the store's operations.
	OwnerKit Owner = "the kit's reference (adapter.WithProtocol)"
	// OwnerNone: the target runs no such step; traces that need one are skipped.
	OwnerNone Owner = "none (the target does not run these steps)"
)

// Owners says whose consumer and whose publisher run a target's protocol steps.
type Owners struct {
	Consumer, Publisher Owner
}

func (o Owners) String() string {
	return fmt.Sprintf("consumer: %s; publisher: %s", o.Consumer, o.Publisher)
}

// OwnersOf says whose consumer and publisher run target's protocol steps: a wrapper of this
// package says so itself (a target that wraps one forwards its Owners method); any other target
// runs the steps it supports itself.
func OwnersOf(target replay.Target) Owners {
	if o, ok := target.(interface{ Owners() Owners }); ok {
		return o.Owners()
	}
	c := replay.CapabilitiesOf(target)
	own := func(op traces.Op) Owner {
		if c.Supports(op) {
			return OwnerStore
		}
		return OwnerNone
	}
	return Owners{Consumer: own(traces.OpConsumerHandle), Publisher: own(traces.OpPublisherDeliver)}
}

// WithRuntime returns store with the protocol steps run by r: the store's own consumer and
// publisher where r has them, the kit's reference ones (as [WithProtocol] runs them, under
// profile p) where it does not. Store-level steps go to store unchanged. The effects log of the
// snapshot is store's when r has a consumer (the store keeps it), the reference consumer's
// otherwise. wake and poll_tick are judged as WithProtocol judges them. store is a [Target], or a
// store with a method per operation, as [Adapt] takes it.
func WithRuntime(store Store, p profile.Profile, r Runtime) replay.Target {
	return &runtime{protocol: WithProtocol(store, p).(*protocol), r: r, held: map[int]bool{}}
}

// Owners of the reference steps: the kit's.
func (w *protocol) Owners() Owners { return Owners{Consumer: OwnerKit, Publisher: OwnerKit} }

// runtime is the wrapper WithRuntime returns.
type runtime struct {
	*protocol
	r Runtime
	// held says which workers hold a delivery the store's consumer fetched and has not handled:
	// the wrapper answers a handle by any other worker idle itself, so the consumer's Handle
	// is only called with a delivery to handle. A crash forgets them, a reopen does not.
	held map[int]bool
}

func (w *runtime) Owners() Owners {
	o := Owners{Consumer: OwnerKit, Publisher: OwnerKit}
	if w.r.Consumer != nil {
		o.Consumer = OwnerStore
	}
	if w.r.Publisher != nil {
		o.Publisher = OwnerStore
	}
	return o
}

func (w *runtime) Do(ctx context.Context, op traces.Op, at int64, a replay.Args) (replay.Observation, error) {
	c, p := w.r.Consumer, w.r.Publisher
	switch {
	case op == traces.OpConsumerFetch && c != nil:
		w.wakes.Fetched(a.Worker, a.Mailbox)
		m, err := c.Fetch(ctx, at, a)
		// A worker that fetches again drops what it held, whatever this fetch gets.
		w.held[a.Worker] = err == nil && m != nil
		return replay.Observation{Message: m}, wrapStep(op, err)
	case op == traces.OpConsumerHandle && c != nil:
		if !w.held[a.Worker] {
			return replay.Observation{Action: traces.ActionIdle}, nil
		}
		delete(w.held, a.Worker)
		if a.Fault == traces.FaultCommitFails {
			// A handle whose commit fails changes nothing, so the consumer's Handle is not run:
			// the worker drops its delivery, as a worker that fetches again does, and the steps
			// after this one show whether the store kept the message where its fetch left it.
			return replay.Observation{Action: traces.ActionCommitFailed}, nil
		}
		o, err := c.Handle(ctx, at, a)
		return o, wrapStep(op, err)
	case op == traces.OpWorkerDrain && c != nil:
		delete(w.held, a.Worker)
	case op == traces.OpPublisherDeliver && p != nil:
		f := &Faults{fault: a.Fault}
		o, err := p.Deliver(ctx, at, a, f)
		err = besideFault(err)
		if f.crashed {
			o.Action = traces.ActionCrashed // nobody saw what the publisher went on to report
		}
		if row, ok := w.outbox[a.ID]; ok && err == nil {
			// The reference consumer, if it runs, reads a delivered message's max_attempts here.
			if _, known := w.maxAttempts[a.ID]; !known {
				w.maxAttempts[a.ID] = row.MaxAttempts
			}
		}
		return o, wrapStep(op, err)
	case op == traces.OpCrash && c != nil:
		clear(w.held)
		c.Crash()
		// A worker_drain needs nothing more of the store's consumer: the drained worker takes
		// no further step, so what it may still hold is never handled.
	}
	return w.protocol.Do(ctx, op, at, a)
}

// Snapshot is the store's; with the reference consumer, its effects log.
func (w *runtime) Snapshot(ctx context.Context) (replay.Snapshot, error) {
	if w.r.Consumer != nil {
		return w.store.Snapshot(ctx)
	}
	return w.protocol.Snapshot(ctx)
}

// besideFault is what a delivery's error says beyond the injected faults it carries: nil when
// err is a fault alone (ErrCommitFailed or ErrCrashed, wrapped or joined with no other error),
// err itself when it carries no fault, and otherwise an error naming the other errors, which the
// fault must not hide (a release step that failed after the failed commit, say). Another error
// is found only where it is wrapped with %w or joined (errors.Join), not in a message's text.
func besideFault(err error) error {
	if !isFault(err) {
		return err
	}
	others := besides(err)
	if len(others) == 0 {
		return nil
	}
	return fmt.Errorf("the publisher failed beside the injected fault: %w", errors.Join(others...))
}

func isFault(err error) bool { return errors.Is(err, ErrCommitFailed) || errors.Is(err, ErrCrashed) }

// besides lists the errors of err's tree that are neither an injected fault nor an error that
// only wraps one: the largest subtrees that carry no fault.
func besides(err error) []error {
	switch {
	case err == nil || err == ErrCommitFailed || err == ErrCrashed:
		return nil
	case !isFault(err):
		return []error{err}
	}
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		return besides(u.Unwrap())
	case interface{ Unwrap() []error }:
		var out []error
		for _, e := range u.Unwrap() {
			out = append(out, besides(e)...)
		}
		return out
	}
	return nil // an error whose own Is method matches a fault: a fault alone
}

func wrapStep(op traces.Op, err error) error {
	if err != nil {
		return fmt.Errorf("adapter: the store's own %s: %w", op, err)
	}
	return nil
}
