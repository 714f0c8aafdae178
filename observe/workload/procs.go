package workload

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/pconform/pconform/actordelivery"
)

// Child is what one child process of RunProcesses runs: one role of the workload on the shared
// clock TickClock(start, Tick), recording its events to the file Events (reads and writes; its
// write events also go to the database's commit log). The start and the end of the run are not
// arguments: the child reads them from its standard input once it has started (see RunChild), so
// that the time the children take to start is taken neither from the budget nor from the clock.
type Child struct {
	Backend     actordelivery.Backend
	Target      string
	TablePrefix string
	Variant     string
	Seed        int64
	Role        string
	Incarnation int
	Tick        time.Duration
	Leased      int
	Events      string
	Batch       int
}

// Args writes c as the command-line arguments ParseChild reads back.
func (c Child) Args() []string {
	return []string{"-backend", string(c.Backend), "-target", c.Target, "-prefix", c.TablePrefix, "-variant", c.Variant,
		"-seed", strconv.FormatInt(c.Seed, 10), "-role", c.Role, "-incarnation", strconv.Itoa(c.Incarnation),
		"-tick", c.Tick.String(), "-leased", strconv.Itoa(c.Leased), "-events", c.Events, "-batch", strconv.Itoa(c.Batch)}
}

// ParseChild reads the arguments Child.Args wrote.
func ParseChild(args []string) (Child, error) {
	var c Child
	var backend string
	fs := flag.NewFlagSet("observe child", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&backend, "backend", "", "")
	fs.StringVar(&c.Target, "target", "", "")
	fs.StringVar(&c.TablePrefix, "prefix", "", "")
	fs.StringVar(&c.Variant, "variant", "", "")
	fs.Int64Var(&c.Seed, "seed", 0, "")
	fs.StringVar(&c.Role, "role", "", "")
	fs.IntVar(&c.Incarnation, "incarnation", 0, "")
	fs.DurationVar(&c.Tick, "tick", 0, "")
	fs.IntVar(&c.Leased, "leased", 0, "")
	fs.StringVar(&c.Events, "events", "", "")
	fs.IntVar(&c.Batch, "batch", 0, "")
	if err := fs.Parse(args); err != nil {
		return Child{}, fmt.Errorf("workload: child arguments: %w", err)
	}
	if fs.NArg() > 0 || c.Target == "" || c.Role == "" || c.Events == "" || c.Tick <= 0 {
		return Child{}, fmt.Errorf("workload: child arguments %q: want -target, -role, -events and -tick, nothing else", args)
	}
	c.Backend = actordelivery.Backend(backend)
	return c, nil
}

// RunChild runs c: the body of a child process. It writes "ready" to ready, reads the start and
// the end of the run (Unix nanoseconds, one line) from control, and runs its role until the end.
func RunChild(ctx context.Context, c Child, ready io.Writer, control io.Reader) error {
	if _, err := fmt.Fprintln(ready, "ready"); err != nil {
		return fmt.Errorf("workload: %w", err)
	}
	var startNs, untilNs int64
	if _, err := fmt.Fscanln(control, &startNs, &untilNs); err != nil {
		return fmt.Errorf("workload: reading the end of the run: %w", err)
	}
	f, err := os.OpenFile(c.Events, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("workload: %w", err)
	}
	budget := time.Until(time.Unix(0, untilNs))
	if budget <= 0 {
		return f.Close()
	}
	_, err = Run(ctx, Config{Backend: c.Backend, Target: c.Target, TablePrefix: c.TablePrefix, Seed: c.Seed, Budget: budget,
		Tick: c.Tick, LeasedWorkers: c.Leased, Events: f, Variant: c.Variant, Roles: []string{c.Role},
		Clock: TickClock(time.Unix(0, startNs), c.Tick), Incarnation: c.Incarnation, CommitLog: true, Batch: c.Batch})
	return errors.Join(err, f.Close())
}

// Processes configures RunProcesses.
type Processes struct {
	// Config is the workload: Backend, Target, TablePrefix, Seed, Budget, Tick, LeasedWorkers,
	// Variant, Batch and Events (the merged history) as for Run; Roles, Clock, Incarnation and CommitLog
	// are set for each child.
	Config
	// Command returns the command that runs a child with the given arguments (Child.Args):
	// a program that calls ParseChild and RunChild. Required.
	Command func(args []string) *exec.Cmd
	// Dir holds the children's event files; required.
	Dir string
	// KillEvery is the mean real time between two kills (exponentially distributed); zero means
	// Budget/4.
	KillEvery time.Duration
}

// ProcStats count what RunProcesses did besides the workload.
type ProcStats struct {
	Children, Kills int
	// Writes and Reads count the merged history's events; OnlyInLog the write events no child's
	// file holds (a child killed between a commit and its recorder), TruncatedLines the files
	// whose last line a kill cut off.
	Writes, Reads, OnlyInLog, TruncatedLines int
}

