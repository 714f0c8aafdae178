package actordelivery_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/pconform/pconform/actordelivery"
)

// PostgreSQL, with the store's tables beside the application's own in its database: TablePrefix
// names them shop_messages, shop_outbox, ... The application's statements use PostgreSQL's $1
// placeholders. DATABASE_URL is a pgx DSN, such as postgres://app:secret@localhost:5432/app.
// (It has no Output: it needs a server. TestPostgresExampleOpenPostgres runs it on one.)
func ExampleOpenPostgres() {
	s, err := actordelivery.OpenPostgres(os.Getenv("DATABASE_URL"), actordelivery.Options{TablePrefix: "shop_"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	ctx := context.Background()
	err = s.ExecTx(ctx, false, func(ctx context.Context) error {
		tx, err := actordelivery.Tx(ctx)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS shop_orders (id TEXT PRIMARY KEY, total BIGINT NOT NULL)`); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO shop_orders (id, total) VALUES ($1, $2)`, "o1", 30); err != nil {
			return err
		}
		_, err = s.OutboxEnqueue(ctx, actordelivery.OutboxMessage{ID: "o1", Target: "billing", MaxAttempts: 3})
		return err
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	p, err := actordelivery.NewPublisher(s, actordelivery.PublisherOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	n, err := p.Step(ctx)
	fmt.Println("delivered:", n, err)
	c, err := actordelivery.NewConsumer(s, func(ctx context.Context, m *actordelivery.Message) (actordelivery.Effects, error) {
		return func(ctx context.Context) error {
			tx, err := actordelivery.Tx(ctx)
			if err != nil {
				return err
			}
			_, err = tx.ExecContext(ctx, `UPDATE shop_orders SET total = total + 1 WHERE id = $1`, m.ID)
			return err
		}, nil
	}, actordelivery.ConsumerOptions{Mailbox: "billing"})
	if err != nil {
		fmt.Println(err)
		return
	}
	out, err := c.Step(ctx)
	fmt.Println(out.Action, err)
}

// TestPostgresExampleOpenPostgres runs ExampleOpenPostgres on the test server (a fresh schema)
// and checks what it prints, so the example that cannot run as one is still run.
func TestPostgresExampleOpenPostgres(t *testing.T) {
	t.Setenv("DATABASE_URL", actordelivery.PostgresTestDSN(t))
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout := os.Stdout
	os.Stdout = w
	func() {
		defer func() { os.Stdout = stdout }()
		ExampleOpenPostgres()
	}()
	_ = w.Close()
	got, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	if want := "delivered: 1 <nil>\nacked <nil>\n"; strings.TrimSpace(string(got)) != strings.TrimSpace(want) {
		t.Fatalf("ExampleOpenPostgres printed:\n%s\nwant:\n%s", got, want)
	}
}
