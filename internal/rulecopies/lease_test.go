package rulecopies_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"crypto/rand"

	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/pconform/pconform/actordelivery"
	"github.com/pconform/pconform/bridge"
	"github.com/pconform/pconform/internal/brokenstore"
	"github.com/pconform/pconform/models"
	"github.com/pconform/pconform/profile"
	"github.com/pconform/pconform/traces"
)

// leaseFor is the lease every case takes at the epoch: it runs until epoch + leaseFor.
const leaseFor = 10

// leaseCase is a boundary case of the lease-live rule: a lease until t=leaseFor, judged at now.
type leaseCase struct {
	name string
	now  int64
}

var leaseCases = []leaseCase{
	{"until > now", leaseFor - 1},
	{"until == now", leaseFor},
	{"until < now", leaseFor + 1},
}

// shippedProfiles are the default profile and every profile under profiles/.
func shippedProfiles(t *testing.T) []profile.Profile {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("..", "..", "profiles", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no shipped profiles under profiles/: %v", err)
	}
	ps := []profile.Profile{{Name: "default"}}
	for _, f := range files {
		p, err := profile.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, p)
	}
	return ps
}

// leaseCopy is one copy of the lease-live rule: live evaluates it for a lease from t=0 until
// t=leaseFor at now, under p. applies says whether the copy states p's rule at all.
type leaseCopy struct {
	name    string
	applies func(p profile.Profile) bool
	live    func(t *testing.T, p profile.Profile, now int64) bool
}

func always(profile.Profile) bool { return true }

// storeStatesRule: the store's SQL states the default lease rule only.
func storeStatesRule(p profile.Profile) bool { return !p.LeaseLiveAtUntil }

// TestLeaseLiveCopiesAgree evaluates every copy of the lease-live rule on its boundary cases
// under every shipped profile and fails at the first copy that disagrees with profile.Held.
func TestLeaseLiveCopiesAgree(t *testing.T) {
	copies := []leaseCopy{
		{"models (Go reference model): peek", always, modelLive},
		{"bridge/pspec.go (spec deriver): sweep", always, derivedLive},
	}
	type backend struct {
		name, queries string
		open          opener
	}
	backends := []backend{{"sqlite", "actordelivery/sqlite_queries.go", openSQLite}}
	if os.Getenv("PCONFORM_PG_DSN") != "" {
		backends = append(backends, backend{"postgres", "actordelivery/postgres_queries.go (and the sqlite_queries.go it keeps)", openPostgres})
	} else {
		t.Log("PCONFORM_PG_DSN is not set: the PostgreSQL copies are not evaluated")
	}
	for _, b := range backends {
		queries := b.queries
		for _, probe := range sqlProbes {
			store, copied := storeProbe(b.open, probe), copiedProbe(b.open, probe)
			copies = append(copies,
				leaseCopy{fmt.Sprintf("%s on %s: %s", queries, b.name, probe.name), storeStatesRule, store},
				leaseCopy{fmt.Sprintf("internal/brokenstore/eligibility.go on %s: %s", b.name, probe.name), always, copied})
		}
	}
	for _, p := range shippedProfiles(t) {
		for _, c := range leaseCases {
			want := p.Held(1, leaseFor, c.now)
			for _, cp := range copies {
				if !cp.applies(p) {
					continue
				}
				if got := cp.live(t, p, c.now); got != want {
					t.Fatalf("%s disagrees with profile.Held under profile %s, case %s (lease until t=%d, now t=%d): live=%v, want %v",
						cp.name, p, c.name, leaseFor, c.now, got, want)
				}
			}
		}
	}
}

// modelLive: the reference model leases m1 at t=0 and peeks at now; the lease is live iff the
// peek finds nothing.
func modelLive(t *testing.T, p profile.Profile, now int64) bool {
	tr := &traces.Trace{Format: traces.Format, Name: "lease-live", Expect: traces.Expect{DivergesAt: -1, Profile: p}, Steps: []traces.Step{
		{Op: traces.OpEnqueue, Args: traces.Args{Mailbox: "a", ID: "m1", MaxAttempts: 3}},
		{Op: traces.OpLease, Args: traces.Args{Mailbox: "a", LeaseFor: leaseFor},
			Result: traces.Result{Message: &traces.Message{ID: "m1", Attempts: 1, Token: 1}}},
		{Op: traces.OpPeek, At: now, Args: traces.Args{Mailbox: "a"}},
	}}
	results, _, err := models.RunTrace(models.Config{Profile: p}, tr)
	if err != nil && len(results) < 3 {
		t.Fatalf("models: %v", err)
	}
	return results[2].Message == nil
}

// derivedLive: the spec deriver under p sees m1 leased at t=0 and an expire() at now; the lease
// is live iff the deriver does not announce m1 without its token then.
func derivedLive(t *testing.T, p profile.Profile, now int64) bool {
	d := bridge.NewSpecDeriver(p)
	var evs []bridge.SpecEvent
	for _, st := range []traces.Step{
		{Op: traces.OpEnqueue, Args: traces.Args{Mailbox: "a", ID: "m1", MaxAttempts: 3}},
		{Op: traces.OpLease, Args: traces.Args{Mailbox: "a", LeaseFor: leaseFor},
			Result: traces.Result{Message: &traces.Message{ID: "m1", Attempts: 1, Token: 1}}},
	} {
		evs = d.Step(st, evs[:0])
	}
	evs = d.Step(traces.Step{Op: traces.OpExpire, At: now}, evs[:0])
	for _, ev := range evs {
		// eSpecRow's values: at, mailbox, id, key, priority, payload, state, attempts,
		// max_attempts, available_at, token, lease_until, seq.
		if ev.Kind == bridge.SpecRow && ev.Values[2] == "m1" && ev.Values[10] == int64(0) {
			return false
		}
	}
	return true
}

