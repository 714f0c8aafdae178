// Package a exercises sqlparams: statements written once as constants with :name parameters,
// bound through sql.Named or a helper, as the store does.
package a

import (
	"context"
	"database/sql"
)

type Store struct{ db *sql.DB }

func named(name string, v any) sql.NamedArg { return sql.Named(name, v) }

func payloadArg(p []byte) sql.NamedArg { return sql.Named("payload", p) }

const (
	qAck = `UPDATE messages SET state = 'acked', token = NULL
WHERE id = :id AND state = 'ready' AND token = :token`

	// The fence edited away: the token is still bound, and the driver ignores it.
	qAckUnfenced = `UPDATE messages SET state = 'acked', token = NULL
WHERE id = :id AND state = 'ready'`

	qComplete = `UPDATE outbox SET state = 'completed', claim_token = NULL
WHERE id = :id AND claim_token = :token`

	qCompleteLoose = `UPDATE outbox SET state = 'completed', claim_token = NULL
WHERE id = :id AND claim_token IS NOT NULL`

	qLease = `UPDATE messages SET token = :token, lease_until = :until
WHERE seq = (SELECT seq FROM messages WHERE mailbox = :mailbox AND lease_until <= :now LIMIT 1)`

	qInsert = `INSERT INTO messages (id, payload, note) VALUES (:id, :payload, 'at 10:30')`

	qCast = `SELECT id FROM messages WHERE created_at::bigint > :since`

	// Another dialect's form of qAck that renamed a parameter.
	qAckOtherDialect = `UPDATE messages SET state = 'acked', token = NULL
WHERE id = :id AND state = 'ready' AND token = :tok`
)

func (s *Store) exec(ctx context.Context, fn func() (string, []any)) error {
	q, args := fn()
	_, err := s.db.ExecContext(ctx, q, args...)
	return err
}

// ---- reported ----

func (s *Store) AckUnfenced(ctx context.Context, id, token string) error {
	return s.exec(ctx, func() (string, []any) {
		return qAckUnfenced, []any{named("id", id), named("token", token)} // want `parameter :token is bound but the statement does not use it` `fenced method AckUnfenced runs a statement that does not compare the token column with :token`
	})
}

// Both the comparison and the binding removed: only the fence rule sees it.
func (s *Store) CompleteLoose(ctx context.Context, id, token string) error {
	_, err := s.db.ExecContext(ctx, qCompleteLoose, named("id", id)) // want `fenced method CompleteLoose runs a statement that does not compare the token column with :token`
	return err
}

func (s *Store) leaseMissingNow(ctx context.Context, tok string) error {
	_, err := s.db.ExecContext(ctx, qLease, named("token", tok), named("until", 5), named("mailbox", "a")) // want `the statement uses :now but no argument binds it`
	return err
}

func (s *Store) insertExtra(ctx context.Context) error {
	_, err := s.db.ExecContext(ctx, qInsert, sql.Named("id", "m1"), payloadArg(nil), sql.Named("now", 1)) // want `parameter :now is bound but the statement does not use it`
	return err
}

func overrides() map[string]string {
	return map[string]string{
		qAck:  qAckOtherDialect, // want `this form of qAck uses parameters :id, :tok, but the statement it replaces uses :id, :token`
		qCast: `SELECT id FROM messages WHERE CAST(created_at AS BIGINT) > :since`,
	}
}

// ---- not reported ----

func (s *Store) Ack(ctx context.Context, id, token string) error {
	return s.exec(ctx, func() (string, []any) {
		return qAck, []any{named("id", id), named("token", token)}
	})
}

func (s *Store) Complete(ctx context.Context, id, token string) error {
	_, err := s.db.ExecContext(ctx, qComplete, named("id", id), named("token", token))
	return err
}

func (s *Store) lease(ctx context.Context, tok string, now int64) error {
	_, err := s.db.ExecContext(ctx, qLease, named("token", tok), named("until", now+5), named("mailbox", "a"), named("now", now))
	return err
}

func (s *Store) insert(ctx context.Context) error {
	_, err := s.db.ExecContext(ctx, qInsert, sql.Named("id", "m1"), payloadArg(nil))
	return err
}

func (s *Store) cast(ctx context.Context) error {
	_, err := s.db.ExecContext(ctx, qCast, named("since", 1))
	return err
}

// A statement handed to something that does not run it is not a site.
func forget(cache map[string]int) {
	delete(cache, qLease)
	_ = len(qAck)
}

// Names the analyzer cannot read are not judged.
func (s *Store) spread(ctx context.Context, args []any) error {
	_, err := s.db.ExecContext(ctx, qLease, args...)
	return err
}

func (s *Store) dynamicName(ctx context.Context, name string) error {
	_, err := s.db.ExecContext(ctx, qCast, named(name, 1))
	return err
}
