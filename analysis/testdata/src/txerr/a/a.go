// Package a holds txerr's positive and negative cases that offer no suggested fix.
package a

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/pconform/pconform/actordelivery"
)

var errStop = errors.New("stop")

func noop(context.Context) error { return nil }

// ---- dropped ----

func bare(ctx context.Context, st *actordelivery.Store) {
	st.ExecTx(ctx, false, noop) // want `error of transaction call st.ExecTx is discarded`
}

func blank(ctx context.Context, st *actordelivery.Store) {
	_ = st.ExecTx(ctx, true, noop) // want `error of transaction call st.ExecTx is assigned to _`
}

// outbox is an interface the store satisfies, as a caller might declare it.
type outbox interface {
	ExecTx(ctx context.Context, readOnly bool, fn func(context.Context) error) error
}

func viaInterface(ctx context.Context, os outbox) {
	_ = os.ExecTx(ctx, false, noop) // want `error of transaction call os.ExecTx is assigned to _`
}

// faulty wraps a store to inject faults; its ExecTx has the transaction shape, so it counts.
type faulty struct{ inner *actordelivery.Store }

func (f faulty) ExecTx(ctx context.Context, ro bool, fn func(context.Context) error) error {
	return f.inner.ExecTx(ctx, ro, fn)
}

func viaWrapper(ctx context.Context, f faulty) {
	f.ExecTx(ctx, false, noop) // want `error of transaction call f.ExecTx is discarded`
}

func deferred(tx *sql.Tx) {
	defer tx.Commit() // want `error of transaction call tx.Commit is discarded by defer`
}

func goroutine(ctx context.Context, st *actordelivery.Store) {
	go st.ExecTx(ctx, false, noop) // want `error of transaction call st.ExecTx is discarded by go`
}

func printedOnly(tx *sql.Tx) {
	err := tx.Commit() // want `error of transaction call tx.Commit is stored in err but never returned, logged, or checked`
	fmt.Println("commit:", err)
}

func printedNested(tx *sql.Tx) {
	fmt.Fprintf(os.Stderr, "commit: %v\n", tx.Commit()) // want `error of transaction call tx.Commit is not returned, logged, or checked`
}

func emptyBranch(tx *sql.Tx) {
	if err := tx.Commit(); err != nil { // want `stored in err but never returned`
	}
}

func branchWithoutSignal(ctx context.Context, st *actordelivery.Store) {
	err := st.ExecTx(ctx, false, noop) // want `stored in err but never returned`
	if errors.Is(err, errStop) {
		fmt.Println("stopped")
	}
}

func overwritten(ctx context.Context, st *actordelivery.Store, tx *sql.Tx) error {
	err := st.ExecTx(ctx, false, noop) // want `stored in err but never returned`
	err = tx.Commit()
	return err
}

func checkedIntoBlank(ctx context.Context, st *actordelivery.Store) {
	stopped := errors.Is(st.ExecTx(ctx, false, noop), errStop) // want `error of transaction call st.ExecTx is not returned, logged, or checked`
	_ = stopped
}

func declared(tx *sql.Tx) {
	var _ = tx.Commit() // want `error of transaction call tx.Commit is assigned to _`
}

// ---- handled ----

func returned(ctx context.Context, st *actordelivery.Store) error {
	return st.ExecTx(ctx, false, noop)
}

func wrappedInline(ctx context.Context, st *actordelivery.Store) error {
	if err := st.ExecTx(ctx, false, noop); err != nil {
		return fmt.Errorf("a: deliver: %w", err)
	}
	return nil
}

func logged(tx *sql.Tx, logger *slog.Logger) {
	err := tx.Commit()
	if err != nil {
		logger.Error("commit failed", "err", err)
	}
}

func loggedAttr(ctx context.Context, tx *sql.Tx, logger *slog.Logger) {
	if err := tx.Commit(); err != nil {
		logger.LogAttrs(ctx, slog.LevelError, "commit failed", slog.Any("err", err))
	}
}

func stdLog(tx *sql.Tx) {
	if err := tx.Commit(); err != nil {
		log.Printf("commit: %v", err)
	}
}

func signalledWithoutValue(tx *sql.Tx) error {
	if err := tx.Commit(); err != nil {
		return errors.New("a: commit failed")
	}
	return nil
}

func classified(ctx context.Context, st *actordelivery.Store) (string, error) {
	err := st.ExecTx(ctx, false, noop)
	switch {
	case errors.Is(err, actordelivery.ErrClaimLost):
		return "claim_lost", nil
	case err != nil:
		return "commit_failed", err
	}
	return "delivered", nil
}

func switchTag(tx *sql.Tx) string {
	switch err := tx.Commit(); err {
	case nil:
		return "ok"
	default:
		return "failed"
	}
}

func wrappedLocal(tx *sql.Tx) error {
	err := tx.Commit()
	werr := fmt.Errorf("a: commit: %w", err)
	return werr
}

type result struct {
	action string
	err    error
}

func inComposite(tx *sql.Tx) result {
	err := tx.Commit()
	res := result{action: "delivered", err: err}
	return res
}

func namedResult(tx *sql.Tx) (err error) {
	err = tx.Commit()
	return
}

