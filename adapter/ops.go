package adapter

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/pconform/pconform/replay"
	"github.com/pconform/pconform/traces"
)

// Store is what [Adapt], [WithProtocol] and [WithRuntime] take: a [Target], or a store-level
// adapter that has a method per operation instead of a Do (see [Adapt]).
type Store interface {
	Snapshot(ctx context.Context) (Snapshot, error)
	Reopen(ctx context.Context) error
	Close() error
}

// ErrDenied is returned (wrapped) by an operation method of a [Store] for the operation's one
// documented error (docs/trace-format.md): lease_lost for ack, nack and extend; not_found for
// ack_by_id, nack_by_id, dead_letter, load_checkpoint and redrive; claim_lost for
// outbox_complete, outbox_fail and outbox_dead_letter; version_conflict for save_checkpoint;
// not_committed for wake; refused for outbox_enqueue (as [ErrRefused]). The kit reports it as
// that error kind, the result a caller of the store sees. An operation with no documented error
// fails the step instead.
var ErrDenied = errors.New("adapter: the store denied the step with the operation's documented error")

// opFunc is the type of a Store's operation method.
type opFunc = func(ctx context.Context, at int64, a Args) (Observation, error)

// MethodName is the name of the Store method that runs op: its words capitalised, "id" as "ID"
// (enqueue: Enqueue, ack_by_id: AckByID, outbox_dead_letter: OutboxDeadLetter).
func MethodName(op traces.Op) string {
	words := strings.Split(string(op), "_")
	for i, w := range words {
		if w == "id" {
			words[i] = "ID"
		} else if w != "" {
			words[i] = strings.ToUpper(w[:1]) + w[1:]
		}
	}
	return strings.Join(words, "")
}

// Adapt returns store as a [Target]. A store that is a Target already is returned as it is.
// Otherwise each step runs store's method for its operation ([MethodName]), of type
//
//	func(ctx context.Context, at int64, a adapter.Args) (adapter.Observation, error)
//
// An operation with no such method is unsupported: the kit declares it so, and a trace that
// reaches it is replayed up to it, then skipped. advance_clock with no method does nothing, as
// a store reads the time of each step from at. A method of that name with another type fails
// every step that needs it, naming the type it should have. An error wrapping [ErrDenied] is
// reported as the operation's documented error kind. An outbox_enqueue with no
// max_delivery_attempts gets the default (traces.DefaultMaxDeliveryAttempts), so that the
// method need not know it. store's own Capabilities method, if it has one, adds what it declares.
func Adapt(store Store) Target {
	if t, ok := store.(Target); ok {
		return t
	}
	d := &dispatch{store: store, ops: map[traces.Op]opFunc{}, wrong: map[traces.Op]error{}}
	v := reflect.ValueOf(store)
	want := reflect.TypeFor[opFunc]()
	for op := range traces.Spec {
		m := v.MethodByName(MethodName(op))
		switch {
		case !m.IsValid():
		case m.Type() != want:
			d.wrong[op] = fmt.Errorf("adapter: %T's method %s has type %s, want %s: step %s cannot run",
				store, MethodName(op), m.Type(), want, op)
		default:
			d.ops[op] = m.Interface().(opFunc)
		}
	}
	return d
}

// dispatch is the Target Adapt makes of a Store with a method per operation.
type dispatch struct {
	store Store
	ops   map[traces.Op]opFunc
	// wrong holds the operations whose method has the wrong type.
	wrong map[traces.Op]error
}

func (d *dispatch) Snapshot(ctx context.Context) (Snapshot, error) { return d.store.Snapshot(ctx) }
func (d *dispatch) Reopen(ctx context.Context) error               { return d.store.Reopen(ctx) }
func (d *dispatch) Close() error                                   { return d.store.Close() }

// Capabilities declares the operations with no method unsupported, with what the store declares.
func (d *dispatch) Capabilities() Capabilities {
	var c Capabilities
	if own, ok := d.store.(interface{ Capabilities() Capabilities }); ok {
		c = own.Capabilities()
		c.Unsupported = slices.Clone(c.Unsupported)
	}
	for op := range traces.Spec {
		_, has := d.ops[op]
		_, wrong := d.wrong[op]
		if !has && !wrong && op != traces.OpAdvanceClock && !slices.Contains(c.Unsupported, op) {
			c.Unsupported = append(c.Unsupported, op)
		}
	}
	slices.Sort(c.Unsupported)
	return c
}

func (d *dispatch) Do(ctx context.Context, op traces.Op, at int64, a Args) (Observation, error) {
	if err, ok := d.wrong[op]; ok {
		return Observation{}, err
	}
	f, ok := d.ops[op]
	switch {
	case !ok && op == traces.OpAdvanceClock:
		return Observation{}, nil
	case !ok:
		return Observation{}, fmt.Errorf("adapter: %T has no method %s: %w: %s", d.store, MethodName(op), replay.ErrUnsupported, op)
	}
	if op == traces.OpOutboxEnqueue && a.MaxDeliveryAttempts == 0 {
		a.MaxDeliveryAttempts = traces.DefaultMaxDeliveryAttempts
	}
	o, err := f(ctx, at, a)
	if errors.Is(err, ErrDenied) {
		kind := traces.Spec[op].Err
		if kind == "" {
			return o, fmt.Errorf("adapter: %s has no documented error to deny it with: %w", op, err)
		}
		o.Err, err = kind, nil
	}
	return o, err
}
