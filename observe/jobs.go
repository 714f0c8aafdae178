package observe

import (
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pconform/pconform/actordelivery/record"
	"github.com/pconform/pconform/models"
	"github.com/pconform/pconform/traces"
)

// ErrJobsOptions is wrapped by the error CheckJobs and CheckShard return for options a
// partitioned check does not take.
var ErrJobsOptions = errors.New("observe: option not available in a partitioned check")

// ErrShardUndecided is wrapped by the error CheckShard returns at a purge that stopped at its
// limit: which rows it took depends on the rows of the other shards, which one shard does not see.
var ErrShardUndecided = errors.New("observe: a shard cannot decide this step alone")

// CheckJobs is Check split into jobs partitions by key (Router), checked in parallel, with the
// rules that span partitions checked where they join: a claim's choice among every target's
// rows, the counts of an expire and a purge, which rows a purge at its limit takes, and a worker's
// steps across mailboxes (its shutdown, one fetch at a time). It gives the same verdict as Check:
// a finding at the same event, or none. jobs <= 1 is Check.
//
// Not taken with jobs > 1 (ErrJobsOptions): KeepGoing (after the first finding the partitions'
// states part from the whole log's) and Checkers (rules over the whole log). A log that uses one
// id in mailboxes of two partitions is refused (ErrCrossPartition): check it with one job.
func CheckJobs(src Source, opts CheckOptions, jobs int) (Summary, *Finding, error) {
	if jobs <= 1 {
		return Check(src, opts)
	}
	if err := partOptions(opts); err != nil {
		return Summary{}, nil, err
	}
	r := newPartRun(jobs, []int{}, opts)
	return r.run(src)
}

func partOptions(opts CheckOptions) error {
	switch {
	case opts.KeepGoing:
		return fmt.Errorf("%w: going on past a finding needs one job", ErrJobsOptions)
	case len(opts.Checkers) > 0:
		return fmt.Errorf("%w: checkers beside the model need one job", ErrJobsOptions)
	}
	return nil
}

// partRun is one partitioned check: the router (the caller's goroutine), a goroutine per
// partition it checks, and the join.
type partRun struct {
	opts   CheckOptions
	router *Router
	// parts are the partitions checked here, by partition number (nil: another shard's).
	parts []*partRunner
	// shard is set when only some partitions are checked here (CheckShard): the join keeps its
	// records for JoinShards instead of deciding.
	shard bool
	join  *joiner
	// fetched is workerStep's buffer: the messages of the fetch it checks.
	fetched []traces.Message
	// best is the position of the earliest outcome so far (math.MaxInt64: none).
	best atomic.Int64
	mu   sync.Mutex
	out  outcome
	// reads marks the read events by position, to count the writes up to a finding.
	reads []uint64
}

// outcome is a finding or an error at a position in commit order.
type outcome struct {
	pos int64
	f   *Finding
	err error
}

// newPartRun makes a check of n partitions; only those listed in only are checked here (empty:
// all of them).
func newPartRun(n int, only []int, opts CheckOptions) *partRun {
	r := &partRun{opts: opts, router: NewRouter(n), parts: make([]*partRunner, n)}
	r.best.Store(math.MaxInt64)
	r.out.pos = math.MaxInt64
	for p := range n {
		if len(only) > 0 && !slices.Contains(only, p) {
			continue
		}
		o := newOracle(opts)
		o.hist.log = opts.Log
		// A shard's window would need the other shards' events: it keeps the histories.
		o.hist.noHistory = opts.Reread != nil && len(only) == 0
		// A few batches in flight: each item holds a whole event (some 700 bytes), and a deep
		// queue spreads them over memory no cache holds.
		pr := &partRunner{run: r, idx: p, o: o, in: make(chan []item, partQueue), free: make(chan []item, partQueue+2)}
		o.part = &partShare{runner: pr, outSeq: map[string]int64{}}
		r.parts[p] = pr
	}
	r.shard = len(only) > 0
	r.join = newJoiner(r)
	return r
}

