package observe_test

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/pconform/pconform/actordelivery"
	"github.com/pconform/pconform/observe"
	"github.com/pconform/pconform/traces"
)

// declineAll is a retry policy that never retries: every failure is dead-lettered at once.
type declineAll struct{}

func (declineAll) Retry(error, int) (time.Duration, bool) { return 0, false }

// TestDeclinedReasonSurvivesRestart: a handler fails with its own error text and the retry
// policy declines, so the store dead-letters the message with that text as its reason. The
// recorded handle states the reason, and a restart appending to the same log states the dead
// letter in its snapshot, reason included: the model must hold the same reason, or the restart
// is an error ("rows changed outside" the history). Single and batched handles, both backends.
func TestDeclinedReasonSurvivesRestart(t *testing.T) {
	forBackends(t, func(t *testing.T, open func(actordelivery.Options) (*actordelivery.Store, error)) {
		for _, batch := range []int{1, 2} {
			name := map[int]string{1: "single", 2: "batch"}[batch]
			t.Run(name, func(t *testing.T) {
				log := declinedLog(t, open, batch, name)
				if !bytes.Contains(log, []byte(`"reason":"disk full: `+name+`"`)) {
					t.Fatalf("the restart's snapshot does not state the dead letter's reason:\n%s", log)
				}
				if _, f, err := checkLog(log); err != nil || f != nil {
					t.Fatalf("check: finding %v, error %v; want it clean\n%s", f, err, log)
				}
				// Without the reason in the handle, the model's dead letter says "handler
				// failed", and the restart's snapshot contradicts it.
				var stripped [][]byte
				for _, line := range bytes.Split(log, []byte("\n")) {
					if bytes.Contains(line, []byte(`"op":"consumer_handle`)) {
						line = bytes.Replace(line, []byte(`,"reason":"disk full: `+name+`"`), nil, 1)
						line = bytes.Replace(line, []byte(`,"reasons":["disk full: `+name+`",""]`), nil, 1)
					}
					stripped = append(stripped, line)
				}
				_, f, err := checkLog(bytes.Join(stripped, []byte("\n")))
				if err == nil || !strings.Contains(err.Error(), "reason:handler failed") {
					t.Fatalf("the log without the handle's reason: finding %v, error %v; want the restart's snapshot to contradict the model's \"handler failed\"", f, err)
				}
				if _, err := exec.LookPath("p"); err == nil {
					if _, f, err := checkLogP(t, log); err != nil || f != nil {
						t.Fatalf("check --p: finding %v, error %v; want it clean", f, err)
					}
				}
			})
		}
	})
}

// declinedLog records a store whose handler fails m1 with its own text ("disk full: " + name)
// and acks m2, under a policy that never retries, batch messages a fetch, and a restart that
// appends to the same log.
func declinedLog(t *testing.T, open func(actordelivery.Options) (*actordelivery.Store, error), batch int, name string) []byte {
	t.Helper()
	ctx := context.Background()
	var log bytes.Buffer
	rec := actordelivery.JSONRecorder(&log, func(err error) { t.Errorf("recorder: %v", err) })
	st, err := open(actordelivery.Options{Recorder: rec})
	if err != nil {
		t.Fatal(err)
	}
	mailbox := "declined-" + name
	for _, id := range []string{"m1", "m2"} {
		if _, err := st.Enqueue(ctx, actordelivery.NewMessage{Mailbox: mailbox, ID: name + "-" + id, MaxAttempts: 3}); err != nil {
			t.Fatal(err)
		}
	}
	c, err := actordelivery.NewConsumer(st, func(_ context.Context, m *actordelivery.Message) (actordelivery.Effects, error) {
		if m.ID == name+"-m1" {
			return nil, errors.New("disk full: " + name)
		}
		return nil, nil
	}, actordelivery.ConsumerOptions{Mailbox: mailbox, Retry: declineAll{}, BatchSize: batch})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if batch > 1 {
			ds, err := c.FetchBatch(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(ds) > 0 {
				if _, err := c.HandleBatch(ctx, ds); err != nil {
					t.Fatal(err)
				}
			}
			continue
		}
		d, err := c.Fetch(ctx)
		if err != nil || d == nil {
			t.Fatalf("fetch: %v, %v", d, err)
		}
		if _, err := c.Handle(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	all, err := st.ListDeadLetters(ctx)
	var dead []actordelivery.DeadLetter
	for _, d := range all {
		if d.Mailbox == mailbox {
			dead = append(dead, d)
		}
	}
	if err != nil || len(dead) != 1 || dead[0].Reason != "disk full: "+name {
		t.Fatalf("dead letters %+v, %v; want %s-m1 with the handler's text", dead, err, name)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if st, err = open(actordelivery.Options{Recorder: rec}); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	return log.Bytes()
}

// TestDeclinedReasonConverts: the converted trace of such a log keeps the reason, and it is a
// valid trace.
func TestDeclinedReasonConverts(t *testing.T) {
	forBackends(t, func(t *testing.T, open func(actordelivery.Options) (*actordelivery.Store, error)) {
		log := declinedLog(t, open, 1, "convert")
		end := bytes.LastIndex(log, []byte(`"op":"incarnation"`)) // the restart's snapshot is left out of a trace
		end = bytes.LastIndexByte(log[:end], '\n') + 1
		tr, err := observe.Convert(mustRead(t, log[:end]), observe.Options{Name: "declined"})
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, s := range tr.Steps {
			if s.Op == traces.OpConsumerHandle && s.Args.Outcome == traces.OutcomeFailNoRetry {
				found = s.Args.Reason == "disk full: convert"
			}
		}
		if !found {
			t.Fatalf("the trace's declined handle does not carry the handler's text: %+v", tr.Steps)
		}
		if err := traces.Validate(tr); err != nil {
			t.Fatal(err)
		}
	})
}
