package targets

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/pconform/pconform/actordelivery"
	"github.com/pconform/pconform/traces"
)

var (
	// errCommitFails is what a commit_fails step's first commit returns after its transaction
	// rolled back: to the publisher it is a commit that failed.
	errCommitFails = errors.New("targets: Injected fault: commit failed")
	// errCrashed is what every commit after the first returns in a crash_between step: the
	// process is gone, so nothing after the first commit runs.
	errCrashed = errors.New("targets: Injected fault: process crashed after the first commit")
	// errUndeliverable is the publisher check's refusal in an undeliverable step; its message is
	// the dead-letter reason the trace expects.
	errUndeliverable = errors.New(traces.ReasonUndeliverable)
)

// faultStore wraps the store a publisher delivers through and injects one publisher_deliver
// step's fault into its commits. A commit is a top-level read-write ExecTx, or a write call made
// outside any transaction (it commits on its own); calls inside a transaction just join it.
type faultStore struct {
	// Store is embedded, not only held, for what NewPublisher asks of a wrapper beyond
	// OutboxStore: a publisher delivers a batch (PublisherOptions.DeliverBatch) only through a
	// *Store or a wrapper embedding one, whose savepoints each row's part needs. Every
	// OutboxStore method is faultStore's own, so each commit still meets the fault.
	*actordelivery.Store
	st    *actordelivery.Store
	fault string
	// commits counts the commits attempted so far in this step.
	commits int
	// committed is set once a commit succeeded.
	committed bool
	// crashed is set when crash_between refused a commit after the first one succeeded.
	crashed bool
}

func NewFaultStore(st *actordelivery.Store, fault string) (*faultStore, error) {
	switch fault {
	case traces.FaultNone, traces.FaultCommitFails, traces.FaultCrashBetween, traces.FaultUndeliverable:
		// undeliverable strikes the publisher's check, not a commit.
		return &faultStore{Store: st, st: st, fault: fault}, nil
	}
	return nil, fmt.Errorf("publisher fault %q is not one of %q, %q, %q, %q", fault, traces.FaultNone,
		traces.FaultCommitFails, traces.FaultCrashBetween, traces.FaultUndeliverable)
}

// Injected reports whether err is one of the faults this store injected.
func (f *faultStore) Injected(err error) bool {
	return errors.Is(err, errCommitFails) || errors.Is(err, errCrashed)
}

type inFaultTx struct{}

func (f *faultStore) inTx(ctx context.Context) bool { return ctx.Value(inFaultTx{}) != nil }

// ExecTx runs fn in a transaction; a top-level read-write one is a commit the fault may strike.
func (f *faultStore) ExecTx(ctx context.Context, readOnly bool, fn func(context.Context) error) error {
	if readOnly || f.inTx(ctx) {
		return f.st.ExecTx(ctx, readOnly, fn)
	}
	return f.commit(ctx, fn)
}

func (f *faultStore) commit(ctx context.Context, fn func(context.Context) error) error {
	n := f.commits
	f.commits++
	body := func(ctx context.Context) error { return fn(context.WithValue(ctx, inFaultTx{}, true)) }
	switch {
	case f.fault == traces.FaultCrashBetween && f.committed:
		f.crashed = true
		return errCrashed
	case f.fault == traces.FaultCommitFails && n == 0:
		// fn runs to the end, then the transaction rolls back: what a failed commit leaves.
		return f.st.ExecTx(ctx, false, func(ctx context.Context) error {
			if err := body(ctx); err != nil {
				return err
			}
			return errCommitFails
		})
	}
	err := f.st.ExecTx(ctx, false, body)
	if err == nil {
		f.committed = true
		if f.fault == traces.FaultCrashBetween {
			// The process dies right after this commit, even if the caller had nothing more
			// to commit (the fold's single transaction).
			f.crashed = true
		}
	}
	return err
}

// Enqueue joins the caller's transaction, or commits on its own.
func (f *faultStore) Enqueue(ctx context.Context, m actordelivery.NewMessage) (bool, error) {
	if f.inTx(ctx) {
		return f.st.Enqueue(ctx, m)
	}
	var dup bool
	err := f.commit(ctx, func(ctx context.Context) error {
		var err error
		dup, err = f.st.Enqueue(ctx, m)
		return err
	})
	return dup, err
}

// OutboxClaim joins the caller's transaction, or commits on its own.
func (f *faultStore) OutboxClaim(ctx context.Context, limit int, claimFor time.Duration) ([]actordelivery.OutboxRow, error) {
	if f.inTx(ctx) {
		return f.st.OutboxClaim(ctx, limit, claimFor)
	}
	var rows []actordelivery.OutboxRow
	err := f.commit(ctx, func(ctx context.Context) error {
		var err error
		rows, err = f.st.OutboxClaim(ctx, limit, claimFor)
		return err
	})
	return rows, err
}

// OutboxComplete joins the caller's transaction, or commits on its own.
func (f *faultStore) OutboxComplete(ctx context.Context, id, token string) error {
	if f.inTx(ctx) {
		return f.st.OutboxComplete(ctx, id, token)
	}
	return f.commit(ctx, func(ctx context.Context) error { return f.st.OutboxComplete(ctx, id, token) })
}

// OutboxFail joins the caller's transaction, or commits on its own.
func (f *faultStore) OutboxFail(ctx context.Context, id, token string, delay time.Duration) error {
	if f.inTx(ctx) {
		return f.st.OutboxFail(ctx, id, token, delay)
	}
	return f.commit(ctx, func(ctx context.Context) error { return f.st.OutboxFail(ctx, id, token, delay) })
}

// OutboxDeadLetter joins the caller's transaction, or commits on its own.
func (f *faultStore) OutboxDeadLetter(ctx context.Context, id, token, reason string) error {
	if f.inTx(ctx) {
		return f.st.OutboxDeadLetter(ctx, id, token, reason)
	}
	return f.commit(ctx, func(ctx context.Context) error { return f.st.OutboxDeadLetter(ctx, id, token, reason) })
}

// MessageMailbox is a read: it joins the caller's transaction, or reads on its own; no commit, so
// no fault.
func (f *faultStore) MessageMailbox(ctx context.Context, id string) (string, error) {
	return f.st.MessageMailbox(ctx, id)
}
