package bridge_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// compileSite is a function of the repository that runs `p compile` (compileRuns), or that calls
// the function that does.
type compileSite struct {
	file, fn string
}

// goFile is one parsed Go source: its path, slash-separated from the repository root.
type goFile struct {
	path string
	ast  *ast.File
}

// compileRuns finds every call in files that passes the word "compile" to a process: a call of
// os/exec's Command or CommandContext (under whatever name the file imports the package) or of
// bridge's runP, with an argument that is, or holds, the string literal "compile" or a constant
// declared with it in the same directory. It reports the function (or "package level") holding
// each call.
func compileRuns(files []goFile) []compileSite {
	// Constants whose value is "compile", per directory (a package's files share them).
	consts := map[string]map[string]bool{}
	for _, f := range files {
		dir := filepath.Dir(f.path)
		ast.Inspect(f.ast, func(n ast.Node) bool {
			g, ok := n.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				return true
			}
			for _, s := range g.Specs {
				vs := s.(*ast.ValueSpec)
				for i, v := range vs.Values {
					if isCompile(v, nil) && i < len(vs.Names) {
						if consts[dir] == nil {
							consts[dir] = map[string]bool{}
						}
						consts[dir][vs.Names[i].Name] = true
					}
				}
			}
			return true
		})
	}
	var sites []compileSite
	for _, f := range files {
		execNames := map[string]bool{}
		for _, imp := range f.ast.Imports {
			if p, _ := strconv.Unquote(imp.Path.Value); p == "os/exec" {
				name := "exec"
				if imp.Name != nil {
					name = imp.Name.Name
				}
				execNames[name] = true
			}
		}
		known := consts[filepath.Dir(f.path)]
		visit := func(fn string, body ast.Node) {
			ast.Inspect(body, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok || !runsProcess(call.Fun, execNames) {
					return true
				}
				for _, a := range call.Args {
					if isCompile(a, known) {
						sites = append(sites, compileSite{f.path, fn})
						break
					}
				}
				return true
			})
		}
		for _, d := range f.ast.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok {
				if fd.Body != nil {
					visit(fd.Name.Name, fd.Body)
				}
				continue
			}
			visit("package level", d)
		}
	}
	return sites
}

// runsProcess reports whether fun is exec.Command, exec.CommandContext (execNames: the names the
// file gives os/exec), runP or runPTo.
func runsProcess(fun ast.Expr, execNames map[string]bool) bool {
	switch f := fun.(type) {
	case *ast.Ident:
		return f.Name == "runP" || f.Name == "runPTo"
	case *ast.SelectorExpr:
		x, ok := f.X.(*ast.Ident)
		return ok && execNames[x.Name] && (f.Sel.Name == "Command" || f.Sel.Name == "CommandContext")
	}
	return false
}

// isCompile reports whether e is, or holds anywhere inside (a slice of arguments, a conversion),
// the string literal "compile" or a constant of known.
func isCompile(e ast.Expr, known map[string]bool) bool {
	found := false
	ast.Inspect(e, func(n ast.Node) bool {
		switch x := n.(type) {
		case *ast.BasicLit:
			if s, err := strconv.Unquote(x.Value); err == nil && x.Kind == token.STRING && s == "compile" {
				found = true
			}
		case *ast.Ident:
			found = found || known[x.Name]
		}
		return !found
	})
	return found
}

// callersOf finds every call of the function name in files (by its bare name: the function is
// unexported, so only its package can call it), by calling function.
func callersOf(files []goFile, name string) []compileSite {
	var sites []compileSite
	for _, f := range files {
		for _, d := range f.ast.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			ast.Inspect(fd.Body, func(n ast.Node) bool {
				if call, ok := n.(*ast.CallExpr); ok {
					if id, ok := call.Fun.(*ast.Ident); ok && id.Name == name {
						sites = append(sites, compileSite{f.path, fd.Name.Name})
					}
				}
				return true
			})
		}
	}
	return sites
}

