package actordelivery

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"
)

// Recorder receives the store's history while it runs: one Event per committed store operation
// and per protocol step (a consumer's fetch or handle, a fold publisher's delivery), each with the
// commit sequence number its transaction drew. Set it with Options.Recorder; nil, the default,
// records nothing and costs nothing (no statement, no allocation).
//
// Record is called after the transaction committed (or, for an observation that changed nothing,
// after it ended), from the goroutine that ran it, so calls from concurrent goroutines may arrive
// out of sequence order; sort by Event.Seq. Record must not call the store.
type Recorder interface {
	Record(Event)
}

// Event is one recorded operation. Its JSON form (one object per line, see JSONRecorder) is what
// `pconform convert` reads; its field names are part of that contract.
//
// Seq places the event in the commit order, which is the linearization: a write event (Read
// false) is the Seq-th committed event of the database; events of one transaction have
// consecutive numbers. A read event (Read true: a peek, or a step that found its lease or claim
// lost and changed nothing) committed nothing; it saw exactly the state after commit Seq, because
// while a store records, every transaction holding an event, reads included, runs under the one
// commit lock (SQLite's writer lock, the counter row's lock on PostgreSQL). See docs/observed.md.
type Event struct {
	Seq  int64 `json:"seq"`
	Read bool  `json:"read,omitempty"`
	// At is the store clock's time for the whole transaction (read once, under the commit lock).
	At time.Time `json:"at"`
	// Op is an operation of the trace format: enqueue, lease, peek, ack, nack, ack_by_id,
	// nack_by_id, extend, expire, dead_letter, outbox_enqueue, outbox_claim, outbox_complete,
	// outbox_fail, outbox_dead_letter, purge, redrive, mark_processed, save_checkpoint,
	// load_checkpoint, consumer_fetch, consumer_handle, publisher_deliver, consumer_fetch_batch,
	// consumer_handle_batch, publisher_deliver_batch, worker_stop or
	// worker_drain (RunWorkers' stop and drain); and, when the store opens, incarnation (the
	// Open itself) and snapshot (a row the database held then, see SnapshotRow).
	Op     string      `json:"op"`
	Args   EventArgs   `json:"args"`
	Result EventResult `json:"result"`
	// Row is a "snapshot" event's row (see SnapshotRow); nil on every other event.
	Row *SnapshotRow `json:"row,omitempty"`
}

// EventArgs are an event's arguments, named as in the trace format; durations in nanoseconds,
// tokens as the store issued them.
type EventArgs struct {
	Mailbox     string        `json:"mailbox,omitempty"`
	ID          string        `json:"id,omitempty"`
	Key         string        `json:"key,omitempty"`
	Priority    int           `json:"priority,omitempty"`
	MaxAttempts int           `json:"max_attempts,omitempty"`
	Delay       time.Duration `json:"delay,omitempty"`
	Payload     string        `json:"payload,omitempty"`
	// MaxDeliveryAttempts is an outbox row's bound as stored (the default filled in).
	MaxDeliveryAttempts int           `json:"max_delivery_attempts,omitempty"`
	LeaseFor            time.Duration `json:"lease_for,omitempty"`
	Token               string        `json:"token,omitempty"`
	Reason              string        `json:"reason,omitempty"`
	Target              string        `json:"target,omitempty"`
	Limit               int           `json:"limit,omitempty"`
	ClaimFor            time.Duration `json:"claim_for,omitempty"`
	// Worker numbers a Consumer, Publisher a Publisher, within one store (from 1, in creation order).
	Worker    int `json:"worker,omitempty"`
	Publisher int `json:"publisher,omitempty"`
	// Incarnation names the Open of the store whose worker or publisher took the step (see
	// Store.Incarnation): with it, the worker and publisher numbers of a restarted process, or of
	// several processes recording into one log, never collide. Set on every event that names a
	// worker or a publisher.
	Incarnation string        `json:"incarnation,omitempty"`
	Profile     string        `json:"profile,omitempty"`
	Outcome     string        `json:"outcome,omitempty"`
	RetryDelay  time.Duration `json:"retry_delay,omitempty"`
	Fault       string        `json:"fault,omitempty"`
	// OlderThan and Horizon are purge's age and dedup horizon.
	OlderThan time.Duration `json:"older_than,omitempty"`
	Horizon   time.Duration `json:"horizon,omitempty"`
	// Consumer and TTL are a mark_processed's consumer and ttl.
	Consumer string        `json:"consumer,omitempty"`
	TTL      time.Duration `json:"ttl,omitempty"`
	// Actor names a checkpoint (save_checkpoint, load_checkpoint); ExpectVersion is the version
	// a save expected.
	Actor         string `json:"actor,omitempty"`
	ExpectVersion int64  `json:"expect_version,omitempty"`
	// Size, Outcomes and IDs are a batch step's: a consumer_fetch_batch's batch size, a
	// consumer_handle_batch's outcome per message (in batch order), a publisher_deliver_batch's
	// rows (in delivery order).
	Size     int      `json:"size,omitempty"`
	Outcomes []string `json:"outcomes,omitempty"`
	IDs      []string `json:"ids,omitempty"`
}