func deferredIntoResult(tx *sql.Tx) (err error) {
	defer func() {
		err = tx.Commit()
	}()
	return nil
}

func loopBackEdge(txs []*sql.Tx) error {
	var err error
	for _, tx := range txs {
		if err != nil {
			return err
		}
		err = tx.Commit()
	}
	return nil
}

func collected(txs []*sql.Tx) error {
	var errs []error
	for _, tx := range txs {
		errs = append(errs, tx.Commit())
	}
	return errors.Join(errs...)
}

func record(error) {}

func handedOff(tx *sql.Tx) {
	record(tx.Commit())
}

func sent(ctx context.Context, st *actordelivery.Store, errc chan<- error) {
	errc <- st.ExecTx(ctx, false, noop)
}

type publisher struct{ last error }

func (p *publisher) stored(tx *sql.Tx) {
	p.last = tx.Commit()
}

func panics(tx *sql.Tx) {
	if err := tx.Commit(); err != nil {
		panic(err)
	}
}

func inTest(t *testing.T, tx *sql.Tx) {
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
}

func closureReturns(ctx context.Context, st *actordelivery.Store) func() error {
	err := st.ExecTx(ctx, false, noop)
	return func() error { return err }
}

// ---- not transaction calls ----

func rollbackIgnored(tx *sql.Tx) {
	tx.Rollback()
}

type batch struct{}

func (batch) Commit() error { return nil }

func otherCommit(b batch) {
	b.Commit()
}

type scheduler struct{}

// ExecTx here is not a transaction runner: its shape differs.
func (scheduler) ExecTx(d time.Duration) error { return nil }

func otherExecTx(s scheduler) {
	s.ExecTx(time.Second)
}

// ---- deliberate rollbacks: the callback fails on every path, nothing can commit ----

func rollbackSentinel(ctx context.Context, st *actordelivery.Store) {
	_ = st.ExecTx(ctx, false, func(ctx context.Context) error {
		return context.Canceled
	})
}

func rollbackAfterCheck(ctx context.Context, st *actordelivery.Store) {
	_ = st.ExecTx(ctx, false, func(ctx context.Context) error {
		if _, err := st.Enqueue(ctx, actordelivery.NewMessage{ID: "a"}); err != nil {
			return err
		}
		return errors.New("roll back")
	})
}

func rollbackByPanic(ctx context.Context, st *actordelivery.Store) {
	st.ExecTx(ctx, false, func(ctx context.Context) error {
		panic("handler bug")
	})
}

func mayCommit(ctx context.Context, st *actordelivery.Store, fail bool) {
	_ = st.ExecTx(ctx, false, func(ctx context.Context) error { // want `assigned to _`
		if fail {
			return errStop
		}
		return nil
	})
}

func mayCommitUntestedVar(ctx context.Context, st *actordelivery.Store) {
	_ = st.ExecTx(ctx, false, func(ctx context.Context) error { // want `assigned to _`
		_, err := st.Enqueue(ctx, actordelivery.NewMessage{ID: "a"})
		return err
	})
}

// ---- suppression ----

// seedVariant reproduces the dropped-commit bug on purpose.
//
//pconform:ignore txerr a deliberately broken variant
func seedVariant(ctx context.Context, st *actordelivery.Store) {
	_ = st.ExecTx(ctx, false, noop)
}

func otherAnalyzerIgnored(ctx context.Context, st *actordelivery.Store) {
	_ = st.ExecTx(ctx, false, noop) //pconform:ignore rawattempts names another analyzer // want `assigned to _`
}

// ---- a test for one error handles that error only ----

func oneSentinelOnly(ctx context.Context, st *actordelivery.Store) {
	err := st.ExecTx(ctx, false, noop) // want `stored in err but never returned`
	if errors.Is(err, actordelivery.ErrClaimLost) {
		return
	}
}

func oneSentinelCompared(tx *sql.Tx) {
	err := tx.Commit() // want `stored in err but never returned`
	if err == sql.ErrTxDone {
		return
	}
}

func oneSentinelCase(ctx context.Context, st *actordelivery.Store) string {
	err := st.ExecTx(ctx, false, noop) // want `stored in err but never returned`
	switch {
	case errors.Is(err, actordelivery.ErrClaimLost):
		return "claim_lost"
	}
	return "delivered"
}

func oneSentinelTag(tx *sql.Tx) string {
	switch err := tx.Commit(); err { // want `stored in err but never returned`
	case sql.ErrTxDone:
		return "done"
	}
	return "ok"
}

// Every error but one: the branch handles all the others.
func allButOne(ctx context.Context, st *actordelivery.Store) error {
	if err := st.ExecTx(ctx, false, noop); !errors.Is(err, actordelivery.ErrClaimLost) {
		return err
	}
	return nil
}

func allButOneCompared(tx *sql.Tx) {
	if err := tx.Commit(); err != nil && err != sql.ErrTxDone {
		log.Printf("commit: %v", err)
	}
}

func sentinelThenRest(ctx context.Context, st *actordelivery.Store) error {
	err := st.ExecTx(ctx, false, noop)
	if errors.Is(err, actordelivery.ErrClaimLost) {
		return nil
	}
	return err
}
