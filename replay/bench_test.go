package replay_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/pconform/pconform/actordelivery"
	"github.com/pconform/pconform/internal/targets"
	"github.com/pconform/pconform/models"
	"github.com/pconform/pconform/replay"
	"github.com/pconform/pconform/traces"
)

// BenchmarkReplay measures replay throughput in steps/s on one generated 200-step trace (seed 7):
// "engine" replays it through Run against the store target (binding, comparison, history, final
// snapshot); "direct" makes the same store, consumer and publisher calls (the same effect-logging
// handler, the same fault wrapper) with no engine and no target adapter; "paired" runs both in
// each iteration and reports the ratio engine/direct of their times, the engine's overhead;
// "model" replays the trace against the reference model. Opening and closing the database is
// outside the timed region throughout.
func BenchmarkReplay(b *testing.B) {
	tr, err := genTrace(rand.New(rand.NewPCG(7, 0x5eed)), "bench", 200)
	if err != nil {
		b.Fatal(err)
	}
	// The bench trace must replay cleanly, or the engine would stop early and look fast.
	if v := replayForBench(b, tr, targets.Store); v.Outcome != replay.Match {
		b.Fatalf("the benchmark trace does not match the store: %s", v)
	}
	steps := float64(len(tr.Steps))
	ctx := context.Background()

	b.Run("engine", func(b *testing.B) {
		var elapsed time.Duration
		for b.Loop() {
			elapsed += benchEngine(b, tr)
		}
		b.ReportMetric(steps*float64(b.N)/elapsed.Seconds(), "steps/s")
	})
	b.Run("direct", func(b *testing.B) {
		var elapsed time.Duration
		for b.Loop() {
			elapsed += benchDirect(b, tr)
		}
		b.ReportMetric(steps*float64(b.N)/elapsed.Seconds(), "steps/s")
	})
	// paired runs both in every iteration, in alternating order, so that a machine whose load
	// drifts (other jobs, fsync latency) slows both alike and the ratio stays meaningful.
	b.Run("paired", func(b *testing.B) {
		var engine, direct time.Duration
		i := 0
		for b.Loop() {
			if i%2 == 0 {
				direct += benchDirect(b, tr)
				engine += benchEngine(b, tr)
			} else {
				engine += benchEngine(b, tr)
				direct += benchDirect(b, tr)
			}
			i++
		}
		b.ReportMetric(steps*float64(b.N)/engine.Seconds(), "engine-steps/s")
		b.ReportMetric(steps*float64(b.N)/direct.Seconds(), "direct-steps/s")
		b.ReportMetric(engine.Seconds()/direct.Seconds(), "engine/direct")
	})
	b.Run("model", func(b *testing.B) {
		start := time.Now()
		for b.Loop() {
			if _, err := replay.Run(ctx, tr, targets.NewModelTarget(models.Config{}), replay.Options{}); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(steps*float64(b.N)/time.Since(start).Seconds(), "steps/s")
	})
}

// benchEngine replays tr through Run against a fresh store target and returns the time Run took;
// setup and teardown run with the timer stopped.
func benchEngine(b *testing.B, tr *traces.Trace) time.Duration {
	b.StopTimer()
	defer b.StartTimer()
	tg, err := targets.New(targets.Store, b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer tg.Close()
	b.StartTimer()
	start := time.Now()
	_, err = replay.Run(context.Background(), tr, tg, replay.Options{})
	elapsed := time.Since(start)
	b.StopTimer()
	if err != nil {
		b.Fatal(err)
	}
	return elapsed
}

// benchDirect makes tr's calls directly on a fresh store and returns the time they took.
func benchDirect(b *testing.B, tr *traces.Trace) time.Duration {
	b.StopTimer()
	defer b.StartTimer()
	clock := actordelivery.NewManualClock(traces.Epoch)
	path := b.TempDir() + "/direct.db"
	open := func() (*actordelivery.Store, error) {
		return actordelivery.Open(path, actordelivery.Options{Clock: clock})
	}
	st, err := open()
	if err != nil {
		b.Fatal(err)
	}
	b.StartTimer()
	start := time.Now()
	st, err = runDirect(context.Background(), st, open, clock, tr)
	elapsed := time.Since(start)
	b.StopTimer()
	if err != nil {
		b.Fatal(err)
	}
	if err := st.Close(); err != nil {
		b.Fatal(err)
	}
	return elapsed
}

func replayForBench(b *testing.B, tr *traces.Trace, target string) replay.Verdict {
	tg, err := targets.New(target, b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer tg.Close()
	v, err := replay.Run(context.Background(), tr, tg, replay.Options{})
	if err != nil {
		b.Fatal(err)
	}
	return v
}

// runDirect makes a trace's calls on the store directly: tokens are taken positionally from the
// results as they come, nothing is compared, nothing is recorded. A crash closes st and opens
// the store again; runDirect returns the store open at the end.
func runDirect(ctx context.Context, st *actordelivery.Store, open func() (*actordelivery.Store, error), clock *actordelivery.ManualClock, tr *traces.Trace) (*actordelivery.Store, error) {
	lease, claim := map[int]string{}, map[int]string{}
	fetched := map[int]*actordelivery.Delivery{}
	// tok stands in for the engine's binding: a symbol never issued becomes a token nothing carries.
	tok := func(m map[int]string, sym int) string {
		if t, ok := m[sym]; ok {
			return t
		}
		return "forged"
	}
	ignore := func(err error) error {
		if errors.Is(err, actordelivery.ErrLeaseLost) || errors.Is(err, actordelivery.ErrNotFound) || errors.Is(err, actordelivery.ErrClaimLost) {
			return nil
		}
		return err
	}
	for _, s := range tr.Steps {
		clock.Set(traces.At(s.At))
		a := s.Args
		var err error
		switch s.Op {
		case traces.OpEnqueue:
			_, err = st.Enqueue(ctx, actordelivery.NewMessage{Mailbox: a.Mailbox, ID: a.ID, Key: a.Key, Priority: a.Priority,
				MaxAttempts: a.MaxAttempts, Delay: traces.Duration(a.Delay), Payload: targets.Payload(a.Payload)})
		case traces.OpLease:
			var m *actordelivery.Message
			if m, err = st.Lease(ctx, a.Mailbox, traces.Duration(a.LeaseFor)); m != nil && s.Result.Message != nil {
				lease[s.Result.Message.Token] = m.Token
			}
		case traces.OpPeek:
			_, err = st.Peek(ctx, a.Mailbox)
		case traces.OpAck:
			err = ignore(st.Ack(ctx, a.ID, tok(lease, a.Token)))
		case traces.OpNack:
			err = ignore(st.Nack(ctx, a.ID, tok(lease, a.Token), traces.Duration(a.Delay)))
		case traces.OpAckByID:
			err = ignore(st.AckByID(ctx, a.ID))
		case traces.OpNackByID:
			err = ignore(st.NackByID(ctx, a.ID, traces.Duration(a.Delay)))
		case traces.OpExtend:
			err = ignore(st.ExtendLease(ctx, a.ID, tok(lease, a.Token), traces.Duration(a.LeaseFor)))
		case traces.OpExpire:
			_, err = st.ExpireLeases(ctx)
		case traces.OpDeadLetter:
			err = ignore(st.DeadLetter(ctx, a.ID, a.Reason))
		case traces.OpOutboxEnqueue:
			_, err = st.OutboxEnqueue(ctx, actordelivery.OutboxMessage{ID: a.ID, Target: a.Target, Key: a.Key, Priority: a.Priority, MaxAttempts: a.MaxAttempts})
		case traces.OpOutboxClaim:
			var rows []actordelivery.OutboxRow
			if rows, err = st.OutboxClaim(ctx, a.Limit, traces.Duration(a.ClaimFor)); len(rows) > 0 && len(s.Result.Claimed) > 0 {
				claim[s.Result.Claimed[0].Token] = rows[0].ClaimToken
			}
		case traces.OpOutboxComplete:
			err = ignore(st.OutboxComplete(ctx, a.ID, tok(claim, a.Token)))
		case traces.OpOutboxFail:
			err = ignore(st.OutboxFail(ctx, a.ID, tok(claim, a.Token), traces.Duration(a.Delay)))
		case traces.OpConsumerFetch, traces.OpConsumerHandle:
			path := actordelivery.PathLeased
			if a.Profile == traces.ProfileLeaseless {
				path = actordelivery.PathLeaseless
			}
			// The same handler as the store target's: the effect log is part of the work.
			h := targets.EffectHandler(st, a.Outcome, a.Reason)
			var c *actordelivery.Consumer
			c, err = actordelivery.NewConsumer(st, h, actordelivery.ConsumerOptions{Mailbox: a.Mailbox, Path: path,
				LeaseFor: max(traces.Duration(a.LeaseFor), time.Nanosecond), Retry: targets.FixedRetry(traces.Duration(a.RetryDelay))})
			if err != nil {
				return st, err
			}
			if s.Op == traces.OpConsumerFetch {
				var d *actordelivery.Delivery
				d, err = c.Fetch(ctx)
				fetched[a.Worker] = d
			} else if d := fetched[a.Worker]; d != nil {
				delete(fetched, a.Worker)
				_, err = c.Handle(ctx, d)
			}
		case traces.OpPublisherDeliver:
			var rows []actordelivery.OutboxRow
			if rows, err = st.ListOutbox(ctx); err != nil {
				return st, err
			}
			mode := actordelivery.ModeFold
			if a.Profile == traces.ProfileSplit {
				mode = actordelivery.ModeSplit
			}
			fst, _ := targets.NewFaultStore(st, a.Fault)
			p, perr := actordelivery.NewPublisher(fst, actordelivery.PublisherOptions{Mode: mode})
			if perr != nil {
				return st, perr
			}
			for _, r := range rows {
				if r.ID == a.ID {
					r.ClaimToken = tok(claim, a.Token)
					if _, err = p.Deliver(ctx, r); fst.Injected(err) {
						err = nil
					}
				}
			}
		case traces.OpCrash:
			clear(fetched)
			if err = st.Close(); err == nil {
				st, err = open()
			}
		}
		if err != nil {
			return st, err
		}
	}
	return st, nil
}

// BenchmarkLongTrace replays one generated trace of 10,000 and one of 50,000 steps (seed 11)
// against the reference model and the store, one replay per iteration, and reports steps/s and
// the seconds per replay. The model target runs the model in place, so its time grows linearly
// with the trace; at 50,000 steps it must take no longer than the store. The store runs are long:
//
//	go test ./replay/ -run '^$' -bench 'LongTrace' -benchtime 1x
func BenchmarkLongTrace(b *testing.B) {
	for _, n := range []int{10_000, 50_000} {
		tr, err := genTrace(rand.New(rand.NewPCG(11, 0x5eed)), "long", n)
		if err != nil {
			b.Fatal(err)
		}
		for _, target := range []string{targets.Model, targets.Store} {
			b.Run(fmt.Sprintf("%s/%dk", target, n/1000), func(b *testing.B) {
				var elapsed time.Duration
				for b.Loop() {
					start := time.Now()
					if v := replayForBench(b, tr, target); v.Outcome != replay.Match {
						b.Fatalf("the long trace does not match %s: %s", target, v)
					}
					elapsed += time.Since(start)
				}
				b.ReportMetric(float64(n)*float64(b.N)/elapsed.Seconds(), "steps/s")
				b.ReportMetric(elapsed.Seconds()/float64(b.N), "s/replay")
			})
		}
	}
}
