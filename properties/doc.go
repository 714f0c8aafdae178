// Package properties is pconform's stateful property testing: random sequences of operations run
// against a real store target with the reference model as the oracle, and every failure is shrunk
// to a short sequence and written as a trace that replay reproduces on its own.
//
// # Usage
//
//	res, err := properties.Hunt(ctx, properties.HuntConfig{Variant: "split-write", Seed: 7, Dir: "traces/hunted"})
//	if err != nil { ... }   // the hunt could not run, or its trace does not reproduce
//	if res.Found { ... }    // res.Shrunk is the trace, res.Path its file, res.Failure what broke
//
// The CLI's `pconform hunt` calls Hunt; `pconform replay FILE --target VARIANT` replays what it
// wrote. Targets and broken variants come from replay's registry (targets.New,
// targets.BrokenVariants), the one list the CLI and replay resolve names against too.
//
// # Contract
//
//   - Commands. Every command is one trace step (traces.Step): every store operation, consumer
//     fetch and handle (leased and leaseless; ok, fail, and fail_no_retry: a failure the retry
//     policy declines; now and then a handle whose commit fails, where the target runs the real
//     Consumer.Handle, as its batch handles show), publisher delivery (fold and split,
//     faults none, commit_fails, crash_between), clock advances and crashes, purges (whose freed
//     ids the enqueues reuse), redrives (mostly of a dead letter, else of any id: not_found),
//     processed-message marks of a few consumers and ids, and checkpoint saves (mostly with the
//     stored version, else a stale or a future one) and loads; and the batch steps: a batch fetch
//     (sizes 2 and 3, leased and leaseless), its handle with one drawn outcome per message (a
//     failed commit only while every message's fence holds: the store target fails a batch's
//     commit through its last message's Effects), and a publisher's batch delivery of rows one
//     claim covers (faults none, commit_fails, crash_between). A leased batch's k-th token is
//     named by the fetch's serial plus k. A target that has no batch handle (a variant that
//     replaces Consumer.Handle) is given no batch fetch or handle. gopter's commands
//     package generates and shrinks the sequences; the state is the model (models.State inside a
//     world), the system under test a replay.Target.
//   - Legal sequences only. Preconditions keep times non-decreasing, pair every handle with its
//     worker's fetch, keep a mailbox served either by leased workers or by one leaseless worker,
//     and let the model refuse anything malformed. Ids, keys and mailboxes come from small pools
//     so duplicates, FIFO keys and competing workers collide often; clock advances land on
//     deadlines and one second either side of them.
//   - Situations. Where the state is one link of a chain of steps a bug hides in, the next link
//     weighs more and names the chain's rows (generate.go, "Situations"): expire after a held
//     lease ran out, a redrive of a held message that was dead-lettered, the handle of a worker
//     whose lease another step ended (with the outcomes each fence guards), a nack_by_id between
//     a leaseless fetch and its handle, an enqueue of an id a purge retired.
//   - Tokens by serial. A command that issues a token names it by its own serial, on both sides;
//     a command passing a token names the issuing command's serial. A serial whose command issued
//     nothing (or was shrunk away) stands for a forged token that matches nothing.
//   - Checks after every step, in order: the target's result equals the model's (tokens mapped
//     through the serials); the invariants hold on the target's snapshot (no-loss,
//     attempts-bounded, no-strand, exactly-once, fifo; see history for each and for how
//     no-strand is scoped to messages only the consumer protocol touched); the target's whole
//     state equals the model's.
//   - Shrinking. gopter's command shrinker first, then an own pass: drop random subsets with a
//     falling rate, drop single steps, replace publisher deliveries by direct enqueues where the
//     outbox is beside the point, rename ids, mailboxes and workers in order of first use, shift
//     time to 0 and close gaps, simplify argument values. Both shrinkers keep the harm: a
//     candidate counts only when it breaks every invariant the first failure broke, or, for a
//     variant whose catalogue row names its harm (internal/variants, Harm: split-write's
//     no-loss), that invariant, which the search itself requires too; an earlier divergence
//     without the harm is passed over. The result is first a trace of the
//     model's results, which the correct store must match and the hunted variant must not. For
//     a broken variant Hunt then records the variant's own run of it (replay.Record) and writes
//     that, in the convention of docs/trace-format.md: origin kind "property" with the seed, the
//     test case and the command to rerun; expect.variant, the step at which the correct store
//     refuses the bug (expect.diverges_at) and the broken checks' properties (expect.violates).
//     Hunt replays it both ways and judges both replays before returning it.
//   - Reproducible. One seed makes one *rand.Rand (gopter's test parameters), passed explicitly
//     to the generator and to the own shrinking pass; nothing reads the global source or the
//     wall clock for a decision. A seed reproduces a hunt only on the same commit.
//   - Known issues. A divergence between the store and the model that is found and not fixed yet
//     is listed in KnownIssues; hunts avoid its steps unless HuntConfig.IncludeKnownIssues is set,
//     and a test fails once it is fixed, so the entry goes.
//   - Broken variants are replay's: every name in targets.BrokenVariants is hunted (HuntedVariants;
//     notHunted would name one that is not, and why), and none lives
//     behind a flag in actordelivery (they are built in internal/brokenstore).
//
// Besides the properties, its tests hold the contention check (TestContention), which no property
// sequence meets since each runs one store from one goroutine: two writers on one SQLite file
// (the second waits for the writer lock), and on PostgreSQL a store call that meets another
// transaction's row lock (retried a bounded number of times, then ErrBusy) or a serialization
// failure (retried, then committed), each counted exactly in Stats and ordered by barriers.
//
// What the package never does: it never edits a trace it did not make, never keeps a database
// after a sequence ends, and never reports a divergence as an error.
package properties
