package conformtest_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/pconform/pconform/adapter"
	"github.com/pconform/pconform/conformtest"
	"github.com/pconform/pconform/examples/memstore"
	"github.com/pconform/pconform/profile"
	"github.com/pconform/pconform/replay"
	"github.com/pconform/pconform/traces"
)

// wrapped is a target that keeps the example store's declaration.
type wrapped struct{ replay.Target }

func (w wrapped) Capabilities() replay.Capabilities { return replay.CapabilitiesOf(w.Target) }

// Owners forwards whose consumer and publisher run the steps: the kit's, through WithProtocol.
func (w wrapped) Owners() adapter.Owners { return adapter.OwnersOf(w.Target) }

// forgetful loses the whole store when it is reopened: only the reopen subtests see it.
type forgetful struct{ wrapped }

func (f *forgetful) Reopen(context.Context) error {
	f.wrapped = wrapped{memstore.NewTarget()}
	return nil
}

// staleExtend extends a lease whatever token it is given: it runs extend under the token the row
// carries, as broken variant stale-extend does.
type staleExtend struct{ wrapped }

func (s staleExtend) Do(ctx context.Context, op traces.Op, at int64, a replay.Args) (replay.Observation, error) {
	if op == traces.OpExtend {
		snap, err := s.Snapshot(ctx)
		if err != nil {
			return replay.Observation{}, err
		}
		for _, m := range snap.Messages {
			if m.ID == a.ID && m.Token != "" {
				a.Token = m.Token
			}
		}
	}
	return s.Target.Do(ctx, op, at, a)
}

// blindPeek never finds a message: no committed trace the child run keeps peeks, so only the
// hunt can find it.
type blindPeek struct{ wrapped }

func (b blindPeek) Do(ctx context.Context, op traces.Op, at int64, a replay.Args) (replay.Observation, error) {
	if op == traces.OpPeek {
		return replay.Observation{}, nil
	}
	return b.Target.Do(ctx, op, at, a)
}

// wrongTargets are the deliberately wrong runs of the kit TestSubtestsFail makes, by name.
var wrongTargets = map[string]struct {
	profile profile.Profile
	only    []string // the committed traces the run keeps
	hunts   int
	target  func() replay.Target
}{
	// The example store judged by the default profile, not its own.
	"wrong-profile": {only: []string{"leased-stale-ack", "tcLeaselessWorker-s1-1-ok"}, hunts: -1,
		target: memstore.NewTarget},
	"forgets-on-reopen": {profile: memstore.Profile(), only: []string{"tcRawStoreOps-s1-1-ok"}, hunts: -1,
		target: func() replay.Target { return &forgetful{wrapped{memstore.NewTarget()}} }},
	"stale-extend": {profile: memstore.Profile(), only: []string{"hunt-stale-extend-seed1"}, hunts: -1,
		target: func() replay.Target { return staleExtend{wrapped{memstore.NewTarget()}} }},
	"blind-peek": {profile: memstore.Profile(), hunts: 20,
		target: func() replay.Target { return blindPeek{wrapped{memstore.NewTarget()}} }},
}

// TestSubtestsFailChild is the child run of TestSubtestsFail: the kit on the wrong target its
// environment names.
func TestSubtestsFailChild(t *testing.T) {
	name := os.Getenv("CONFORMTEST_WRONG")
	if name == "" {
		t.Skip("the child run of TestSubtestsFail")
	}
	w := wrongTargets[name]
	conformtest.Check(t, conformtest.Config{Profile: w.profile, Hunts: w.hunts,
		NewTarget: func(*testing.T) replay.Target { return w.target() },
		Only: func(tr string) bool {
			for _, o := range w.only {
				if tr == o {
					return true
				}
			}
			return false
		}})
}