// report records an outcome, keeping the earliest.
func (r *partRun) report(oc outcome) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if oc.pos < r.out.pos {
		r.out = oc
		r.best.Store(oc.pos)
	}
}

// batchItems is how many items the router hands a partition at once, and partQueue how many
// batches may wait for it.
const (
	batchItems = 128
	partQueue  = 4
)

// run routes src's events to the partitions and waits for them and the join.
func (r *partRun) run(src Source) (Summary, *Finding, error) {
	var wg sync.WaitGroup
	for _, pr := range r.parts {
		if pr != nil {
			wg.Add(1)
			go func() { defer wg.Done(); pr.loop() }()
		}
	}
	joinDone := make(chan struct{})
	go func() { r.join.loop(); close(joinDone) }()

	sum, routeErr := r.route(src)
	for _, pr := range r.parts {
		if pr != nil {
			pr.flush()
			close(pr.in)
		}
	}
	wg.Wait()
	close(r.join.in)
	<-joinDone
	if routeErr != nil {
		r.report(outcome{pos: sum.Events, err: routeErr})
	}
	for _, pr := range r.parts {
		if pr != nil {
			sum.LiveRows += pr.o.m.Rows()
		}
	}
	oc := r.out
	if oc.pos != math.MaxInt64 {
		sum.Events = oc.pos
		if oc.f != nil {
			sum.Events++ // the finding's event was checked
			sum.Findings, sum.Stopped = 1, true
		}
		sum.Writes = r.writesBefore(sum.Events)
	}
	if r.opts.Progress != nil {
		r.opts.Progress(sum)
	}
	if oc.f != nil && r.opts.Reread != nil && !r.shard {
		// The check ends at this finding: the partitions' state goes before the second
		// reading, so that the two are never held at once.
		for _, pr := range r.parts {
			if pr != nil {
				pr.o = nil
			}
		}
		if _, err := recheck(r.opts, oc.f); err != nil {
			oc.f.WindowErr = err
		}
	}
	if oc.f != nil && r.opts.OnFinding != nil {
		if err := r.opts.OnFinding(oc.f); err != nil {
			return sum, oc.f, err
		}
	}
	return sum, oc.f, oc.err
}

// writesBefore counts the write events among the first n.
func (r *partRun) writesBefore(n int64) int64 {
	var reads int64
	for i := int64(0); i < n; i++ {
		if r.reads[i/64]&(1<<(i%64)) != 0 {
			reads++
		}
	}
	return n - reads
}

