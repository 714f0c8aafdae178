package properties

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pconform/pconform/actordelivery"
)

// notifyWindow is how long the cross-process check holds the enqueue's transaction open while it
// waits for a wake. It only decides how likely a NOTIFY sent outside the transaction is caught (it
// arrives while the transaction is open); a correct store's wake never arrives before the commit,
// however long the window.
const notifyWindow = 500 * time.Millisecond

// TestWakeAfterCommit checks the wake-up rule (docs/semantics.md, Consumer): a wake follows the
// commit that caused it, so a subscriber woken for an enqueue finds the message.
//
//   - local, both backends: an enqueue runs in a transaction held open. Once Enqueue has returned,
//     the store's own subscriber must not have been signalled (the signal is sent at the commit,
//     and is synchronous, so this needs no waiting); after the commit it must be, and a peek
//     must find the message.
//   - notify, PostgreSQL: a second store on the same tables subscribes (its listener receives
//     the first store's NOTIFY). The enqueue's transaction stays open for notifyWindow; a wake
//     that arrives meanwhile came before the commit. After the commit the wake must come, and a
//     peek on the second store must find the message.
//
// Rerun: bash scripts/pg.sh go test ./properties/ -run 'TestWakeAfterCommit' -v
func TestWakeAfterCommit(t *testing.T) {
	t.Run("local-sqlite", func(t *testing.T) {
		st, err := actordelivery.Open(filepath.Join(t.TempDir(), "wake.db"), actordelivery.Options{Clock: fixedClock{contentionEpoch}})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		testLocalWake(t, st)
	})
	dsn := pgDSN(t)
	if dsn == "" {
		t.Log("PCONFORM_PG_DSN is not set: skipping the PostgreSQL wake checks (scripts/check.sh starts a server)")
		return
	}
	_, schema, _ := pgSchema(t, dsn, "wake")
	opts := actordelivery.Options{Clock: fixedClock{contentionEpoch}}
	sender, listener := openPGListening(t, dsn, schema, opts), openPGListening(t, dsn, schema, opts)
	t.Run("local-postgres", func(t *testing.T) { testLocalWake(t, sender) })
	t.Run("notify-postgres", func(t *testing.T) { testNotifyWake(t, sender, listener) })
}

// enqueueHeld enqueues id into mailbox in a transaction of st held open until release is closed;
// it returns once Enqueue has returned, with a channel for the commit's result.
func enqueueHeld(t *testing.T, st *actordelivery.Store, mailbox, id string) (release chan struct{}, done chan error) {
	t.Helper()
	_, release, done = holdOpen(t, st, func(ctx context.Context) (bool, error) {
		return st.Enqueue(ctx, actordelivery.NewMessage{Mailbox: mailbox, ID: id, MaxAttempts: 1})
	})
	return release, done
}

// peekFinds fails the test unless a peek of mailbox on st returns id.
func peekFinds(t *testing.T, st *actordelivery.Store, mailbox, id, who string) {
	t.Helper()
	m, err := st.Peek(context.Background(), mailbox)
	if err != nil {
		t.Fatalf("peek %s: %v", mailbox, err)
	}
	if m == nil || m.ID != id {
		t.Errorf("%s woken for the enqueue of %s peeked %v: a woken consumer must find the message its wake was sent for", who, id, m)
	}
}

func testLocalWake(t *testing.T, st *actordelivery.Store) {
	const mailbox, id = "wake-local", "w1"
	wake, stop := st.Subscribe(mailbox)
	defer stop()
	release, done := enqueueHeld(t, st, mailbox, id)
	select {
	case <-wake:
		t.Errorf("the subscriber of %s was woken while the enqueue's transaction was still open: a wake must follow the commit that caused it", mailbox)
	default:
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatalf("the enqueue's transaction: %v", err)
	}
	select {
	case <-wake:
	default:
		t.Fatalf("the subscriber of %s was not woken by the enqueue's commit", mailbox)
	}
	peekFinds(t, st, mailbox, id, "the store's own subscriber")
}

func testNotifyWake(t *testing.T, sender, listener *actordelivery.Store) {
	const mailbox, id = "wake-notify", "w2"
	wake, stop := listener.Subscribe(mailbox)
	defer stop()
	// The listener connects in the background. Enqueues into a mailbox of their own, until one
	// wakes it, say it is listening; their late wakes go to their own channel.
	warm, stopWarm := listener.Subscribe("wake-warm")
	defer stopWarm()
	deadline := time.Now().Add(time.Minute)
	for k := 0; ; k++ {
		if _, err := sender.Enqueue(context.Background(), actordelivery.NewMessage{Mailbox: "wake-warm", ID: fmt.Sprintf("warm%d", k), MaxAttempts: 1}); err != nil {
			t.Fatal(err)
		}
		select {
		case <-warm:
		case <-time.After(100 * time.Millisecond):
			if time.Now().After(deadline) {
				t.Fatal("the second store's listener received no NOTIFY within a minute")
			}
			continue
		}
		break
	}
	release, done := enqueueHeld(t, sender, mailbox, id)
	early := false
	select {
	case <-wake:
		early = true
		t.Errorf("the second store was woken while the enqueue's transaction was still open: its NOTIFY must be delivered at the commit")
	case <-time.After(notifyWindow):
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatalf("the enqueue's transaction: %v", err)
	}
	if early {
		return // the wake was spent before the commit; none may follow it
	}
	select {
	case <-wake:
	case <-time.After(time.Minute):
		t.Fatal("the second store was not woken within a minute of the enqueue's commit")
	}
	peekFinds(t, listener, mailbox, id, "the second store")
}

// openPGListening opens a store in schema with OpenPostgres, for tests whose stores subscribe.
// The schema helper's stores come from OpenPostgresDB, whose listener, built from a pool
// connection's config, panics on its first notification (reported with issue 30).
func openPGListening(t *testing.T, dsn, schema string, opts actordelivery.Options) *actordelivery.Store {
	t.Helper()
	sep := "?"
	if strings.Contains(dsn, "?") {
		sep = "&"
	}
	st, err := actordelivery.OpenPostgres(dsn+sep+"search_path="+schema, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}
