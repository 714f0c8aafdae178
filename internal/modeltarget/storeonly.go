package modeltarget

import (
	"context"
	"fmt"
	"strings"

	"github.com/pconform/pconform/models"
	"github.com/pconform/pconform/replay"
	"github.com/pconform/pconform/traces"
)

// StoreOnly is the reference model as a store with store-level operations only: it refuses every
// protocol step with replay.ErrUnsupported, as a store under the kit's adapter.WithProtocol does,
// so the wrapper's reference steps run over the model's own operations. The model keeps a
// mailbox's effects log itself, from its own handles, and refuses a save to it; StoreOnly keeps
// the log's versions (the number of saves to each) as a store's checkpoint table would, so the
// reference consumer's saves land. Tests hold the kit's reference steps to the model with it.
type StoreOnly struct {
	*Target
	logs map[string]int
}

// NewStoreOnly returns the reference model under cfg as a store with store-level operations only.
func NewStoreOnly(cfg models.Config) *StoreOnly {
	return &StoreOnly{Target: New(cfg), logs: map[string]int{}}
}

// Do refuses a protocol step, answers an effects log's load and save itself, and hands every
// other operation to the model.
func (s *StoreOnly) Do(ctx context.Context, op traces.Op, at int64, a replay.Args) (replay.Observation, error) {
	isLog := strings.HasPrefix(a.Actor, traces.EffectsActorPrefix)
	switch {
	case traces.Spec[op].Protocol:
		return replay.Observation{}, fmt.Errorf("modeltarget: %w: %s", replay.ErrUnsupported, op)
	case op == traces.OpLoadCheckpoint && isLog:
		if s.logs[a.Actor] == 0 {
			return replay.Observation{Err: traces.ErrKindNotFound}, nil
		}
		return replay.Observation{Version: s.logs[a.Actor]}, nil
	case op == traces.OpSaveCheckpoint && isLog:
		if a.ExpectVersion != s.logs[a.Actor] {
			return replay.Observation{Err: traces.ErrKindVersionConflict}, nil
		}
		s.logs[a.Actor]++
		return replay.Observation{Version: s.logs[a.Actor]}, nil
	}
	return s.Target.Do(ctx, op, at, a)
}
