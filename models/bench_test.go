package models

import (
	"testing"

	"github.com/pconform/pconform/traces"
)

// BenchmarkRun runs one fixed generated sequence of 200 steps (seed 1) from Init and reports the
// cost per step, which includes the copy Step makes of the whole state.
func BenchmarkRun(b *testing.B) {
	g := newGen(1)
	s := Init(Config{})
	steps := make([]traces.Step, 0, 200)
	for range 200 {
		st := g.step()
		next, r, err := Step(s, st.Op, st.At, st.Args)
		if err != nil {
			b.Fatal(err)
		}
		g.observe(st, r)
		s = next
		steps = append(steps, st)
	}
	for b.Loop() {
		if _, _, err := Run(Config{}, steps); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(steps)), "ns/step")
}
