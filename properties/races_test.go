package properties

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/pconform/pconform/actordelivery"
	"github.com/pconform/pconform/models"
	"github.com/pconform/pconform/traces"
)

// The row-lock races are the situations that only PostgreSQL's row locks decide: no property
// sequence meets them (one store, one goroutine) and no recorded run either (a recording store
// runs its transactions one at a time under the commit counter's lock; see
// docs/notes/2026-12-01-row-locks.md). Here the store does not record, the racers are real
// transactions on separate connections, and the Go reference model judges the outcome in the
// only orders the store's rules allow.

// raceRounds is how many times the head race runs; each round is a fresh mailbox. A store whose
// lease waits for a locked row instead of skipping it loses the race in most rounds.
const (
	raceRounds  = 5
	raceWorkers = 8
)

// TestRowLockRaces runs the row-lock races on PostgreSQL:
//
//   - head: raceWorkers leased workers fetch at once from a mailbox holding exactly raceWorkers
//     eligible messages, and as many publishers claim one outbox row each from as many pending
//     rows. In every commit order the model gives each fetch (each claim) a different message
//     (row), none empty: the set of results must be the model's set. A lease or claim that waits
//     for a row another worker locked, instead of skipping it (FOR UPDATE without SKIP LOCKED),
//     finds the row taken once the lock is released and returns nothing while eligible rows wait.
//   - held-head: a worker's lease (and a publisher's claim) of the head is held open in its
//     transaction while a second worker fetches (a second publisher claims). The two overlap, so
//     the model may take the holder's first: the second must get the next message (row) and must
//     not wait for the holder's lock. A lease or claim that waits for a locked row (FOR UPDATE
//     without SKIP LOCKED) takes the same next row once the holder commits, so only the wait shows
//     it: every worker queues behind the slowest transaction on the head.
//   - decision: a leaseless worker's failing handle races a nack_by_id of the same message that
//     holds the row's lock. The nack commits first (the handle waits for the row), so the model's
//     order is nack, then handle: the handle must decide from the count the nack left. A decision
//     read that does not lock the row (no FOR UPDATE) reads the count before the nack and retries
//     a message the failure has exhausted.
//
// None of these races times anything: the orders come from barriers (a transaction held open,
// a call seen waiting on a lock in pg_stat_activity), so each outcome is exact.
//
// Rerun: bash scripts/pg.sh go test ./properties/ -run 'TestRowLockRaces' -v
func TestRowLockRaces(t *testing.T) {
	dsn := pgDSN(t)
	if dsn == "" {
		t.Skip("PCONFORM_PG_DSN is not set: skipping the row-lock races (scripts/check.sh starts a server)")
	}
	admin, schema, open := pgSchema(t, dsn, "races")
	t.Run("head", func(t *testing.T) { testHeadRace(t, open("workers", nil)) })
	t.Run("held-head", func(t *testing.T) { testHeldHead(t, admin, schema, open) })
	t.Run("decision", func(t *testing.T) { testDecisionRace(t, admin, schema, open) })
}

// modelResults steps the reference model through steps (all at time 0) and returns its results.
func modelResults(t *testing.T, steps []traces.Step) []traces.Result {
	t.Helper()
	_, results, err := models.Run(models.Config{}, steps)
	if err != nil {
		t.Fatalf("the model refuses the race's steps: %v", err)
	}
	return results
}

// together runs n calls of f at once, released by one barrier, and returns their results in
// call order.
func together[R any](n int, f func(i int) (R, error)) ([]R, []error) {
	out, errs := make([]R, n), make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			out[i], errs[i] = f(i)
		}()
	}
	close(start)
	wg.Wait()
	return out, errs
}

