package adstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/pconform/pconform/actordelivery"
	"github.com/pconform/pconform/adapter"
)

var (
	// errCommitFailed is what a commit_fails step's first commit returns, after its transaction
	// rolled back.
	errCommitFailed = errors.New("adstore: injected fault: the commit failed")
	// errGone is what every commit after the first returns in a crash_between step.
	errGone = errors.New("adstore: injected fault: the process died after its first commit")
	// errUndeliverable is the publisher check's refusal; its message is the reason the trace
	// expects.
	errUndeliverable = adapter.ErrUndeliverable
)

// faulty is the store a publisher_deliver step's publisher delivers through. A commit is a
// top-level read-write ExecTx or a write made outside any transaction; calls inside a
// transaction join it.
type faulty struct {
	st    *actordelivery.Store
	fault string
	// commits counts the commits tried in this step; committed is set once one succeeded.
	commits   int
	committed bool
	// crashed: the process died after the step's first commit.
	crashed bool
}

func newFaulty(st *actordelivery.Store, fault string) (*faulty, error) {
	switch fault {
	case adapter.FaultNone, adapter.FaultCommitFails, adapter.FaultCrashBetween, adapter.FaultUndeliverable:
		return &faulty{st: st, fault: fault}, nil
	}
	return nil, fmt.Errorf("adstore: unknown publisher fault %q", fault)
}

func (f *faulty) injected(err error) bool {
	return errors.Is(err, errCommitFailed) || errors.Is(err, errGone)
}

type inTx struct{}

func joined(ctx context.Context) bool { return ctx.Value(inTx{}) != nil }

func (f *faulty) ExecTx(ctx context.Context, readOnly bool, fn func(context.Context) error) error {
	if readOnly || joined(ctx) {
		return f.st.ExecTx(ctx, readOnly, fn)
	}
	return f.commit(ctx, fn)
}

func (f *faulty) commit(ctx context.Context, fn func(context.Context) error) error {
	first := f.commits == 0
	f.commits++
	body := func(ctx context.Context) error { return fn(context.WithValue(ctx, inTx{}, true)) }
	switch {
	case f.fault == adapter.FaultCrashBetween && f.committed:
		f.crashed = true
		return errGone
	case f.fault == adapter.FaultCommitFails && first:
		// The body runs to its end, then the transaction rolls back.
		return f.st.ExecTx(ctx, false, func(ctx context.Context) error {
			if err := body(ctx); err != nil {
				return err
			}
			return errCommitFailed
		})
	}
	err := f.st.ExecTx(ctx, false, body)
	if err == nil {
		f.committed = true
		// The process dies right after its first commit, even when nothing else was to come.
		f.crashed = f.fault == adapter.FaultCrashBetween
	}
	return err
}

// write runs a store write in the caller's transaction, or as a commit of its own.
func (f *faulty) write(ctx context.Context, fn func(context.Context) error) error {
	if joined(ctx) {
		return fn(ctx)
	}
	return f.commit(ctx, fn)
}

func (f *faulty) Enqueue(ctx context.Context, m actordelivery.NewMessage) (dup bool, err error) {
	err = f.write(ctx, func(ctx context.Context) error { dup, err = f.st.Enqueue(ctx, m); return err })
	return dup, err
}

func (f *faulty) OutboxClaim(ctx context.Context, limit int, claimFor time.Duration) (rows []actordelivery.OutboxRow, err error) {
	err = f.write(ctx, func(ctx context.Context) error { rows, err = f.st.OutboxClaim(ctx, limit, claimFor); return err })
	return rows, err
}

func (f *faulty) OutboxComplete(ctx context.Context, id, token string) error {
	return f.write(ctx, func(ctx context.Context) error { return f.st.OutboxComplete(ctx, id, token) })
}

func (f *faulty) OutboxFail(ctx context.Context, id, token string, delay time.Duration) error {
	return f.write(ctx, func(ctx context.Context) error { return f.st.OutboxFail(ctx, id, token, delay) })
}

func (f *faulty) OutboxDeadLetter(ctx context.Context, id, token, reason string) error {
	return f.write(ctx, func(ctx context.Context) error { return f.st.OutboxDeadLetter(ctx, id, token, reason) })
}

// MessageMailbox is a read: no commit, so no fault.
func (f *faulty) MessageMailbox(ctx context.Context, id string) (string, error) {
	return f.st.MessageMailbox(ctx, id)
}
