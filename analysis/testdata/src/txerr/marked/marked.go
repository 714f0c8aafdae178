// Package marked declares functions marked //pconform:txcommit.
package marked

import "context"

// Publish writes and commits an outbox batch.
//
//pconform:txcommit
func Publish(ctx context.Context) (int, error) { return 0, nil } // want Publish:"txcommit"

// Committer finishes a unit of work.
type Committer interface {
	//pconform:txcommit
	Flush() error // want Flush:"txcommit"
}

// Count cannot be a transaction outcome.
//
//pconform:txcommit // want `//pconform:txcommit on Count has no effect: its last result is not error`
func Count() int { return 0 }

func local(ctx context.Context) {
	Publish(ctx) // want `error of transaction call Publish is discarded`
}
