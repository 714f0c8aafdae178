package adapter

import (
	"errors"
	"strconv"

	"github.com/pconform/pconform/traces"
)

// EffectsPrefix starts the checkpoint actor under which a store target keeps a mailbox's handler
// effects: "effects/<mailbox>", a JSON list of message ids in commit order. The snapshot's
// effects are read from there (docs/semantics.md, "Effects").
const EffectsPrefix = "effects/"

// EffectsActor is the checkpoint actor holding mailbox's effects log.
func EffectsActor(mailbox string) string { return EffectsPrefix + mailbox }

// ErrHandlerFailed is the error a trace's failing handler returns. Its message is the dead-letter
// reason of a failure the retry policy declines (outcome fail_no_retry).
var ErrHandlerFailed = errors.New(traces.ReasonHandlerFailed)

// FormatToken is the token string of a store's integer token.
func FormatToken(token int64) string { return strconv.FormatInt(token, 10) }

// ParseToken reads back a token FormatToken wrote. It reports false for anything else, the forged
// tokens the engine sends for unbound symbols ([traces.ForgedToken]) included: the store must
// treat such a token as matching nothing.
func ParseToken(s string) (int64, bool) {
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil && n > 0
}
