package bridge

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// The files of a directory of recorded checker runs ([Config.FromRuns]); the package
// documentation describes the layout.
const (
	// RecordedListFile holds the output of `p check --list-tests`.
	RecordedListFile = "list.log"
	// RecordedVersionFile holds the output of `p --version`.
	RecordedVersionFile = "version.log"
	// RecordedRunFile, in each test case's directory, describes its run in "key:value" lines:
	// test_case, seed, schedules (the -s budget), verbose (1 when run with -v) and exit (the
	// checker's exit code).
	RecordedRunFile = "run.txt"
)

// recorded is one test case's recorded checker run.
type recorded struct {
	out  []byte // the checker's output, <test case>.log
	exit int
}

// readRecorded reads the run of tc recorded in dir and checks it can stand in for a run with the
// given seed and budget: the same test case and seed, -v, and for a green test case at least the
// budget (a counterexample's budget is checked against where it found its bug, by the caller).
// Errors wrap [ErrChecker].
func readRecorded(dir, tc string, seed int64, budget int, counterexample bool) (recorded, error) {
	fail := func(format string, a ...any) error {
		return fmt.Errorf("bridge: %w: recorded run %s: %s", ErrChecker, dir, fmt.Sprintf(format, a...))
	}
	data, err := os.ReadFile(filepath.Join(dir, RecordedRunFile))
	if err != nil {
		return recorded{}, fail("%v (record the runs with scripts/pmodels.sh --logs)", err)
	}
	fields := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		if k, v, ok := strings.Cut(strings.TrimSpace(sc.Text()), ":"); ok {
			fields[k] = strings.TrimSpace(v)
		}
	}
	number := func(key string) (int64, error) {
		v, ok := fields[key]
		if !ok {
			return 0, fail("%s has no %q line", RecordedRunFile, key)
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, fail("%s: %s: want a number, got %q", RecordedRunFile, key, v)
		}
		return n, nil
	}
	if got := fields["test_case"]; got != tc {
		return recorded{}, fail("%s records test case %q, want %q", RecordedRunFile, got, tc)
	}
	var nums [4]int64
	for i, key := range []string{"seed", "schedules", "verbose", "exit"} {
		if nums[i], err = number(key); err != nil {
			return recorded{}, err
		}
	}
	gotSeed, gotBudget, verbose, exit := nums[0], nums[1], nums[2], nums[3]
	switch {
	case gotSeed != seed:
		return recorded{}, fail("run with --seed %d, want %d", gotSeed, seed)
	case verbose != 1:
		return recorded{}, fail("run without -v, so it has no schedule logs")
	case !counterexample && gotBudget < int64(budget):
		return recorded{}, fail("run with -s %d, fewer than the %d schedules wanted", gotBudget, budget)
	case counterexample && gotBudget < int64(budget) && exit == 0:
		return recorded{}, fail("run with -s %d found no bug, and the budget is %d", gotBudget, budget)
	}
	out, err := os.ReadFile(filepath.Join(dir, tc+".log"))
	if err != nil {
		return recorded{}, fail("%v", err)
	}
	return recorded{out: out, exit: int(exit)}, nil
}

// readRecordedFile reads one of the files at the top of a recorded-runs directory.
func readRecordedFile(dir, name string) ([]byte, error) {
	data, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		return nil, fmt.Errorf("bridge: %w: recorded runs: %w (record the runs with scripts/pmodels.sh --logs)", ErrChecker, err)
	}
	return data, nil
}

// recordedAfterSources refuses recorded runs older than a P source of projectDir: they were made
// from other models. Errors wrap [ErrChecker].
func recordedAfterSources(runsDir, projectDir string) error {
	list, err := os.Stat(filepath.Join(runsDir, RecordedListFile))
	if err != nil {
		return fmt.Errorf("bridge: %w: recorded runs: %w (record the runs with scripts/pmodels.sh --logs)", ErrChecker, err)
	}
	files, err := modelSources(projectDir)
	if err != nil {
		return fmt.Errorf("bridge: %w", err)
	}
	var newest time.Time
	var newestPath string
	for _, rel := range files {
		path := filepath.Join(projectDir, filepath.FromSlash(rel))
		info, err := os.Stat(path)
		if err != nil {
			return fmt.Errorf("bridge: %w", err)
		}
		if info.ModTime().After(newest) {
			newest, newestPath = info.ModTime(), path
		}
	}
	if newest.After(list.ModTime()) {
		return fmt.Errorf("bridge: %w: the recorded runs in %s are older than %s: rerun scripts/pmodels.sh --logs", ErrChecker, runsDir, newestPath)
	}
	return nil
}
