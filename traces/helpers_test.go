package traces

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestWalk(t *testing.T) {
	dir := t.TempDir()
	for _, p := range []string{"b.json", "a.json", "sub/c.json", "sub/notes.txt", ".hidden/d.json", "e.json.bak"} {
		path := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte("{}"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := Walk(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Join(dir, "a.json"), filepath.Join(dir, "b.json"), filepath.Join(dir, "sub", "c.json")}
	if !slices.Equal(got, want) {
		t.Errorf("Walk = %v, want %v", got, want)
	}
	if _, err := Walk(filepath.Join(dir, "missing")); !errors.Is(err, os.ErrNotExist) || !strings.HasPrefix(err.Error(), "traces: ") {
		t.Errorf("Walk(missing) = %v, want a wrapped os.ErrNotExist", err)
	}
}

func TestWalkExamples(t *testing.T) {
	got, err := Walk("testdata/good")
	if err != nil {
		t.Fatal(err)
	}
	if want := files(t, "testdata/good/*.json"); !slices.Equal(got, want) {
		t.Errorf("Walk = %v, want %v", got, want)
	}
}

func TestCanonicalize(t *testing.T) {
	s := &Snapshot{
		Messages: []MessageRow{
			{Mailbox: "b", ID: "1"}, {Mailbox: "a", ID: "2"}, {Mailbox: "a", ID: "10"},
		},
		DeadLetters: []DeadLetterRow{{ID: "z", Mailbox: "a"}, {ID: "y", Mailbox: "b"}},
		Effects:     map[string][]string{"q": {"3", "1"}, "empty": {}, "nil": nil},
	}
	Canonicalize(s)
	want := &Snapshot{
		Messages: []MessageRow{
			{Mailbox: "a", ID: "10"}, {Mailbox: "a", ID: "2"}, {Mailbox: "b", ID: "1"},
		},
		Outbox:      []OutboxRow{},
		DeadLetters: []DeadLetterRow{{ID: "y", Mailbox: "b"}, {ID: "z", Mailbox: "a"}},
		// Effect lists keep commit order; empty ones are dropped.
		Effects: map[string][]string{"q": {"3", "1"}},
	}
	if !reflect.DeepEqual(s, want) {
		t.Errorf("got %+v\nwant %+v", s, want)
	}

	var empty Snapshot
	Canonicalize(&empty)
	if empty.Messages == nil || empty.Outbox == nil || empty.DeadLetters == nil || empty.Effects == nil {
		t.Errorf("nil tables left nil: %+v", empty)
	}
	Canonicalize(nil) // must not panic
}

// TestCanonicalizeMatchesRead: a snapshot read from a file is already canonical, so Canonicalize
// leaves it unchanged; producers who Canonicalize compare equal to what Read returns.
func TestCanonicalizeMatchesRead(t *testing.T) {
	for _, path := range files(t, "testdata/good/*.json") {
		tr, err := ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		before, _ := Marshal(tr)
		Canonicalize(tr.Final)
		after, _ := Marshal(tr)
		if string(before) != string(after) {
			t.Errorf("%s: Canonicalize changed a canonical snapshot", path)
		}
	}
}

func TestHash(t *testing.T) {
	a, err := ReadFile("testdata/good/leased-stale-ack.json")
	if err != nil {
		t.Fatal(err)
	}
	h, err := Hash(a)
	if err != nil {
		t.Fatal(err)
	}
	if len(h) != 64 || strings.Trim(h, "0123456789abcdef") != "" {
		t.Errorf("hash %q is not 64 hex digits", h)
	}

	b, _ := ReadFile("testdata/good/leased-stale-ack.json")
	b.Name, b.Origin = "other", Origin{Kind: OriginPChecker, Seed: 99, Command: "p check"}
	if hb, _ := Hash(b); hb != h {
		t.Error("hash changed with name and origin")
	}

	for name, change := range map[string]func(*Trace){
		"a result":     func(t *Trace) { t.Steps[3].Result.Action = ActionIdle },
		"a time":       func(t *Trace) { t.Steps[len(t.Steps)-1].At++ },
		"the variant":  func(t *Trace) { t.Expect.Variant = "raw-attempts" },
		"the snapshot": func(t *Trace) { t.Final = nil },
	} {
		c, _ := ReadFile("testdata/good/leased-stale-ack.json")
		change(c)
		hc, err := Hash(c)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if hc == h {
			t.Errorf("hash unchanged when %s changed", name)
		}
	}
}

func TestWriteFile(t *testing.T) {
	tr, err := ReadFile("testdata/good/outbox-split-crash-redelivery.json")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "out.json")
	if err := WriteFile(path, tr); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := os.ReadFile("testdata/good/outbox-split-crash-redelivery.json")
	if string(got) != string(want) {
		t.Error("WriteFile output differs from the canonical file")
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("temporary files left behind: %v", entries)
	}

	tr.Name = ""
	if err := WriteFile(filepath.Join(dir, "bad.json"), tr); !errors.Is(err, ErrInvalid) {
		t.Errorf("WriteFile of an invalid trace: %v, want ErrInvalid", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "bad.json")); !errors.Is(err, os.ErrNotExist) {
		t.Error("an invalid trace left a file")
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, os.ErrPermission }

func TestWriteError(t *testing.T) {
	tr, err := ReadFile("testdata/good/outbox-split-crash-redelivery.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := Write(failingWriter{}, tr); !errors.Is(err, os.ErrPermission) {
		t.Errorf("Write = %v, want the writer's error wrapped", err)
	}
}

// TestWriteEscapes pins the string encoding: only what JSON needs is escaped, plus U+2028/9.
func TestWriteEscapes(t *testing.T) {
	got := string(appendString(nil, "a\"b\\c\nd\te\x01f<&>é\u2028🙂\x7f"))
	want := `"a\"b\\c\nd\te\u0001f<&>é\u2028🙂` + "\x7f" + `"`
	if got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}
