package actordelivery

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"
)

// Group commit on SQLite (Options.GroupCommit; docs/semantics.md, "The application's writes").
//
// SQLite has one writer at a time, and at synchronous=FULL every COMMIT waits for an fsync, which
// costs more than the short transaction before it. With GroupCommit N > 1 the read-write
// transactions of concurrent callers share one SQLite transaction on the writer connection, a
// group, and so one COMMIT:
//
//   - The callers take turns (the turn is what the writer connection's exclusivity was before).
//     The caller holding the turn joins the open group, or begins one, and runs as a member: fn
//     inside a SAVEPOINT of its own.
//   - A member that fails (fn's error or panic, a context done when fn returns, the recorder's
//     counter) rolls back to its savepoint: its writes are gone, the earlier members' stay.
//     A member that succeeds releases its savepoint; its writes are now the group's.
//   - When the member's turn ends, the group commits if no other caller waits for the turn, or
//     once it holds N members; otherwise the turn passes to the next caller, who joins. The
//     committer holds the turn through the COMMIT.
//   - Every member returns only after the group's end: a successful member returns the COMMIT's
//     result, so no acknowledgement precedes its fsync and a failed COMMIT fails every member; a
//     failed member returns its own error, unchanged, once its read events are recorded.
//
// A later member sees the earlier members' writes, which commit or roll back together with its
// own: the group is the members' transactions in turn order, all committed or none. On a
// recording store each member draws its numbers from the commit counter inside its savepoint, so
// the numbers follow turn order, and a member that rolls back takes none. Once the group
// committed, the committer takes the members in turn order: each one's events to the Recorder,
// then its post-commit work (wake-ups). A failed member's read events are recorded as a
// rolled-back transaction's are; if they saw an earlier member's writes and the group's COMMIT
// failed, they are dropped, since what they saw never committed (that member's own error, a
// fence it found taken, say, then rests on writes that did not commit either; it changed nothing).

// committer is the group commit of one store: the turn and the open group.
type committer struct {
	// max is Options.GroupCommit: the most members one group takes.
	max int
	// mu guards held and queue.
	mu sync.Mutex
	// held: some caller holds the turn. Invariant: while no caller holds it, no group is open.
	held bool
	// queue are the callers waiting for the turn, first come first; handing the turn to one
	// closes its channel and removes it.
	queue []chan struct{}
	// open is the group whose transaction is open, or nil. Only the turn's holder touches it.
	open *group
}

// group is one shared transaction and the members that joined it.
type group struct {
	conn *sql.Conn
	tx   *sql.Tx
	// members are the transactions that joined, in turn order; ok[i] says that members[i]
	// released its savepoint, so that it commits with the group.
	members []*txState
	ok      []bool
	// broken is set when a savepoint statement failed: what the transaction holds is unknown,
	// so it takes no more members and rolls back whole.
	broken error
	// done is closed once the group ended; err is then the error every successful member
	// returns (nil when the COMMIT succeeded).
	done chan struct{}
	err  error
}

// Statements of the group commit. A member's savepoint has a name of its own, so that a batch's
// savepoints (batch.go) nest inside it.
const (
	qMemberBegin    = `SAVEPOINT group_member`
	qMemberRelease  = `RELEASE SAVEPOINT group_member`
	qMemberRollback = `ROLLBACK TO SAVEPOINT group_member`
)

// takeTurn waits until the caller holds the turn, or ctx is done (it then holds nothing).
func (s *Store) takeTurn(ctx context.Context) error {
	c := s.group
	c.mu.Lock()
	if !c.held {
		c.held = true
		c.mu.Unlock()
		return nil
	}
	ch := make(chan struct{})
	c.queue = append(c.queue, ch)
	c.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
	}
	c.mu.Lock()
	if i := slices.Index(c.queue, ch); i >= 0 {
		c.queue = slices.Delete(c.queue, i, i+1)
		c.mu.Unlock()
		return ctx.Err()
	}
	c.mu.Unlock()
	// The turn came as ctx ended. The caller that handed it over left its group open for this
	// one to join: end the turn as a member would, so the group commits or passes on.
	s.endTurn()
	return ctx.Err()
}

// handOn passes the turn to the next waiting caller, leaving the open group open for it to join,
// and reports true; false when no caller waits or the group is full (the holder then commits).
func (c *committer) handOn() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.queue) == 0 || (c.open != nil && len(c.open.members) >= c.max) {
		return false
	}
	c.next()
	return true
}

// release ends the holder's turn with no group open.
func (c *committer) release() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.queue) > 0 {
		c.next()
		return
	}
	c.held = false
}

// next hands the turn to the first waiting caller; c.mu is held.
func (c *committer) next() {
	close(c.queue[0])
	c.queue[0] = nil
	c.queue = c.queue[1:]
}

// endTurn ends the turn of its holder: the open group passes to the next caller, or ends here.
func (s *Store) endTurn() {
	c := s.group
	g := c.open
	if g == nil {
		c.release()
		return
	}
	if g.broken == nil && c.handOn() {
		return
	}
	c.open = nil
	s.endGroup(g)
}

