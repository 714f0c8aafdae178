package properties

import (
	"context"
	"slices"
	"testing"
)

// BenchmarkHunt hunts each broken variant once per iteration, iteration i with seed base+i, and
// reports the median over those seeds of the sequences run until the bug was found
// (sequences/find), of the shrunk trace's length (steps/shrunk) and of the commands run while
// searching (commands/find); ns/op is the time of one whole hunt, shrinking and replays included.
//
//	go test ./properties/ -run '^$' -bench BenchmarkHunt -benchtime 20x
func BenchmarkHunt(b *testing.B) {
	base := baseSeed(b)
	for _, variant := range HuntedVariants() {
		b.Run(variant, func(b *testing.B) {
			var seqs, steps, cmds []float64
			i := int64(0)
			for b.Loop() {
				res, err := Hunt(context.Background(), HuntConfig{Variant: variant, Seed: base + i})
				i++
				if err != nil || !res.Found {
					b.Fatalf("seed %d: found=%v, %v", base+i-1, res.Found, err)
				}
				seqs = append(seqs, float64(res.Sequences))
				steps = append(steps, float64(res.ShrunkSteps))
				cmds = append(cmds, float64(res.Commands))
			}
			b.ReportMetric(median(seqs), "sequences/find")
			b.ReportMetric(median(steps), "steps/shrunk")
			b.ReportMetric(median(cmds), "commands/find")
		})
	}
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
