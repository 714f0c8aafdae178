package adapter_test

import (
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/pconform/pconform/adapter"
	"github.com/pconform/pconform/traces"
)

func TestTokens(t *testing.T) {
	for _, n := range []int64{1, 42, 1 << 62} {
		got, ok := adapter.ParseToken(adapter.FormatToken(n))
		if !ok || got != n {
			t.Errorf("ParseToken(FormatToken(%d)) = %d, %v", n, got, ok)
		}
	}
	for _, s := range []string{"", "0", "-3", "abc", traces.ForgedToken(traces.LeaseTokens, 2), traces.ForgedToken(traces.ClaimTokens, 1)} {
		if _, ok := adapter.ParseToken(s); ok {
			t.Errorf("ParseToken(%q) accepted a token no store issued", s)
		}
	}
}

func TestEffectsActor(t *testing.T) {
	if got := adapter.EffectsActor("inbox"); got != "effects/inbox" {
		t.Errorf("EffectsActor(inbox) = %q", got)
	}
	if adapter.ErrHandlerFailed.Error() != traces.ReasonHandlerFailed {
		t.Errorf("the handler error's message %q is not the reason %q", adapter.ErrHandlerFailed, traces.ReasonHandlerFailed)
	}
}

func TestEffectsLog(t *testing.T) {
	var state []byte
	for _, id := range []string{"m1", "m2", "m1"} {
		var err error
		if state, err = adapter.AppendEffect(state, id); err != nil {
			t.Fatal(err)
		}
	}
	ids, err := adapter.ReadEffects(state)
	if err != nil || !slices.Equal(ids, []string{"m1", "m2", "m1"}) {
		t.Errorf("ReadEffects(%s) = %q, %v; want the ids in append order", state, ids, err)
	}
	if ids, err := adapter.ReadEffects(nil); err != nil || len(ids) != 0 {
		t.Errorf("ReadEffects(nil) = %q, %v; want an empty log", ids, err)
	}
	for _, bad := range []string{`not json`, `{"m1": 1}`, `[1, 2]`, `["m1"`} {
		if _, err := adapter.ReadEffects([]byte(bad)); err == nil || !strings.Contains(err.Error(), "adapter: effects log") {
			t.Errorf("ReadEffects(%s) = %v; want an error naming the effects log", bad, err)
		}
		if _, err := adapter.AppendEffect([]byte(bad), "m1"); err == nil {
			t.Errorf("AppendEffect(%s) wrote over a log it cannot read", bad)
		}
	}
}

// FuzzEffectsLog: ReadEffects never panics, and what it reads, AppendEffect extends by one id (of
// valid UTF-8, as every id of a trace is).
func FuzzEffectsLog(f *testing.F) {
	for _, s := range []string{``, `[]`, `["m1","m2"]`, `null`, `[""]`, `{"m1": 1}`} {
		f.Add([]byte(s), "m3")
	}
	f.Fuzz(func(t *testing.T, state []byte, id string) {
		ids, err := adapter.ReadEffects(state)
		if err != nil || !utf8.ValidString(id) {
			return // a trace's ids are JSON strings, so valid UTF-8
		}
		more, err := adapter.AppendEffect(state, id)
		if err != nil {
			t.Fatalf("AppendEffect(%q) of a log ReadEffects read: %v", state, err)
		}
		got, err := adapter.ReadEffects(more)
		if err != nil || !slices.Equal(got, append(ids, id)) {
			t.Fatalf("after AppendEffect(%q, %q): read %q, %v; want %q", state, id, got, err, append(ids, id))
		}
	})
}
