package observe_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/pconform/pconform/observe"
)

// decoded is what a Decoder gives for a log: its events, the error that ended it (empty at its
// end) and the incomplete last line it ignored.
type decoded struct {
	Events    []observe.Event
	Err       string
	Truncated int
}

// decodeAll reads log to its end with a sequential Decoder, or one under Ahead when chunk > 0.
func decodeAll(log []byte, parsers, chunk int) decoded {
	return decodeFrom(bytes.NewReader(log), parsers, chunk)
}

// decodeFrom is decodeAll of what r reads.
func decodeFrom(r io.Reader, parsers, chunk int) decoded {
	d := observe.NewDecoder(r, "log")
	if chunk > 0 {
		defer d.AheadChunked(parsers, chunk)()
	}
	var out decoded
	for {
		ev := new(observe.Event)
		err := d.Decode(ev)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			out.Err = err.Error()
			break
		}
		out.Events = append(out.Events, *ev)
	}
	out.Truncated = d.Truncated
	return out
}

// aheadLogs are a recorded log and logs that cross each rule of the decoder: blank lines,
// carriage returns, a line that is not an event, an incomplete or whole last line without a
// newline, incarnations, a line too long to be an event.
func aheadLogs(t *testing.T) map[string][]byte {
	logs := syntheticAheadLogs()
	logs["recorded"] = recordLog(t, "", 5, 300*time.Millisecond)
	return logs
}

// syntheticAheadLogs are aheadLogs but the recorded one.
func syntheticAheadLogs() map[string][]byte {
	enq := ev(1, false, 0, "enqueue", `{"mailbox":"a","id":"m1","max_attempts":2}`, `{}`)
	lease := ev(2, false, 1, "lease", `{"mailbox":"a","lease_for":5000000000}`, `{"message":{"id":"m1","attempts":1,"token":"T1"}}`)
	ack := ev(3, false, 2, "ack", `{"id":"m1","token":"T1"}`, `{}`)
	inc := `{"seq":0,"read":true,"at":"2026-01-01T00:00:00Z","op":"incarnation","args":{"incarnation":"i1"},"result":{}}` + "\n"
	whole := enq + lease + ack
	return map[string][]byte{
		"empty":                     nil,
		"blank lines":               []byte("\n\n" + enq + "\n  \n" + lease + "\n" + ack + "\n\n"),
		"carriage returns":          []byte(strings.ReplaceAll(whole, "\n", "\r\n")),
		"not an event in between":   []byte(enq + "{\"seq\":2,\n" + ack),
		"incomplete last line":      []byte(enq + lease + `{"seq":3,"at":`),
		"whole last line, no end":   []byte(enq + lease + strings.TrimSuffix(ack, "\n")),
		"blank last line, no end":   []byte(whole + "   "),
		"incarnations":              []byte(inc + enq + strings.Replace(inc, "i1", "i2", 1) + lease + ack),
		"an incarnation twice":      []byte(inc + enq + inc + lease + ack),
		"a line too long":           []byte(enq + `{"seq":2,"at":"` + strings.Repeat("x", observe.MaxLineBytes) + "\"}\n" + ack),
		"a last line too long":      []byte(enq + strings.Repeat("y", observe.MaxLineBytes+1)),
		"a line as long as allowed": []byte(enq + strings.Repeat(" ", observe.MaxLineBytes-1) + "\n" + lease),
	}
}

// TestAheadDecodesAsSequential: under Ahead a Decoder gives the same events, error and ignored
// last line as without, however the log falls into chunks and parsers.
func TestAheadDecodesAsSequential(t *testing.T) {
	for name, log := range aheadLogs(t) {
		want := decodeAll(log, 0, 0)
		for _, c := range []struct{ parsers, chunk int }{{1, 1}, {2, 7}, {3, 64}, {2, 4096}, {2, 256 << 10}} {
			t.Run(fmt.Sprintf("%s/parsers=%d/chunk=%d", name, c.parsers, c.chunk), func(t *testing.T) {
				got := decodeAll(log, c.parsers, c.chunk)
				if d := cmp.Diff(want, got); d != "" {
					t.Fatalf("ahead differs from the sequential decoder (-sequential +ahead):\n%s", d)
				}
			})
		}
	}
}

// failingReader reads its data, then fails.
type failingReader struct{ data []byte }

func (r *failingReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, errors.New("the disk went away")
	}
	n := copy(p, r.data)
	r.data = r.data[n:]
	return n, nil
}

// TestAheadReadError: a log that fails to read gives the events before the line it broke off,
// then the read error, as the sequential decoder does, wherever the failure falls.
func TestAheadReadError(t *testing.T) {
	log := recordLog(t, "", 7, 200*time.Millisecond)
	for _, at := range []int{0, 1, len(log) / 3, len(log)/3 + 1, len(log) - 1} {
		want := decodeFrom(&failingReader{log[:at]}, 0, 0)
		if !strings.Contains(want.Err, "the disk went away") {
			t.Fatalf("at byte %d: the sequential decoder ended %q, want the read error", at, want.Err)
		}
		for _, chunk := range []int{7, 4096} {
			got := decodeFrom(&failingReader{log[:at]}, 2, chunk)
			if d := cmp.Diff(want, got); d != "" {
				t.Fatalf("failing at byte %d, chunks of %d: ahead differs from the sequential decoder (-sequential +ahead):\n%s", at, chunk, d)
			}
		}
	}
}

// TestAheadStopsEarly: a reader that stops before the end of the log, as a check does at its
// finding, ends the reading goroutines.
func TestAheadStopsEarly(t *testing.T) {
	log := recordLog(t, "", 6, 300*time.Millisecond)
	before := runtime.NumGoroutine()
	d := observe.NewDecoder(bytes.NewReader(log), "log")
	stop := d.AheadChunked(2, 64)
	var ev observe.Event
	for range 3 {
		if err := d.Decode(&ev); err != nil {
			t.Fatal(err)
		}
	}
	stop()
	stop() // a second stop is harmless
	if err := d.Decode(&ev); err != nil && !errors.Is(err, io.EOF) {
		t.Fatalf("Decode after stop: %v, want an event or io.EOF", err)
	}
	// stop waits for the goroutines' work; they may take a moment more to leave.
	for deadline := time.Now().Add(5 * time.Second); runtime.NumGoroutine() > before; {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines after stop, %d before the reading began", runtime.NumGoroutine(), before)
		}
		time.Sleep(time.Millisecond)
	}
}

// FuzzAhead: for any input, a Decoder under Ahead with small chunks gives what the sequential
// one gives.
func FuzzAhead(f *testing.F) {
	for _, log := range syntheticAheadLogs() {
		if len(log) < 4096 {
			f.Add(log, uint8(5))
		}
	}
	f.Fuzz(func(t *testing.T, log []byte, chunk uint8) {
		want := decodeAll(log, 0, 0)
		got := decodeAll(log, 2, int(chunk)+1)
		if d := cmp.Diff(want, got); d != "" {
			t.Fatalf("ahead differs from the sequential decoder (-sequential +ahead):\n%s", d)
		}
	})
}
