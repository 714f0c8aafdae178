package observe

import (
	"slices"
	"testing"
)

// TestHistoryPlacesRoundTrip: a history gives back the places it was given, in order, whatever
// their deltas (offsets and lines go back where a log is out of commit order; worker numbers are
// renumbered per incarnation and may be large), and a history longer than maxKeyEvents keeps its
// first event and its latest maxKeyEvents/2, letting go of the shared events it cut.
func TestHistoryPlacesRoundTrip(t *testing.T) {
	tests := []struct {
		name   string
		places []eventPlace
	}{
		{"one", []eventPlace{{pos: 0, off: 0, line: 1}}},
		{"in order", []eventPlace{{pos: 3, off: 400, line: 4, worker: 1}, {pos: 9, off: 1200, line: 10, publisher: 2}, {pos: 70_000, off: 9_000_000, line: 70_001}}},
		{"offsets go back", []eventPlace{{pos: 5, off: 5000, line: 6}, {pos: 6, off: 4000, line: 5, worker: 7}}},
		{"large numbers", []eventPlace{{pos: 1 << 40, off: 1 << 50, line: 1 << 35, worker: 1<<31 - 1, publisher: -1 << 31}, {pos: 1<<40 + 1, off: 3, line: 2, worker: -5}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var l keyEvents
			for _, p := range tt.places {
				l.append(p)
			}
			if got := l.places(nil); !slices.Equal(got, tt.places) {
				t.Fatalf("places %v, want %v", got, tt.places)
			}
		})
	}

	t.Run("trimmed", func(t *testing.T) {
		h := newHistories()
		h.log = emptyReaderAt{}
		ev := &Event{}
		for pos := range maxKeyEvents + 10 {
			ev.Offset, ev.Line = int64(100*pos), pos+1
			keys := []string{"m1"}
			if pos%2 == 0 {
				keys = append(keys, "o1") // shared with another history
			}
			h.add(pos, ev, keys)
		}
		got := h.byKey["m1"].places(nil)
		if len(got) != maxKeyEvents/2+1+10 || got[0].pos != 0 || got[len(got)-1].pos != maxKeyEvents+9 {
			t.Fatalf("m1 keeps %d events, from %d to %d: want its first and its latest", len(got), got[0].pos, got[len(got)-1].pos)
		}
		for _, p := range got {
			if p.off != int64(100*p.pos) || p.line != p.pos+1 {
				t.Fatalf("event %d came back as %+v", p.pos, p)
			}
		}
		m1 := map[int]bool{}
		for _, p := range got {
			m1[p.pos] = true
		}
		if len(h.shared) != (maxKeyEvents+10)/2 {
			t.Errorf("%d shared events, want the %d that o1 holds", len(h.shared), (maxKeyEvents+10)/2)
		}
		for pos, sh := range h.shared {
			if want := 1 + btoi(m1[pos]); sh.refs != want {
				t.Errorf("shared event %d: refs %d, want %d (m1 holds it: %v)", pos, sh.refs, want, m1[pos])
			}
		}
	})
}

type emptyReaderAt struct{}

func (emptyReaderAt) ReadAt([]byte, int64) (int, error) { return 0, nil }

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