// EventResult is what the caller observed, named as in the trace format.
type EventResult struct {
	Err       string         `json:"err,omitempty"`
	Duplicate bool           `json:"duplicate,omitempty"`
	Message   *EventMessage  `json:"message,omitempty"`
	Affected  int            `json:"affected,omitempty"`
	Claimed   []EventClaimed `json:"claimed,omitempty"`
	Action    string         `json:"action,omitempty"`
	Attempt   int            `json:"attempt,omitempty"`
	// Version is a checkpoint's version: the new one after a save, the stored one after a load.
	Version int64 `json:"version,omitempty"`
	// Messages, Actions and Duplicates are a batch step's: the messages a consumer_fetch_batch
	// returned, the action per message or row of a consumer_handle_batch or
	// publisher_deliver_batch, and the duplicate flag per row of a publisher_deliver_batch.
	Messages   []EventMessage `json:"messages,omitempty"`
	Actions    []string       `json:"actions,omitempty"`
	Duplicates []bool         `json:"duplicates,omitempty"`
}

// EventMessage is a message a lease, peek or fetch returned.
type EventMessage struct {
	ID       string `json:"id"`
	Attempts int    `json:"attempts"`
	Token    string `json:"token,omitempty"`
}

// EventClaimed is one row an outbox claim returned.
type EventClaimed struct {
	ID               string `json:"id"`
	DeliveryAttempts int    `json:"delivery_attempts"`
	Token            string `json:"token"`
}

// discardRecorder is the Recorder of a store that records only into its commit log.
type discardRecorder struct{}

func (discardRecorder) Record(Event) {}

// JSONRecorder returns a Recorder writing each event to w as one JSON object on its own line.
// Writes are serialized; a write error is reported to onErr (nil ignores it) and the event is lost.
func JSONRecorder(w io.Writer, onErr func(error)) Recorder {
	return &jsonRecorder{enc: json.NewEncoder(w), onErr: onErr}
}

type jsonRecorder struct {
	mu    sync.Mutex
	enc   *json.Encoder
	onErr func(error)
}

func (r *jsonRecorder) Record(ev Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.enc.Encode(ev); err != nil && r.onErr != nil {
		r.onErr(err)
	}
}

// SlogRecorder returns a Recorder that logs each event to l at level Info with the message
// "actordelivery: event" and the attributes seq, read, at, op, args and result (and row, on a
// snapshot event). Logged through a
// slog.JSONHandler, each record is a JSON line `pconform convert` reads like JSONRecorder's.
func SlogRecorder(l *slog.Logger) Recorder { return slogRecorder{l: l} }

type slogRecorder struct{ l *slog.Logger }

func (r slogRecorder) Record(ev Event) {
	attrs := []slog.Attr{slog.Int64("seq", ev.Seq), slog.Bool("read", ev.Read), slog.Time("at", ev.At),
		slog.String("op", ev.Op), slog.Any("args", ev.Args), slog.Any("result", ev.Result)}
	if ev.Row != nil {
		attrs = append(attrs, slog.Any("row", ev.Row))
	}
	r.l.LogAttrs(context.Background(), slog.LevelInfo, "actordelivery: event", attrs...)
}

