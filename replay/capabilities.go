package replay

import (
	"errors"
	"fmt"
	"slices"

	"github.com/pconform/pconform/traces"
)

// ErrRefused is wrapped by a Target's Do for a step the store refused (a constraint error, a
// value it does not accept): [Run] compares it as the result err "refused", like any other
// result, instead of failing the run. The message of the error is kept in the verdict's raw
// observation.
var ErrRefused = errors.New("replay: the store refused the step")

// Capabilities declares what a target cannot do or report. A target declares them with a method
// Capabilities() Capabilities; one without that method declares nothing (it runs every
// operation and reports every column). The zero value declares nothing.
type Capabilities struct {
	// Unsupported lists the operations the target does not run; Do answers them with
	// ErrUnsupported, and a replay that reaches one is Inconclusive.
	Unsupported []traces.Op
	// Unknown lists the snapshot columns the target cannot report (traces.Unknowable): they are
	// left out of the final comparison, never invented, and the target's snapshot must leave them
	// zero.
	Unknown []traces.Column
	// Unreported lists the results the target cannot report: a count its API discards (purge's
	// or expire's affected), a duplicate flag, an error kind it does not tell apart from success
	// (a dead_letter of a missing id that reports nothing instead of not_found). [Run] leaves each
	// out of the comparison of that operation's steps, on both sides, and lists in the verdict
	// (Verdict.NotCompared) every step where the trace expected or the target reported something
	// for it.
	Unreported []UnreportedResult

	_ struct{}
}

// UnreportedResult names one result field of one operation that a target does not report.
type UnreportedResult struct {
	Op traces.Op
	// Field is "affected", "duplicate" or "err"; the operation must have it among its results
	// (traces.Spec[Op].Results). "err" stands for the one error kind the operation reports
	// (traces.Spec[Op].Err, such as not_found).
	Field string
}

// The result fields a target may declare it does not report: the names the trace format gives
// them. Unexported, so the declaration reads as the trace does ({Op: traces.OpPurge, Field:
// "affected"}) without adding names an author must learn.
const (
	resultAffected  = "affected"
	resultDuplicate = "duplicate"
	resultErr       = "err"
)

// Reports reports whether c leaves field of op's result reported.
func (c Capabilities) Reports(op traces.Op, field string) bool {
	return !slices.Contains(c.Unreported, UnreportedResult{Op: op, Field: field})
}

// blankUnreported clears in want and got the fields of op's result that c declares unreported,
// and describes each one where either side stated something ("" when nothing was left out).
func (c Capabilities) blankUnreported(op traces.Op, want, got *traces.Result) []string {
	var out []string
	for _, u := range c.Unreported {
		if u.Op != op {
			continue
		}
		switch u.Field {
		case resultAffected:
			if want.Affected != 0 || got.Affected != 0 {
				out = append(out, fmt.Sprintf("affected (expected %d, observed %d)", want.Affected, got.Affected))
			}
			want.Affected, got.Affected = 0, 0
		case resultDuplicate:
			if want.Duplicate || got.Duplicate {
				out = append(out, fmt.Sprintf("duplicate (expected %t, observed %t)", want.Duplicate, got.Duplicate))
			}
			want.Duplicate, got.Duplicate = false, false
		case resultErr:
			kind := traces.Spec[op].Err
			if want.Err == kind || got.Err == kind {
				out = append(out, fmt.Sprintf("err %s (expected %q, observed %q)", kind, want.Err, got.Err))
			}
			if want.Err == kind {
				want.Err = ""
			}
			if got.Err == kind {
				got.Err = ""
			}
		}
	}
	return out
}

// CapabilitiesOf returns what target declares, the zero Capabilities when it declares nothing.
func CapabilitiesOf(target Target) Capabilities {
	if d, ok := target.(interface{ Capabilities() Capabilities }); ok {
		return d.Capabilities()
	}
	return Capabilities{}
}

// Supports reports whether c leaves op supported.
func (c Capabilities) Supports(op traces.Op) bool { return !slices.Contains(c.Unsupported, op) }

// Check refuses a declaration that names an operation or a column the format does not know.
func (c Capabilities) Check() error {
	for _, op := range c.Unsupported {
		if _, ok := traces.Spec[op]; !ok {
			return fmt.Errorf("replay: capabilities: unsupported operation %q is not an operation of the trace format", op)
		}
	}
	for _, u := range c.Unreported {
		spec, ok := traces.Spec[u.Op]
		if !ok {
			return fmt.Errorf("replay: capabilities: unreported result of %q: not an operation of the trace format", u.Op)
		}
		if u.Field != resultAffected && u.Field != resultDuplicate && u.Field != resultErr {
			return fmt.Errorf("replay: capabilities: unreported result %q of %s: only %q, %q and %q may be declared unreported",
				u.Field, u.Op, resultAffected, resultDuplicate, resultErr)
		}
		if !slices.Contains(spec.Results, u.Field) || (u.Field == resultErr && spec.Err == "") {
			return fmt.Errorf("replay: capabilities: unreported result %q of %s: the operation has no such result", u.Field, u.Op)
		}
	}
	for _, col := range c.Unknown {
		if !slices.Contains(traces.Unknowable, col) {
			return fmt.Errorf("replay: capabilities: unknown column %q is not one a snapshot may leave unknown (traces.Unknowable)", col)
		}
	}
	return nil
}
