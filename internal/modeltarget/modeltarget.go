package modeltarget

import (
	"context"
	"fmt"
	"strconv"

	"github.com/pconform/pconform/models"
	"github.com/pconform/pconform/replay"
	"github.com/pconform/pconform/traces"
)

// Target runs a trace against the pure reference model. Its tokens are the model's integer
// tokens written in decimal; Reopen changes nothing, since the model's state is a value and has
// nothing to lose.
//
// It runs the model in place (a [models.Machine]), so a trace of n steps costs time linear in n.
type Target struct {
	m *models.Machine
}

// New returns a target over models.Init(cfg).
func New(cfg models.Config) *Target {
	return &Target{m: models.NewMachine(models.Init(cfg))}
}

// Do runs one model step. A malformed step (models.ErrMalformed) is an error: the model cannot
// run it at all.
func (m *Target) Do(_ context.Context, op traces.Op, at int64, a replay.Args) (replay.Observation, error) {
	r, err := m.m.Step(op, at, m.args(a))
	if err != nil {
		return replay.Observation{}, fmt.Errorf("modeltarget: %w", err)
	}
	o := replay.ObservationOf(r)
	if r.Message != nil {
		o.Message = &replay.Message{ID: r.Message.ID, Attempts: r.Message.Attempts, Token: modelToken(r.Message.Token)}
	}
	for _, msg := range r.Messages {
		o.Messages = append(o.Messages, replay.Message{ID: msg.ID, Attempts: msg.Attempts, Token: modelToken(msg.Token)})
	}
	for _, c := range r.Claimed {
		o.Claimed = append(o.Claimed, replay.ClaimedRow{ID: c.ID, DeliveryAttempts: c.DeliveryAttempts, Token: modelToken(c.Token)})
	}
	return o, nil
}

// args converts target arguments to model arguments. A token that is not a model token (the
// engine's forged tokens, or anything else) becomes 0, which the model never matches.
func (m *Target) args(a replay.Args) traces.Args {
	tok, err := strconv.Atoi(a.Token)
	if err != nil || tok < 0 {
		tok = 0
	}
	return replay.TraceArgs(a, tok)
}

func modelToken(t int) string {
	if t == 0 {
		return ""
	}
	return strconv.Itoa(t)
}

// Snapshot returns the model's state with its tokens written in decimal.
func (m *Target) Snapshot(context.Context) (replay.Snapshot, error) {
	s := m.m.Snapshot()
	out := replay.Snapshot{DeadLetters: s.DeadLetters, Effects: s.Effects}
	for _, r := range s.Messages {
		out.Messages = append(out.Messages, replay.MessageRow{
			Mailbox: r.Mailbox, ID: r.ID, Key: r.Key, Priority: r.Priority, Payload: r.Payload, State: r.State,
			Attempts: r.Attempts, MaxAttempts: r.MaxAttempts, AvailableAt: r.AvailableAt,
			Token: modelToken(r.Token), LeaseUntil: r.LeaseUntil,
		})
	}
	for _, r := range s.Outbox {
		out.Outbox = append(out.Outbox, replay.OutboxRow{
			ID: r.ID, Target: r.Target, Key: r.Key, Priority: r.Priority, MaxAttempts: r.MaxAttempts,
			Payload: r.Payload, State: r.State, DeliveryAttempts: r.DeliveryAttempts, AvailableAt: r.AvailableAt,
			Token: modelToken(r.Token), ClaimUntil: r.ClaimUntil, Reason: r.Reason,
		})
	}
	return out, nil
}

// Reopen is a no-op: the model keeps no durable state that a reopen could lose.
func (m *Target) Reopen(context.Context) error { return nil }

// Close is a no-op.
func (m *Target) Close() error { return nil }

// State returns the model state reached so far.
func (m *Target) State() models.State { return m.m.State() }
