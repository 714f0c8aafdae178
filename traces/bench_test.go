package traces

import (
	"os"
	"testing"
)

// BenchmarkUnmarshal and BenchmarkMarshal measure the example that uses the most operations;
// b.SetBytes makes go test report MB/s, and steps/s is reported alongside.
func BenchmarkUnmarshal(b *testing.B) {
	data, err := os.ReadFile("testdata/good/leased-stale-ack.json")
	if err != nil {
		b.Fatal(err)
	}
	tr, err := Unmarshal(data, "bench")
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Unmarshal(data, "bench"); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(tr.Steps)*b.N)/b.Elapsed().Seconds(), "steps/s")
}

func BenchmarkMarshal(b *testing.B) {
	tr, err := ReadFile("testdata/good/leased-stale-ack.json")
	if err != nil {
		b.Fatal(err)
	}
	out, _ := Marshal(tr)
	b.SetBytes(int64(len(out)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Marshal(tr); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(tr.Steps)*b.N)/b.Elapsed().Seconds(), "steps/s")
}