// TestSubtestsFail requires each subtest family of the kit to fail when it should, with the words
// a user needs, and the others to pass: a wrong profile fails the corpus and hand-written traces
// at the named rule; a store that forgets on reopen fails only reopen; a store that does what a
// broken variant does fails with "reproduces broken variant"; a bug no committed trace shows is
// found by the hunt and shrunk.
func TestSubtestsFail(t *testing.T) {
	if os.Getenv("CONFORMTEST_WRONG") != "" {
		t.Skip("the child run")
	}
	const child = "TestSubtestsFailChild/"
	for _, c := range []struct {
		name string
		// fail maps each subtest that must fail to words its failure must say.
		fail map[string]string
		pass []string
		// not are words no failure may say.
		not string
	}{
		{"wrong-profile", map[string]string{
			"hand/leased-stale-ack":            `rule lease_at_until: the target follows lease_at_until = "live" where the profile says "expired"`,
			"corpus/tcLeaselessWorker-s1-1-ok": `rule ack: the target follows ack = "deletes" where the profile says "keeps"`,
			"reopen/tcLeaselessWorker-s1-1-ok": `rule ack`,
			"reopen/leased-stale-ack":          `rule lease_at_until`,
		}, []string{"capabilities"}, ""},
		{"forgets-on-reopen", map[string]string{
			"reopen/tcRawStoreOps-s1-1-ok": "diverged",
		}, []string{"capabilities", "corpus/tcRawStoreOps-s1-1-ok"},
			// No profile rule explains a lost store: the rule search replays with the reopens too.
			"rule "},
		{"stale-extend", map[string]string{
			"variant/stale-extend/hunt-stale-extend-seed1": "reproduces broken variant stale-extend: the target does exactly what stale-extend does in hunt-stale-extend-seed1, which violates: fencing",
		}, []string{"capabilities"}, ""},
		{"blind-peek", map[string]string{
			"hunt":        "1 distinct divergences",
			"hunt/seed-3": "hunt (seed 3: Config{Seed: 3, Hunts: 1} reproduces it on this commit)",
		}, []string{"capabilities"}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestSubtestsFailChild$", "-test.count=1", "-test.v")
			cmd.Env = append(os.Environ(), "CONFORMTEST_WRONG="+c.name)
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("the kit passed a wrong target:\n%s", out)
			}
			status, text := subtests(string(out))
			for name, words := range c.fail {
				if status[child+name] != "FAIL" {
					t.Errorf("subtest %s: %q, want FAIL\n%s", name, status[child+name], out)
				} else if !strings.Contains(text[child+name], words) {
					t.Errorf("subtest %s fails without saying %q:\n%s", name, words, text[child+name])
				}
				if c.not != "" && strings.Contains(text[child+name], c.not) {
					t.Errorf("subtest %s's failure says %q:\n%s", name, c.not, text[child+name])
				}
			}
			for _, name := range c.pass {
				if status[child+name] != "PASS" {
					t.Errorf("subtest %s: %q, want PASS\n%s", name, status[child+name], out)
				}
			}
			for name, s := range status {
				if _, want := c.fail[strings.TrimPrefix(name, child)]; s == "FAIL" && !want && strings.HasPrefix(name, child) {
					t.Errorf("subtest %s fails too:\n%s", name, text[name])
				}
			}
			if c.name == "wrong-profile" {
				// Every report says whose code ran: here the kit's reference consumer and publisher.
				const whose = "consumer: the kit's reference (adapter.WithProtocol); publisher: the kit's reference (adapter.WithProtocol)"
				if !strings.Contains(text[child+"capabilities"], "consumer: the kit's reference (adapter.WithProtocol)") {
					t.Errorf("the capabilities subtest does not say whose consumer ran:\n%s", text[child+"capabilities"])
				}
				for name := range c.fail {
					if !strings.Contains(text[child+name], whose) {
						t.Errorf("subtest %s fails without saying %q:\n%s", name, whose, text[child+name])
					}
				}
			}
			if c.name == "blind-peek" {
				m := regexp.MustCompile(`shrunk from (\d+) to (\d+) steps`).FindStringSubmatch(text[child+"hunt/seed-3"])
				if m == nil {
					t.Fatalf("the hunt's failure does not say how far it shrank:\n%s", text[child+"hunt/seed-3"])
				}
				if n, _ := strconv.Atoi(m[2]); n > 3 {
					t.Errorf("the hunt shrank a blind peek to %d steps, want at most 3 (an enqueue and a peek suffice)", n)
				}
			}
		})
	}
}

// subtests reads a -test.v output: each test's status (PASS, FAIL, SKIP) and the lines it logged.
func subtests(out string) (map[string]string, map[string]string) {
	status, text := map[string]string{}, map[string]*strings.Builder{}
	marker := regexp.MustCompile(`^\s*(=== RUN|=== NAME|=== CONT|--- PASS:|--- FAIL:|--- SKIP:)\s+(\S+)`)
	cur := ""
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		line := sc.Text()
		if m := marker.FindStringSubmatch(line); m != nil {
			cur = m[2]
			if s, ok := strings.CutPrefix(m[1], "--- "); ok {
				status[cur] = strings.TrimSuffix(s, ":")
			}
			continue
		}
		if text[cur] == nil {
			text[cur] = &strings.Builder{}
		}
		fmt.Fprintln(text[cur], line)
	}
	flat := map[string]string{}
	for k, b := range text {
		flat[k] = b.String()
	}
	return status, flat
}
