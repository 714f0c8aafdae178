package service

import "github.com/pconform/pconform/actordelivery"

// Bug names a bug of faults.go, for the tests.
type Bug = fault

// The bugs the tests inject.
const (
	NoBug                      = faultNone
	CompleteAfterFailedEnqueue = faultCompleteAfterFailedEnqueue
	RawAttempts                = faultRawAttempts
	UnfencedAck                = faultUnfencedAck
)

// WithBug returns cfg with bug injected, and ob (when not nil) standing between the publisher and
// the store.
func WithBug(cfg Config, bug Bug, ob actordelivery.OutboxStore) Config {
	cfg.fault, cfg.outbox = bug, ob
	return cfg
}
