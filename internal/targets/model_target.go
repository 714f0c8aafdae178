package targets

import (
	"github.com/pconform/pconform/internal/modeltarget"
	"github.com/pconform/pconform/models"
)

// ModelTarget runs a trace against the pure reference model; it lives in internal/modeltarget,
// which links no database driver.
type ModelTarget = modeltarget.Target

// NewModelTarget returns a target over models.Init(cfg).
func NewModelTarget(cfg models.Config) *ModelTarget { return modeltarget.New(cfg) }
