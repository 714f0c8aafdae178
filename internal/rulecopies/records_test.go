package rulecopies_test

import (
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/pconform/pconform/actordelivery"
	"github.com/pconform/pconform/traces"
)

// recordPair is a record the store returns and its twin in the trace format: the row a snapshot
// states, built from the store's record field by field (internal/targets' store snapshot).
type recordPair struct {
	store, trace reflect.Type
	// renamed maps a store field to its twin's name where the two differ.
	renamed map[string]string
	// storeOnly are the store's fields with no twin, each with why.
	storeOnly map[string]string
}

var recordPairs = []recordPair{
	{
		store: reflect.TypeFor[actordelivery.Message](), trace: reflect.TypeFor[traces.MessageRow](),
		storeOnly: map[string]string{
			"Seq":       "the store's insertion order, a tie-break of delivery order; a trace states order through its fetches' results",
			"CreatedAt": "the store's bookkeeping; no rule of docs/semantics.md reads it",
		},
	},
	{
		store: reflect.TypeFor[actordelivery.OutboxRow](), trace: reflect.TypeFor[traces.OutboxRow](),
		renamed: map[string]string{"DeadReason": "Reason", "ClaimToken": "Token"},
		storeOnly: map[string]string{
			"MaxDeliveryAttempts": "a trace states it once, in the outbox_enqueue's args (traces.Args.MaxDeliveryAttempts)",
			"Seq":                 "the store's insertion order, a tie-break of claim order; a trace states order through its claims' results",
		},
	},
	{store: reflect.TypeFor[actordelivery.DeadLetter](), trace: reflect.TypeFor[traces.DeadLetterRow]()},
	{store: reflect.TypeFor[actordelivery.Redrive](), trace: reflect.TypeFor[traces.RedriveRecord]()},
}

// fieldsMap says whether a store field of type store maps to the trace field name of type trace. Times
// are seconds since traces.Epoch (traces.Seconds and traces.At), payloads are text, and a token
// is the store's string against the trace's symbol (traces.Binder binds the two).
func fieldsMap(name string, store, trace reflect.Type) bool {
	switch {
	case store == trace:
		return true
	case store == reflect.TypeFor[time.Time]():
		return trace == reflect.TypeFor[int64]()
	case store == reflect.TypeFor[[]byte]():
		return trace == reflect.TypeFor[string]()
	case name == "Token":
		return store == reflect.TypeFor[string]() && trace == reflect.TypeFor[int]()
	}
	return false
}

// exportedFields are t's exported fields by name, an embedded struct's promoted in its place.
func exportedFields(t reflect.Type) map[string]reflect.StructField {
	fs := map[string]reflect.StructField{}
	for _, f := range reflect.VisibleFields(t) {
		if f.IsExported() && !f.Anonymous {
			fs[f.Name] = f
		}
	}
	return fs
}

// TestRecordsMatchTheirTraceTwins pairs every exported field of the store's records with its
// trace-format twin, by name (or the pair's explicit rename), and fails naming the field when one
// side has a field the other lacks, or when the types do not map (fieldsMap). A field kept on the
// store's side on purpose is listed, with why, in its pair's storeOnly.
func TestRecordsMatchTheirTraceTwins(t *testing.T) {
	for _, p := range recordPairs {
		store, trace := exportedFields(p.store), exportedFields(p.trace)
		twinned := map[string]bool{}
		names := make([]string, 0, len(store))
		for name := range store {
			names = append(names, name)
		}
		slices.Sort(names)
		for _, name := range names {
			sf := store[name]
			if why, ok := p.storeOnly[name]; ok {
				if tf, has := trace[name]; has {
					t.Errorf("%s.%s is listed as the store's only (%s), but %s has %s", p.store, name, why, p.trace, tf.Name)
				}
				continue
			}
			twin := name
			if r, ok := p.renamed[name]; ok {
				twin = r
			}
			tf, ok := trace[twin]
			if !ok {
				t.Errorf("%s.%s has no twin in %s: add %s there, or list it in the pair's storeOnly with why", p.store, name, p.trace, twin)
				continue
			}
			twinned[twin] = true
			if !fieldsMap(twin, sf.Type, tf.Type) {
				t.Errorf("%s.%s is of type %s but its twin %s.%s is of type %s: the types do not map", p.store, name, sf.Type, p.trace, twin, tf.Type)
			}
		}
		for _, listed := range []map[string]string{p.storeOnly, p.renamed} {
			for name := range listed {
				if _, ok := store[name]; !ok {
					t.Errorf("the pair of %s and %s lists %s, but %s has no such field", p.store, p.trace, name, p.store)
				}
			}
		}
		for _, f := range reflect.VisibleFields(p.trace) {
			if f.IsExported() && !f.Anonymous && !twinned[f.Name] {
				t.Errorf("%s.%s has no twin in %s: add it there, or rename its twin in the pair", p.trace, f.Name, p.store)
			}
		}
	}
}