// route reads src to its end (or to a position past the earliest outcome) and hands each event
// to its partitions. It checks itself what needs every event in order: the time, and the worker
// rules.
func (r *partRun) route(src Source) (Summary, error) {
	var sum Summary
	var lastAt int64
	lastLine := 0
	workers := models.NewWorkerRules()
	whole := newOracle(r.opts) // validates the events every partition gets
	every := int64(r.opts.ProgressEvery)
	if every <= 0 {
		every = 1 << 16
	}
	for pos := int64(0); ; pos++ {
		if pos > r.best.Load() {
			return sum, nil
		}
		ev, err := src.Next()
		if errors.Is(err, io.EOF) {
			return sum, nil
		}
		if err != nil {
			return sum, err
		}
		if int(pos/64) >= len(r.reads) {
			r.reads = append(r.reads, 0)
		}
		if ev.Read {
			r.reads[pos/64] |= 1 << (pos % 64)
		}
		sum.Events++
		if !ev.Read {
			sum.Writes++
		}
		if r.opts.Progress != nil && sum.Events%every == 0 {
			r.opts.Progress(sum)
		}
		// The time, as ModelOracle.Observe checks it: each partition sees some events only.
		if ev.At.Before(traces.Epoch) {
			r.report(outcome{pos: pos, err: fmt.Errorf("%w: line %d: %s at %s is before the trace epoch %s", ErrBadLog, ev.Line, ev.Op, ev.At.Format(time.RFC3339), traces.Epoch.Format(time.RFC3339))})
			return sum, nil
		}
		at := ticksAt(ev.At)
		op := traces.Op(ev.Op)
		if op == traces.OpWake || op == traces.OpPollTick {
			at = lastAt
		}
		if at < lastAt {
			r.report(outcome{pos: pos, err: fmt.Errorf("%w: line %d: %s at %s comes after line %d's event at %s in commit order (time goes back)", ErrBadLog, ev.Line, ev.Op, showTicks(at), lastLine, showTicks(lastAt))})
			return sum, nil
		}
		prevAt, prevLine := lastAt, lastLine
		lastAt, lastLine = at, ev.Line
		rt, err := r.router.Route(ev)
		if err != nil {
			r.report(outcome{pos: pos, err: err})
			return sum, nil
		}
		if f := r.workerStep(workers, ev, pos); f != nil {
			r.report(outcome{pos: pos, f: f})
			return sum, nil
		}
		if r.shard && rt.Share == sharePurge && ev.Result.Affected >= ev.Args.Limit {
			r.report(outcome{pos: pos, err: fmt.Errorf("%w: line %d: purge removed %d rows with limit %d: which rows it took depends on every shard's rows; check this log on one machine (--jobs)",
				ErrShardUndecided, ev.Line, ev.Result.Affected, ev.Args.Limit)})
			return sum, nil
		}
		if rt.Part == AllParts {
			// The trace format's rules for the whole event (a claim's rows within its limit,
			// under one token): each partition sees its share of it only.
			if err := whole.validate(ev, at); err != nil {
				r.report(outcome{pos: pos, err: err})
				return sum, nil
			}
			r.joinEvent(ev, pos, at, rt)
		}
		for p, pr := range r.parts {
			if pr == nil {
				continue
			}
			switch {
			case rt.Share == shareRows:
				if idx := r.router.rowsIn(ev, p); len(idx) > 0 {
					pr.add(ev, pos, prevAt, prevLine, func(it *item) { it.ev.Args, it.ev.Result = rowsOf(ev, idx) })
				}
			case rt.Part == AllParts:
				pr.add(ev, pos, prevAt, prevLine, func(it *item) {
					it.share = rt.Share
					if rt.Share == shareClaim {
						// The partition checks its own rows of the result; the join, the rest.
						it.claimIdx = r.router.claimedIn(ev, p)
						mine := make([]record.Claimed, 0, len(it.claimIdx))
						for _, i := range it.claimIdx {
							mine = append(mine, ev.Result.Claimed[i])
						}
						it.ev.Result.Claimed = mine
					}
					it.barrier = rt.Share == sharePurge && ev.Result.Affected >= ev.Args.Limit
				})
			case rt.Part == p:
				pr.add(ev, pos, prevAt, prevLine, nil)
			case rt.Sweep:
				pr.addSweep(at)
			}
		}
	}
}

// rowsOf is the arguments and result of the rows idx of a publisher_deliver_batch ev: its ids,
// actions and duplicates at those indexes, in order; the rest as they are.
func rowsOf(ev *Event, idx []int) (record.Args, record.Result) {
	a, r := ev.Args, ev.Result
	a.IDs = pick(ev.Args.IDs, idx)
	r.Actions = pick(ev.Result.Actions, idx)
	r.Duplicates = pick(ev.Result.Duplicates, idx)
	return a, r
}

// pick is the elements of s at idx that s has (a list shorter than the rows is the validator's
// to refuse, which it did before the event got here), in a slice of its own.
func pick[T any](s []T, idx []int) []T {
	if s == nil {
		return nil
	}
	out := make([]T, 0, len(idx))
	for _, i := range idx {
		if i < len(s) {
			out = append(out, s[i])
		}
	}
	return out
}

