package adapter

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/pconform/pconform/traces"
)

// EffectsPrefix starts the checkpoint actor under which a store target keeps a mailbox's handler
// effects: "effects/<mailbox>", a JSON list of message ids in commit order. The snapshot's
// effects are read from there (docs/semantics.md, "Effects").
const EffectsPrefix = traces.EffectsActorPrefix

// EffectsActor is the checkpoint actor holding mailbox's effects log.
func EffectsActor(mailbox string) string { return EffectsPrefix + mailbox }

// ReadEffects decodes a mailbox's effects log as its checkpoint [EffectsActor] holds it: the ids
// whose handler effects committed, in commit order. An empty state is an empty log. An adapter
// whose store runs its own consumer reads the snapshot's effects with it.
func ReadEffects(state []byte) ([]string, error) {
	if len(state) == 0 {
		return nil, nil
	}
	var ids []string
	if err := json.Unmarshal(state, &ids); err != nil {
		return nil, fmt.Errorf("adapter: effects log: want a JSON array of message ids: %w", err)
	}
	return ids, nil
}

// AppendEffect returns the effects log state with id appended: what a handler's effect saves
// to the checkpoint [EffectsActor] inside the acknowledgement's transaction, so that the effect
// commits exactly when the acknowledgement does. id is valid UTF-8, as every id of a trace is.
func AppendEffect(state []byte, id string) ([]byte, error) {
	ids, err := ReadEffects(state)
	if err != nil {
		return nil, err
	}
	return json.Marshal(append(ids, id))
}

// ErrHandlerFailed is the error a trace's failing handler returns. Its message is the dead-letter
// reason of a failure the retry policy declines (outcome fail_no_retry).
var ErrHandlerFailed = errors.New(traces.ReasonHandlerFailed)

// HandlerError is the error the failing handler of the handle step a returns: ErrHandlerFailed,
// unless the step is a failure the retry policy declines and states the dead letter's reason
// (the handler's error text a recorded store wrote); then an error with that text.
func HandlerError(a Args) error {
	if a.Outcome == traces.OutcomeFailNoRetry && a.Reason != "" {
		return errors.New(a.Reason)
	}
	return ErrHandlerFailed
}

// FormatToken is the token string of a store's integer token.
func FormatToken(token int64) string { return strconv.FormatInt(token, 10) }

// ParseToken reads back a token FormatToken wrote. It reports false for anything else, the forged
// tokens the engine sends for unbound symbols ([traces.ForgedToken]) included: the store must
// treat such a token as matching nothing.
func ParseToken(s string) (int64, bool) {
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil && n > 0
}
