package traces

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestEarlierVersionsRead keeps one real file of every earlier format version readable. The
// fixtures in testdata/versions were taken from the repository's history (their names say which
// version and shape; testdata/versions/README.md says from which commit). Each must read, come
// out in the current format, and upgrade to exactly its golden file in testdata/versions/upgraded
// (-update rewrites those).
func TestEarlierVersionsRead(t *testing.T) {
	seen := map[string]bool{}
	for _, path := range files(t, "testdata/versions/*.json") {
		name := filepath.Base(path)
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var head struct{ Format string }
			if err := json.Unmarshal(data, &head); err != nil {
				t.Fatal(err)
			}
			if head.Format == Format {
				t.Fatalf("carries the current format %s; this directory holds earlier versions only", Format)
			}
			seen[head.Format] = true
			tr, err := Unmarshal(data, path)
			if err != nil {
				t.Fatalf("an earlier version no longer reads: %v", err)
			}
			if tr.Format != Format {
				t.Errorf("read as %q, want it upgraded to %q", tr.Format, Format)
			}
			out, err := Upgrade(data, path)
			if err != nil {
				t.Fatal(err)
			}
			checkGolden(t, filepath.Join("testdata/versions/upgraded", name), out)
			again, err := Upgrade(out, "upgraded")
			if err != nil || string(again) != string(out) {
				t.Errorf("upgrading the upgraded file changed it or failed (%v)", err)
			}
		})
	}
	for _, f := range Formats[1:] {
		if !seen[f] {
			t.Errorf("no fixture of format %s in testdata/versions; keep one real file of every earlier version", f)
		}
	}
}

// TestV1FirstShapeUnknown checks what the upgrade of FormatV1's first shape states: the dead
// letters' five later fields are unknown, not zero, and the four it carried are kept.
func TestV1FirstShapeUnknown(t *testing.T) {
	tr, err := ReadFile("testdata/versions/v1-leased-stale-ack.json")
	if err != nil {
		t.Fatal(err)
	}
	want := []Column{ColDeadLetterDeadAt, ColDeadLetterKey, ColDeadLetterMaxAttempts, ColDeadLetterPayload, ColDeadLetterPriority}
	if !slices.Equal(tr.Final.Unknown, want) {
		t.Errorf("unknown = %v, want %v", tr.Final.Unknown, want)
	}
	if len(tr.Final.DeadLetters) == 0 || tr.Final.DeadLetters[0].Reason == "" || tr.Final.DeadLetters[0].Attempts == 0 {
		t.Errorf("the dead letters' known fields were lost: %+v", tr.Final.DeadLetters)
	}
	whole, err := ReadFile("testdata/versions/v1-whole-row-leased-exhausted-after-redrive.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(whole.Final.Unknown) != 0 {
		t.Errorf("a v1 file with whole dead-letter rows declares %v unknown; it states every column", whole.Final.Unknown)
	}
}

// TestUnknownVersionNamed checks that a format version the reader does not know is refused by
// name, with the versions it does read.
func TestUnknownVersionNamed(t *testing.T) {
	_, err := Unmarshal([]byte(`{"format": "pconform.trace/v7", "name": "x"}`), "x.json")
	if err == nil {
		t.Fatal("an unknown version was accepted")
	}
	for _, want := range []string{`"pconform.trace/v7"`, FormatV2, FormatV1} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
}
