package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var (
	// A heading that carries a date is a section of a log: "## 2026-12-02 run".
	datedHeading = regexp.MustCompile(`^#{1,6} .*\b\d{4}-\d{2}-\d{2}\b`)
	// A bare commit hash ties a page to one moment of the history. A hash in backquotes is a
	// named reference a user needs (a format's boundary, the commit rule's base) and is allowed.
	hexWord  = regexp.MustCompile(`\b[0-9a-f]{7,40}\b`)
	hasDigit = regexp.MustCompile(`[0-9]`)
	hasAlpha = regexp.MustCompile(`[a-f]`)
	// "issue #43" is the history of a change, not how to use the result.
	issueRef  = regexp.MustCompile(`(?i)\bissue #\d+`)
	codeSpan  = regexp.MustCompile("`[^`]*`")
	mdLink    = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	schemeURL = regexp.MustCompile(`^[a-z][a-z0-9+.-]*:`)
)

// userPages lists README.md and docs/*.md; docs/notes/ holds the dated history and is not read.
func userPages(t *testing.T) []string {
	t.Helper()
	pages, err := filepath.Glob("*.md")
	if err != nil {
		t.Fatal(err)
	}
	if len(pages) == 0 {
		t.Fatal("no docs/*.md found: run the test from the docs directory")
	}
	return append(pages, filepath.Join("..", "README.md"))
}

// proseLines yields each line of a page outside fenced code blocks with its 1-based number.
func proseLines(t *testing.T, page string, fn func(n int, line string)) {
	t.Helper()
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	proseLinesOf(string(b), fn)
}

// proseLinesOf is proseLines on a text. Commands in code blocks may name anything (a commit to
// check out, a dated file); only the prose is held to the rule.
func proseLinesOf(text string, fn func(n int, line string)) {
	fenced := false
	for i, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if !fenced {
			fn(i+1, line)
		}
	}
}

// runLogFindings names each reason any prose line of text reads as a run log.
func runLogFindings(text string) []string {
	var out []string
	proseLinesOf(text, func(_ int, line string) {
		out = append(out, runLogReasons(line)...)
	})
	return out
}

// runLogReasons says why one prose line reads as a run log; none if it does not.
func runLogReasons(line string) []string {
	var why []string
	if datedHeading.MatchString(line) {
		why = append(why, "a dated heading")
	}
	bare := codeSpan.ReplaceAllString(line, "")
	for _, w := range hexWord.FindAllString(bare, -1) {
		if hasDigit.MatchString(w) && hasAlpha.MatchString(w) {
			why = append(why, "a bare commit hash "+w)
		}
	}
	if m := issueRef.FindString(bare); m != "" {
		why = append(why, "an issue reference "+m)
	}
	return why
}

// TestUserPagesHoldNoRunLogs fails on a dated heading, a bare commit hash or an issue number in
// the prose of a user page. Move such a part to docs/notes/YYYY-MM-DD-topic.md and link it.
func TestUserPagesHoldNoRunLogs(t *testing.T) {
	for _, page := range userPages(t) {
		proseLines(t, page, func(n int, line string) {
			for _, why := range runLogReasons(line) {
				t.Errorf("%s:%d: %s; move it to a dated note under docs/notes/", page, n, why)
			}
		})
	}
}

// TestRunLogReasons holds the check to what it must catch and what it must let through.
func TestRunLogReasons(t *testing.T) {
	cases := []struct {
		line string
		want int
	}{
		{"## 2026-12-02: the second round", 1},
		{"### Round 3 (2026-12-04)", 1},
		{"Measured at 1d919c5 on the idle machine.", 1},
		{"As issue #43 asks, the gate is split.", 1},
		{"Every commit after `4a3e5a0` is checked.", 0},
		{"Measured on 2026-12-05 on the shared machine:", 0},
		{"## Speed and memory", 0},
		{"10000000 events, 1,000 messages, deadbeef", 0},
	}
	for _, c := range cases {
		if got := runLogReasons(c.line); len(got) != c.want {
			t.Errorf("%q: got %v, want %d reasons", c.line, got, c.want)
		}
	}
	text := "intro\n```sh\ngit checkout 1d919c5\n```\n## 2026-12-01 run\n"
	if got := runLogFindings(text); len(got) != 1 {
		t.Errorf("fenced command and dated heading: got %v, want the heading only", got)
	}
}

// TestUserPageLinksResolve fails on a relative link of a user page whose file does not exist,
// such as a note that was renamed or never written.
func TestUserPageLinksResolve(t *testing.T) {
	for _, page := range userPages(t) {
		proseLines(t, page, func(n int, line string) {
			for _, m := range mdLink.FindAllStringSubmatch(line, -1) {
				target := m[1]
				if schemeURL.MatchString(target) || strings.HasPrefix(target, "#") {
					continue
				}
				target, _, _ = strings.Cut(target, "#")
				path := filepath.Join(filepath.Dir(page), filepath.FromSlash(target))
				if _, err := os.Stat(path); err != nil {
					t.Errorf("%s:%d: link %q leads to no file (%s)", page, n, m[1], path)
				}
			}
		})
	}
}
