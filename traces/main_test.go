package traces

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
)

// -update rewrites golden files (testdata/bad/*.err, canonical testdata/good/*.json, the fuzz seed
// corpus and the generated table in docs/trace-format.md) from what the code produces now.
// Review the diff before committing it.
var update = flag.Bool("update", false, "rewrite golden files from the current output")

// checkGolden compares got with a golden file, or rewrites the file with got under -update.
func checkGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./traces -update to create it)", err)
	}
	if string(got) != string(want) {
		t.Errorf("%s differs from the output (go test ./traces -update rewrites it)\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

func files(t *testing.T, pattern string) []string {
	t.Helper()
	paths, err := filepath.Glob(pattern)
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) == 0 {
		t.Fatalf("no files match %s", pattern)
	}
	return paths
}
