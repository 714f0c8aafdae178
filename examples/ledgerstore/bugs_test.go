package ledgerstore

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pconform/pconform/adapter"
	"github.com/pconform/pconform/conformtest"
)

// The three broken runtimes live here, beside the tests, never in the store's code. Each is the
// store's own runtime with one part replaced by a copy that has one bug, built on the store's
// public transaction API. Each is named by the broken variant (internal/variants) whose committed
// counterexample must find it.
var brokenRuntimes = map[string]func(t *Target) adapter.Runtime{
	// The retry decision hands the raw stored attempt count to the retry policy on the leaseless
	// path (no +1): a message is retried past its last attempt and stranded.
	"raw-attempts": func(t *Target) adapter.Runtime {
		r := t.Runtime()
		r.Consumer = brokenConsumer{r.Consumer.(*consumer), "raw-attempts"}
		return r
	},
	// The split delivery drops the enqueue commit's error and completes the outbox row: a
	// completed row whose message never arrived.
	"split-write": func(t *Target) adapter.Runtime {
		r := t.Runtime()
		r.Publisher = splitWrite{t}
		return r
	},
	// The early dead letter (the retry policy declines) skips the lease's fence: a stale worker
	// dead-letters a message another worker leased.
	"early-dead-letter-unfenced": func(t *Target) adapter.Runtime {
		r := t.Runtime()
		r.Consumer = brokenConsumer{r.Consumer.(*consumer), "early-dead-letter-unfenced"}
		return r
	},
}

func bugUnderTest() string { return os.Getenv("LEDGERSTORE_BUG") }

// brokenConsumer is the store's consumer with a broken failure decision (brokenFail).
type brokenConsumer struct {
	*consumer
	bug string
}

func (c brokenConsumer) Handle(ctx context.Context, at int64, a adapter.Args) (adapter.Observation, error) {
	d := c.fetched[a.Worker]
	if d == nil || a.Succeeds() {
		return c.consumer.Handle(ctx, at, a)
	}
	c.t.now = adapter.At(at)
	delete(c.fetched, a.Worker)
	r, err := brokenFail(c.t.Consumer(a), d, adapter.ErrHandlerFailed, c.bug)
	return adapter.Observation{Action: r.Action, Attempt: r.Attempt}, err
}

// brokenFail is Consumer.fail with bug.
func brokenFail(c *Consumer, d *Delivery, herr error, bug string) (Result, error) {
	r := Result{Action: "lease_lost"}
	err := c.Store.Update(func(tx *Tx) error {
		stored := d.Attempts
		if m, ok := tx.Get(d.ID); d.Leaseless && ok {
			stored = m.Attempts
		}
		r.Attempt = Attempt(stored, d.Max, d.Leaseless)
		if bug == "raw-attempts" {
			r.Attempt = min(stored, d.Max) // BUG: the raw stored count, not stored + 1 when leaseless
		}
		reason, delay, retry := ReasonMaxAttempts, time.Duration(0), false
		if r.Attempt < d.Max {
			delay, retry = c.Retry(herr, r.Attempt)
			reason = herr.Error()
		}
		if bug == "early-dead-letter-unfenced" && !retry && !d.Leaseless && r.Attempt < d.Max {
			r.Action = "dead_lettered"
			return tx.DeadLetter(d.ID, reason) // BUG: by id, without the lease's fence
		}
		var err error
		if d.Leaseless {
			err = tx.NackByID(d.ID, delay)
		} else {
			err = tx.Nack(d.ID, d.Token, delay)
		}
		if err != nil {
			return errLost
		}
		if retry {
			r.Action = "retried"
			return nil
		}
		r.Action = "dead_lettered"
		return tx.DeadLetter(d.ID, reason)
	})
	if errors.Is(err, errLost) {
		return Result{Action: "lease_lost", Attempt: r.Attempt}, nil
	}
	return r, err
}

// splitWrite is the store's publisher with a broken split delivery.
type splitWrite struct{ t *Target }

func (p splitWrite) Deliver(ctx context.Context, at int64, a adapter.Args, f *adapter.Faults) (adapter.Observation, error) {
	if !a.Split() || f.Undeliverable() {
		return (&publisher{p.t}).Deliver(ctx, at, a, f)
	}
	p.t.now = adapter.At(at)
	row, err := p.t.Row(a)
	if err != nil {
		return adapter.Observation{}, err
	}
	u := faulty{p.t.st, f}
	var o adapter.Observation
	_ = u.Update(func(tx *Tx) error { // BUG: the enqueue commit's error is dropped
		o.Duplicate = tx.Enqueue(Message{Mailbox: row.Target, ID: row.ID, Key: row.Key, Priority: row.Priority,
			Max: row.Max, Payload: row.Payload}, 0)
		return nil
	})
	err = u.Update(func(tx *Tx) error { return tx.OutboxSettle(row.ID, row.Token, Completed, "", 0) })
	switch {
	case errors.Is(err, ErrClaimLost):
		o.Action = "claim_lost" // the store's own words (publisher.go)
	case err != nil:
		return o, err
	default:
		o.Action = "delivered"
	}
	return o, nil
}

// TestBrokenRuntimeChild is the child run of TestFindsEachBug: the kit, with its default
// configuration, on the broken runtime LEDGERSTORE_BUG names.
func TestBrokenRuntimeChild(t *testing.T) {
	broken := brokenRuntimes[bugUnderTest()]
	if broken == nil {
		t.Skip("the child run of TestFindsEachBug")
	}
	conformtest.Run(t, func(*testing.T) adapter.Target {
		tg := New()
		return adapter.WithRuntime(tg, Profile(), broken(tg))
	}, Profile())
}

// TestFindsEachBug runs the kit's default run on each broken runtime in a child process (a
// failing test is its output) and requires it to fail, at a counterexample of the broken variant
// the bug is, with the words "reproduces broken variant VARIANT", and to say that the store's own
// consumer and publisher ran.
func TestFindsEachBug(t *testing.T) {
	if bugUnderTest() != "" {
		t.Skip("the child run")
	}
	failed := regexp.MustCompile(`--- FAIL: TestBrokenRuntimeChild/(\S+)`)
	for bug := range brokenRuntimes {
		t.Run(bug, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestBrokenRuntimeChild$", "-test.count=1", "-test.v")
			cmd.Env = append(os.Environ(), "LEDGERSTORE_BUG="+bug)
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("the kit passed the %s runtime:\n%s", bug, out)
			}
			var subtests []string
			for _, m := range failed.FindAllStringSubmatch(string(out), -1) {
				subtests = append(subtests, m[1])
			}
			t.Logf("the kit fails %d subtests: %s", len(subtests), strings.Join(subtests, ", "))
			if !slices.ContainsFunc(subtests, func(s string) bool { return strings.HasPrefix(s, "variant/"+bug+"/") }) {
				t.Errorf("no variant/%s/ subtest fails:\n%s", bug, out)
			}
			for _, words := range []string{
				"reproduces broken variant " + bug + ": ",
				"consumer: the store's own; publisher: the store's own",
			} {
				if !strings.Contains(string(out), words) {
					t.Errorf("the kit's failures do not say %q:\n%s", words, out)
				}
			}
		})
	}
}
