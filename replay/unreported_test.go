package replay_test

import (
	"context"
	"strings"
	"testing"

	"github.com/pconform/pconform/internal/modeltarget"
	"github.com/pconform/pconform/models"
	"github.com/pconform/pconform/replay"
	"github.com/pconform/pconform/traces"
)

// countless is a store whose API discards three results: purge's count, enqueue's duplicate flag
// and redrive's not_found (a redrive of nothing returns as if it moved something).
type countless struct {
	replay.Target
	caps replay.Capabilities
}

func (c countless) Capabilities() replay.Capabilities { return c.caps }

func (c countless) Do(ctx context.Context, op traces.Op, at int64, a replay.Args) (replay.Observation, error) {
	o, err := c.Target.Do(ctx, op, at, a)
	switch op {
	case traces.OpPurge:
		o.Affected = 0
	case traces.OpEnqueue:
		o.Duplicate = false
	case traces.OpRedrive:
		o.Err = ""
	}
	return o, err
}

// TestUnreportedResults: a store that does not report a count, a duplicate flag or not_found
// diverges on them unless it declares them unreported; declared, they are left out of the
// comparison on both sides and the verdict lists every step where one was left out.
func TestUnreportedResults(t *testing.T) {
	tr, err := traces.ReadFile("../traces/testdata/good/redrive.json")
	if err != nil {
		t.Fatal(err)
	}
	run := func(caps replay.Capabilities) replay.Verdict {
		t.Helper()
		v, err := replay.Run(context.Background(), tr, countless{Target: modeltarget.New(models.Config{}), caps: caps}, replay.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	if v := run(replay.Capabilities{}); v.Outcome != replay.Diverged {
		t.Fatalf("a store that drops results without declaring them: %s; want a divergence", v)
	}
	// Declaring two of the three is not enough.
	if v := run(replay.Capabilities{Unreported: []replay.UnreportedResult{
		{Op: traces.OpPurge, Field: "affected"}, {Op: traces.OpEnqueue, Field: "duplicate"},
	}}); v.Outcome != replay.Diverged || v.Op != traces.OpRedrive {
		t.Fatalf("redrive's not_found undeclared: %s; want a divergence at a redrive", v)
	}
	v := run(replay.Capabilities{Unreported: []replay.UnreportedResult{
		{Op: traces.OpPurge, Field: "affected"}, {Op: traces.OpEnqueue, Field: "duplicate"},
		{Op: traces.OpRedrive, Field: "err"},
	}})
	if v.Outcome != replay.Match {
		t.Fatalf("declared: %s", v)
	}
	want := []string{
		"(redrive): err not_found (expected \"not_found\", observed \"\")",
		"(enqueue): duplicate (expected true, observed false)",
		"(purge): affected (expected 2, observed 0)",
	}
	joined := strings.Join(v.NotCompared, "\n")
	for _, w := range want {
		if !strings.Contains(joined, w) {
			t.Errorf("NotCompared lacks %q:\n%s", w, joined)
		}
	}
	var b strings.Builder
	if err := v.Report(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "not compared (results the target declares it does not report):") {
		t.Errorf("the report does not say what was not compared:\n%s", b.String())
	}
}

// TestUnreportedChecked: a declaration naming an operation, a field or a result the format does
// not have is refused, naming it.
func TestUnreportedChecked(t *testing.T) {
	for _, c := range []struct {
		u    replay.UnreportedResult
		want string
	}{
		{replay.UnreportedResult{Op: "frobnicate", Field: "affected"}, `"frobnicate": not an operation`},
		{replay.UnreportedResult{Op: traces.OpLease, Field: "message"}, `only "affected", "duplicate" and "err"`},
		{replay.UnreportedResult{Op: traces.OpEnqueue, Field: "affected"}, `"affected" of enqueue: the operation has no such result`},
	} {
		err := replay.Capabilities{Unreported: []replay.UnreportedResult{c.u}}.Check()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: err %v, want one containing %q", c.u, err, c.want)
		}
	}
	if err := (replay.Capabilities{Unreported: []replay.UnreportedResult{{Op: traces.OpDeadLetter, Field: "err"}}}).Check(); err != nil {
		t.Errorf("dead_letter's not_found: %v", err)
	}
}
