package ledgerstore

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pconform/pconform/adapter"
	"github.com/pconform/pconform/conformtest"
)

// TestConformance is the example store, with its own consumer and publisher, through the kit
// under its own profile and the kit's default configuration: every trace it can run passes.
func TestConformance(t *testing.T) {
	if bugUnderTest() != "" {
		t.Skip("the child run of TestFindsEachBug")
	}
	conformtest.Run(t, func(*testing.T) adapter.Target { return NewTarget() }, Profile())
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
			conformtest.Run(t, func(*testing.T) adapter.Target {
				tg := New()
				return adapter.WithRuntime(tg, Profile(), keep(tg.Runtime()))
			}, Profile())
		})
	}
}

// TestSizes keeps the store-level adapter within 300 lines, and the sizes
// docs/bring-your-own-store.md gives for this example equal to the files' line counts.
func TestSizes(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "bring-your-own-store.md"))
	if err != nil {
		t.Fatal(err)
	}
	var row string
	for line := range strings.Lines(string(doc)) {
		if strings.HasPrefix(line, "| `examples/ledgerstore` |") {
			row = line
		}
	}
	if row == "" {
		t.Fatal("docs/bring-your-own-store.md has no size row for examples/ledgerstore")
	}
	for _, file := range []string{"adapter.go", "runtime.go", "consumer.go", "publisher.go"} {
		src, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		n := strings.Count(string(src), "\n")
		if file == "adapter.go" && n > 300 {
			t.Errorf("the store-level adapter has %d lines, more than 300", n)
		}
		if want := fmt.Sprintf("`%s` %d", file, n); !strings.Contains(row, want) {
			t.Errorf("the size row does not say %s (wc -l):\n%s", want, row)
		}
	}
}
