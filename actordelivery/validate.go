package actordelivery

import (
	"strings"
	"unicode/utf8"
)

// Input limits. Every store call checks its arguments against them before any SQL, the same way on
// every backend, and refuses a violation with ErrInvalidArgument naming the argument and the
// limit (docs/semantics.md, "Input limits"). Text is stored as text on both backends, so it must
// be valid UTF-8 without NUL bytes (PostgreSQL cannot store either); its length counts bytes.
const (
	// MaxNameBytes bounds a mailbox name, a message or outbox id, a key, an actor, a consumer
	// name and a token. It also keeps PostgreSQL's NOTIFY payload, which carries a mailbox name
	// and a message id, far below the server's 8000-byte limit.
	MaxNameBytes = 255
	// MaxReasonBytes bounds a dead-letter or redrive reason.
	MaxReasonBytes = 1024
	// DefaultMaxPayloadBytes is the payload limit (a message's or outbox row's payload, a
	// checkpoint's state) when Options.MaxPayloadBytes is zero: 1 MiB.
	DefaultMaxPayloadBytes = 1 << 20
	// MaxPayloadLimit is the largest Options.MaxPayloadBytes accepted: 64 MiB. A larger row
	// makes every read of it a large allocation, and PostgreSQL's wire protocol fails well
	// before its 1 GiB field limit.
	MaxPayloadLimit = 64 << 20
)

// checkText refuses a text argument that is longer than max bytes, is not valid UTF-8 or holds a
// NUL byte. An empty value passes (callers that need one check that first). The message names
// the field and the limit, never the whole value (which may be kilobytes long).
func checkText(op, field, v string, max int) error {
	if len(v) > max {
		return invalid(op, "%s is %d bytes, above the limit of %d", field, len(v), max)
	}
	if !utf8.ValidString(v) {
		i := 0
		for i < len(v) {
			r, n := utf8.DecodeRuneInString(v[i:])
			if r == utf8.RuneError && n <= 1 {
				break
			}
			i += n
		}
		return invalid(op, "%s is not valid UTF-8 (at byte %d)", field, i)
	}
	if i := strings.IndexByte(v, 0); i >= 0 {
		return invalid(op, "%s contains a NUL byte (at byte %d)", field, i)
	}
	return nil
}

// reasonText makes an error message a dead-letter reason the store accepts: invalid UTF-8 and
// NUL bytes become U+FFFD, and a message longer than MaxReasonBytes is cut at a character
// boundary and ends in "...". The consumer and publisher write such reasons, so a handler's odd
// error never keeps its message from being dead-lettered.
func reasonText(r string) string {
	r = strings.ReplaceAll(strings.ToValidUTF8(r, "\uFFFD"), "\x00", "\uFFFD")
	if len(r) <= MaxReasonBytes {
		return r
	}
	const ellipsis = "..."
	cut := MaxReasonBytes - len(ellipsis)
	for cut > 0 && !utf8.RuneStart(r[cut]) {
		cut--
	}
	return r[:cut] + ellipsis
}

// checkName is checkText with MaxNameBytes.
func checkName(op, field, v string) error { return checkText(op, field, v, MaxNameBytes) }

// checkNames checks pairs of (field, value) names in order and returns the first violation.
func checkNames(op string, fv ...string) error {
	for i := 0; i+1 < len(fv); i += 2 {
		if err := checkName(op, fv[i], fv[i+1]); err != nil {
			return err
		}
	}
	return nil
}

// checkPayload refuses a payload above the store's limit (Options.MaxPayloadBytes).
func (s *Store) checkPayload(op, field string, p []byte) error {
	if len(p) > s.maxPayload {
		return invalid(op, "%s is %d bytes, above the limit of %d (Options.MaxPayloadBytes)", field, len(p), s.maxPayload)
	}
	return nil
}

// payloadLimit validates Options.MaxPayloadBytes and returns the limit it means.
func payloadLimit(op string, opts Options) (int, error) {
	switch {
	case opts.MaxPayloadBytes < 0:
		return 0, invalid(op, "MaxPayloadBytes %d is negative", opts.MaxPayloadBytes)
	case opts.MaxPayloadBytes > MaxPayloadLimit:
		return 0, invalid(op, "MaxPayloadBytes %d is above the limit of %d (MaxPayloadLimit)", opts.MaxPayloadBytes, MaxPayloadLimit)
	case opts.MaxPayloadBytes == 0:
		return DefaultMaxPayloadBytes, nil
	}
	return opts.MaxPayloadBytes, nil
}

// checkGroupCommit refuses a negative Options.GroupCommit, and one above 1 on PostgreSQL: its
// server already lets concurrent commits share a WAL flush (commit_delay, commit_siblings), and
// its transactions run in parallel on their own connections, which sharing one would serialize.
func checkGroupCommit(op string, opts Options, b Backend) error {
	switch {
	case opts.GroupCommit < 0:
		return invalid(op, "GroupCommit %d is negative", opts.GroupCommit)
	case opts.GroupCommit > 1 && b == BackendPostgres:
		return invalid(op, "GroupCommit %d: group commit is SQLite's; PostgreSQL groups concurrent commits itself (commit_delay, commit_siblings)", opts.GroupCommit)
	}
	return nil
}
