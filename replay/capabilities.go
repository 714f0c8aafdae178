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

	_ struct{}
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
	for _, col := range c.Unknown {
		if !slices.Contains(traces.Unknowable, col) {
			return fmt.Errorf("replay: capabilities: unknown column %q is not one a snapshot may leave unknown (traces.Unknowable)", col)
		}
	}
	return nil
}
