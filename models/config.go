package models

import "github.com/pconform/pconform/profile"

// Config selects the consumer behaviour the model reproduces. Every field is optional; the zero
// Config is the correct consumer. Defaults are filled in one place, [Config.filled].
type Config struct {
	// Attempts maps the attempts count of a fetched delivery to the effective attempt the consumer
	// hands to its retry decision when the handler fails. leaseless reports the store path of the
	// fetch. nil means [CorrectAttempts]. A replay of the raw-attempts variant passes a function
	// returning stored unchanged, which strands leaseless rows at attempts == max_attempts.
	Attempts func(stored int, leaseless bool) int

	// Profile is the semantic profile the model follows (docs/semantics.md, "Profiles"); the zero
	// Profile is the default, the rules as docs/semantics.md states them.
	Profile profile.Profile

	// BatchBug selects a broken batch consumer (see [BatchBug]); the zero value is the correct one.
	BatchBug BatchBug

	// EffectOutsideFold is the broken consumer whose handler writes its effect with a context that
	// does not carry the fold's transaction (docs/semantics.md, "The transaction boundary"): the
	// effect commits in a step of its own (consumer_effects_batch, naming the worker's fetched
	// message) before the handle, whose ack then commits no effect. The effect stays when the ack
	// is lease_lost or never comes. false is the correct consumer, which owes no such step.
	EffectOutsideFold bool

	// LateWakes is how long, in the model's time units (milliseconds in an observed log), a wake
	// for a purged message still counts as a wake for a committed one once the model has forgotten
	// the message's id (its dedup horizon passed). A checker of a recorded log sets it: a NOTIFY
	// can reach its consumer after its message was handled and purged, and the purge itself shows
	// that the message was committed. Zero judges a wake against what the model keeps, as
	// docs/semantics.md states; traces and replay use zero.
	LateWakes int64

	_ struct{}
}

// CorrectAttempts is the effective attempt of docs/semantics.md: on the leased path the lease has
// already counted the delivery, so it is the stored count; on the leaseless path nothing has bumped
// it yet, so it is stored + 1.
func CorrectAttempts(stored int, leaseless bool) int {
	if leaseless {
		return stored + 1
	}
	return stored
}

// filled returns c with every nil field replaced by its default.
func (c Config) filled() Config {
	if c.Attempts == nil {
		c.Attempts = CorrectAttempts
	}
	return c
}

// profileRules holds the rules of a profile that several operations share.
type profileRules struct{ profile.Profile }

// rules returns the profile rules the state follows.
func (s *State) rules() profileRules { return profileRules{s.cfg.Profile} }