// beginGroup opens a group's transaction on the writer connection. The connection is taken with
// ctx; the transaction outlives the caller's context (it is the group's), so it begins without
// its cancellation.
func (s *Store) beginGroup(ctx context.Context) (*group, error) {
	conn, err := s.wdb.Conn(ctx)
	if err != nil {
		return nil, err
	}
	tx, err := conn.BeginTx(context.WithoutCancel(ctx), nil)
	if err != nil {
		_ = conn.Close()
		return nil, err
	}
	return &group{conn: conn, tx: tx, done: make(chan struct{})}, nil
}

// endGroup commits the group g (or rolls it back, when no member succeeded or it broke), hands
// the turn on, and then, outside the turn, reports to Metrics and the Recorder and runs the
// members' post-commit work in member order. It runs on the turn's holder, and closes g.done.
func (s *Store) endGroup(g *group) {
	n := 0
	for _, ok := range g.ok {
		if ok {
			n++
		}
	}
	committed := false
	var took time.Duration
	switch {
	case g.broken != nil:
		_ = g.tx.Rollback()
		g.err = s.dbErr("commit", fmt.Errorf("the group's transaction failed in another member: %w", g.broken))
	case n == 0:
		_ = g.tx.Rollback()
	default:
		start := time.Now()
		err := g.tx.Commit()
		took = time.Since(start)
		if err != nil {
			g.err = s.dbErr("commit", err)
		} else {
			committed = true
		}
	}
	_ = g.conn.Close()
	s.group.release()

	if n > 0 && g.broken == nil {
		s.metrics.ObserveCommit(took)
	}
	if committed {
		s.commits.Add(1)
		s.grouped.Add(uint64(n - 1))
	} else {
		s.rollbacks.Add(uint64(n))
	}
	// saw: a member before this one succeeded, so this one saw writes that are committed only
	// if the group is.
	saw := false
	for i, ts := range g.members {
		switch {
		case g.ok[i] && committed:
			if ts.recording {
				s.seqEmit(ts, true)
				s.noteCommit(ts)
			}
			for _, f := range ts.afterCommit {
				f()
			}
		case !g.ok[i] && (committed || !saw) && ts.recording:
			s.seqEmit(ts, false)
		}
		saw = saw || g.ok[i]
	}
	close(g.done)
}

// execMember is execTx for a read-write transaction of a store with group commit: fn runs as a
// member of a group (see above). Its results are execTx's.
func (s *Store) execMember(ctx context.Context, op string, guard bool, fn func(ctx context.Context) error) (err error) {
	if err := s.takeTurn(ctx); err != nil {
		return s.dbErr("begin transaction", err)
	}
	c := s.group
	g := c.open
	if g == nil {
		if g, err = s.beginGroup(ctx); err != nil {
			c.release()
			return s.dbErr("begin transaction", err)
		}
		c.open = g
	}
	mtx := memberTx{tx: g.tx}
	ts := &txState{store: s, sqltx: mtx, tx: boundQuerier{q: mtx, d: s.d}}
	i := len(g.members)
	g.members = append(g.members, ts)
	g.ok = append(g.ok, false)
	if _, err := g.tx.ExecContext(context.WithoutCancel(ctx), qMemberBegin); err != nil {
		g.broken = err
		ts.ended.Store(true)
		s.rollbacks.Add(1)
		s.endTurn()
		<-g.done
		return s.dbErr("begin transaction", err)
	}
	defer func() {
		ts.ended.Store(true)
		if !g.ok[i] {
			s.undoMember(ctx, g)
			s.rollbacks.Add(1)
		}
		s.endTurn()
		<-g.done
		if g.ok[i] {
			err = g.err
		}
	}()
	if err := s.runTx(ctx, ts, guard, fn); err != nil {
		return err // the deferred undo rolls this member back
	}
	if ts.recording {
		if err := s.seqCommit(context.WithoutCancel(ctx), ts); err != nil {
			return err
		}
	}
	if _, err := g.tx.ExecContext(context.WithoutCancel(ctx), qMemberRelease); err != nil {
		g.broken = err
		return s.dbErr("commit", err)
	}
	g.ok[i] = true
	return nil
}

// undoMember rolls the group's transaction back to the current member's savepoint and releases
// it. If that fails, the group's transaction is in an unknown state: the group breaks.
func (s *Store) undoMember(ctx context.Context, g *group) {
	if g.broken != nil {
		return
	}
	bg := context.WithoutCancel(ctx)
	if _, err := g.tx.ExecContext(bg, qMemberRollback); err != nil {
		g.broken = err
		return
	}
	if _, err := g.tx.ExecContext(bg, qMemberRelease); err != nil {
		g.broken = err
	}
}

// memberTx is the group's transaction as a member's statements use it. They run without the
// member's cancellation: SQLite rolls back the whole transaction when it interrupts a write inside
// one, and that transaction holds the other members' writes. A member's context is checked when
// its fn returns, as execTx does.
type memberTx struct{ tx *sql.Tx }

// errMemberEnd: a member never ends the group's transaction itself (endGroup does).
var errMemberEnd = errors.New("actordelivery: a group commit member cannot end the group's transaction")

func (m memberTx) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	return m.tx.ExecContext(context.WithoutCancel(ctx), query, args...)
}

func (m memberTx) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	return m.tx.QueryContext(context.WithoutCancel(ctx), query, args...)
}

func (m memberTx) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	return m.tx.QueryRowContext(context.WithoutCancel(ctx), query, args...)
}

func (memberTx) Commit() error   { return errMemberEnd }
func (memberTx) Rollback() error { return errMemberEnd }
