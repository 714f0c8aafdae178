package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/pconform/pconform/observe"
)

// jobFlags are check's flags for a log split into partitions by key: --jobs on one machine,
// --shard on many (docs/observed.md, "All cores, and beyond one machine").
type jobFlags struct {
	jobs     int
	shard    string
	joinOut  string
	join     bool
	of, part int
}

func (j *jobFlags) register(c *cobra.Command) {
	c.Flags().IntVar(&j.jobs, "jobs", 1, "check an event log in this many partitions by mailbox, in parallel (the model oracle; not with --p, --keep-going or --follow)")
	c.Flags().StringVar(&j.shard, "shard", "", "check share i of N of an event log (i/N, 0 <= i < N), for N machines that each check one share; --join-out keeps what the join needs")
	c.Flags().StringVar(&j.joinOut, "join-out", "", "with --shard, write the shard's result for 'pconform check --join' here")
	c.Flags().BoolVar(&j.join, "join", false, "join the shard results given as arguments (each one --join-out file of the N shards) into one verdict")
}

// validate checks the flags against each other and the other options.
func (j *jobFlags) validate(p, keepGoing bool, follow string) error {
	partitioned := j.jobs > 1 || j.shard != ""
	switch {
	case j.jobs < 1:
		return usagef("--jobs %d: want at least 1", j.jobs)
	case j.jobs > 1 && j.shard != "":
		return usagef("--jobs and --shard: a shard is checked with one job")
	case partitioned && p:
		return usagef("--p checks the whole log: it does not take --jobs or --shard")
	case partitioned && keepGoing:
		return usagef("--keep-going needs the whole log: it does not take --jobs or --shard")
	case partitioned && follow != "":
		return usagef("--follow checks the whole log: it does not take --jobs or --shard")
	case j.joinOut != "" && j.shard == "":
		return usagef("--join-out goes with --shard")
	case j.join && (partitioned || p || follow != ""):
		return usagef("--join takes shard results only")
	}
	if j.shard != "" {
		i, n, ok := strings.Cut(j.shard, "/")
		var err1, err2 error
		j.part, err1 = strconv.Atoi(i)
		j.of, err2 = strconv.Atoi(n)
		if !ok || err1 != nil || err2 != nil || j.of < 1 || j.part < 0 || j.part >= j.of {
			return usagef("--shard %q: want i/N with 0 <= i < N, e.g. 0/4", j.shard)
		}
	}
	return nil
}

// check checks src as the flags say: whole, in partitions, or one shard.
func (lc *logCheck) check(src observe.Source, opts observe.CheckOptions) (observe.Summary, *observe.Finding, error) {
	j := lc.jobFlags
	if j.shard == "" {
		return observe.CheckJobs(src, opts, j.jobs)
	}
	// A shard reports its own finding; the verdict of the whole log is the join's.
	onFinding := opts.OnFinding
	opts.OnFinding = nil
	r, err := observe.CheckShard(src, opts, j.part, j.of)
	if err != nil {
		return observe.Summary{}, nil, err
	}
	if j.joinOut != "" {
		if err := writeShard(j.joinOut, r); err != nil {
			return r.Summary, nil, err
		}
	}
	fmt.Fprintf(lc.w, "shard %d/%d: ", j.part, j.of)
	if r.Finding != nil && onFinding != nil {
		if err := onFinding(r.Finding); err != nil {
			return r.Summary, r.Finding, err
		}
	}
	return r.Summary, r.Finding, r.Err
}

// shardFile is a shard's result as --join-out writes it.
type shardFile struct {
	Shard   int               `json:"shard"`
	Of      int               `json:"of"`
	Events  int64             `json:"events"`
	Finding *shardFinding     `json:"finding,omitempty"`
	Err     string            `json:"err,omitempty"`
	Undecid bool              `json:"undecided,omitempty"`
	Join    observe.ShardJoin `json:"join"`
}

type shardFinding struct {
	Oracle  string `json:"oracle"`
	Step    int    `json:"step"`
	Seq     int64  `json:"seq"`
	Line    int    `json:"line"`
	Message string `json:"message"`
}

func writeShard(path string, r *observe.ShardResult) error {
	sf := shardFile{Shard: r.Shard, Of: r.Of, Events: r.Summary.Events, Join: r.Join}
	if f := r.Finding; f != nil {
		sf.Finding = &shardFinding{Oracle: f.Oracle, Step: f.Step, Seq: f.Seq, Line: f.Line, Message: f.Message}
	}
	if r.Err != nil {
		sf.Err, sf.Undecid = r.Err.Error(), errors.Is(r.Err, observe.ErrShardUndecided)
	}
	b, err := json.Marshal(sf)
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

func readShard(path string) (*observe.ShardResult, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var sf shardFile
	if err := json.Unmarshal(b, &sf); err != nil {
		return nil, fmt.Errorf("%s: not a shard result of 'pconform check --shard i/N --join-out': %w", path, err)
	}
	r := &observe.ShardResult{Shard: sf.Shard, Of: sf.Of, Summary: observe.Summary{Events: sf.Events}, Join: sf.Join}
	if f := sf.Finding; f != nil {
		r.Finding = &observe.Finding{Oracle: f.Oracle, Step: f.Step, Seq: f.Seq, Line: f.Line, Message: f.Message}
	}
	switch {
	case sf.Undecid:
		r.Err = fmt.Errorf("%w (%s)", observe.ErrShardUndecided, sf.Err)
	case sf.Err != "":
		r.Err = errors.New(sf.Err)
	}
	return r, nil
}

// joinShards prints the verdict of the shard results at paths.
func (lc *logCheck) joinShards(paths []string) error {
	var results []*observe.ShardResult
	for _, p := range paths {
		r, err := readShard(p)
		if err != nil {
			return err
		}
		results = append(results, r)
	}
	f, err := observe.JoinShards(results)
	switch {
	case f != nil:
		fmt.Fprintf(lc.w, "FINDING %s\n", f)
		fmt.Fprintf(lc.w, "%d shards joined: a finding (check the log with --jobs for its window)\n", len(results))
		return errFinding
	case err != nil:
		return err
	}
	fmt.Fprintf(lc.w, "%d shards joined: the model agrees with every event\n", len(results))
	return nil
}
