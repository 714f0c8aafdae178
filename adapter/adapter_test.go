package adapter_test

import (
	"testing"

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
