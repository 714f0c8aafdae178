package ledgerstore

import (
	"testing"

	"github.com/pconform/pconform/adapter"
	"github.com/pconform/pconform/conformtest"
	"github.com/pconform/pconform/replay"
)

// TestConformance is the example store, with its own consumer and publisher, through the kit
// under its own profile and the kit's default configuration: every trace it can run passes.
func TestConformance(t *testing.T) {
	if bugUnderTest() != "" {
		t.Skip("the child run of TestFindsEachBug")
	}
	conformtest.Run(t, func(*testing.T) replay.Target { return NewTarget() }, Profile())
}

func TestProfileReads(t *testing.T) {
	p := Profile()
	if v, _ := p.Value("ack"); v != "deletes" || len(p.Changed()) != 1 {
		t.Errorf("profile %s: want the default but for ack = deletes", p)
	}
}

// TestConformanceMixed keeps one half of the store's runtime and takes the kit's reference for
// the other: the store's consumer with the kit's publisher, and the reverse. Both pass, and the
// kit names whose code ran.
func TestConformanceMixed(t *testing.T) {
	if bugUnderTest() != "" {
		t.Skip("the child run of TestFindsEachBug")
	}
	for name, keep := range map[string]func(r adapter.Runtime) adapter.Runtime{
		"own-consumer":  func(r adapter.Runtime) adapter.Runtime { r.Publisher = nil; return r },
		"own-publisher": func(r adapter.Runtime) adapter.Runtime { r.Consumer = nil; return r },
	} {
		t.Run(name, func(t *testing.T) {
			conformtest.Run(t, func(*testing.T) replay.Target {
				tg := New()
				return adapter.WithRuntime(tg, Profile(), keep(tg.Runtime()))
			}, Profile())
		})
	}
}