// onePath checks files against the one compile path: `p compile` runs in bridge's pCompile
// alone, and only compileCached and RunChecker (its in-place compile) call that. It returns what
// breaks the rule, "" when nothing does.
func onePath(files []goFile) string {
	want := compileSite{"bridge/compile.go", "pCompile"}
	runs := compileRuns(files)
	var bad []string
	for _, s := range runs {
		if s != want {
			bad = append(bad, s.file+": "+s.fn+" runs p compile")
		}
	}
	if !slices.Contains(runs, want) {
		bad = append(bad, "bridge/compile.go: pCompile runs no p compile (the test has lost its anchor)")
	}
	for _, s := range callersOf(files, "pCompile") {
		if !strings.HasPrefix(s.file, "bridge/") || s.fn != "compileCached" && s.fn != "RunChecker" {
			bad = append(bad, s.file+": "+s.fn+" calls pCompile (only compileCached and RunChecker may)")
		}
	}
	return strings.Join(bad, "; ")
}

// pCommand is a shell command line that runs the P compiler or checker: the word p, then compile or
// check.
var pCommand = regexp.MustCompile(`(^|[\s;&|(` + "`" + `"'])p\s+(compile|check)\b`)

// scriptRunsP returns the lines of a shell script (comments aside) that run `p compile` or
// `p check`, as "NAME:LINE: text". The scripts drive P through bridge (pconform-pcheck), so that
// its rules, caches and command lines are written once.
func scriptRunsP(name, src string) []string {
	var bad []string
	for i, line := range strings.Split(src, "\n") {
		code := strings.TrimSpace(line)
		if strings.HasPrefix(code, "#") {
			continue
		}
		if c, _, ok := strings.Cut(code, " #"); ok {
			code = c
		}
		if pCommand.MatchString(code) {
			bad = append(bad, fmt.Sprintf("%s:%d: %s", name, i+1, code))
		}
	}
	return bad
}

// TestOneCompilePath: every P compile of the repository goes through bridge's compile path.
// It parses every non-test Go file (testdata and hidden directories aside), so formatting,
// import aliases and constants do not hide a second `p compile`. No script under scripts/ runs
// `p compile` or `p check` itself: scripts/pmodels.sh is a wrapper of bridge's models stage and
// must not grow back into a second one.
func TestOneCompilePath(t *testing.T) {
	scripts, err := filepath.Glob(filepath.Join("..", "scripts", "*.sh"))
	if err != nil || len(scripts) < 5 {
		t.Fatalf("found %d scripts under ../scripts (%v); is the test running in bridge/?", len(scripts), err)
	}
	for _, path := range scripts {
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range scriptRunsP(filepath.ToSlash(filepath.Join("scripts", filepath.Base(path))), string(src)) {
			t.Errorf("a script runs P itself (drive it through bridge, bridge/cmd/pconform-pcheck): %s", b)
		}
	}

	root := ".."
	fset := token.NewFileSet()
	var files []goFile
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "PGenerated") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		f, err := parser.ParseFile(fset, path, src, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		files = append(files, goFile{filepath.ToSlash(rel), f})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 100 {
		t.Fatalf("found %d Go files under %s; is the test running in bridge/?", len(files), root)
	}
	if bad := onePath(files); bad != "" {
		t.Errorf("p compile outside bridge's compile path (compile.go): %s", bad)
	}
}

