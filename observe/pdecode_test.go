package observe

import (
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"
)

// decoded is everything a Decoder gives for a log: its events, how it ended, and its counters.
type decoded struct {
	events    []Event
	end       string
	line      int
	truncated int
	bytes     int64
}

// decodeAll reads log to its end with a Decoder, in parallel mode with workers parsers and chunks
// of chunk bytes when workers > 0.
func decodeAll(t *testing.T, log string, workers, chunk int) decoded {
	t.Helper()
	d := NewDecoder(strings.NewReader(log), "log")
	if workers > 0 {
		if !d.parallel(workers, chunk) {
			t.Fatal("a fresh decoder refused parallel mode")
		}
		defer d.stopParallel()
	}
	var out decoded
	for {
		var ev Event
		err := d.Decode(&ev)
		if err != nil {
			out.end = err.Error()
			out.line, out.truncated, out.bytes = d.Line(), d.Truncated, d.Bytes
			if !errors.Is(err, io.EOF) {
				// How far serial mode has read past a bad line is its buffer's business.
				out.bytes = -1
			}
			if !errors.Is(err, io.EOF) && !errors.Is(err, ErrBadLog) {
				t.Fatalf("an error that is neither the end nor ErrBadLog: %v", err)
			}
			// Past the end or an error, the decoder says the same again.
			if again := d.Decode(&ev); workers > 0 && (again == nil || again.Error() != err.Error()) {
				t.Fatalf("after %v, Decode gives %v", err, again)
			}
			break
		}
		out.events = append(out.events, ev)
	}
	return out
}

// sameDecode fails t when the parallel decoder reads log otherwise than the serial one.
func sameDecode(t *testing.T, log string, chunk int) {
	t.Helper()
	want := decodeAll(t, log, 0, 0)
	for _, workers := range []int{1, 3} {
		got := decodeAll(t, log, workers, chunk)
		if got.end != want.end || got.line != want.line || got.truncated != want.truncated || got.bytes != want.bytes {
			t.Fatalf("%.300q, %d parsers, chunks of %d bytes: ends %q at line %d (truncated %d, %d bytes), serial %q at line %d (truncated %d, %d bytes)",
				log, workers, chunk, got.end, got.line, got.truncated, got.bytes, want.end, want.line, want.truncated, want.bytes)
		}
		if !reflect.DeepEqual(got.events, want.events) {
			t.Fatalf("%.300q, %d parsers, chunks of %d bytes: events\n%+v\nserial\n%+v", log, workers, chunk, got.events, want.events)
		}
	}
}

// TestParallelDecodeMatchesSerial: in parallel mode a Decoder gives what it gives serially, for
// every way a log can end or go wrong, however its chunks fall.
func TestParallelDecodeMatchesSerial(t *testing.T) {
	inc := ev(0, true, 0, "incarnation", `{"incarnation":"i-1"}`, `{}`)
	fetch := ev(2, false, 1, "consumer_fetch", `{"worker":1,"mailbox":"a","lease_for":5000000000,"profile":"leased","incarnation":"i-1"}`, `{"message":{"id":"m1","attempts":1,"token":"T1"}}`)
	long := `{"seq":1,"at":"2026-01-01T00:00:00Z","op":"enqueue","args":{"mailbox":"a","id":"m1","payload":"` + strings.Repeat("x", MaxLineBytes) + `"},"result":{}}`
	for _, tc := range []struct{ name, log string }{
		{"empty", ""},
		{"events", enq + "\n" + lease + "\n" + peek + "\n" + ack + "\n"},
		{"last line without newline", enq + "\n" + ack},
		{"truncated last line", enq + "\n" + ack[:len(ack)/2]},
		{"blank lines", "\n" + enq + "\n\n  \n" + ack + "\n\n"},
		{"blank last line without newline", enq + "\n   "},
		{"carriage returns", enq + "\r\n" + ack + "\r\n"},
		{"bad middle line", enq + "\n{\"seq\":2,\n" + ack + "\n"},
		{"unknown kind", enq + "\n" + ev(2, false, 0, "teleport", `{}`, `{}`) + "\n"},
		{"incarnations", inc + "\n" + enq + "\n" + fetch + "\n" + ev(2, true, 2, "incarnation", `{"incarnation":"i-2"}`, `{}`) + "\n" + ack + "\n"},
		{"incarnation twice", inc + "\n" + enq + "\n" + inc + "\n" + ack + "\n"},
		{"line too long", enq + "\n" + long + "\n" + ack + "\n"},
		{"last line too long", enq + "\n" + long},
		{"line just short enough", enq + "\n" + long[:MaxLineBytes-1] + "\n"},
		{"line just too long", enq + "\n" + long[:MaxLineBytes] + "\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, chunk := range []int{1, 7, 100, 4096, chunkBytes} {
				sameDecode(t, tc.log, chunk)
			}
		})
	}
}

