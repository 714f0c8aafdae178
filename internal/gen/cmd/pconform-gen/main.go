// Command pconform-gen writes the files package gen derives from the trace format's tables.
//
// Usage (from the repository root, or through go generate in internal/gen):
//
//	go run ./internal/gen/cmd/pconform-gen [-root DIR]
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/pconform/pconform/internal/gen"
)

func main() {
	root := flag.String("root", ".", "the repository root")
	flag.Parse()
	if err := run(*root); err != nil {
		fmt.Fprintln(os.Stderr, "pconform-gen:", err)
		os.Exit(1)
	}
}

func run(root string) error {
	src := os.DirFS(root)
	for _, f := range gen.Files {
		path := filepath.Join(root, filepath.FromSlash(f.Path))
		var current []byte
		if f.Splice != nil {
			c, err := os.ReadFile(path)
			if err != nil {
				return fmt.Errorf("read %s: %w", f.Path, err)
			}
			current = c
		}
		b, err := f.Make(src, current)
		if err != nil {
			return err
		}
		if err := os.WriteFile(path, b, 0o644); err != nil {
			return fmt.Errorf("write %s: %w", f.Path, err)
		}
	}
	return nil
}
