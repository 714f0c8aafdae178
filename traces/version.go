package traces

import "strings"

// The format versions. A version names the shape a file has; it changes whenever the format
// changes incompatibly, that is when a file an earlier reader accepted would be refused or read
// differently by the current one. An addition no earlier file can carry (a new operation, an
// optional field) keeps the version: every earlier file still means what it meant.
const (
	// FormatV1 is the first format. It names two shapes. Before commit d1428a0 a dead letter in
	// the final snapshot had four fields (mailbox, id, attempts, reason); d1428a0 added key,
	// priority, payload, max_attempts and dead_at, made max_attempts and dead_at required, and
	// kept the name. A reader takes both shapes and upgrades the old one: the five fields it did
	// not carry become unknown ([Snapshot.Unknown]), never a guessed value.
	FormatV1 = "pconform.trace/v1"
	// FormatV2 is the current format: FormatV1's later shape (the dead letter's whole row) under
	// its own name, with final.unknown for the columns a store cannot report.
	FormatV2 = "pconform.trace/v2"
)

// Format is the version every writer produces and the one a trace in memory carries: [Read]
// upgrades every earlier version it reads to it.
const Format = FormatV2

// Formats lists the versions a reader reads, the current one first.
var Formats = []string{FormatV2, FormatV1}

// v1OldDeadLetter are the dead-letter fields that FormatV1's first shape did not carry; a
// dead-letter row without any of them is in that shape.
var v1OldDeadLetter = []string{"key", "priority", "payload", "max_attempts", "dead_at"}

// knownFormat reports whether f is a version this reader reads.
func knownFormat(f string) bool { return contains(Formats, f) }

func describeFormats() string {
	return Format + " and, upgrading them, " + strings.Join(Formats[1:], ", ")
}

// Upgrade reads the trace data holds, in any version of [Formats], and returns its canonical
// encoding in the current [Format]; name is used only in errors. A canonical file of the current
// format comes back unchanged. Fields an earlier version did not carry are declared unknown, never
// filled in. A file Read refuses is refused with Read's error.
func Upgrade(data []byte, name string) ([]byte, error) {
	t, err := Unmarshal(data, name)
	if err != nil {
		return nil, err
	}
	return Marshal(t)
}