func testHeadRace(t *testing.T, st *actordelivery.Store) {
	ctx := context.Background()
	lost := 0
	for round := range raceRounds {
		mailbox := fmt.Sprintf("head%d", round)
		var steps []traces.Step
		for i := range raceWorkers {
			id := fmt.Sprintf("%s-m%d", mailbox, i)
			if _, err := st.Enqueue(ctx, actordelivery.NewMessage{Mailbox: mailbox, ID: id, MaxAttempts: 3}); err != nil {
				t.Fatal(err)
			}
			oid := fmt.Sprintf("%s-o%d", mailbox, i)
			if _, err := st.OutboxEnqueue(ctx, actordelivery.OutboxMessage{ID: oid, Target: mailbox + "-out", MaxAttempts: 1}); err != nil {
				t.Fatal(err)
			}
			steps = append(steps,
				traces.Step{Op: traces.OpEnqueue, Args: traces.Args{Mailbox: mailbox, ID: id, MaxAttempts: 3}},
				traces.Step{Op: traces.OpOutboxEnqueue, Args: traces.Args{ID: oid, Target: mailbox + "-out", MaxAttempts: 1}})
		}
		consumers := make([]*actordelivery.Consumer, raceWorkers)
		for i := range consumers {
			c, err := actordelivery.NewConsumer(st, func(context.Context, *actordelivery.Message) (actordelivery.Effects, error) { return nil, nil },
				actordelivery.ConsumerOptions{Mailbox: mailbox, Path: actordelivery.PathLeased, LeaseFor: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			consumers[i] = c
		}
		fetched, errs := together(raceWorkers, func(i int) (string, error) {
			d, err := consumers[i].Fetch(ctx)
			if err != nil || d == nil {
				return "", err
			}
			return fmt.Sprintf("%s attempts=%d", d.Message.ID, d.Message.Attempts), nil
		})
		claimed, cerrs := together(raceWorkers, func(int) (string, error) {
			rows, err := st.OutboxClaim(ctx, 1, time.Minute)
			if err != nil || len(rows) == 0 {
				return "", err
			}
			return fmt.Sprintf("%s delivery_attempts=%d", rows[0].ID, rows[0].DeliveryAttempts), nil
		})
		for _, err := range append(errs, cerrs...) {
			if err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
		}
		for i := range raceWorkers {
			steps = append(steps, traces.Step{Op: traces.OpConsumerFetch,
				Args: traces.Args{Mailbox: mailbox, Worker: i + 1, Profile: traces.ProfileLeased, LeaseFor: 60}})
		}
		for range raceWorkers {
			steps = append(steps, traces.Step{Op: traces.OpOutboxClaim, Args: traces.Args{Limit: 1, ClaimFor: 60}})
		}
		var wantFetched, wantClaimed []string
		for _, r := range modelResults(t, steps)[2*raceWorkers:] {
			switch {
			case r.Message != nil:
				wantFetched = append(wantFetched, fmt.Sprintf("%s attempts=%d", r.Message.ID, r.Message.Attempts))
			case len(r.Claimed) == 1:
				wantClaimed = append(wantClaimed, fmt.Sprintf("%s delivery_attempts=%d", r.Claimed[0].ID, r.Claimed[0].DeliveryAttempts))
			}
		}
		slices.Sort(fetched)
		slices.Sort(claimed)
		if d := cmp.Diff(wantFetched, fetched); d != "" {
			t.Errorf("round %d: %d leased workers fetching at once from %d eligible messages: the fetches differ from the model's in every commit order (-model +store; \"\" is an empty fetch):\n%s",
				round, raceWorkers, raceWorkers, d)
			lost++
		}
		if d := cmp.Diff(wantClaimed, claimed); d != "" {
			t.Errorf("round %d: %d claims of one row at once from %d pending rows: the claims differ from the model's in every commit order (-model +store; \"\" is an empty claim):\n%s",
				round, raceWorkers, raceWorkers, d)
			lost++
		}
	}
	if lost > 0 {
		t.Logf("%d of %d races lost", lost, 2*raceRounds)
	}
}

// failing is a handler that always fails, and always retries at once.
func failing(context.Context, *actordelivery.Message) (actordelivery.Effects, error) {
	return nil, errors.New("handler failed")
}

type retryNow struct{}

func (retryNow) Retry(error, int) (time.Duration, bool) { return 0, true }

func testDecisionRace(t *testing.T, admin *sql.DB, schema string, open func(string, map[string]string, ...actordelivery.Options) *actordelivery.Store) {
	ctx := context.Background()
	worker := open("worker", nil)
	racer := open("racer", nil)
	const id, mailbox = "d1", "decision"
	if _, err := worker.Enqueue(ctx, actordelivery.NewMessage{Mailbox: mailbox, ID: id, MaxAttempts: 3}); err != nil {
		t.Fatal(err)
	}
	if err := worker.NackByID(ctx, id, 0); err != nil { // one attempt counted: 1 of 3
		t.Fatal(err)
	}
	c, err := actordelivery.NewConsumer(worker, failing, actordelivery.ConsumerOptions{Mailbox: mailbox, Path: actordelivery.PathLeaseless, Retry: retryNow{}})
	if err != nil {
		t.Fatal(err)
	}
	d, err := c.Fetch(ctx)
	if err != nil || d == nil {
		t.Fatalf("leaseless fetch: %v, %v", d, err)
	}
	// The racer's nack_by_id holds the row's lock until release is closed.
	_, release, racerDone := holdOpen(t, racer, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, racer.NackByID(ctx, id, 0)
	})
	type handled struct {
		out actordelivery.Outcome
		err error
	}
	handleDone := make(chan handled, 1)
	go func() {
		out, err := c.Handle(ctx, d)
		handleDone <- handled{out, err}
	}()
	// The handle must reach the row and wait for its lock: at the decision's read (a read that
	// locks) or at its write (one that does not). Either way the racer then commits first.
	if h, returned := untilDoneOrWaiting(t, admin, schema+"_worker", handleDone); returned {
		close(release)
		<-racerDone
		t.Fatalf("the handle returned (%+v, %v) while the racer held the row's lock: its transaction must write the row", h.out, h.err)
	}
	close(release)
	if err := <-racerDone; err != nil {
		t.Fatalf("the racer's nack_by_id: %v", err)
	}
	h := <-handleDone
	if h.err != nil {
		t.Fatalf("the handle: %v", h.err)
	}
	steps := []traces.Step{
		{Op: traces.OpEnqueue, Args: traces.Args{Mailbox: mailbox, ID: id, MaxAttempts: 3}},
		{Op: traces.OpNackByID, Args: traces.Args{ID: id}},
		{Op: traces.OpConsumerFetch, Args: traces.Args{Mailbox: mailbox, Worker: 1, Profile: traces.ProfileLeaseless}},
		{Op: traces.OpNackByID, Args: traces.Args{ID: id}},
		{Op: traces.OpConsumerHandle, Args: traces.Args{Mailbox: mailbox, Worker: 1, Profile: traces.ProfileLeaseless, Outcome: traces.OutcomeFail}},
	}
	want := modelResults(t, steps)[4]
	if h.out.Action != want.Action || h.out.Attempt != want.Attempt {
		t.Errorf("a failing leaseless handle whose row a nack_by_id (1 -> 2 of 3 attempts) held and committed first: the store's handle %s attempt=%d, the model's (nack, then handle) %s attempt=%d: the decision was taken from a count read before the nack",
			h.out.Action, h.out.Attempt, want.Action, want.Attempt)
	}
}

// untilDoneOrWaiting waits until done yields (true) or a connection of the application app is
// seen waiting for a lock (false); a minute without either fails the test.
func untilDoneOrWaiting[R any](t *testing.T, admin *sql.DB, app string, done <-chan R) (R, bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); {
		select {
		case r := <-done:
			return r, true
		default:
		}
		var n int
		if err := admin.QueryRowContext(context.Background(), `SELECT count(*) FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock'`,
			app).Scan(&n); err != nil {
			t.Fatalf("reading pg_stat_activity: %v", err)
		}
		if n > 0 {
			var zero R
			return zero, false
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("within a minute the call neither returned nor waited for a lock")
	panic("unreachable")
}

// holdOpen runs fn in a transaction of st that stays open until release is closed; it returns
// once fn ran, with fn's result and a channel for the transaction's end.
func holdOpen[R any](t *testing.T, st *actordelivery.Store, fn func(ctx context.Context) (R, error)) (r R, release chan struct{}, done chan error) {
	t.Helper()
	held, release, done := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	go func() {
		done <- st.ExecTx(context.Background(), false, func(ctx context.Context) error {
			var err error
			if r, err = fn(ctx); err != nil {
				return err
			}
			close(held)
			<-release
			return nil
		})
	}()
	select {
	case <-held:
	case err := <-done:
		t.Fatalf("the holder's transaction ended before it held its rows: %v", err)
	}
	return r, release, done
}

func testHeldHead(t *testing.T, admin *sql.DB, schema string, open func(string, map[string]string, ...actordelivery.Options) *actordelivery.Store) {
	ctx := context.Background()
	holder, second := open("holder", nil), open("second", nil)
	const mailbox = "held"
	var steps []traces.Step
	for _, id := range []string{"h1", "h2"} {
		if _, err := holder.Enqueue(ctx, actordelivery.NewMessage{Mailbox: mailbox, ID: id, MaxAttempts: 3}); err != nil {
			t.Fatal(err)
		}
		if _, err := holder.OutboxEnqueue(ctx, actordelivery.OutboxMessage{ID: "o" + id, Target: mailbox, MaxAttempts: 1}); err != nil {
			t.Fatal(err)
		}
		steps = append(steps, traces.Step{Op: traces.OpEnqueue, Args: traces.Args{Mailbox: mailbox, ID: id, MaxAttempts: 3}},
			traces.Step{Op: traces.OpOutboxEnqueue, Args: traces.Args{ID: "o" + id, Target: mailbox, MaxAttempts: 1}})
	}
	// The model's order: the holder's lease and claim, then the second's.
	steps = append(steps,
		traces.Step{Op: traces.OpLease, Args: traces.Args{Mailbox: mailbox, LeaseFor: 60}},
		traces.Step{Op: traces.OpConsumerFetch, Args: traces.Args{Mailbox: mailbox, Worker: 1, Profile: traces.ProfileLeased, LeaseFor: 60}},
		traces.Step{Op: traces.OpOutboxClaim, Args: traces.Args{Limit: 1, ClaimFor: 60}},
		traces.Step{Op: traces.OpOutboxClaim, Args: traces.Args{Limit: 1, ClaimFor: 60}})
	want := modelResults(t, steps)[4:]
	show := func(id string, n int) string { return fmt.Sprintf("%s attempts=%d", id, n) }

	c, err := actordelivery.NewConsumer(second, func(context.Context, *actordelivery.Message) (actordelivery.Effects, error) { return nil, nil },
		actordelivery.ConsumerOptions{Mailbox: mailbox, Path: actordelivery.PathLeased, LeaseFor: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	m, release, done := holdOpen(t, holder, func(ctx context.Context) (*actordelivery.Message, error) {
		return holder.Lease(ctx, mailbox, time.Minute)
	})
	if m == nil || show(m.ID, m.Attempts) != show(want[0].Message.ID, want[0].Message.Attempts) {
		close(release)
		t.Fatalf("the holder's lease got %+v, want the model's %+v", m, want[0].Message)
	}
	type fetched struct {
		d   *actordelivery.Delivery
		err error
	}
	fetchDone := make(chan fetched, 1)
	go func() {
		d, err := c.Fetch(ctx)
		fetchDone <- fetched{d, err}
	}()
	f, returned := untilDoneOrWaiting(t, admin, schema+"_second", fetchDone)
	close(release)
	if err := <-done; err != nil {
		t.Fatalf("the holder's transaction: %v", err)
	}
	if !returned {
		f = <-fetchDone
		t.Errorf("a leased fetch waited for the lock of the head another worker's lease held: it must skip the locked row and lease the next eligible message (%s)",
			show(want[1].Message.ID, want[1].Message.Attempts))
	}
	switch {
	case f.err != nil:
		t.Fatalf("the second worker's fetch: %v", f.err)
	case f.d == nil:
		t.Errorf("the second worker's fetch found nothing while %s was eligible", want[1].Message.ID)
	case show(f.d.Message.ID, f.d.Message.Attempts) != show(want[1].Message.ID, want[1].Message.Attempts):
		t.Errorf("the second worker fetched %s, the model (the holder's lease first) %s",
			show(f.d.Message.ID, f.d.Message.Attempts), show(want[1].Message.ID, want[1].Message.Attempts))
	}

	rows, release, done := holdOpen(t, holder, func(ctx context.Context) ([]actordelivery.OutboxRow, error) {
		return holder.OutboxClaim(ctx, 1, time.Minute)
	})
	if len(rows) != 1 || rows[0].ID != want[2].Claimed[0].ID {
		close(release)
		t.Fatalf("the holder's claim got %+v, want the model's %+v", rows, want[2].Claimed)
	}
	type claimed struct {
		rows []actordelivery.OutboxRow
		err  error
	}
	claimDone := make(chan claimed, 1)
	go func() {
		rows, err := second.OutboxClaim(ctx, 1, time.Minute)
		claimDone <- claimed{rows, err}
	}()
	cl, returned := untilDoneOrWaiting(t, admin, schema+"_second", claimDone)
	close(release)
	if err := <-done; err != nil {
		t.Fatalf("the holder's transaction: %v", err)
	}
	if !returned {
		cl = <-claimDone
		t.Errorf("an outbox claim waited for the lock of the row another publisher's claim held: it must skip it and claim the next pending row (%s)", want[3].Claimed[0].ID)
	}
	switch {
	case cl.err != nil:
		t.Fatalf("the second claim: %v", cl.err)
	case len(cl.rows) != 1 || cl.rows[0].ID != want[3].Claimed[0].ID:
		t.Errorf("the second claim got %d rows %+v, the model (the holder's claim first) %s", len(cl.rows), cl.rows, want[3].Claimed[0].ID)
	}
}