// workerStep checks ev against the rules that follow a worker across mailboxes.
func (r *partRun) workerStep(w *models.WorkerRules, ev *Event, pos int64) *Finding {
	op := traces.Op(ev.Op)
	switch op {
	case traces.OpConsumerFetch, traces.OpConsumerHandle, traces.OpWorkerStop, traces.OpWorkerDrain,
		traces.OpConsumerFetchBatch, traces.OpConsumerHandleBatch:
	default:
		return nil
	}
	fetched := r.fetched[:0]
	if m := ev.Result.Message; m != nil {
		fetched = append(fetched, traces.Message{ID: m.ID})
	}
	for _, m := range ev.Result.Messages {
		fetched = append(fetched, traces.Message{ID: m.ID})
	}
	r.fetched = fetched
	a := traces.Args{Worker: ev.Args.Worker, Mailbox: ev.Args.Mailbox, Outcome: ev.Args.Outcome, Profile: ev.Args.Profile}
	if err := w.Step(op, a, fetched); err != nil {
		return &Finding{Oracle: "model", Step: int(pos), Seq: ev.Seq, Line: ev.Line,
			Message: fmt.Sprintf("the model cannot take the observed step: %v", err)}
	}
	return nil
}

// joinEvent hands the join what it checks of an event every partition gets.
func (r *partRun) joinEvent(ev *Event, pos, at int64, rt Route) {
	if rt.Share == shareAll || rt.Share == shareRows {
		return
	}
	r.join.in <- joinMsg{event: &joinEvent{Pos: pos, Seq: ev.Seq, Line: ev.Line, Op: ev.Op, At: at, Share: rt.Share,
		Affected: ev.Result.Affected, Limit: ev.Args.Limit, Claimed: len(ev.Result.Claimed)}}
}

// item is an event as a partition gets it: a copy it owns, its position in the whole log's commit
// order, and the time and line of the event before it there.
type item struct {
	ev       Event
	msg      record.Message
	pos      int64
	lastAt   int64
	lastLine int
	// sweep, when set, is a sweep at time at only (another partition's leased fetch).
	sweep bool
	at    int64
	share share
	// claimIdx are the indexes of the partition's rows in a claim's result.
	claimIdx []int
	// barrier is set on a purge that stopped at its limit: the join decides each partition's
	// share of it.
	barrier bool
}

// partRunner checks one partition.
type partRunner struct {
	run *partRun
	idx int
	o   *ModelOracle
	in  chan []item
	// free holds the batches checked, for the router to fill again.
	free chan []item
	// batch is being filled by the router.
	batch []item
	// done is set once the partition reported an outcome: it checks nothing more, but still
	// answers the join's questions so that the others go on.
	done bool
}

func (pr *partRunner) next() *item {
	if pr.batch == nil {
		select {
		case b := <-pr.free:
			pr.batch = b[:0]
		default:
			pr.batch = make([]item, 0, batchItems)
		}
	}
	pr.batch = append(pr.batch, item{})
	it := &pr.batch[len(pr.batch)-1]
	return it
}

// add appends a copy of ev to the batch, set up further by set (when not nil); the batch goes
// when full.
func (pr *partRunner) add(ev *Event, pos, lastAt int64, lastLine int, set func(*item)) {
	it := pr.next()
	it.ev, it.pos, it.lastAt, it.lastLine = *ev, pos, lastAt, lastLine
	// The source reuses an event's message and claimed rows: the item keeps its own.
	if m := ev.Result.Message; m != nil {
		it.msg = *m
		it.ev.Result.Message = &it.msg
	}
	if len(ev.Result.Claimed) > 0 {
		it.ev.Result.Claimed = slices.Clone(ev.Result.Claimed)
	}
	if set != nil {
		set(it)
	}
	if len(pr.batch) == batchItems || traces.Op(ev.Op) == traces.OpPurge {
		// A purge may wait for every partition at the join: each must get it now.
		pr.flush()
	}
}

func (pr *partRunner) addSweep(at int64) {
	it := pr.next()
	it.sweep, it.at = true, at
	if len(pr.batch) == batchItems {
		pr.flush()
	}
}

