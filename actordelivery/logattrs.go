package actordelivery

import (
	"log/slog"
	"time"
)

// Log records. Every record the package writes follows the conventions slog's users rely on to
// filter and aggregate logs: a constant message (the variable parts are attributes, never
// formatted into it), attributes only as typed slog.Attr values (no alternating key-value
// arguments), one snake_case key per concept, the same everywhere (below; a mailbox is always
// "mailbox", a message id always "message_id"), durations as slog.Duration, errors under
// "error", and the caller's context passed on (LogAttrs), so a handler can pick up its trace or
// request values.
const (
	logKeyMailbox     = "mailbox"
	logKeyMessageID   = "message_id"
	logKeyPath        = "path"
	logKeyAttempt     = "attempt"
	logKeyMaxAttempts = "max_attempts"
	logKeyAction      = "action"
	logKeyDelay       = "delay"
	logKeyRetryIn     = "retry_in"
	logKeyError       = "error"
	logKeyTarget      = "target"
	logKeyDelivery    = "delivery_attempts"
	logKeyClaimToken  = "claim_token"
	logKeyMode        = "mode"
	logKeyStage       = "stage"
	logKeyServer      = "server"
	logKeyDatabase    = "database"
	logKeyMigration   = "migration"
	logKeyOp          = "op"
	logKeyReason      = "reason"
	logKeyMaxDelivery = "max_delivery_attempts"
)

func attrMailbox(mb string) slog.Attr                  { return slog.String(logKeyMailbox, mb) }
func attrMessageID(id string) slog.Attr                { return slog.String(logKeyMessageID, id) }
func attrError(err error) slog.Attr                    { return slog.Any(logKeyError, err) }
func attrRetryIn(d time.Duration) slog.Attr            { return slog.Duration(logKeyRetryIn, d) }
func attrDuration(k string, d time.Duration) slog.Attr { return slog.Duration(k, d) }
