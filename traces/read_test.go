package traces

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadBad reads every testdata/bad/*.json and compares the error with the golden
// testdata/bad/*.err. Each bad file breaks exactly one rule, so the golden text shows the message a
// user sees for that mistake.
func TestReadBad(t *testing.T) {
	for _, path := range files(t, "testdata/bad/*.json") {
		name := strings.TrimSuffix(filepath.Base(path), ".json")
		t.Run(name, func(t *testing.T) {
			tr, err := ReadFile(path)
			if err == nil {
				t.Fatalf("read succeeded: %+v", tr)
			}
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("error %v (%T) is not a *ParseError", err, err)
			}
			wantKind := ErrInvalid
			if strings.HasPrefix(name, "syntax-") {
				wantKind = ErrSyntax
			}
			if !errors.Is(err, wantKind) {
				t.Errorf("error %v does not wrap %v", err, wantKind)
			}
			if (pe.Line > 0) != (pe.Err == ErrSyntax) || (pe.Offset >= 0) != (pe.Err == ErrSyntax) {
				t.Errorf("position (offset %d, line %d) present iff syntax error; kind %v", pe.Offset, pe.Line, pe.Err)
			}
			checkGolden(t, strings.TrimSuffix(path, ".json")+".err", []byte(err.Error()+"\n"))
		})
	}
}

func TestReadSyntaxPosition(t *testing.T) {
	tests := []struct {
		in          string
		offset      int64
		line, col   int
		msgContains string
	}{
		{"{\n  \"a\" 1\n}", 8, 2, 7, "after object key"},
		{"{\"a\": 1", 7, 1, 8, "unexpected end"},
		{"", 0, 1, 1, "empty input"},
		{"\n\n   \n", 6, 4, 1, "empty input"},
		{"{}\n{}", 3, 2, 1, "trailing data"},
		{"{\"a\": \"\xc3\x28\"}", 7, 1, 8, "invalid UTF-8"},
		{"[\n1,\n2,,]", 7, 3, 3, "invalid character ','"},
	}
	for _, tt := range tests {
		_, err := Unmarshal([]byte(tt.in), "in.json")
		var pe *ParseError
		if !errors.As(err, &pe) {
			t.Errorf("%q: error %v is not a *ParseError", tt.in, err)
			continue
		}
		if pe.Offset != tt.offset || pe.Line != tt.line || pe.Col != tt.col || !strings.Contains(pe.Msg, tt.msgContains) {
			t.Errorf("%q: got offset %d line %d col %d msg %q; want %d %d:%d containing %q",
				tt.in, pe.Offset, pe.Line, pe.Col, pe.Msg, tt.offset, tt.line, tt.col, tt.msgContains)
		}
		if !errors.Is(err, ErrSyntax) {
			t.Errorf("%q: %v does not wrap ErrSyntax", tt.in, err)
		}
	}
}

func TestParseErrorFormat(t *testing.T) {
	tests := []struct {
		e    ParseError
		want string
	}{
		{ParseError{File: "corpus/x.json", Step: 3, Op: OpLease, Field: "args.lease_for", Msg: "must be >= 1, got 0", Offset: -1},
			"traces: corpus/x.json: step 3 (lease): args.lease_for: must be >= 1, got 0"},
		{ParseError{File: "x.json", Step: -1, Msg: "unexpected end of JSON input", Offset: 10, Line: 2, Col: 4},
			"traces: x.json:2:4: unexpected end of JSON input"},
		{ParseError{Step: -1, Msg: "bad", Offset: 10, Line: 2, Col: 4}, "traces: line 2 col 4: bad"},
		{ParseError{Step: 0, Field: "op", Msg: "unknown operation \"x\"", Offset: -1}, "traces: step 0: op: unknown operation \"x\""},
		{ParseError{Step: -1, Field: "final.outbox", Msg: "m", Offset: -1}, "traces: final.outbox: m"},
	}
	for _, tt := range tests {
		if got := tt.e.Error(); got != tt.want {
			t.Errorf("got %q, want %q", got, tt.want)
		}
	}
}

type failingReader struct{}

func (failingReader) Read([]byte) (int, error) { return 0, io.ErrClosedPipe }

func TestReadIOError(t *testing.T) {
	_, err := Read(failingReader{}, "pipe")
	if !errors.Is(err, io.ErrClosedPipe) || !strings.Contains(err.Error(), "traces: pipe:") {
		t.Errorf("got %v, want a wrapped io.ErrClosedPipe naming the input", err)
	}
	var pe *ParseError
	if errors.As(err, &pe) {
		t.Errorf("an I/O failure is not a ParseError: %v", err)
	}
	_, err = ReadFile(filepath.Join(t.TempDir(), "missing.json"))
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("got %v, want os.ErrNotExist", err)
	}
}

// TestReadGood checks that every hand-written example reads, is canonical (the writer reproduces
// it byte for byte) and survives a second round trip.
func TestReadGood(t *testing.T) {
	for _, path := range files(t, "testdata/good/*.json") {
		t.Run(filepath.Base(path), func(t *testing.T) {
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			tr, err := Unmarshal(raw, path)
			if err != nil {
				t.Fatal(err)
			}
			if want := strings.TrimSuffix(filepath.Base(path), ".json"); tr.Name != want {
				t.Errorf("name %q, want the file name %q", tr.Name, want)
			}
			out, err := Marshal(tr)
			if err != nil {
				t.Fatal(err)
			}
			checkGolden(t, path, out)
			var buf bytes.Buffer
			if err := Write(&buf, tr); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(buf.Bytes(), out) {
				t.Error("Write and Marshal disagree")
			}
		})
	}
}
