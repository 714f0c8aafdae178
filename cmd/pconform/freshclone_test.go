package main

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// TestReadmeFromAFreshClone is what a new user does: on a fresh copy of the repository (every
// tracked and unignored file, committed into a new git repository, with no .tools/bin and no
// pconform anywhere) and in a fresh shell (POSIX sh with only the system PATH and HOME), it runs
// the README's first two commands verbatim. Both must exit 0. Then it checks that the wrapper
// announces a build, that --version names the commit, that every subcommand's help examples exit
// as documented, and that the built binary and the wrapper give the same exit codes for a match, a finding, a usage error and a trace that cannot be read.
//
// The copy links .tools/go and .tools/p to this checkout's (installing them again would take
// minutes and the network) and ../shared to this checkout's neighbour; the Go build cache in HOME
// keeps the build to seconds. Skipped with -short.
func TestReadmeFromAFreshClone(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the CLI in a fresh copy of the repository")
	}
	src, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range []string{"git", "sh"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("no %s on PATH", tool)
		}
	}
	goroot := filepath.Join(src, ".tools", "go")
	if _, err := os.Stat(filepath.Join(goroot, "bin", "go")); err != nil {
		t.Skipf("no Go in .tools/go (run scripts/bootstrap.sh): %v", err)
	}
	commands := readmeCommands(t, filepath.Join(src, "README.md"), 2)

	parent := t.TempDir()
	clone := filepath.Join(parent, "pconform")
	copyCheckout(t, src, clone)
	mustLink(t, goroot, filepath.Join(clone, ".tools", "go"))
	if p := filepath.Join(src, ".tools", "p"); exists(p) {
		mustLink(t, p, filepath.Join(clone, ".tools", "p"))
	}
	if shared := filepath.Join(src, "..", "shared"); exists(shared) {
		mustLink(t, shared, filepath.Join(parent, "shared"))
	}
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.invalid", "-c", "commit.gpgsign=false"}, args...)...)
		cmd.Dir = clone
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git("init", "-q")
	git("add", "-A")
	git("commit", "-q", "-m", "fresh clone")
	head := git("rev-parse", "HEAD")

	shell := func(command string) (int, string, string) {
		t.Helper()
		cmd := exec.Command("sh", "-c", command)
		cmd.Dir = clone
		cmd.Env = []string{"HOME=" + os.Getenv("HOME"), "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C.UTF-8", "TERM=dumb"}
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		var exit *exec.ExitError
		switch {
		case err == nil:
			return 0, out.String(), errOut.String()
		case errors.As(err, &exit):
			return exit.ExitCode(), out.String(), errOut.String()
		}
		t.Fatalf("sh -c %q: %v", command, err)
		return 0, "", ""
	}
	var printed string
	for _, c := range commands {
		code, out, errOut := shell(c)
		t.Logf("$ %s\n%s%s", c, out, errOut)
		if code != 0 {
			t.Fatalf("the README's command %q exited %d in a fresh shell on a fresh clone\nstdout:\n%s\nstderr:\n%s", c, code, out, errOut)
		}
		printed = out
	}

	// The go test line the replay printed passes for that one corpus trace.
	rerun := ""
	for _, l := range strings.Split(printed, "\n") {
		if cmd, ok := strings.CutPrefix(l, "rerun: go test "); ok {
			rerun = "go test " + cmd
		}
	}
	if rerun == "" {
		t.Errorf("the README's replay printed no go test rerun line:\n%s", printed)
	} else if code, out, errOut := shell(". scripts/env.sh && " + rerun); code != 0 {
		t.Errorf("the printed rerun line %q failed (exit %d):\n%s%s", rerun, code, out, errOut)
	}

	// The wrapper builds on first use, and says so.
	if err := os.Remove(filepath.Join(clone, ".tools", "bin", "pconform")); err != nil {
		t.Fatalf("bootstrap did not install .tools/bin/pconform: %v", err)
	}
	code, out, errOut := shell("scripts/pconform --version")
	if code != 0 || !strings.Contains(errOut, "building pconform") {
		t.Errorf("first use of the wrapper: exit %d, stderr without a building line:\n%s", code, errOut)
	}
	if !strings.Contains(out, "revision "+head) {
		t.Errorf("--version does not name the commit %s:\n%s", head, out)
	}
	if code, _, errOut := shell(". scripts/env.sh && pconform --version"); code != 0 {
		t.Errorf("pconform is not on PATH after . scripts/env.sh in sh: exit %d\n%s", code, errOut)
	}

	// Every subcommand's help examples run as documented, through the pconform env.sh puts on PATH.
	runExamples(t, shell, filepath.Join(parent, "examples"))

	// The same exit codes built and through the wrapper.
	cases := []struct {
		name, args string
		code       int
	}{
		{"as claimed", "replay traces/corpus/tcOutboxSplitWriteCounterexample-s1-1-bad.json --target split-write", exitPass},
		{"finding", "replay cmd/pconform/" + wrongTrace + " --evidence " + filepath.Join(parent, "evidence"), exitFinding},
		{"usage", "replay", exitUsage},
		{"could not run", "replay cmd/pconform/" + garbageTrace, exitCannotRun},
		{"a directory is no trace for explain", "explain traces/corpus", exitCannotRun},
	}
	for _, tc := range cases {
		for _, bin := range []string{"scripts/pconform", ".tools/bin/pconform"} {
			if code, out, errOut := shell(bin + " " + tc.args); code != tc.code {
				t.Errorf("%s: %s %s exited %d, want %d\n%s%s", tc.name, bin, tc.args, code, tc.code, out, errOut)
			}
		}
	}
}

