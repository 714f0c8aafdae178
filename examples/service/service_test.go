package service_test

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/pconform/pconform/actordelivery"
	"github.com/pconform/pconform/examples/service"
	"github.com/pconform/pconform/observe"
)

// lockedBuffer is the recorder's log: JSONRecorder serializes its writes, the test reads it after
// Serve returned.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// TestServiceOnSQLite runs the service of docs/service.md: orders placed while it serves (one
// declined), every accepted order billed, the declined one leaving no row at all, a clean drain
// on cancel, and a recorded log that the model agrees with, event by event, as `pconform check`
// would say.
func TestServiceOnSQLite(t *testing.T) {
	var log lockedBuffer
	st, err := actordelivery.Open(filepath.Join(t.TempDir(), "svc.db"), actordelivery.Options{
		Recorder: actordelivery.JSONRecorder(&log, func(err error) { t.Errorf("recorder: %v", err) })})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := service.CreateTables(ctx, st); err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- service.Serve(ctx, st, 2, nil) }()

	orders := []struct {
		id    string
		total int
	}{{"o1", 30}, {"o2", -5}, {"o3", 12}, {"o4", 7}}
	for _, o := range orders {
		err := service.PlaceOrder(ctx, st, o.id, o.total)
		if declined := o.total <= 0; declined != errors.Is(err, service.ErrDeclined) || !declined && err != nil {
			t.Fatalf("PlaceOrder(%s, %d): %v", o.id, o.total, err)
		}
	}
	count := func(query string) int {
		var n int
		err := st.ExecTx(context.Background(), true, func(ctx context.Context) error {
			tx, err := actordelivery.Tx(ctx)
			if err != nil {
				return err
			}
			return tx.QueryRowContext(ctx, query).Scan(&n)
		})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	for deadline := time.Now().Add(20 * time.Second); count(`SELECT count(*) FROM orders WHERE billed = 1`) < 3; {
		if time.Now().After(deadline) {
			t.Fatalf("after 20s %d of 3 orders billed", count(`SELECT count(*) FROM orders WHERE billed = 1`))
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if err := <-served; err != nil {
		t.Fatalf("Serve after cancel: %v", err)
	}
	if n := count(`SELECT count(*) FROM orders`); n != 3 {
		t.Fatalf("%d orders stored, want 3 (the declined one rolled back)", n)
	}
	rows, err := st.ListOutbox(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if r.ID == "o2" {
			t.Fatalf("the declined order's outbox row was written: %+v", r)
		}
	}

	sum, f, err := observe.Check(observe.NewOrdered(observe.NewDecoder(bytes.NewReader(log.b.Bytes()), "svc.jsonl"), 0), observe.CheckOptions{})
	if err != nil || f != nil {
		t.Fatalf("the recorded log: %v, finding %v", err, f)
	}
	if sum.Writes < 3*4 { // per order at least: outbox_enqueue, claim, delivery, handle
		t.Fatalf("the recorded log has %d writes, too few for 3 orders: %+v", sum.Writes, sum)
	}
	t.Logf("recorded log checked: %+v", sum)
}
