package traces

import (
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestEveryOpHasASpec(t *testing.T) {
	seen := map[Op]bool{}
	for _, op := range Ops {
		if seen[op] {
			t.Errorf("%s listed twice in Ops", op)
		}
		seen[op] = true
		if _, ok := Spec[op]; !ok {
			t.Errorf("%s has no Spec entry", op)
		}
	}
	for op := range Spec {
		if !seen[op] {
			t.Errorf("Spec has %s, which Ops does not list", op)
		}
	}
}

// TestSpecNamesKnownFields checks that every name in Spec is a field the reader and writer know,
// that no name is both required and optional, and that protocol ops are exactly the protocol ones.
func TestSpecNamesKnownFields(t *testing.T) {
	for op, sp := range Spec {
		for _, name := range slices.Concat(sp.Args, sp.OptionalArgs) {
			if lookup(argFields, name) == nil {
				t.Errorf("%s: argument %q is not in argFields", op, name)
			}
		}
		for _, name := range sp.Args {
			if slices.Contains(sp.OptionalArgs, name) {
				t.Errorf("%s: %q is both required and optional", op, name)
			}
		}
		for _, name := range sp.Results {
			if lookup(resultFields, name) == nil {
				t.Errorf("%s: result %q is not in resultFields", op, name)
			}
		}
		wantProtocol := op == OpConsumerFetch || op == OpConsumerHandle || op == OpPublisherDeliver || op == OpCrash ||
			op == OpWorkerStop || op == OpWorkerDrain || op == OpWake || op == OpPollTick ||
			op == OpConsumerFetchBatch || op == OpConsumerHandleBatch || op == OpConsumerEffectsBatch || op == OpPublisherDeliverBatch
		if sp.Protocol != wantProtocol {
			t.Errorf("%s: Protocol = %v", op, sp.Protocol)
		}
	}
}

// TestFieldTablesMatchStructTags keeps the reader's and writer's field tables in step with the
// json tags of the public types: same names, same order, and optional exactly when omitempty (or
// omitzero, for a struct member).
func TestFieldTablesMatchStructTags(t *testing.T) {
	check := func(typ reflect.Type, names []string, optional []bool) {
		t.Helper()
		var wantNames []string
		var wantOpt []bool
		for f := range typ.Fields() {
			tag := f.Tag.Get("json")
			name, rest, _ := strings.Cut(tag, ",")
			wantNames = append(wantNames, name)
			wantOpt = append(wantOpt, strings.Contains(rest, "omitempty") || strings.Contains(rest, "omitzero"))
		}
		if !slices.Equal(names, wantNames) {
			t.Errorf("%s: table names %v, struct tags %v", typ.Name(), names, wantNames)
		}
		// Result.Message has no omitempty (the writer always writes it for the ops that report
		// it), yet a reader may meet it absent: it is optional in the table.
		if typ.Name() == "Result" {
			wantOpt[slices.Index(wantNames, "message")] = true
		}
		if !slices.Equal(optional, wantOpt) {
			t.Errorf("%s: table optional flags %v, struct omitempty %v", typ.Name(), optional, wantOpt)
		}
	}
	check(reflect.TypeFor[Args](), names(argFields), opts(argFields))
	check(reflect.TypeFor[Result](), names(resultFields), opts(resultFields))
	check(reflect.TypeFor[Message](), names(messageFields), opts(messageFields))
	check(reflect.TypeFor[Claimed](), names(claimedFields), opts(claimedFields))
	check(reflect.TypeFor[Origin](), names(originFields), opts(originFields))
	check(reflect.TypeFor[Expect](), names(expectFields), opts(expectFields))
	check(reflect.TypeFor[MessageRow](), names(messageRowFields), opts(messageRowFields))
	check(reflect.TypeFor[OutboxRow](), names(outboxRowFields), opts(outboxRowFields))
	check(reflect.TypeFor[DeadLetterRow](), names(deadLetterRowFields), opts(deadLetterRowFields))
}

func names[T any](fields []field[T]) []string {
	var out []string
	for _, f := range fields {
		out = append(out, f.name)
	}
	return out
}

func opts[T any](fields []field[T]) []bool {
	var out []bool
	for _, f := range fields {
		out = append(out, f.optional)
	}
	return out
}
