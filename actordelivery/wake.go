package actordelivery

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// Wake-ups as recorded events (docs/semantics.md, "Wake-ups"; docs/observed.md). On a recording
// store every wake a subscriber receives carries its cause: the message it is for, how it came
// (the store's own post-commit signal, or another store's NOTIFY), and the place in the commit
// order it follows. A consumer that its wait ends on a wake records it as one `wake` event before
// it fetches, so the history shows that the wake followed the commit that caused it. A consumer
// whose wait ends on its poll interval records a `poll_tick`, so the history shows that a woken
// consumer fetched before its next poll tick. On a store that does not record no cause is kept
// and nothing is recorded.

// The ways a wake comes (the trace format's wake profiles).
const (
	wakeViaLocal  = "local"
	wakeViaNotify = "notify"
)

// wakeCause is what a recording store knows of a wake when it sends it. The zero value is a wake
// without a cause (a store that does not record, a listener that reconnected, an earlier
// version's NOTIFY): it wakes, and records nothing.
type wakeCause struct {
	mailbox, id, via string
	// seq is the commit the wake follows: the store's last commit when it fired the wake locally,
	// the database's commit counter when its listener received the NOTIFY. at is the time of
	// the wake, in the store's clock (milliseconds).
	seq, at int64
}

// signal hands the subscriber a wake: its cause (kept until taken; a later one replaces it) and
// one pending signal on its channel.
func (sub *subscription) signal(c wakeCause) {
	if c.id != "" {
		sub.mu.Lock()
		sub.cause = c
		sub.mu.Unlock()
	}
	select {
	case sub.ch <- struct{}{}:
	default:
	}
}

// take returns and clears the cause of the last wake sent to the subscriber.
func (sub *subscription) take() (wakeCause, bool) {
	sub.mu.Lock()
	defer sub.mu.Unlock()
	c := sub.cause
	sub.cause = wakeCause{}
	return c, c.id != ""
}

// noteCommit remembers, on a recording store, the commit ts just made: its last write event's
// seq (the counter it began with when it wrote none) and its time. It runs after the commit and
// before the transaction's wake-ups, so every local wake follows the commit that caused it.
func (s *Store) noteCommit(ts *txState) {
	seq := ts.base
	for _, ev := range ts.events {
		if !ev.Read {
			seq = max(seq, ev.Seq)
		}
	}
	s.lastCommit.mu.Lock()
	defer s.lastCommit.mu.Unlock()
	if seq > s.lastCommit.seq {
		s.lastCommit.seq, s.lastCommit.at = seq, ts.now
	}
}

// fireLocal signals t's subscribers in this process for message id, after the commit that
// enqueued it.
func (s *Store) fireLocal(t topic, id string) { s.notify.fire(t, s.localCause(t, id)) }

// localCause is the cause of a local wake for message id of t, fired now: it follows the store's
// last commit. Zero when the store does not record, and for the outbox.
func (s *Store) localCause(t topic, id string) wakeCause {
	if s.rec == nil || t.outbox {
		return wakeCause{}
	}
	s.lastCommit.mu.Lock()
	defer s.lastCommit.mu.Unlock()
	return wakeCause{mailbox: t.mailbox, id: id, via: wakeViaLocal, seq: s.lastCommit.seq, at: s.nowMillis()}
}

// notifyCause is the cause of a NOTIFY for message id of mailbox that this store's listener
// received: the commit it follows is the database's commit counter as it reads now (a NOTIFY is
// delivered after its transaction committed, so the counter has moved past that commit). Zero
// when the store does not record, or the counter cannot be read (the wake still wakes).
func (s *Store) notifyCause(mailbox, id string) wakeCause {
	if s.rec == nil {
		return wakeCause{}
	}
	var n int64
	if err := (boundQuerier{q: s.rdb, d: s.d}).QueryRowContext(context.Background(), qSeqRead).Scan(&n); err != nil {
		s.log.LogAttrs(context.Background(), slog.LevelWarn, "actordelivery: recorder: cannot read the commit counter for a NOTIFY", slog.String(logKeyServer, s.path), attrError(err))
		return wakeCause{}
	}
	return wakeCause{mailbox: mailbox, id: id, via: wakeViaNotify, seq: n, at: s.nowMillis()}
}

