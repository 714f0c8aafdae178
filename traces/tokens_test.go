package traces

import (
	"fmt"
	"testing"
)

func forgeForTest(s TokenSpace, k int) string { return fmt.Sprintf("x-%s-%d", s, k) }

// TestBinderKeepsNamespacesApart binds lease symbol 1 and claim symbol 1 to different tokens:
// each namespace keeps its own, and an argument is sent in its op's namespace.
func TestBinderKeepsNamespacesApart(t *testing.T) {
	b := NewBinder(forgeForTest)
	want := &Result{Message: &Message{Token: 1}}
	if m, _ := b.Result(want, "L", nil); m != 1 {
		t.Fatalf("lease token bound to %d, want 1", m)
	}
	_, c := b.Result(&Result{Claimed: []Claimed{{Token: 1}}}, "", []string{"C"})
	if len(c) != 1 || c[0] != 1 {
		t.Fatalf("claim token bound to %v, want [1]", c)
	}
	tests := []struct {
		op   Op
		sym  int
		want string
	}{
		{OpAck, 1, "L"},
		{OpExtend, 1, "L"},
		{OpOutboxComplete, 1, "C"},
		{OpPublisherDeliver, 1, "C"},
		{OpAck, 0, "x-lease-0"},
		{OpOutboxFail, 0, "x-claim-0"},
		{OpNack, 2, "x-lease-2"},
	}
	for _, tt := range tests {
		if got := b.Arg(tt.op, tt.sym); got != tt.want {
			t.Errorf("Arg(%s, %d) = %q, want %q", tt.op, tt.sym, got, tt.want)
		}
	}
	if got := b.Lookup(ClaimTokens, "L"); got != -1 {
		t.Errorf("the lease token looked up as a claim token = %d, want the stray -1", got)
	}
}

// TestBinderBindsOnce checks the first-appearance rule: a bound symbol keeps its token, and a
// token already standing for a symbol never takes a second one.
func TestBinderBindsOnce(t *testing.T) {
	b := NewBinder(forgeForTest)
	if got := b.Observe(LeaseTokens, 3, "a"); got != 3 {
		t.Fatalf("first appearance = %d, want 3", got)
	}
	if got := b.Observe(LeaseTokens, 3, "b"); got != -1 {
		t.Errorf("another token where symbol 3 (bound) is expected = %d, want the stray -1", got)
	}
	if got := b.Observe(LeaseTokens, 4, "a"); got != 3 {
		t.Errorf("token a where 4 is expected = %d, want its own symbol 3", got)
	}
	if got := b.Observe(LeaseTokens, 0, ""); got != 0 {
		t.Errorf("no token = %d, want 0", got)
	}
	if got := b.Auto(LeaseTokens, "c"); got != 4 {
		t.Errorf("auto-bound symbol = %d, want 4 (one past the highest bound)", got)
	}
	if got, want := len(b.Bound(LeaseTokens)), 2; got != want {
		t.Errorf("%d bindings, want %d", got, want)
	}
}