// RunProcesses runs the workload with each role in a child process of its own, SIGKILLs a
// child at random every KillEvery on average and starts its role again (a new incarnation, with
// new worker numbers), and when the budget is spent waits for the children to finish their last
// step. It then writes the merged history to cfg.Events: every committed write event from the
// database's commit log (written in the transaction that committed it, so a child killed after a
// commit loses none), and the read events from the children's files (a killed child's last read
// may be lost: it changed nothing, and its process made no step after it). A write event a child
// file holds must equal the commit log's, and every commit log event must be one some child
// recorded or was killed before recording.
func RunProcesses(ctx context.Context, cfg Processes) (ProcStats, error) {
	var ps ProcStats
	if cfg.Command == nil || cfg.Dir == "" || cfg.Events == nil || cfg.Target == "" {
		return ps, errors.New("workload: RunProcesses needs Command, Dir, Events and Target")
	}
	if cfg.Backend == "" {
		cfg.Backend = actordelivery.BackendSQLite
	}
	if cfg.Budget == 0 {
		cfg.Budget = 2 * time.Second
	}
	if cfg.Tick == 0 {
		cfg.Tick = 20 * time.Millisecond
	}
	if cfg.KillEvery == 0 {
		cfg.KillEvery = cfg.Budget / 4
	}
	// The parent creates the schema, the commit counter and the commit log before any child
	// opens the database, and reads the log at the end.
	st, err := actordelivery.OpenBackend(cfg.Backend, cfg.Target, actordelivery.Options{TablePrefix: cfg.TablePrefix, CommitLog: true})
	if err != nil {
		return ps, fmt.Errorf("workload: %w", err)
	}
	defer st.Close()

	var start, until time.Time // set once the first children are ready
	type proc struct {
		cmd    *exec.Cmd
		stdin  io.WriteCloser
		ready  *bufio.Reader
		done   chan error
		stderr *bytes.Buffer
		killed bool // by RunProcesses
		reaped bool // its end was seen
	}
	roles := Roles(cfg.LeasedWorkers)
	procs := make([]*proc, len(roles))
	var files []string
	incarnation := make([]int, len(roles))
	launch := func(i int) error {
		c := Child{Backend: cfg.Backend, Target: cfg.Target, TablePrefix: cfg.TablePrefix, Variant: cfg.Variant, Seed: cfg.Seed,
			Role: roles[i], Incarnation: incarnation[i], Tick: cfg.Tick, Leased: cfg.LeasedWorkers, Batch: cfg.Batch,
			Events: filepath.Join(cfg.Dir, fmt.Sprintf("%s-%d.jsonl", roles[i], incarnation[i]))}
		cmd := cfg.Command(c.Args())
		p := &proc{cmd: cmd, done: make(chan error, 1), stderr: &bytes.Buffer{}}
		cmd.Stderr = p.stderr
		if p.stdin, err = cmd.StdinPipe(); err != nil {
			return err
		}
		out, err := cmd.StdoutPipe()
		if err != nil {
			return err
		}
		p.ready = bufio.NewReader(out)
		if err := cmd.Start(); err != nil {
			return fmt.Errorf("workload: start %s: %w", roles[i], err)
		}
		files = append(files, c.Events)
		ps.Children++
		procs[i] = p
		return nil
	}
	// begin waits for the child's "ready", hands it the end of the run, and starts waiting for
	// it to end.
	begin := func(i int) error {
		p := procs[i]
		line, err := p.ready.ReadString('\n')
		if err == nil && line != "ready\n" {
			err = fmt.Errorf("said %q", line)
		}
		if err == nil {
			_, err = fmt.Fprintln(p.stdin, start.UnixNano(), until.UnixNano())
		}
		go func() {
			_, _ = io.Copy(io.Discard, p.ready)
			p.done <- p.cmd.Wait()
		}()
		if err != nil {
			return fmt.Errorf("workload: child %s did not start: %w: %s", roles[i], err, tailOf(p.stderr.String()))
		}
		return nil
	}
	var errs []error
	stopAll := func() {
		for _, p := range procs {
			if p != nil && p.cmd.ProcessState == nil {
				_ = p.cmd.Process.Kill()
			}
		}
	}
	for i := range roles {
		if err := launch(i); err != nil {
			stopAll()
			return ps, err
		}
	}
	// The budget starts when every child has started: a process start can take long on a
	// loaded machine.
	var readyErr error
	for i := range roles {
		line, err := procs[i].ready.ReadString('\n')
		if err == nil && line != "ready\n" {
			err = fmt.Errorf("said %q", line)
		}
		if err != nil {
			readyErr = errors.Join(readyErr, fmt.Errorf("workload: child %s did not start: %w: %s", roles[i], err, tailOf(procs[i].stderr.String())))
		}
	}
	start = time.Now()
	until = start.Add(cfg.Budget)
	for i := range roles {
		if _, err := fmt.Fprintln(procs[i].stdin, start.UnixNano(), until.UnixNano()); err != nil {
			readyErr = errors.Join(readyErr, err)
		}
		p := procs[i]
		go func() {
			_, _ = io.Copy(io.Discard, p.ready)
			p.done <- p.cmd.Wait()
		}()
	}
	if readyErr != nil {
		stopAll()
		return ps, readyErr
	}
	r := rand.New(rand.NewPCG(uint64(cfg.Seed), 900))
	// reap collects a child that ended; one that ended on its own before the budget ran out, or
	// with an error, fails the run.
	reap := func(i int, err error) {
		p := procs[i]
		p.reaped = true
		if !p.killed && err != nil {
			errs = append(errs, fmt.Errorf("workload: child %s (incarnation %d): %w: %s", roles[i], incarnation[i], err, tailOf(p.stderr.String())))
		}
	}
	timer := time.NewTimer(0)
	<-timer.C
	for time.Now().Before(until) && len(errs) == 0 {
		wait := time.Duration(r.ExpFloat64() * float64(cfg.KillEvery))
		if left := time.Until(until); wait > left {
			wait = left
		}
		timer.Reset(wait)
		<-timer.C
		if !time.Now().Before(until) {
			break
		}
		i := r.IntN(len(roles))
		p := procs[i]
		if p.reaped {
			continue
		}
		select {
		case err := <-p.done:
			reap(i, err) // it ended before the kill
			continue
		default:
		}
		p.killed = true
		_ = p.cmd.Process.Kill() // SIGKILL
		<-p.done
		ps.Kills++
		incarnation[i]++
		if err := launch(i); err != nil {
			errs = append(errs, err)
		} else if err := begin(i); err != nil {
			errs = append(errs, err)
		}
	}
	// The budget is spent: every child stops between its steps on its own.
	grace := time.NewTimer(30 * time.Second)
	defer grace.Stop()
	for i, p := range procs {
		if p.reaped {
			continue
		}
		select {
		case err := <-p.done:
			reap(i, err)
		case <-grace.C:
			stopAll()
			errs = append(errs, fmt.Errorf("workload: child %s did not stop within 30s of the budget's end", roles[i]))
		}
	}
	if len(errs) > 0 {
		return ps, errors.Join(errs...)
	}
	if err := merge(ctx, st, files, cfg.Events, &ps); err != nil {
		return ps, err
	}
	return ps, nil
}

