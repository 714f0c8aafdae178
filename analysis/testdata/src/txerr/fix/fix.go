// Package fix holds txerr cases whose suggested fix is checked against fix.go.golden.
package fix

import (
	"context"
	"database/sql"
	"time"

	ad "github.com/pconform/pconform/actordelivery"
)

func only(ctx context.Context, st *ad.Store) error {
	_ = st.ExecTx(ctx, false, func(ctx context.Context) error { // want `assigned to _`
		_, err := st.Enqueue(ctx, ad.NewMessage{ID: "m1"})
		return err
	})
	return nil
}

func zeros(tx *sql.Tx) (int, string, bool, *int, []byte, time.Duration, ad.Outcome, error) {
	tx.Commit() // want `is discarded`
	return 1, "", false, nil, nil, 0, ad.Outcome{}, nil
}

func inClosure(ctx context.Context, st *ad.Store, tx *sql.Tx) {
	_ = st.ExecTx(ctx, false, func(ctx context.Context) error { // want `assigned to _`
		tx.Commit() // want `is discarded`
		return nil
	})
}

// noErrorResult has nowhere to return the error, so there is no fix.
func noErrorResult(tx *sql.Tx) int {
	tx.Commit() // want `is discarded`
	return 0
}

// unnamedStruct has a result whose zero value cannot be spelled simply, so there is no fix.
func unnamedStruct(tx *sql.Tx) (struct{ n int }, error) {
	tx.Commit() // want `is discarded`
	return struct{ n int }{}, nil
}