func (pr *partRunner) flush() {
	if len(pr.batch) > 0 {
		pr.in <- pr.batch
		pr.batch = nil
	}
}

// loop checks the partition's items as they come.
func (pr *partRunner) loop() {
	for batch := range pr.in {
		for i := range batch {
			pr.step(&batch[i])
		}
		if pr.o.hist.log == nil && !pr.o.hist.noHistory {
			continue // the histories keep the items' events, messages and all
		}
		select { // the router fills it again: no allocation per batch
		case pr.free <- batch:
		default:
		}
	}
}

func (pr *partRunner) step(it *item) {
	o := pr.o
	if it.sweep {
		if !pr.done {
			o.m.Sweep(it.at)
		}
		return
	}
	if pr.done {
		if it.barrier {
			pr.run.join.ask(pr.idx, it.pos, 0, [3][]models.Aged{}) // an answer nobody relies on
		}
		return
	}
	o.lastAt, o.lastLine = it.lastAt, it.lastLine
	o.pos = int(it.pos)
	ps := o.part
	ps.it = it
	f, err := o.Observe(&it.ev)
	ps.it = nil
	switch {
	case err != nil:
		pr.done = true
		pr.run.report(outcome{pos: it.pos, err: err})
	case f != nil:
		pr.done = true
		f.Step = int(it.pos)
		pr.run.report(outcome{pos: it.pos, f: f})
	}
}

// partShare is what a partition's oracle keeps to take its share of the steps every partition
// gets.
type partShare struct {
	runner *partRunner
	// it is the item being checked.
	it *item
	// outSeq maps the outbox rows the partition's model holds to the seq of the write that
	// enqueued them: the order a claim takes rows in, which every partition shares.
	outSeq   map[string]int64
	pruneLen int
}

// stepModel steps the model through ev, or through the partition's share of it.
func (o *ModelOracle) stepModel(ev *Event, op traces.Op, at int64, st *traces.Step) (traces.Result, error) {
	ps := o.part
	if ps == nil || ps.it == nil {
		return o.m.Step(op, at, st.Args)
	}
	it := ps.it
	switch {
	case op == traces.OpOutboxEnqueue:
		got, err := o.m.Step(op, at, st.Args)
		if err == nil && !got.Duplicate && got.Err == "" {
			ps.outSeq[st.Args.ID] = ev.Seq
			if len(ps.outSeq) > 2*ps.pruneLen+1024 {
				for id := range ps.outSeq {
					if !o.m.Holds(id) {
						delete(ps.outSeq, id)
					}
				}
				ps.pruneLen = len(ps.outSeq)
			}
		}
		return got, err
	case it.share == shareExpire && op == traces.OpExpire:
		got, err := o.m.Step(op, at, st.Args)
		if err == nil {
			st.Result.Affected = got.Affected // the join checks the sum
			ps.runner.run.join.in <- joinMsg{rec: &joinRec{Pos: it.pos, Part: ps.runner.idx, Affected: got.Affected}}
		}
		return got, err
	case it.share == shareClaim && op == traces.OpOutboxClaim:
		return o.claimShare(ev, at, st)
	case it.share == sharePurge && op == traces.OpPurge:
		a := &st.Args
		var counts [3]int
		if it.barrier {
			cands := o.m.PurgeCandidates(at, a.OlderThan, a.Limit)
			counts = ps.runner.run.join.ask(ps.runner.idx, it.pos, a.Limit, cands)
		} else {
			// The store took fewer rows than the limit in all: if the model takes more, the
			// sum shows it; if not, no table stopped at the limit, and each partition takes
			// all its own rows.
			counts = [3]int{a.Limit, a.Limit, a.Limit}
		}
		n := o.m.PurgeShare(at, a.OlderThan, a.Horizon, counts, a.Limit)
		st.Result.Affected = n
		ps.runner.run.join.in <- joinMsg{rec: &joinRec{Pos: it.pos, Part: ps.runner.idx, Affected: n}}
		return traces.Result{Affected: n}, nil
	}
	return o.m.Step(op, at, st.Args)
}

