package actordelivery

import (
	"context"
	"math"
	"path/filepath"
	"strings"
	"testing"
)

// TestHotStatementPlans pins SQLite's query plan of the statements a fetch and an
// acknowledgement run, and of the acked rows' purge and the queue depth: each searches an index
// (the one named), none scans the messages table and none sorts. In particular the store-wide
// expiry sweep a leased fetch runs is a range probe of the leased part of the partial index
// messages_timers (schema version 5), so it reads nothing when no lease exists and only expired
// entries otherwise, and the purge walks its acked part oldest first. The outbox's dead letters
// are listed from outbox_dead (schema version 6), which holds nothing else.
func TestHotStatementPlans(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "plans.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		query string
		want  []string // each must appear in the plan
		// walks names a partial index the plan may read whole: it holds only the rows the
		// statement returns.
		walks string
	}{
		{"peek", qPeek, []string{"SEARCH m USING INDEX messages_next (mailbox=?)", "USING INDEX messages_key"}, ""},
		{"lease", qLease, []string{"SEARCH messages USING INTEGER PRIMARY KEY (rowid=?)", "SEARCH m USING INDEX messages_next (mailbox=?)"}, ""},
		{"leased work", qLeasedWork, []string{"SEARCH messages USING INDEX messages_timers (state=? AND lease_until<?)", "SEARCH m USING INDEX messages_next (mailbox=?)"}, ""},
		{"expire", qExpire, []string{"SEARCH messages USING INDEX messages_timers (state=? AND lease_until<?)"}, ""},
		{"ack", qAck, []string{"USING INDEX sqlite_autoindex_messages_1 (id=?)"}, ""},
		{"ack by id", qAckByID, []string{"USING INDEX sqlite_autoindex_messages_1 (id=?)"}, ""},
		{"purge acked", qPurgeAcked, []string{"SEARCH messages USING COVERING INDEX messages_timers (state=? AND lease_until=? AND (acked_at,id)>(?,?) AND acked_at<?)"}, ""},
		{"queue depth", qQueueDepth, []string{"SEARCH messages USING COVERING INDEX messages_next (mailbox=?)"}, ""},
		{"outbox dead letters", qListOutboxDeadLetters, []string{"SCAN outbox USING INDEX outbox_dead"}, "outbox_dead"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var plan []string
			err := s.read(ctx, "plan", func(q querier, now int64) error {
				rows, err := q.QueryContext(ctx, "EXPLAIN QUERY PLAN "+tc.query,
					named("mailbox", "mb"), named("now", now), named("token", "t"), named("until", now),
					named("id", "m1"), named("cutoff", now), named("limit", 10),
					named("after_at", int64(math.MinInt64)), named("after_id", ""))
				if err != nil {
					return err
				}
				defer rows.Close()
				for rows.Next() {
					var id, parent, unused int
					var detail string
					if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
						return err
					}
					plan = append(plan, detail)
				}
				return rows.Err()
			})
			if err != nil {
				t.Fatal(err)
			}
			text := strings.Join(plan, "\n")
			for _, w := range tc.want {
				if !strings.Contains(text, w) {
					t.Errorf("plan lacks %q:\n%s", w, text)
				}
			}
			for _, line := range plan {
				walk := tc.walks != "" && strings.HasSuffix(line, " USING INDEX "+tc.walks)
				if strings.HasPrefix(line, "SCAN") && line != "SCAN CONSTANT ROW" && !walk {
					t.Errorf("plan scans a table (%q):\n%s", line, text)
				}
				if strings.HasPrefix(line, "USE TEMP B-TREE") {
					t.Errorf("plan sorts instead of walking an index in order (%q):\n%s", line, text)
				}
			}
		})
	}
}