// recordWake records the wake that ended a wait of the consumer among cs whose mailbox it is
// for, on a recording store. It is a read event placed after the commit the wake follows, and
// after the consumer's last recorded step (see follow).
func recordWake(st *Store, sub *subscription, cs []*Consumer) {
	c, ok := sub.take()
	if !ok || st.rec == nil {
		return
	}
	for _, k := range cs {
		if k.mailbox == c.mailbox {
			seq, at := k.follow(c.seq, c.at)
			st.rec.Record(Event{Seq: seq, Read: true, At: fromMillis(at), Op: "wake",
				Args: EventArgs{Worker: k.worker, Incarnation: st.incarnation, Mailbox: c.mailbox, ID: c.id, Profile: c.via}})
			return
		}
	}
}

// waitIdle is an idle consumer's wait (Run, RunWorkers): d, or until sub signals an enqueue into a
// mailbox of cs. On a recording store what ended the wait is recorded: the wake (recordWake), or
// the poll tick of each consumer of ticked (recordPollTick). It returns false when ctx ended.
func waitIdle(ctx context.Context, d time.Duration, st *Store, sub *subscription, cs, ticked []*Consumer) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-sub.ch:
		recordWake(st, sub, cs)
	case <-t.C:
		recordPollTick(st, sub, cs, ticked)
	}
	return true
}

// recordPollTick records, on a recording store, that the wait of the consumers cs share ended on
// their poll interval: one `poll_tick` read event for each consumer of ticked (those whose last
// step completed, so its fetch is in the history). A wake already pending ended the wait too; it
// is recorded instead. The tick goes at the store's last commit, and after the consumer's last
// recorded step (see follow); a wake the consumer records later goes after the tick the same way.
func recordPollTick(st *Store, sub *subscription, cs, ticked []*Consumer) {
	if st.rec == nil {
		return
	}
	st.lastCommit.mu.Lock()
	last := st.lastCommit.seq
	st.lastCommit.mu.Unlock()
	now := st.nowMillis()
	select {
	case <-sub.ch:
		recordWake(st, sub, cs)
		return
	default:
	}
	for _, k := range ticked {
		seq, at := k.follow(last, now)
		st.rec.Record(Event{Seq: seq, Read: true, At: fromMillis(at), Op: "poll_tick",
			Args: EventArgs{Worker: k.worker, Incarnation: st.incarnation, Mailbox: k.mailbox}})
	}
}

// The place of a consumer's recorded steps. A history is put in commit order by sequence number,
// the write numbered s before the reads that saw it, reads of one place by time, then by line
// (docs/observed.md). A wake and a poll tick are reads the consumer records outside any
// transaction, each at a place computed when it happened, and a wake's place is computed when it
// is sent, a moment before the consumer receives it: a tick recorded in that moment can come
// later in commit order, at a later commit or at the same one with a later time, and the
// worker's tick would then read as one after a wake it did not answer. So each of the consumer's
// wakes and ticks goes at or after its last recorded place: the history keeps the order in which
// the consumer saw them. A wake never moves before the commit it follows, nor past a step the
// consumer had recorded when it received the wake: one sent and received before its commit still
// lands before that commit, and is refused.

// lastPlace is a consumer's last recorded place: the sequence number and the time (milliseconds)
// of its last recorded fetch, wake or poll tick.
type lastPlace struct {
	mu      sync.Mutex
	seq, at int64
}

// place makes the consumer remember, once the transaction in ctx commits, the place of the step
// it records there: its next wake or poll tick goes after it.
func (c *Consumer) place(ctx context.Context) {
	ts := c.st.txFrom(ctx)
	if ts == nil || !ts.recording {
		return
	}
	ts.onCommit(func() {
		for _, ev := range ts.events {
			c.follow(ev.Seq, toMillis(ev.At))
		}
	})
}

// follow returns the place of a read event the consumer records now, whose own place is seq and
// at: moved, if need be, to the consumer's last recorded place, so it sorts after every event the
// consumer recorded before it (at the same time it sorts after them by line). The result becomes
// the consumer's last place.
func (c *Consumer) follow(seq, at int64) (int64, int64) {
	p := &c.placed
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case seq < p.seq:
		seq, at = p.seq, max(at, p.at)
	case seq == p.seq:
		at = max(at, p.at)
	}
	p.seq, p.at = seq, at
	return seq, at
}