// TestParallelOrderedMatchesSerial: an Ordered whose decoder parses in parallel releases the same
// events in the same commit order, and the same error, as a serial one.
func TestParallelOrderedMatchesSerial(t *testing.T) {
	var b strings.Builder
	for i := 1; i <= 3000; i++ {
		// Each pair of writes is written in the wrong order, with a read between them.
		seq := i + 1 - 2*((i+1)%2)
		fmt.Fprintf(&b, "%s\n", ev(seq, false, i/100, "enqueue", fmt.Sprintf(`{"mailbox":"a","id":"m%d","max_attempts":2}`, seq), `{}`))
		if i%7 == 0 {
			fmt.Fprintf(&b, "%s\n", ev(i-1, true, i/100, "peek", `{"mailbox":"a"}`, `{}`))
		}
	}
	good := b.String()
	for _, log := range []string{good, good + ev(3005, false, 40, "expire", `{}`, `{}`) + "\n"} {
		read := func(workers int) ([]Event, error) {
			o := NewOrdered(NewDecoder(strings.NewReader(log), "log"), 16)
			if workers > 0 && !o.parallel(workers, 999) {
				t.Fatal("a fresh Ordered refused parallel mode")
			}
			defer o.dec.stopParallel()
			var out []Event
			for {
				ev, err := o.Next()
				if errors.Is(err, io.EOF) {
					return out, nil
				}
				if err != nil {
					return out, err
				}
				out = append(out, *ev)
			}
		}
		want, werr := read(0)
		got, err := read(2)
		if fmt.Sprint(err) != fmt.Sprint(werr) || !reflect.DeepEqual(got, want) {
			t.Fatalf("parallel: %d events, %v; serial: %d events, %v", len(got), err, len(want), werr)
		}
		if len(want) < 3000 {
			t.Fatalf("only %d events read", len(want))
		}
	}
}

// TestParallelDecodeStops: a caller that stops reading early lets the reader and parsers go.
func TestParallelDecodeStops(t *testing.T) {
	log := strings.Repeat(enq+"\n", 100_000)
	d := NewDecoder(strings.NewReader(log), "log")
	d.parallel(2, 1000)
	var ev Event
	if err := d.Decode(&ev); err != nil {
		t.Fatal(err)
	}
	d.stopParallel()
	d.stopParallel() // twice is fine
}

// FuzzParallelDecode: on any input, with any chunk size, the parallel decoder gives exactly what
// the serial one gives.
func FuzzParallelDecode(f *testing.F) {
	for _, s := range []string{enq + "\n" + lease + "\n" + peek + "\n" + ack + "\n", enq + "\n" + ack, "", "\n\n", "{}\n", "[1]\n", enq + "\r\n \n" + ack[:20]} {
		f.Add([]byte(s), uint8(5))
	}
	f.Fuzz(func(t *testing.T, data []byte, chunk uint8) {
		sameDecode(t, string(data), int(chunk)+1)
	})
}
