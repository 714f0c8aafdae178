package models

import (
	"strings"

	"github.com/pconform/pconform/traces"
)

// processedKey names one processed-message record: a consumer and a message id.
type processedKey struct{ consumer, id string }

// checkpoint is one actor's stored checkpoint. Invariant: version >= 1 (an actor without a
// checkpoint has no entry).
type checkpoint struct {
	version int
	payload string
}

// markProcessed records that consumer processed id until at+ttl. A record still live at at
// (expires_at > at) makes it a duplicate and changes nothing; an expired or absent one is
// (re)written. It reports whether a live record was there.
func (n *State) markProcessed(consumer, id string, at, ttl int64) (duplicate bool) {
	k := processedKey{consumer, id}
	// Under the profile choice processed_scope "id" one record per id serves every consumer.
	if n.cfg.Profile.ProcessedPerID {
		k.consumer = ""
	}
	// Under the profile choice processed_expiry "until_cleanup" an expired record still counts
	// until a purge removes it.
	if exp, ok := n.processed[k]; ok && (exp > at || n.cfg.Profile.ProcessedUntilCleanup) {
		return true
	}
	n.processed[k] = at + ttl
	n.aging.processed.push(processedEntry{k, at + ttl}, processedFirst)
	return false
}

// saveCheckpoint writes actor's checkpoint when its version is still expect (0: none yet) and
// returns the new version; ok is false, and nothing changes, on any other version.
func (n *State) saveCheckpoint(actor string, expect int, payload string) (version int, ok bool) {
	cp, exists := n.checkpoints[actor]
	// Under the profile choice checkpoint_save "overwrites" there is no version check: the save
	// writes whatever is stored, and the version still counts the saves.
	if n.cfg.Profile.CheckpointOverwrites {
		n.checkpoints[actor] = checkpoint{version: cp.version + 1, payload: payload}
		return cp.version + 1, true
	}
	switch {
	case expect == 0 && exists, expect != 0 && (!exists || cp.version != expect):
		return 0, false
	}
	n.checkpoints[actor] = checkpoint{version: expect + 1, payload: payload}
	return expect + 1, true
}

// loadCheckpoint returns actor's version, ok false when it has no checkpoint. A mailbox's effect
// log (traces.EffectsActorPrefix) is a checkpoint the handler saves once per committed effect, in
// the acknowledgement's transaction, so its version is the number of committed effects.
func (n *State) loadCheckpoint(actor string) (version int, ok bool) {
	if mailbox, isLog := strings.CutPrefix(actor, traces.EffectsActorPrefix); isLog {
		v := n.effectsForgotten[mailbox] + len(n.effects[mailbox])
		return v, v > 0
	}
	cp, ok := n.checkpoints[actor]
	return cp.version, ok
}
