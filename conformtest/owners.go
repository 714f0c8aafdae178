package conformtest

import (
	"testing"

	"github.com/pconform/pconform/adapter"
	"github.com/pconform/pconform/traces"
)

// whose is the line every report carries: whose consumer and whose publisher ran the protocol
// steps (adapter.OwnersOf the target).
func (k *kit) whose() string { return k.owners.String() }

// logOwners logs whose consumer and publisher run the protocol steps, and what the kit's
// reference leaves unchecked.
func (k *kit) logOwners(t *testing.T) {
	t.Helper()
	t.Logf("consumer: %s", k.owners.Consumer)
	t.Logf("publisher: %s", k.owners.Publisher)
	if k.owners.Consumer == adapter.OwnerKit || k.owners.Publisher == adapter.OwnerKit {
		t.Logf("the kit's reference code checks the store's operations only: a consumer or publisher of the store's own is not under test unless adapter.WithRuntime runs it")
	}
}

// noteReference logs, for a trace with consumer or publisher steps, when the kit's reference code
// ran them instead of the store's own: such a trace checks the store's operations, not its
// retry, dead-letter or delivery code.
func (k *kit) noteReference(t *testing.T, tr *traces.Trace) {
	t.Helper()
	var consumer, publisher bool
	for _, s := range tr.Steps {
		consumer = consumer || s.Op == traces.OpConsumerFetch || s.Op == traces.OpConsumerHandle
		publisher = publisher || s.Op == traces.OpPublisherDeliver
	}
	if consumer && k.owners.Consumer == adapter.OwnerKit {
		t.Logf("consumer: %s: this trace's consumer steps check the store's operations, not a consumer of the store's own", adapter.OwnerKit)
	}
	if publisher && k.owners.Publisher == adapter.OwnerKit {
		t.Logf("publisher: %s: this trace's delivery steps check the store's operations, not a publisher of the store's own", adapter.OwnerKit)
	}
}