// A sqlProbe reads the lease rule of one statement of the store: set up the rows (m1's lease at
// t=0 until t=leaseFor), then ask, at now, whether the statement found the lease live.
type sqlProbe struct {
	name  string
	keyed bool // m1 and m2 share a key and m1 has no attempts left: only m1's lease can block m2
	// expire runs expire() instead of a peek; the lease is live iff it clears nothing.
	expire bool
}

var sqlProbes = []sqlProbe{
	{name: "a leased row's eligibility (peek)"},
	{name: "a keyed head's blocking (peek)", keyed: true},
	{name: "expire()", expire: true},
}

// ops are the two statements a probe runs, on the store or on brokenstore's copy.
type ops interface {
	peek(ctx context.Context, now time.Time) (*actordelivery.Message, error)
	expire(ctx context.Context, now time.Time) (int, error)
}

type storeOps struct {
	s   *actordelivery.Store
	clk *actordelivery.ManualClock
}

func (o storeOps) peek(ctx context.Context, now time.Time) (*actordelivery.Message, error) {
	o.clk.Set(now)
	return o.s.Peek(ctx, "a")
}

func (o storeOps) expire(ctx context.Context, now time.Time) (int, error) {
	o.clk.Set(now)
	return o.s.ExpireLeases(ctx)
}

type copyOps struct{ e *brokenstore.Eligibility }

func (o copyOps) peek(ctx context.Context, now time.Time) (*actordelivery.Message, error) {
	return o.e.Peek(ctx, now, "a")
}

func (o copyOps) expire(ctx context.Context, now time.Time) (int, error) { return o.e.Expire(ctx, now) }

type opener func(t *testing.T, clk *actordelivery.ManualClock) (*actordelivery.Store, func(brokenstore.Rules) *brokenstore.Eligibility)

// setUp writes the probe's rows through the store: m1 (and, keyed, m2) enqueued and m1 leased at
// t=0 until t=leaseFor.
func setUp(t *testing.T, s *actordelivery.Store, probe sqlProbe) {
	ctx := context.Background()
	key, maxAttempts := "", 3
	if probe.keyed {
		key, maxAttempts = "k", 1
	}
	for _, id := range []string{"m1", "m2"} {
		if id == "m2" && !probe.keyed {
			break
		}
		if _, err := s.Enqueue(ctx, actordelivery.NewMessage{Mailbox: "a", ID: id, Key: key, MaxAttempts: maxAttempts}); err != nil {
			t.Fatal(err)
		}
	}
	m, err := s.Lease(ctx, "a", leaseFor*time.Second)
	if err != nil || m == nil || m.ID != "m1" {
		t.Fatalf("setting up %s: the lease gave %+v, %v; want m1", probe.name, m, err)
	}
}

// ask runs the probe's statement at now: whether it found m1's lease live.
func ask(t *testing.T, o ops, probe sqlProbe, now int64) bool {
	ctx := context.Background()
	at := traces.Epoch.Add(time.Duration(now) * time.Second)
	if probe.expire {
		n, err := o.expire(ctx, at)
		if err != nil {
			t.Fatal(err)
		}
		return n == 0
	}
	m, err := o.peek(ctx, at)
	if err != nil {
		t.Fatal(err)
	}
	return m == nil
}

func storeProbe(open opener, probe sqlProbe) func(*testing.T, profile.Profile, int64) bool {
	return func(t *testing.T, _ profile.Profile, now int64) bool {
		clk := actordelivery.NewManualClock(traces.Epoch)
		s, _ := open(t, clk)
		setUp(t, s, probe)
		return ask(t, storeOps{s, clk}, probe, now)
	}
}

func copiedProbe(open opener, probe sqlProbe) func(*testing.T, profile.Profile, int64) bool {
	return func(t *testing.T, p profile.Profile, now int64) bool {
		clk := actordelivery.NewManualClock(traces.Epoch)
		s, eligibility := open(t, clk)
		setUp(t, s, probe)
		return ask(t, copyOps{eligibility(brokenstore.Rules{LeaseInclusive: p.LeaseLiveAtUntil})}, probe, now)
	}
}

func openSQLite(t *testing.T, clk *actordelivery.ManualClock) (*actordelivery.Store, func(brokenstore.Rules) *brokenstore.Eligibility) {
	path := filepath.Join(t.TempDir(), fmt.Sprintf("s%d.db", time.Now().UnixNano()))
	s, err := actordelivery.Open(path, actordelivery.Options{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, func(r brokenstore.Rules) *brokenstore.Eligibility {
		e, err := brokenstore.OpenEligibility(path, r)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { e.Close() })
		return e
	}
}

// openPostgres opens the store on PCONFORM_PG_DSN's server under a table prefix of its own, so
// every probe starts from empty tables.
func openPostgres(t *testing.T, clk *actordelivery.ManualClock) (*actordelivery.Store, func(brokenstore.Rules) *brokenstore.Eligibility) {
	dsn := os.Getenv("PCONFORM_PG_DSN")
	prefix := "rc_" + strings.ToLower(rand.Text()[:10]) + "_"
	s, err := actordelivery.OpenPostgres(dsn, actordelivery.Options{Clock: clk, TablePrefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, func(r brokenstore.Rules) *brokenstore.Eligibility {
		db, err := sql.Open("pgx", dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		e, err := brokenstore.OpenEligibilityPostgres(db, prefix, r)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { e.Close() })
		return e
	}
}
