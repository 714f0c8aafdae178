package brokenstore

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/pconform/pconform/actordelivery"
)

// testPrefix is a table prefix, so the tests see it substituted.
const testPrefix = "t_"

// copyOf names, for each statement field of Eligibility, the store constant it is built from.
// qBatchLease is the one statement the store does not run as such (see TestStoreRulesAreTheStoreText).
var copyOf = map[string]string{
	"qLease": "qLease", "qPeek": "qPeek", "qExpire": "qExpire", "qWork": "qLeasedWork",
	"qDeadLetter": "qDeadLetterInsert", "qDelete": "qDeadLetterDelete", "qExtend": "qExtend",
	"qBatchLease": "qLease", "qPeekBatch": "qPeekBatch",
	"qExhausted": "qOutboxExhausted", "qClaim": "qOutboxClaim",
	"qMarkProcessed": "qMarkProcessed", "qInsertCheckpoint": "qInsertCheckpoint", "qUpdateCheckpoint": "qUpdateCheckpoint",
	"qPurgeAcked": "qPurgeAcked", "qPurgeDead": "qPurgeDeadLetters", "qPurgeOutbox": "qPurgeOutbox",
	"qRetire": "qPurgedIDInsert", "qForgetExpired": "qPurgeExpiredIDs",
	"qRedriveRecordMessage": "qRedriveRecordMessage", "qRedriveMessage": "qRedriveMessage",
	"qRedriveDeleteDead": "qRedriveDeleteDead", "qRedriveRecordOutbox": "qRedriveRecordOutbox",
	"qRedriveOutbox": "qRedriveOutbox",
	"qSeqLock":       "qSeqLock", "qSeqWrite": "qSeqWrite", "qLogInsert": "qLogInsert",
}

// statements builds the copies with rules for backend and returns every statement field by name.
func statements(t *testing.T, backend actordelivery.Backend, rules Rules) map[string]string {
	t.Helper()
	e := &Eligibility{rules: rules}
	if err := e.build(backend, testPrefix); err != nil {
		t.Fatalf("%s, rules %+v: %v", backend, rules, err)
	}
	out := map[string]string{}
	v := reflect.ValueOf(e).Elem()
	for i := range v.NumField() {
		name := v.Type().Field(i).Name
		if isStatementField(name) {
			out[name] = v.Field(i).String()
		}
	}
	return out
}

func isStatementField(name string) bool {
	return len(name) > 1 && name[0] == 'q' && name[1] >= 'A' && name[1] <= 'Z'
}

func store(t *testing.T, backend actordelivery.Backend, name string) string {
	t.Helper()
	text, ok := storeText(backend, name)
	if !ok {
		t.Fatalf("the store has no %s", name)
	}
	return strings.ReplaceAll(text, "{p}", testPrefix)
}

// TestStoreRulesAreTheStoreText: with the store's rules (the zero Rules), every copied statement
// is the store's own text, prefix substituted, on both backends; the one exception is a leased
// batch's lease, which is the store's qLease with the conjunct that passes over the batch's
// own rows added before the delivery order.
func TestStoreRulesAreTheStoreText(t *testing.T) {
	for _, backend := range actordelivery.Backends() {
		got := statements(t, backend, Rules{})
		for field, text := range got {
			from, ok := copyOf[field]
			if !ok {
				t.Errorf("%s: the statement %s has no store constant in copyOf", backend, field)
				continue
			}
			want := store(t, backend, from)
			if field == "qBatchLease" {
				want = strings.Replace(want, "\nORDER BY m.priority DESC",
					"\n  AND (m.token IS NULL OR m.token NOT LIKE CAST(:batch AS TEXT))\nORDER BY m.priority DESC", 1)
			}
			if text != want {
				t.Errorf("%s: %s is not the store's %s:\n%s\nwant:\n%s", backend, field, from, text, want)
			}
		}
		if len(got) != len(copyOf) {
			t.Errorf("%s: %d statements built, copyOf names %d", backend, len(got), len(copyOf))
		}
	}
}

// change is one textual change a rule must make, in the statements it names, and nowhere else.
type change struct {
	fields   []string
	old, new string
}

// leased are the statements that hold a message's own lease test and a keyed head's.
var leased = []string{"qPeek", "qLease", "qBatchLease", "qPeekBatch", "qWork"}

