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
		msg := targetMessage(*r.Message, modelToken(r.Message.Token))
		o.Message = &msg
	}
	for _, msg := range r.Messages {
		o.Messages = append(o.Messages, targetMessage(msg, modelToken(msg.Token)))
	}
	for _, c := range r.Claimed {
		o.Claimed = append(o.Claimed, targetClaimedRow(c, modelToken(c.Token)))
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
		out.Messages = append(out.Messages, targetMessageRow(r, modelToken(r.Token)))
	}
	for _, r := range s.Outbox {
		out.Outbox = append(out.Outbox, targetOutboxRow(r, modelToken(r.Token)))
	}
	return out, nil
}

// Reopen is a no-op: the model keeps no durable state that a reopen could lose.
func (m *Target) Reopen(context.Context) error { return nil }

// Close is a no-op.
func (m *Target) Close() error { return nil }

// State returns the model state reached so far.
func (m *Target) State() models.State { return m.m.State() }
