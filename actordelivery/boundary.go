package actordelivery

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
)

// The transaction boundary (docs/semantics.md, "The transaction boundary").
//
// An ExecTx callback runs synchronously on the goroutine that called ExecTx, and fn must not use
// its context from another goroutine (ExecTx's contract). So while a callback runs, a store call on
// that goroutine whose context does not carry the callback's transaction is a mistake: the caller
// passed the outer context instead of the callback's. Such a call would commit on its own, outside
// the transaction, on PostgreSQL, and wait forever for the single writer connection the callback
// holds on SQLite. The store refuses it with ErrOutsideTransaction before any SQL.
//
// Keying on the goroutine, not on the context value, is what keeps the check free of false
// positives: another goroutine that writes with the very same outer context while the callback
// runs is an ordinary concurrent caller and is not refused. The cost is kept off the hot path by
// an atomic count of callbacks in flight: while it is zero (no ExecTx callback runs on this store)
// a call outside a transaction pays one atomic load; only while a callback runs does such a call
// read its goroutine's key (goroutineKey: one register or thread-local load on amd64 and arm64)
// and look it up under a mutex.

// callbacks is the set of goroutines running an ExecTx callback of one store.
type callbacks struct {
	// n counts the callbacks in flight; the fast path reads only n.
	n  atomic.Int64
	mu sync.Mutex
	// by maps a goroutine's key (goroutineKey) to the number of callbacks it runs (more than one when a callback
	// runs a top-level ExecTx of the same store, which is refused, so in practice one).
	by map[uint64]int
}

// enter records that the current goroutine runs a callback, and returns the function that
// records its end.
func (c *callbacks) enter() func() {
	g := goroutineKey()
	c.mu.Lock()
	if c.by == nil {
		c.by = make(map[uint64]int)
	}
	c.by[g]++
	c.mu.Unlock()
	c.n.Add(1)
	return func() {
		c.n.Add(-1)
		c.mu.Lock()
		if c.by[g]--; c.by[g] == 0 {
			delete(c.by, g)
		}
		c.mu.Unlock()
	}
}

// running reports whether the current goroutine runs a callback.
func (c *callbacks) running() bool {
	if c.n.Load() == 0 {
		return false
	}
	g := goroutineKey()
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.by[g] > 0
}

// outsideTx refuses a call of op made without this store's transaction in ctx from a goroutine
// that runs one of the store's ExecTx callbacks. Every path a store call takes when ctx carries no
// transaction of the store passes here before any SQL.
func (s *Store) outsideTx(op string) error {
	if !s.cbs.running() {
		return nil
	}
	return fmt.Errorf("actordelivery: %s: %w: called inside an ExecTx callback (or a Handler's Effects) with a context that does not carry its transaction; pass the context the callback received", op, ErrOutsideTransaction)
}

// goroutineID returns the runtime's id of the calling goroutine, read from the first line of its
// stack trace ("goroutine 42 [running]:"). The runtime exports no cheaper way; goroutineKey uses
// it where it has no register read.
func goroutineID() uint64 {
	var buf [32]byte
	n := runtime.Stack(buf[:], false)
	const prefix = "goroutine "
	var id uint64
	for _, c := range buf[len(prefix):n] {
		if c < '0' || c > '9' {
			break
		}
		id = id*10 + uint64(c-'0')
	}
	return id
}