// claimShare claims the partition's rows of an outbox_claim. The checked step keeps only those
// rows (the others are other partitions'), and the join learns how the partition's claimable rows
// stand against the claim's choice.
func (o *ModelOracle) claimShare(ev *Event, at int64, st *traces.Step) (traces.Result, error) {
	ps := o.part
	it := ps.it
	k := len(st.Result.Claimed) // the router kept the partition's rows only
	claimable, claimed := o.m.ClaimShare(at, st.Args.ClaimFor, k, st.Args.Limit)
	rec := &joinRec{Pos: it.pos, Part: ps.runner.idx, Claimable: len(claimable), Idx: it.claimIdx}
	for _, c := range claimed {
		rec.Keys = append(rec.Keys, ps.outSeq[c.ID])
	}
	if k < len(claimable) {
		rec.Next = ps.outSeq[claimable[k]]
	}
	ps.runner.run.join.in <- joinMsg{rec: rec}
	return traces.Result{Claimed: claimed}, nil
}

// joinEvent is what the join checks of an event every partition gets, from the router.
type joinEvent struct {
	Pos      int64  `json:"pos"`
	Seq      int64  `json:"seq"`
	Line     int    `json:"line"`
	Op       string `json:"op"`
	At       int64  `json:"at"`
	Share    share  `json:"share"`
	Affected int    `json:"affected,omitempty"`
	Limit    int    `json:"limit,omitempty"`
	Claimed  int    `json:"claimed,omitempty"`
}

// joinRec is one partition's share of an event every partition gets.
type joinRec struct {
	Pos  int64 `json:"pos"`
	Part int   `json:"part"`
	// Affected is the share's count (expire, purge).
	Affected int `json:"affected,omitempty"`
	// Claimable is how many rows a claim could take in the partition, counted up to the claim's
	// limit (or one past the rows it took there): enough to tell whether the partitions together
	// reach the limit. Idx the indexes of the
	// rows it took there in the claim's result, Keys their order keys (the seq of their
	// enqueue), Next the order key of the first claimable row it did not take (0: none).
	Claimable int     `json:"claimable,omitempty"`
	Idx       []int   `json:"idx,omitempty"`
	Keys      []int64 `json:"keys,omitempty"`
	Next      int64   `json:"next,omitempty"`
}

// joinMsg is one message to the join.
type joinMsg struct {
	event *joinEvent
	rec   *joinRec
	// ask is a partition's candidates for a purge at its limit.
	ask *purgeAsk
}

type purgeAsk struct {
	pos   int64
	part  int
	limit int
	cands [3][]models.Aged
	reply chan [3]int
}

// joiner checks where the partitions join.
type joiner struct {
	run *partRun
	in  chan joinMsg
	// pending holds what has come for each position not yet complete.
	pending map[int64]*joinAt
	// kept holds, for a shard, the events and records to join with the other shards' later.
	kept ShardJoin
}

type joinAt struct {
	event *joinEvent
	recs  []*joinRec
	asks  []*purgeAsk
}

func newJoiner(r *partRun) *joiner {
	return &joiner{run: r, in: make(chan joinMsg, 1024), pending: map[int64]*joinAt{}}
}

// ask hands the join a partition's purge candidates and waits for its share.
func (j *joiner) ask(part int, pos int64, limit int, cands [3][]models.Aged) [3]int {
	if j.run.shard {
		// Reached only when the store took the limit: CheckShard refuses that step before.
		panic("observe: a shard asked the join for a purge's shares")
	}
	reply := make(chan [3]int, 1)
	j.in <- joinMsg{ask: &purgeAsk{pos: pos, part: part, limit: limit, cands: cands, reply: reply}}
	return <-reply
}

func (j *joiner) live() int {
	n := 0
	for _, pr := range j.run.parts {
		if pr != nil {
			n++
		}
	}
	return n
}