// example is one line of a subcommand's Examples block and the exit code it documents.
type example struct {
	command, line string
	exit          int
	// skip, when set, says why the tests do not run this example (it runs for minutes, or
	// stands for the reader's own files).
	skip string
}

// exampleOrder runs the commands whose examples write files before those that read them.
var exampleOrder = []string{"observe", "check", "convert"}

// helpExamples collects every subcommand's Examples block, one line per command line. A line may
// end in "# exit N: why" for a documented non-zero exit (without it the example exits 0), or in
// "# not run by the tests: why".
func helpExamples(t *testing.T) []example {
	t.Helper()
	cmds := newRoot(io.Discard, io.Discard).Commands()
	rank := func(name string) int {
		if i := slices.Index(exampleOrder, name); i >= 0 {
			return i
		}
		return len(exampleOrder)
	}
	slices.SortStableFunc(cmds, func(a, b *cobra.Command) int { return rank(a.Name()) - rank(b.Name()) })
	var out []example
	for _, c := range cmds {
		for _, l := range strings.Split(c.Example, "\n") {
			l = strings.TrimSpace(l)
			if l == "" {
				continue
			}
			e := example{command: c.Name(), line: l}
			if cmd, comment, ok := strings.Cut(l, "#"); ok {
				e.line = strings.TrimSpace(cmd)
				comment = strings.TrimSpace(comment)
				if why, ok := strings.CutPrefix(comment, "not run by the tests: "); ok {
					e.skip = why
				}
				if n, ok := strings.CutPrefix(comment, "exit "); ok {
					code, err := strconv.Atoi(strings.TrimRight(strings.Fields(n)[0], ":"))
					if err != nil {
						t.Fatalf("%s example %q: the comment does not say which exit code", c.Name(), l)
					}
					e.exit = code
				}
			}
			if !strings.HasPrefix(e.line, "pconform ") {
				t.Errorf("%s example %q does not start with pconform", c.Name(), l)
			}
			out = append(out, e)
		}
	}
	return out
}

// runExamples runs every help example in the clone, its /tmp/ paths moved under scratch, and
// checks each documented exit code. An example that needs a PostgreSQL server runs only when
// PCONFORM_PG_DSN names one.
func runExamples(t *testing.T, shell func(string) (int, string, string), scratch string) {
	t.Helper()
	if err := os.MkdirAll(scratch, 0o755); err != nil {
		t.Fatal(err)
	}
	examples := helpExamples(t)
	if len(examples) < 10 {
		t.Fatalf("only %d help examples", len(examples))
	}
	for _, e := range examples {
		if e.skip != "" {
			t.Logf("not run (%s): %s", e.skip, e.line)
			continue
		}
		line := strings.ReplaceAll(e.line, "/tmp/", scratch+"/")
		if strings.Contains(line, "--backend postgres") {
			dsn := os.Getenv("PCONFORM_PG_DSN")
			if dsn == "" {
				t.Logf("skipped (no PCONFORM_PG_DSN): %s", e.line)
				continue
			}
			line = regexp.MustCompile(`--dsn \S+`).ReplaceAllString(line, "--dsn "+dsn)
		}
		// A bound, so an example that waits for input fails instead of hanging the test.
		code, out, errOut := shell(". scripts/env.sh && timeout 300 " + line)
		if code != e.exit {
			t.Errorf("%s --help example %q exited %d, its help says %d\nstdout:\n%s\nstderr:\n%s", e.command, e.line, code, e.exit, out, errOut)
		}
	}
}

// readmeCommands returns the first n command lines of the README's ```sh blocks.
func readmeCommands(t *testing.T, path string, n int) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var cmds []string
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() && len(cmds) < n {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "```sh":
			in = true
		case strings.HasPrefix(line, "```"):
			in = false
		case in && line != "" && !strings.HasPrefix(line, "#"):
			cmds = append(cmds, line)
		}
	}
	if len(cmds) < n {
		t.Fatalf("%s has %d commands in ```sh blocks, want at least %d", path, len(cmds), n)
	}
	return cmds
}

// copyCheckout copies every tracked and unignored file of the work tree at src into dst.
func copyCheckout(t *testing.T, src, dst string) {
	t.Helper()
	cmd := exec.Command("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	cmd.Dir = src
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	for _, rel := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		from := filepath.Join(src, rel)
		st, err := os.Lstat(from)
		if err != nil || !st.Mode().IsRegular() {
			continue // deleted in the work tree, or a link
		}
		data, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		to := filepath.Join(dst, rel)
		if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(to, data, st.Mode().Perm()); err != nil {
			t.Fatal(err)
		}
	}
}

func mustLink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