// TestEachRuleEditsOnlyItsConjunct: each rule, alone, changes the store's text exactly as the
// table says (each old text, present once, replaced) and leaves every other statement the
// store's. A rule whose copy drifts to a conjunct it does not name, or whose edit silently
// stopped applying, fails here.
func TestEachRuleEditsOnlyItsConjunct(t *testing.T) {
	headBlocks := "(p.attempts < p.max_attempts OR (p.token IS NOT NULL AND p.lease_until > :now))"
	cases := map[string]struct {
		rules   Rules
		changes []change
		// dropped are the statements the rule does not run at all.
		dropped []string
	}{
		"LeaseInclusive": {Rules{LeaseInclusive: true}, []change{
			{leased, "(m.token IS NULL OR m.lease_until <= :now)", "(m.token IS NULL OR m.lease_until < :now)"},
			{leased, "p.lease_until > :now", "p.lease_until >= :now"},
			{[]string{"qExpire", "qWork"}, "token IS NOT NULL AND lease_until <= :now", "token IS NOT NULL AND lease_until < :now"},
		}, nil},
		"LeaseSkew": {Rules{LeaseSkew: time.Second}, []change{
			{leased, "(m.token IS NULL OR m.lease_until <= :now)", "(m.token IS NULL OR m.lease_until <= :cut)"},
			{leased, "p.lease_until > :now", "p.lease_until > :cut"},
			{[]string{"qExpire", "qWork"}, "token IS NOT NULL AND lease_until <= :now", "token IS NOT NULL AND lease_until <= :cut"},
		}, nil},
		"HeadBlocksOnlyWhenEligible": {Rules{HeadBlocksOnlyWhenEligible: true}, []change{
			{leased, headBlocks, "(p.attempts < p.max_attempts AND (p.token IS NULL OR NOT (p.lease_until > :now)) AND p.available_at <= :now)"},
		}, nil},
		"BatchSkipsLeasedHead": {Rules{BatchSkipsLeasedHead: true}, []change{
			{[]string{"qBatchLease"}, headBlocks, "(p.attempts < p.max_attempts AND (p.token IS NULL OR NOT (p.lease_until > :now)))"},
		}, nil},
		"ClaimIgnoresMaxDelivery": {Rules{ClaimIgnoresMaxDelivery: true}, []change{
			{[]string{"qClaim"}, "\n      AND delivery_attempts < max_delivery_attempts", ""},
		}, []string{"qExhausted"}},
		"ExtendIgnoresToken": {Rules{ExtendIgnoresToken: true}, []change{
			{[]string{"qExtend"}, "AND token = :token", "AND token IS NOT NULL"},
		}, nil},
		"ProcessedTTLInverted": {Rules{ProcessedTTLInverted: true}, []change{
			{[]string{"qMarkProcessed"}, "processed.expires_at <= :now", "processed.expires_at > :now"},
		}, nil},
		"CheckpointFirstSaveResets": {Rules{CheckpointFirstSaveResets: true}, []change{
			{[]string{"qInsertCheckpoint"}, "ON CONFLICT (actor) DO NOTHING",
				"ON CONFLICT (actor) DO UPDATE SET state = excluded.state, version = 1, updated_at = excluded.updated_at"},
		}, nil},
		// The rule is in purge's Go code (it skips qRetire), not in a statement.
		"PurgeForgetsIDs": {Rules{PurgeForgetsIDs: true}, nil, nil},
		"RedriveKeepsAttempts": {Rules{RedriveKeepsAttempts: true}, []change{
			{[]string{"qRedriveMessage"}, "max_attempts, 0, CAST(:now AS BIGINT)", "max_attempts, attempts, CAST(:now AS BIGINT)"},
		}, nil},
		"RedriveRecordsReset": {Rules{RedriveRecordsReset: true}, []change{
			{[]string{"qRedriveRecordMessage"}, "mailbox, attempts, reason", "mailbox, 0, reason"},
			{[]string{"qRedriveRecordOutbox"}, "target, delivery_attempts, dead_reason", "target, 0, dead_reason"},
		}, nil},
	}
	for i, rt := 0, reflect.TypeFor[Rules](); i < rt.NumField(); i++ {
		if _, ok := cases[rt.Field(i).Name]; !ok {
			t.Errorf("Rules.%s has no case: say which conjuncts it edits", rt.Field(i).Name)
		}
	}
	for name, tc := range cases {
		for _, backend := range actordelivery.Backends() {
			want := statements(t, backend, Rules{})
			for _, f := range tc.dropped {
				want[f] = ""
			}
			for _, c := range tc.changes {
				for _, f := range c.fields {
					if n := strings.Count(want[f], c.old); n != 1 {
						t.Fatalf("%s, %s: the store's %s holds %q %d times, the case expects once", name, backend, f, c.old, n)
					}
					want[f] = strings.Replace(want[f], c.old, c.new, 1)
				}
			}
			got := statements(t, backend, tc.rules)
			for f := range want {
				if got[f] != want[f] {
					t.Errorf("%s, %s: %s is\n%s\nwant\n%s", name, backend, f, got[f], want[f])
				}
			}
		}
	}
}

// TestApplyEditsFailsLoudly: an edit whose text the statement no longer holds, or holds twice,
// is an error that names the statement and the text, and builds nothing.
func TestApplyEditsFailsLoudly(t *testing.T) {
	const stmt = "UPDATE m SET x = 1 WHERE a <= :now AND b <= :now"
	got, err := applyEdits("qStmt", stmt, edit{"a <= :now", "a < :now"})
	if err != nil || got != "UPDATE m SET x = 1 WHERE a < :now AND b <= :now" {
		t.Errorf("a present conjunct: %q, %v", got, err)
	}
	for _, ed := range []edit{{"c <= :now", "c < :now"}, {"<= :now", "< :now"}} {
		got, err := applyEdits("qStmt", stmt, edit{"a <= :now", "a <= :now"}, ed)
		if err == nil || got != "" || !strings.Contains(err.Error(), "qStmt") || !strings.Contains(err.Error(), ed.old) {
			t.Errorf("edit %q: %q, %v; want an error naming qStmt and the text", ed.old, got, err)
		}
	}
	b := &builder{backend: actordelivery.BackendSQLite}
	if q := b.from("qExtend", edit{"AND token = :nosuch", ""}); q != "" || b.err == nil || !strings.Contains(b.err.Error(), "qExtend") {
		t.Errorf("a store statement without the edited text: %q, %v", q, b.err)
	}
	if q := b.from("qExtend"); q != "" {
		t.Errorf("a builder after an error built %q", q)
	}
	b = &builder{backend: actordelivery.BackendPostgres}
	if q := b.from("qNoSuchStatement"); q != "" || b.err == nil || !strings.Contains(b.err.Error(), "qNoSuchStatement") {
		t.Errorf("a statement the store lacks: %q, %v", q, b.err)
	}
}