func (j *joiner) loop() {
	parts := j.live()
	for m := range j.in {
		var pos int64
		switch {
		case m.event != nil:
			pos = m.event.Pos
		case m.rec != nil:
			pos = m.rec.Pos
		default:
			pos = m.ask.pos
		}
		at := j.pending[pos]
		if at == nil {
			at = &joinAt{}
			j.pending[pos] = at
		}
		switch {
		case m.event != nil:
			at.event = m.event
		case m.rec != nil:
			at.recs = append(at.recs, m.rec)
		default:
			at.asks = append(at.asks, m.ask)
			if len(at.asks) == parts {
				decidePurge(at.asks)
			}
		}
		if at.event != nil && len(at.recs) == parts {
			delete(j.pending, pos)
			if j.run.shard {
				j.kept.Events = append(j.kept.Events, *at.event)
				for _, r := range at.recs {
					j.kept.Recs = append(j.kept.Recs, *r)
				}
				continue
			}
			if f := joinCheck(at.event, at.recs); f != nil {
				j.run.report(outcome{pos: pos, f: f})
			}
		}
	}
}

// decidePurge gives each partition its share of a purge at its limit: in each table, the first
// limit rows of all partitions' candidates together, oldest first, then by id.
func decidePurge(asks []*purgeAsk) {
	type cand struct {
		a    models.Aged
		part int
	}
	counts := make([][3]int, len(asks))
	for t := range 3 {
		var all []cand
		for i, a := range asks {
			for _, c := range a.cands[t] {
				all = append(all, cand{c, i})
			}
		}
		slices.SortFunc(all, func(x, y cand) int { return x.a.Compare(y.a) })
		for _, c := range all[:min(len(all), asks[0].limit)] {
			counts[c.part][t]++
		}
	}
	for i, a := range asks {
		a.reply <- counts[i]
	}
}

// joinCheck checks one event every partition got against the partitions' shares of it.
func joinCheck(e *joinEvent, recs []*joinRec) *Finding {
	finding := func(format string, args ...any) *Finding {
		return &Finding{Oracle: "model", Step: int(e.Pos), Seq: e.Seq, Line: e.Line,
			Message: fmt.Sprintf("%s at %s: ", e.Op, showTicks(e.At)) + fmt.Sprintf(format, args...)}
	}
	switch e.Share {
	case shareExpire, sharePurge:
		n := 0
		for _, r := range recs {
			n += r.Affected
		}
		if n != e.Affected {
			return finding("the store observed {affected: %d}, the model gives {affected: %d} (added up over %d partitions)", e.Affected, n, len(recs))
		}
	case shareClaim:
		claimable := 0
		keys := make([]int64, e.Claimed)
		next := int64(math.MaxInt64)
		for _, r := range recs {
			claimable += r.Claimable
			for i, k := range r.Keys {
				if i < len(r.Idx) && r.Idx[i] < len(keys) {
					keys[r.Idx[i]] = k
				}
			}
			if r.Next != 0 {
				next = min(next, r.Next)
			}
		}
		if want := min(e.Limit, claimable); e.Claimed != want {
			return finding("the store claimed %d rows, the model claims %d (limit %d, %d rows claimable across %d partitions, each counted up to the limit)", e.Claimed, want, e.Limit, claimable, len(recs))
		}
		// A key is 0 for a row the log never enqueued (a log that starts mid-life): its place
		// is not known, and it is not compared.
		for i := 1; i < len(keys); i++ {
			if keys[i] > 0 && keys[i-1] > 0 && keys[i] <= keys[i-1] {
				return finding("the store's claimed rows are not in the order the model claims them (smallest seq first): row %d of the result was enqueued at seq %d, row %d at seq %d", i, keys[i-1], i+1, keys[i])
			}
		}
		if len(keys) > 0 && keys[len(keys)-1] > next && next > 0 {
			return finding("the store claimed the row enqueued at seq %d but left the one enqueued at seq %d, which the model claims first", keys[len(keys)-1], next)
		}
	}
	return nil
}

