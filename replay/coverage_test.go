package replay_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/pconform/pconform/traces"
)

// TestCorpusCoverage prints the corpus's operation x outcome table and requires every operation
// and every consumer and publisher action to occur at least once.
func TestCorpusCoverage(t *testing.T) {
	trs, _ := readCorpus(t)
	c := CoverageOf(trs)
	t.Logf("operation x outcome over %d traces:\n%s", len(trs), c)
	missing := c.Missing()
	if len(missing) > 0 {
		t.Errorf("the corpus never exercises:\n  %s", strings.Join(missing, "\n  "))
	}
}

func TestCoverageMissing(t *testing.T) {
	tr := &traces.Trace{Steps: []traces.Step{
		{Op: traces.OpConsumerHandle, Result: traces.Result{Action: traces.ActionAcked}},
		{Op: traces.OpPublisherDeliver, Result: traces.Result{Action: traces.ActionDelivered, Duplicate: true}},
		{Op: traces.OpLease},
	}}
	c := CoverageOf([]*traces.Trace{tr})
	if c[traces.OpLease]["no-message"] != 1 || c[traces.OpPublisherDeliver]["delivered+duplicate"] != 1 {
		t.Errorf("cells: %v", c)
	}
	missing := c.Missing()
	for _, want := range []string{"enqueue", "consumer_handle -> idle", "publisher_deliver -> crashed"} {
		if !slices.Contains(missing, want) {
			t.Errorf("Missing() = %q lacks %q", missing, want)
		}
	}
	for _, covered := range []string{"lease", "consumer_handle", "consumer_handle -> acked", "publisher_deliver -> delivered"} {
		if slices.Contains(missing, covered) {
			t.Errorf("Missing() lists %q, which the trace covers", covered)
		}
	}
}
