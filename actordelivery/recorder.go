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

	"github.com/pconform/pconform/actordelivery/record"
)

// Recorder receives the store's history while it runs: one Event per committed store operation
// and per protocol step (a consumer's fetch or handle, a fold publisher's delivery), each with the
// commit sequence number its transaction drew. Set it with Options.Recorder; nil, the default,
// records nothing and costs nothing (no statement, no allocation).
//
// Record is called after the transaction committed (or, for an observation that changed nothing,
// after it ended), from the goroutine that ran it, so calls from concurrent goroutines may arrive
// out of sequence order; sort by Event.Seq. With Options.GroupCommit, the goroutine that committed
// a group records its members' events, in turn order. Record must not call the store.
type Recorder interface {
	Record(Event)
}

// The recorded history's types live in package record, which links no database driver, so that
// a program that only reads or checks logs needs neither SQLite nor PostgreSQL. These are their
// names in this package.
type (
	// Event is one recorded operation (record.Event).
	Event = record.Event
	// EventArgs are an event's arguments (record.Args).
	EventArgs = record.Args
	// EventResult is what the caller observed (record.Result).
	EventResult = record.Result
	// EventMessage is a message a lease, peek or fetch returned (record.Message).
	EventMessage = record.Message
	// EventClaimed is one row an outbox claim returned (record.Claimed).
	EventClaimed = record.Claimed
)

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