// merge writes the commit log's write events, then every child's read events, to w.
func merge(ctx context.Context, st *actordelivery.Store, files []string, w io.Writer, ps *ProcStats) error {
	writes, err := st.CommitLog(ctx)
	if err != nil {
		return fmt.Errorf("workload: %w", err)
	}
	seen := make([]bool, len(writes))
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	for _, ev := range writes {
		if err := enc.Encode(ev); err != nil {
			return err
		}
	}
	ps.Writes = len(writes)
	for _, name := range files {
		data, err := os.ReadFile(name)
		if errors.Is(err, fs.ErrNotExist) {
			continue // a child killed before it opened its file recorded nothing
		}
		if err != nil {
			return fmt.Errorf("workload: %w", err)
		}
		for n := 1; len(data) > 0; n++ {
			raw, rest, complete := bytes.Cut(data, []byte("\n"))
			data = rest
			if !complete {
				ps.TruncatedLines++ // a child killed in the middle of a line
				break
			}
			var ev actordelivery.Event
			if err := json.Unmarshal(raw, &ev); err != nil {
				return fmt.Errorf("workload: %s: line %d: %w", filepath.Base(name), n, err)
			}
			if !ev.Read {
				if ev.Seq < 1 || ev.Seq > int64(len(writes)) {
					return fmt.Errorf("workload: %s: line %d: write event seq %d is not in the commit log (%d events)", filepath.Base(name), n, ev.Seq, len(writes))
				}
				got, _ := json.Marshal(ev)
				want, _ := json.Marshal(writes[ev.Seq-1])
				if !bytes.Equal(got, want) {
					return fmt.Errorf("workload: %s: line %d: write event %s differs from the commit log's %s", filepath.Base(name), n, got, want)
				}
				seen[ev.Seq-1] = true
				continue
			}
			ps.Reads++
			if _, err := bw.Write(append(raw, '\n')); err != nil {
				return err
			}
		}
	}
	for i, ok := range seen {
		if !ok {
			ps.OnlyInLog++
			if ps.Kills == 0 {
				return fmt.Errorf("workload: commit log event %d is in no child's file, and no child was killed", i+1)
			}
		}
	}
	return bw.Flush()
}

func tailOf(s string) string {
	if len(s) > 2000 {
		return s[len(s)-2000:]
	}
	return s
}