// ShardJoin is what a shard keeps for the join with the other shards.
type ShardJoin struct {
	Events []joinEvent `json:"events"`
	Recs   []joinRec   `json:"recs"`
}

// ShardResult is what CheckShard found in one share of a log: the earliest finding or error in
// it, and what the join with the other shards needs (JoinShards).
type ShardResult struct {
	// Shard and Of say which share this is: Shard of 0..Of-1.
	Shard, Of int
	// Summary counts the events read (every shard reads the whole log) up to where it stopped.
	Summary Summary
	// Finding is the shard's earliest finding; Err, when set, the log error that stopped it
	// (a finding before it counts, one after it is not looked for).
	Finding *Finding
	Err     error
	// Join is the shard's part of the checks that span shards.
	Join ShardJoin
}

// CheckShard checks share shard of of (0 <= shard < of) of the log: the partition of that number,
// as CheckJobs would split the log into of partitions, and the rules the router checks on the
// whole log (the time, the worker rules). Every shard reads the whole log. The union of the of
// shards' results (JoinShards) gives CheckJobs's verdict, but at a purge that stopped at its limit:
// which rows it took depends on every shard's rows, so CheckShard stops there with an error
// wrapping ErrShardUndecided that names the line (check such a log with CheckJobs).
func CheckShard(src Source, opts CheckOptions, shard, of int) (*ShardResult, error) {
	if of < 1 || shard < 0 || shard >= of {
		return nil, fmt.Errorf("%w: shard %d of %d: want 0 <= shard < of", ErrJobsOptions, shard, of)
	}
	if err := partOptions(opts); err != nil {
		return nil, err
	}
	r := newPartRun(of, []int{shard}, opts)
	sum, f, err := r.run(src)
	return &ShardResult{Shard: shard, Of: of, Summary: sum, Finding: f, Err: err, Join: r.join.kept}, nil
}

// JoinShards joins the results of every shard of one log and returns the verdict: the earliest
// finding, or the error that stopped the check before any finding (nil, nil: clean). It refuses a
// set that is not shards 0..of-1 of one split.
func JoinShards(results []*ShardResult) (*Finding, error) {
	if len(results) == 0 {
		return nil, fmt.Errorf("%w: no shard results to join", ErrJobsOptions)
	}
	of := results[0].Of
	seen := make([]bool, of)
	for _, s := range results {
		if s.Of != of || s.Shard < 0 || s.Shard >= of || seen[s.Shard] {
			return nil, fmt.Errorf("%w: shard %d of %d does not fit a split into %d shards (each shard once)", ErrJobsOptions, s.Shard, s.Of, of)
		}
		seen[s.Shard] = true
	}
	if len(results) != of {
		return nil, fmt.Errorf("%w: %d of %d shards given", ErrJobsOptions, len(results), of)
	}
	best := outcome{pos: math.MaxInt64}
	take := func(oc outcome) {
		if oc.pos < best.pos {
			best = oc
		}
	}
	events := map[int64]joinEvent{}
	recs := map[int64][]*joinRec{}
	for _, s := range results {
		if s.Finding != nil {
			take(outcome{pos: int64(s.Finding.Step), f: s.Finding})
		}
		if s.Err != nil {
			// A shard stops at an error after the events it read: its position is the count.
			take(outcome{pos: s.Summary.Events, err: s.Err})
		}
		for _, e := range s.Join.Events {
			events[e.Pos] = e
		}
		for i := range s.Join.Recs {
			r := &s.Join.Recs[i]
			recs[r.Pos] = append(recs[r.Pos], r)
		}
	}
	for pos, e := range events {
		if len(recs[pos]) != of || pos >= best.pos {
			continue // a shard stopped before it: the event was never joined
		}
		if f := joinCheck(&e, recs[pos]); f != nil {
			take(outcome{pos: pos, f: f})
		}
	}
	return best.f, best.err
}