// Recording inside the store. While Options.Recorder is set, every transaction of the store
// (ExecTx, and so every store call) reads the commit counter when it begins, under the commit
// lock, and reads the clock once, after the lock: the whole transaction happens at one place in
// the commit order and at one instant. Events collect in the transaction; a commit writes the
// counter forward by the number of write events and hands the events to the Recorder.

// seqStart begins recording in a transaction just begun.
func (s *Store) seqStart(ctx context.Context, ts *txState) error {
	q := qSeqLock
	if ts.readOnly {
		q = qSeqRead
	}
	if err := ts.tx.QueryRowContext(ctx, q).Scan(&ts.base); err != nil {
		return s.dbErr("recorder: read commit counter", err)
	}
	ts.recording = true
	ts.now = s.nowMillis()
	return nil
}

// seqCommit numbers the transaction's events and moves the counter past its write events; it
// runs just before the commit.
func (s *Store) seqCommit(ctx context.Context, ts *txState) error {
	k := ts.base
	for i := range ts.events {
		if !ts.events[i].Read {
			k++
		}
		ts.events[i].Seq = k
	}
	if k == ts.base {
		return nil
	}
	if _, err := ts.tx.ExecContext(ctx, qSeqWrite, named("n", k)); err != nil {
		return s.dbErr("recorder: advance commit counter", err)
	}
	if s.commitLog {
		for _, ev := range ts.events {
			if ev.Read {
				continue
			}
			line, err := json.Marshal(ev)
			if err != nil {
				return fmt.Errorf("actordelivery: recorder: encode event %d: %w", ev.Seq, err)
			}
			if _, err := ts.tx.ExecContext(ctx, qLogInsert, named("seq", ev.Seq), named("event", string(line))); err != nil {
				return s.dbErr("recorder: write commit log", err)
			}
		}
	}
	return nil
}

// CommitLog returns the write events the store's commit log holds (Options.CommitLog), in
// sequence order: every committed write event of every process that recorded into this database
// with CommitLog set, none of a transaction that did not commit. Read events are not there.
//
// Errors: the database has no commit log (no store with CommitLog opened it); a stored event
// that does not decode, naming its sequence number.
func (s *Store) CommitLog(ctx context.Context) ([]Event, error) {
	rows, err := (boundQuerier{q: s.wdb, d: s.d}).QueryContext(ctx, qLogRead)
	if err != nil {
		return nil, s.dbErr("read commit log", err)
	}
	defer rows.Close()
	var evs []Event
	for rows.Next() {
		var seq int64
		var line string
		if err := rows.Scan(&seq, &line); err != nil {
			return nil, s.dbErr("read commit log", err)
		}
		var ev Event
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			return nil, fmt.Errorf("actordelivery: commit log seq %d: %w", seq, err)
		}
		if ev.Seq != seq {
			return nil, fmt.Errorf("actordelivery: commit log seq %d holds an event numbered %d", seq, ev.Seq)
		}
		evs = append(evs, ev)
	}
	if err := rows.Err(); err != nil {
		return nil, s.dbErr("read commit log", err)
	}
	return evs, nil
}

// seqEmit hands the events of an ended transaction to the recorder: all of them after a commit;
// after a rollback only the read events that came before any write (they saw the committed state
// base, which nothing in the transaction had changed yet).
func (s *Store) seqEmit(ts *txState, committed bool) {
	for _, ev := range ts.events {
		if !committed {
			if !ev.Read {
				return
			}
			ev.Seq = ts.base
		}
		s.rec.Record(ev)
	}
}

// record adds a store operation's event to the transaction ts, unless the transaction records a
// protocol step (whose event stands for every store call in it).
func (ts *txState) record(op string, read bool, a EventArgs, r EventResult) {
	if ts == nil || !ts.recording || ts.step || op == "" {
		return
	}
	ts.events = append(ts.events, Event{Read: read, At: fromMillis(ts.now), Op: op, Args: ts.store.stamp(a), Result: r})
}

// stamp names the store's incarnation in a, when a names a worker or a publisher.
func (s *Store) stamp(a EventArgs) EventArgs {
	if a.Worker != 0 || a.Publisher != 0 {
		a.Incarnation = s.incarnation
	}
	return a
}

