package observe_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/pconform/pconform/observe"
)

// snap is a snapshot event of incarnation inc at seq and second at, stating row.
func snap(inc string, seq, at int, row string) string {
	return strings.TrimSuffix(ev(seq, true, at, "snapshot", `{"incarnation":"`+inc+`"}`, `{}`), "}\n") + `,"row":` + row + "}\n"
}

// TestSnapshotStart: a log that starts from a snapshot checks from its rows, a restart's snapshot
// is held to the state reached, and a snapshot that cannot be trusted is an error naming its line.
func TestSnapshotStart(t *testing.T) {
	inc := func(id string, seq, at int) string {
		return ev(seq, true, at, "incarnation", `{"incarnation":"`+id+`"}`, `{}`)
	}
	leased := `{"table":"message","mailbox":"a","id":"m1","state":"ready","attempts":1,"max_attempts":3,"token":"T0","until":"2026-01-01T00:00:01Z","available_at":"2026-01-01T00:00:00Z"}`
	acked := `{"table":"message","mailbox":"a","id":"m1","state":"acked","attempts":1,"max_attempts":3,"final_at":"2026-01-01T00:00:00Z","available_at":"2026-01-01T00:00:00Z"}`
	claimed := func(id string) string {
		return `{"table":"outbox","id":"` + id + `","target":"b","max_attempts":1,"max_delivery_attempts":2,"state":"pending","attempts":1,"token":"C0","until":"2026-01-01T00:00:01Z","available_at":"2026-01-01T00:00:00Z"}`
	}
	end := func(n string) string { return `{"table":"end","rows":` + n + `}` }
	start := inc("i-1", 0, 0) + snap("i-1", 0, 0, leased) + snap("i-1", 0, 0, end("1"))
	relet := ev(1, false, 2, "lease", `{"mailbox":"a","lease_for":5000000000}`, `{"message":{"id":"m1","attempts":2,"token":"T1"}}`)
	for _, tc := range []struct {
		name, log, want string
	}{
		{"a leased row taken again once its lease ran out", start + relet, ""},
		{"the old token acks the adopted row", start + ev(1, false, 0, "ack", `{"id":"m1","token":"T0"}`, `{}`), ""},
		{"one claim's token on two rows", inc("i-1", 0, 0) + snap("i-1", 0, 0, claimed("o1")) + snap("i-1", 0, 0, claimed("o2")) + snap("i-1", 0, 0, end("2")) +
			ev(1, false, 0, "outbox_complete", `{"id":"o1","token":"C0"}`, `{}`) + ev(2, false, 0, "outbox_complete", `{"id":"o2","token":"C0"}`, `{}`), ""},
		{"a restart restates the row the history acked", start + ev(1, false, 0, "ack", `{"id":"m1","token":"T0"}`, `{}`) +
			inc("i-2", 1, 1) + snap("i-2", 1, 1, acked) + snap("i-2", 1, 1, end("1")), ""},
		{"a new log for a database recorded before", strings.ReplaceAll(strings.ReplaceAll(start+relet, `"seq":0,`, `"seq":40,`), `"seq":1,`, `"seq":41,`), ""},
		{"a new log that misses a commit after its snapshot", strings.ReplaceAll(strings.ReplaceAll(start+relet, `"seq":0,`, `"seq":40,`), `"seq":1,`, `"seq":42,`), "seq 41 missing"},
		{"an empty start", inc("i-1", 0, 0) + ev(1, false, 0, "enqueue", `{"mailbox":"a","id":"m1","max_attempts":2}`, `{}`), ""},

		{"the first event contradicts the snapshot", strings.Replace(start, `"attempts":1`, `"attempts":0`, 1) + relet,
			"line 4: the starting snapshot contradicts this event: lease(mailbox=\"a\", lease_for=5000)"},
		{"a restart's snapshot misses a row", start + inc("i-2", 0, 1) + snap("i-2", 0, 1, end("0")), "line 5: snapshot of incarnation i-2: the store holds"},
		{"a restart's row differs", start + inc("i-2", 0, 1) + snap("i-2", 0, 1, strings.Replace(leased, `"attempts":1`, `"attempts":2`, 1)),
			"line 5: snapshot of incarnation i-2: message m1: the store states"},
		{"a restart's token differs", start + inc("i-2", 0, 1) + snap("i-2", 0, 1, strings.Replace(leased, `T0`, `T9`, 1)),
			"line 5: snapshot of incarnation i-2: message m1 carries token \"T9\", which is not the token the history gave it"},
		{"an end that miscounts", inc("i-1", 0, 0) + snap("i-1", 0, 0, leased) + snap("i-1", 0, 0, end("2")), "line 3: snapshot of incarnation i-1: its end states 2 rows, but 1 came"},
		{"no end before the next commit", inc("i-1", 0, 0) + snap("i-1", 0, 0, leased) + relet, "line 3: the snapshot of incarnation i-1, begun at line 2, has no end before this event"},
		{"a restart's snapshot cut short (a process killed while it opened)", start + inc("i-2", 0, 1) + snap("i-2", 0, 1, leased) +
			ev(1, false, 2, "ack", `{"id":"m1","token":"T0"}`, `{}`), ""},
		{"a row after the end", start + snap("i-1", 0, 0, leased), "line 4: snapshot of incarnation i-1: a row after the snapshot's end at line 3"},
		{"a row of no incarnation", snap("i-9", 0, 0, leased), "line 1: snapshot row of incarnation \"i-9\", which no incarnation event before it opened"},
		{"a row of an unknown table", inc("i-1", 0, 0) + snap("i-1", 0, 0, `{"table":"sessions","id":"s"}`), "line 2: snapshot of incarnation i-1: models: adopt: unknown table \"sessions\""},
		{"an acked row with a lease", inc("i-1", 0, 0) + snap("i-1", 0, 0, strings.Replace(leased, `"ready"`, `"acked"`, 1)), "line 2: snapshot of incarnation i-1: models: adopt message \"m1\": an acked row carries a lease"},
		{"one lease token on two rows", inc("i-1", 0, 0) + snap("i-1", 0, 0, leased) + snap("i-1", 0, 0, strings.Replace(leased, `"m1"`, `"m2"`, 1)),
			"line 3: snapshot of incarnation i-1: row m2 carries lease token \"T0\", which another row of the snapshot carries too"},
		{"a time before the epoch", inc("i-1", 0, 0) + snap("i-1", 0, 0, strings.Replace(leased, `"available_at":"2026`, `"available_at":"2025`, 1)),
			"line 2: snapshot of incarnation i-1: message m1: available_at 2025-01-01T00:00:00Z is before the trace epoch"},
		{"a snapshot without a row", inc("i-1", 0, 0) + ev(0, true, 0, "snapshot", `{"incarnation":"i-1"}`, `{}`), "line 2: snapshot: a snapshot event is a read event (read true) with a row"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, f, err := streamCheck([]byte(tc.log), observe.CheckOptions{})
			if tc.want == "" {
				if err != nil || f != nil {
					t.Fatalf("finding %v, error %v; want the log clean", f, err)
				}
				return
			}
			if err == nil || !errors.Is(err, observe.ErrBadLog) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("finding %v, error %v; want an error containing %q", f, err, tc.want)
			}
		})
	}
}
