package traces

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// FuzzRead feeds arbitrary bytes to the parser. Whatever the input, Unmarshal must return either
// a *ParseError wrapping ErrSyntax or ErrInvalid, or a trace that Marshal accepts and that reads
// back equal, with a byte-identical second encoding. It must never panic.
//
// The seed corpus in testdata/fuzz/FuzzRead holds every file of testdata/good, testdata/bad and
// testdata/versions (TestFuzzCorpusInSync keeps it so). Run with
//
//	go test ./traces -run '^$' -fuzz FuzzRead -fuzztime 60s
func FuzzRead(f *testing.F) {
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"format": "pconform.trace/v2", "name": "n", "origin": {"kind": "hand"}, "expect": {"diverges_at": -1}, "steps": [], "final": null}`))
	f.Add([]byte(`{"format": "pconform.trace/v1", "name": "n", "origin": {"kind": "hand"}, "expect": {"diverges_at": -1}, "steps": [], "final": null}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		tr, err := Unmarshal(data, "fuzz")
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("error %v is a %T, not a *ParseError", err, err)
			}
			if !errors.Is(err, ErrSyntax) && !errors.Is(err, ErrInvalid) {
				t.Fatalf("error %v wraps neither ErrSyntax nor ErrInvalid", err)
			}
			if pe.Offset > int64(len(data)) {
				t.Fatalf("offset %d past the input's %d bytes", pe.Offset, len(data))
			}
			return
		}
		if err := checkRoundTrip(tr); err != nil {
			t.Fatal(err)
		}
	})
}

func checkRoundTrip(tr *Trace) error {
	b, err := Marshal(tr)
	if err != nil {
		return fmt.Errorf("a trace Unmarshal accepted does not marshal: %w", err)
	}
	back, err := Unmarshal(b, "rewritten")
	if err != nil {
		return fmt.Errorf("the canonical encoding does not read back: %w\n%s", err, b)
	}
	if !reflect.DeepEqual(tr, back) {
		return fmt.Errorf("read-back differs (-first +second):\n%s", cmp.Diff(tr, back))
	}
	b2, err := Marshal(back)
	if err != nil {
		return err
	}
	if !bytes.Equal(b, b2) {
		return fmt.Errorf("encoding is not stable:\n%s\n%s", b, b2)
	}
	return nil
}

// TestFuzzCorpusInSync checks that the committed seed corpus holds exactly the good, bad and
// earlier-version example files, in the go test fuzz v1 encoding; -update rewrites it.
func TestFuzzCorpusInSync(t *testing.T) {
	const dir = "testdata/fuzz/FuzzRead"
	want := map[string][]byte{}
	for _, pattern := range []string{"testdata/good/*.json", "testdata/bad/*.json", "testdata/versions/*.json"} {
		for _, path := range files(t, pattern) {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			name := filepath.Base(filepath.Dir(path)) + "-" + strings.TrimSuffix(filepath.Base(path), ".json")
			want[name] = fmt.Appendf(nil, "go test fuzz v1\n[]byte(%q)\n", data)
		}
	}
	for name, content := range want {
		checkGolden(t, filepath.Join(dir, name), content)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if _, ok := want[e.Name()]; !ok {
			t.Errorf("%s/%s is not a good or bad example; remove it or add the example", dir, e.Name())
		}
	}
}