// recordStep makes the protocol step's event the only event of the transaction in ctx: the store
// calls the step made are its parts, not operations of their own. read marks a step that changed
// nothing (a fetch that only peeked, a lost lease or claim); it keeps its place even if the
// transaction then rolls back. It does nothing when the store does not record.
func recordStep(ctx context.Context, read bool, op string, a EventArgs, r EventResult) {
	ts, _ := ctx.Value(txKey{}).(*txState)
	if ts == nil || !ts.recording {
		return
	}
	ts.step = true
	ts.events = append(ts.events[:0], Event{Read: read, At: fromMillis(ts.now), Op: op, Args: ts.store.stamp(a), Result: r})
}

// RecordStep records ev as the protocol step of the transaction ctx carries, for consumers and
// publishers built outside this package on the store's calls: ev.Op, Read, Args and Result are
// kept, Seq and At are the transaction's. Like the package's own steps, it stands for every store
// call of the transaction; a Read step (one that changed nothing) keeps its place even if the
// transaction rolls back. It does nothing when ctx carries no transaction of a recording store.
//
// Why it is public: a recorded history is checked step by step against the model (docs/observed.md),
// and a consumer loop written on Fetch-like store calls (Lease, Ack, NackByID, ...) would otherwise
// record its store operations, not the consumer_handle step the model knows. pconform's own broken
// consumers (internal/brokenstore) are such loops; so is any application that drives the store
// without Consumer and wants its history checked.
func RecordStep(ctx context.Context, ev Event) { recordStep(ctx, ev.Read, ev.Op, ev.Args, ev.Result) }

// recordingStore returns the recording store whose transaction ctx carries, or nil.
func recordingStore(ctx context.Context) *Store {
	ts, _ := ctx.Value(txKey{}).(*txState)
	if ts == nil || !ts.recording {
		return nil
	}
	return ts.store
}

// startRecording makes the store record to rec (nil: it does not record, unless commitLog). It
// creates the commit counter first, and the commit log when commitLog: the tables exist only in
// databases that were recorded; a store that does not record never touches them.
func (s *Store) startRecording(rec Recorder, commitLog bool) error {
	if rec == nil && !commitLog {
		return nil
	}
	if rec == nil {
		rec = discardRecorder{}
	}
	ctx := context.Background()
	qs := []string{qSeqTable, qSeqInit}
	if commitLog {
		qs = append(qs, qLogTable)
	}
	s.commitLog = commitLog
	for _, q := range qs {
		if _, err := (boundQuerier{q: s.wdb, d: s.d}).ExecContext(ctx, q); err != nil {
			return s.dbErr("recorder: create commit counter", err)
		}
	}
	s.rec = rec
	s.incarnation = newIncarnation(time.Now())
	// The incarnation's own event, then the snapshot of what the database holds: reads placed
	// after the last commit before this Open, so a log names each incarnation once, before any
	// step of its workers, and states the rows they start from. It runs on the writer (the
	// reader pool is not open yet) and writes nothing.
	if err := s.recordOpening(ctx); err != nil {
		return fmt.Errorf("actordelivery: recorder: record the incarnation: %w", err)
	}
	return nil
}

// Incarnation returns the id of this Open of the store while it records (Options.Recorder or
// Options.CommitLog), "" otherwise: a UUIDv7 (time-ordered, 74 random bits), unique per Open. The
// store records it once, as an "incarnation" event, and names it in every event of its
// consumers and publishers, so two processes, or one process restarted, never share a worker.
func (s *Store) Incarnation() string { return s.incarnation }

// newIncarnation returns a fresh UUIDv7 for the instant now (RFC 9562).
func newIncarnation(now time.Time) string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(fmt.Sprintf("actordelivery: crypto/rand failed: %v", err)) // never, since Go 1.24
	}
	ms := uint64(now.UnixMilli())
	for i := range 6 {
		b[i] = byte(ms >> (40 - 8*i))
	}
	b[6] = b[6]&0x0f | 0x70
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// peekedMessage is m as a peek or a leaseless fetch shows it: without a token, since it takes no
// lease (a row may still carry the stale token of a lease that ran out; the trace format's peek
// and leaseless fetch report none).
func peekedMessage(m *Message) *EventMessage {
	em := eventMessage(m)
	if em != nil {
		em.Token = ""
	}
	return em
}
