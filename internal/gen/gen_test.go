package gen

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestGeneratedFilesAreCurrent fails when a committed generated file differs from what its
// generator makes now: a change to traces.Spec, the traces structs or actordelivery's query files
// that was not followed by `go generate ./internal/gen`.
func TestGeneratedFilesAreCurrent(t *testing.T) {
	root := os.DirFS(filepath.Join("..", ".."))
	for _, f := range Files {
		t.Run(f.Path, func(t *testing.T) {
			got, err := os.ReadFile(filepath.Join("..", "..", filepath.FromSlash(f.Path)))
			if err != nil {
				t.Fatal(err)
			}
			want, err := f.Make(root, got)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s is stale: run `go generate ./internal/gen` and commit the result", f.Path)
			}
		})
	}
}

// TestSchemaFrameHoldsNoOp keeps per-op text out of the hand-written frame, so an op's schema
// is only ever the generated one.
func TestSchemaFrameHoldsNoOp(t *testing.T) {
	if strings.Contains(string(schemaFrame), `"op_`) {
		t.Error("schema_frame.json defines an op_* schema; ops are generated from traces.Spec")
	}
}
