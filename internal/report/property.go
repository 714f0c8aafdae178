package report

import (
	"fmt"
	"regexp"
)

// livenessReport is how the P checker reports a liveness violation: the monitor (with its
// project prefix) and the hot state the run ended in, with no word of what the monitor requires.
var livenessReport = regexp.MustCompile(`^(?:\w+\.)?(\w+) detected liveness bug in hot state '([^']+)'`)

// livenessStatement says in plain words what a liveness monitor of models/p requires and what a
// run that ends in its hot state failed to do (docs/models.md describes each monitor).
func livenessStatement(monitor string) (string, bool) {
	switch monitor {
	case "EveryMessageEventuallyResolved":
		return "every enqueued message is eventually acked or dead-lettered, but the run ended with a message that is neither: it is stranded", true
	case "EveryOutboxRowEventuallyFinal":
		return "every outbox row is eventually completed or dead-lettered, but the run ended with a row still pending", true
	case "AcknowledgedEffectCommitted":
		return "a consumer's acknowledgement of a message commits the message's handler effect with it, but the run ended with an acknowledged message whose effect never committed", true
	case "RedrivenDeadLettersDeliverable":
		return "a redriven dead letter comes back deliverable (a ready message with attempts 0 and no lease, or a pending outbox row with no delivery attempts), but the run ended with a redriven row never seen so", true
	}
	return "", false
}

// PlainProperty states a trace's violated property for a reader: a liveness violation in the
// words of what its monitor requires, naming the monitor and its hot state; anything else (an
// assertion message, already plain) as it is.
func PlainProperty(violates string) string {
	m := livenessReport.FindStringSubmatch(violates)
	if m == nil {
		return violates
	}
	s, ok := livenessStatement(m[1])
	if !ok {
		return violates
	}
	return fmt.Sprintf("%s (P monitor %s, a liveness property: the run ended in its hot state %q)", s, m[1], m[2])
}