// TestOnePathCases holds onePath to synthetic sources: the repository's own layout passes, and a
// second compile, however it is spelled, fails.
func TestOnePathCases(t *testing.T) {
	const compileGo = `package bridge
func pCompile(ctx context.Context, cfg Config, dir, what string) error {
	out, code, err := runP(ctx, cfg, "compile")
	_ = out; _ = code
	return err
}
func compileCached() { pCompile(nil, Config{}, "", "") }
func RunChecker() { pCompile(nil, Config{}, "", "") }
`
	cases := []struct {
		name, file, src string
		want            string // a part of the complaint; "" for none
	}{
		{"the one path alone", "", "", ""},
		{"other uses of the word", "bridge/cmd/pconform-corpus/main.go", `package main
import "os/exec"
func main() {
	_ = fs.Bool("compile", true, "run p compile first")
	_ = exec.Command("p", "check", "--list-tests")
	_ = exec.Command("go", "build")
}`, ""},
		{"a second exec.CommandContext", "cmd/pconform/profile.go", `package main
import "os/exec"
func compileUnder() { _ = exec.CommandContext(ctx, f.p, "compile") }`, "cmd/pconform/profile.go: compileUnder runs p compile"},
		{"an aliased os/exec, the call split over lines", "scripts/tool.go", `package main
import run "os/exec"
func build() {
	_ = run.Command(
		"p",
		` + "`compile`" + `,
	)
}`, "scripts/tool.go: build runs p compile"},
		{"a constant", "cmd/pconform/check.go", `package main
import "os/exec"
const verb = "compile"
func warm() { _ = exec.Command("p", verb) }`, "cmd/pconform/check.go: warm runs p compile"},
		{"an argument slice", "cmd/pconform/check.go", `package main
import "os/exec"
func warm() { _ = exec.Command("p", []string{"compile", "--pproj", "x"}...) }`, "warm runs p compile"},
		{"runP elsewhere in bridge", "bridge/stream.go", `package bridge
func CompileStream() { runP(ctx, cfg, "compile") }`, "bridge/stream.go: CompileStream runs p compile"},
		{"package-level", "bridge/warm.go", `package bridge
import "os/exec"
var warm = exec.Command("p", "compile")`, "bridge/warm.go: package level runs p compile"},
		{"pCompile called from elsewhere", "bridge/observed.go", `package bridge
func checkObservedBatch() { pCompile(ctx, cfg, dir, "x") }`, "checkObservedBatch calls pCompile"},
	}
	fset := token.NewFileSet()
	parse := func(path, src string) goFile {
		f, err := parser.ParseFile(fset, path, src, parser.SkipObjectResolution)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		return goFile{path, f}
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			files := []goFile{parse("bridge/compile.go", compileGo)}
			if c.src != "" {
				files = append(files, parse(c.file, c.src))
			}
			got := onePath(files)
			switch {
			case c.want == "" && got != "":
				t.Errorf("complaint %q, want none", got)
			case c.want != "" && !strings.Contains(got, c.want):
				t.Errorf("complaint %q, want one naming %q", got, c.want)
			}
		})
	}
	t.Run("no anchor", func(t *testing.T) {
		got := onePath([]goFile{parse("bridge/compile.go", "package bridge\nfunc pCompile() {}\n")})
		if !strings.Contains(got, "lost its anchor") {
			t.Errorf("complaint %q, want the lost anchor", got)
		}
	})
}

// TestScriptRunsP holds scriptRunsP to synthetic scripts: the wrapper's own lines and words like
// "p" in prose pass; a `p compile` or `p check` however placed on a line fails.
func TestScriptRunsP(t *testing.T) {
	cases := []struct {
		name, src string
		want      int
	}{
		{"the wrapper", `# runs p check through pconform-pcheck models; p compile too
exec "$PCHECK" models "$@"
command -v p >/dev/null 2>&1 || bootstrap p`, 0},
		{"prose and other tools", `echo "a p of compile"; go vet ./...; dotnet tool install p --version 3.1.0
grep -q 'p checker' log`, 0},
		{"p compile", `cd models/p && p compile >log`, 1},
		{"p check in a pipeline", `x=$(cd models/p; p check "$DLL" --list-tests | sed 1d)`, 1},
		{"p check after a condition", `[ -f x ] && p  check -tc tcA -s 10`, 1},
		{"a trailing comment", `true # p check is what this replaced`, 0},
	}
	for _, c := range cases {
		if got := scriptRunsP("s.sh", c.src); len(got) != c.want {
			t.Errorf("%s: %q, want %d lines", c.name, got, c.want)
		}
	}
}
