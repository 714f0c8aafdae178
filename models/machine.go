package models

import (
	"github.com/pconform/pconform/traces"
)

// Machine runs the model's steps in place on a state only it holds. Its transitions are Step's,
// but without the copy Step makes of the whole state to leave its input unchanged, so a run of n
// steps costs time linear in n, where n calls of Step cost time quadratic in n. Use Step to
// explore (keep a state, branch from it); use a Machine to run one long trace.
//
// A step that fails (an error wrapping [ErrMalformed]) changes nothing: the Machine goes on from
// the state before it, so a checker that reports a malformed step can check the steps after it.
type Machine struct {
	s State
}

// NewMachine returns a machine starting from a copy of s.
func NewMachine(s State) *Machine { return &Machine{s: s.clone()} }

// Step applies one step, as [Step] does, and returns the result a caller would observe.
func (m *Machine) Step(op traces.Op, at int64, a traces.Args) (traces.Result, error) {
	if err := check(&m.s, op, at, &a); err != nil {
		return traces.Result{}, err
	}
	r, err := m.s.apply(op, at, &a)
	if err != nil {
		return traces.Result{}, err
	}
	return r, nil
}

// State returns a copy of the state reached so far; later steps do not change it.
func (m *Machine) State() State { return m.s.clone() }

// Snapshot returns the canonical snapshot of the state reached so far (see [State.Snapshot]).
func (m *Machine) Snapshot() traces.Snapshot { return m.s.Snapshot() }
