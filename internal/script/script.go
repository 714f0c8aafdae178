package script

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/cockroachdb/datadriven"

	"github.com/pconform/pconform/internal/tracefmt"
	"github.com/pconform/pconform/traces"
)

// Op returns the trace operation cmd names, and false when it names none.
func Op(cmd string) (traces.Op, bool) {
	op := traces.Op(cmd)
	_, ok := traces.Spec[op]
	return op, ok
}

// Args reads an operation's command arguments into traces.Args. now is the current logical time;
// the returned at is now, or the later time an at=N argument moves it to. The error names the
// argument at fault.
func Args(op traces.Op, cmdArgs []datadriven.CmdArg, now int64) (at int64, a traces.Args, err error) {
	spec, ok := traces.Spec[op]
	if !ok {
		return now, a, fmt.Errorf("unknown operation %q", op)
	}
	at = now
	v := reflect.ValueOf(&a).Elem()
	names := tracefmt.JSONFields(v.Type())
	seen := map[string]bool{}
	for _, arg := range cmdArgs {
		if len(arg.Vals) != 1 {
			return now, a, fmt.Errorf("argument %q needs exactly one value", arg.Key)
		}
		val, err := value(arg.Key, arg.Vals[0])
		if err != nil {
			return now, a, err
		}
		if arg.Key == "at" {
			n, err := strconv.ParseInt(val, 10, 64)
			if err != nil || n < now {
				return now, a, fmt.Errorf("at=%s: want an integer >= the current time %d", val, now)
			}
			at = n
			continue
		}
		if !slices.Contains(spec.Args, arg.Key) && !slices.Contains(spec.OptionalArgs, arg.Key) {
			return now, a, fmt.Errorf("%s takes no argument %q (takes %v, optionally %v)", op, arg.Key, spec.Args, spec.OptionalArgs)
		}
		f := v.Field(slices.Index(names, arg.Key))
		switch f.Kind() {
		case reflect.String:
			f.SetString(val)
		case reflect.Int, reflect.Int64:
			n, err := strconv.ParseInt(val, 10, 64)
			if err != nil {
				return now, a, fmt.Errorf("%s=%s: not an integer", arg.Key, val)
			}
			f.SetInt(n)
		default:
			return now, a, fmt.Errorf("%s: argument of kind %s cannot be given in a script", arg.Key, f.Kind())
		}
		seen[arg.Key] = true
	}
	for _, req := range spec.Args {
		if !seen[req] {
			return now, a, fmt.Errorf("%s needs argument %q", op, req)
		}
	}
	return at, a, nil
}

// value reads one argument's value as a script line writes it: a word taken as it is, or a Go
// string literal ("..."), which tracefmt writes for a string that is empty or holds a character
// that would not read back as one word. A value may not hold a space, because the line syntax
// ends a value at the first space.
func value(key, val string) (string, error) {
	if strings.HasPrefix(val, `"`) {
		s, err := strconv.Unquote(val)
		if err != nil {
			return "", fmt.Errorf("%s=%s: not a valid Go string literal: %w", key, val, err)
		}
		val = s
	}
	if strings.Contains(val, " ") {
		return "", fmt.Errorf("%s=%q: a value cannot hold a space: a script line ends a value at the first space", key, val)
	}
	return val, nil
}

// Snapshot renders a snapshot one row a line, "(empty)" when it has no rows. The caller
// canonicalizes and symbolizes it first if it needs to.
func Snapshot(s traces.Snapshot) string {
	if lines := tracefmt.SnapshotLines(s); len(lines) > 0 {
		return strings.Join(lines, "\n")
	}
	return "(empty)"
}
