package bridge

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeCompiler writes a stand-in for `p compile` into a temporary directory and returns its path
// and the file it appends a line to on every run. It compiles a project into X.dll, fails (exit
// 1, with a compiler's error line) when the project has a file "fail", and exits 0 without a DLL
// when it has a file "nodll".
func fakeCompiler(t *testing.T) (p, runs string) {
	t.Helper()
	dir := t.TempDir()
	p, runs = filepath.Join(dir, "p"), filepath.Join(dir, "runs")
	script := `#!/bin/sh
[ "$1" = compile ] || { echo "fake p: $*: only compile" >&2; exit 2; }
echo run >>'` + runs + `'
if [ -f fail ]; then echo "[Error:] [Fail.p:1:1] no such event eNothing"; exit 1; fi
[ -f nodll ] && exit 0
mkdir -p PGenerated/PChecker/net8.0 && echo dll >PGenerated/PChecker/net8.0/X.dll
`
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return p, runs
}

// TestCompileCached: the one compile path keeps a project under its sources' hash, compiles it
// once, compiles again when a file, a name or the format changes, and leaves nothing in the cache
// for a compile that failed.
func TestCompileCached(t *testing.T) {
	p, runs := fakeCompiler(t)
	cfg := Config{P: p}
	cache := filepath.Join(t.TempDir(), "cache")
	count := func() int {
		b, _ := os.ReadFile(runs)
		return strings.Count(string(b), "run")
	}
	var announced []string
	job := func(format string, files map[string][]byte) compileJob {
		return compileJob{Cache: cache, Format: format, Project: "X", Files: files, What: "the test project",
			Compiling: func(dir string) { announced = append(announced, dir) }}
	}
	src := map[string][]byte{"X.pproj": []byte("<Project/>"), "PSrc/A.p": []byte("machine A {}")}
	cases := []struct {
		name         string
		format       string
		files        map[string][]byte
		wantCompiled bool
		wantErr      string
	}{
		{"first compile", "f/1", src, true, ""},
		{"the same sources again", "f/1", src, false, ""},
		{"a changed file", "f/1", map[string][]byte{"X.pproj": []byte("<Project/>"), "PSrc/A.p": []byte("machine A { }")}, true, ""},
		{"a renamed file", "f/1", map[string][]byte{"X.pproj": []byte("<Project/>"), "PSrc/B.p": []byte("machine A {}")}, true, ""},
		{"another format", "f/2", src, true, ""},
		{"a failing compile", "f/1", map[string][]byte{"X.pproj": nil, "fail": nil}, true, "no such event eNothing"},
		{"a compile without its DLL", "f/1", map[string][]byte{"X.pproj": nil, "nodll": nil}, true, "wrote no X.dll"},
	}
	dirs := map[string]bool{}
	for _, c := range cases {
		before, announcedBefore := count(), len(announced)
		dir, dll, compiled, err := compileCached(context.Background(), cfg, job(c.format, c.files))
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("%s: error %v, want one saying %q", c.name, err, c.wantErr)
			}
			if c.wantErr == "no such event eNothing" && !errors.Is(err, ErrChecker) {
				t.Errorf("%s: error %v does not wrap ErrChecker", c.name, err)
			}
		} else if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := count() - before; got != map[bool]int{true: 1, false: 0}[c.wantCompiled] {
			t.Errorf("%s: p compile ran %d times, want compiled=%v", c.name, got, c.wantCompiled)
		}
		if got := len(announced) - announcedBefore; got != count()-before {
			t.Errorf("%s: Compiling was called %d times for %d compiles", c.name, got, count()-before)
		}
		if err != nil {
			continue
		}
		if compiled != c.wantCompiled {
			t.Errorf("%s: compiled = %v, want %v", c.name, compiled, c.wantCompiled)
		}
		if want := filepath.Join(cache, compileKey(c.format, c.files)); dir != want {
			t.Errorf("%s: project in %s, want %s", c.name, dir, want)
		}
		if _, err := os.Stat(dll); err != nil || dll != compiledDLL(dir, "X") {
			t.Errorf("%s: DLL %s: %v", c.name, dll, err)
		}
		dirs[filepath.Base(dir)] = true
	}
	entries, err := os.ReadDir(cache)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !dirs[e.Name()] {
			t.Errorf("the cache holds %s, which no successful compile made", e.Name())
		}
	}
	if len(entries) != 4 {
		t.Errorf("the cache holds %d projects, want 4 (first, changed, renamed, other format)", len(entries))
	}
}
