// Package rulecopies holds the cross-check of the rules the project states in more than one
// place. It has no code of its own: its test evaluates every copy of a rule on the rule's boundary
// cases under every shipped profile (profiles/*.json and the default) and fails on the first copy
// that disagrees with the rule's Go statement, naming the copy, the profile and the case.
//
// The lease-live rule (profile.Profile.Held) has these copies: the Go reference model
// (models), the spec deriver's sweep (bridge/pspec.go), the store's SQL on SQLite and, when
// PCONFORM_PG_DSN names a server, on PostgreSQL (actordelivery's sqlite_queries.go and
// postgres_queries.go: a lease's own eligibility, a keyed head's blocking, expire()), and
// brokenstore's copy of those statements with the rule as the profile has it. The store states
// the default profile's rule only, so its SQL is held to the profiles whose lease_at_until is the
// default; brokenstore's copy, with LeaseInclusive set where the profile keeps a lease live at its
// end time, is held to every profile. The P model's copies are held to it too (see below).
//
// The attempts rule (the attempt a failed delivery counts as: stored on the leased path, stored + 1
// on the leaseless path) has two Go copies, actordelivery.EffectiveAttempts and
// models.CorrectAttempts; the test holds both to the rule on every stored count a fetched message
// can carry. It has no profile choice. Its P copy is held to actordelivery.EffectiveAttempts.
//
// The P model's copies are evaluated by TestPRuleCopiesAgree, in the gate's efficacy tier (the
// toolkit stage; -short or a missing P tool skips it). Per profile it writes one P test case per
// case, asserting the value the Go statement gives there, compiles them with the P model (its
// rules, its Store machine and its spec monitors) through bridge.CheckCases (one compile per
// profile, kept in the user's cache directory under the sources' hash) and runs them in one
// checker run. The copies: LeaseLive, ClaimLive and LeaseEnds in models/p/PSrc/Rules.p against
// profile.Profile.Held; BlocksSuccessor, with its exhausted_leased_head choice, against the
// reference model's peek behind a keyed head; EffectiveAttempt on the Leased and Leaseless
// profiles against actordelivery.EffectiveAttempts;
// and the two monitors that judge leases by these functions, SameKeyClaimsRespectLiveHead and
// DeadLetterSparesLiveLeases (models/p/PSpec/Consumer.p), fed spec events that put a lease at its
// boundary. The Store machine calls the same functions, so it keeps no copy of them. The
// functions' bug arguments (BlocksSuccessor's fifo-overtake variant, EffectiveAttempt's broken
// consumer profiles) differ from the rules on purpose and are not held to them.
//
// The consumer decision (a success is acked; a failure at the effective attempt max_attempts is
// dead-lettered with the profile's reason_max_attempts; below it the retry policy retries, after a
// delay never negative, or declines, and the handler's error is the reason) has no Go statement of
// its own: the test states it (decide) and runs every copy through its entry point. The copies:
// the store's decide on SQLite and, with PCONFORM_PG_DSN, PostgreSQL (Consumer.Handle and the
// batch path, Consumer.HandleBatch); brokenstore's handles, which decide some failures themselves
// (raw-attempts must differ on every leaseless failure, the others must agree, as their bugs need a
// lease lost between fetch and handle); the reference model (models.RunTrace, single and batch);
// the spec deriver's dead-letter reason (bridge/pspec.go and pspecbatch.go); the kit's reference
// consumer (adapter.WithProtocol over the model's store operations); and examples/ledgerstore's
// own consumer. In these cases a trace's failing handler fails with ReasonHandlerFailed (a step
// may state the handler's own text, which the copies pass through as the reason) and its retry
// delay is never negative, so the copies that run traces are held to the cases a trace can state;
// the store's copies, which write ReasonMaxAttempts, to the profiles with the default wording. The
// P copy, the Store machine's HandleFetched in models/p/PSrc/Store.p (the single and the batch
// handle's decision), is held to it by TestPRuleCopiesAgree on the cases a trace can state: each
// case is a P test that creates a Store, brings m to the case's stored attempts through the
// store's own requests (lease and nack, or nack_by_id), fetches it on the case's path, announces
// the verdict to a probe monitor and handles m; the probe refuses another action or attempt, dead
// letter or retry delay. The P corpora replayed on the reference model (replay's TestCorpus,
// conformtest's TestProfileCorpora) check the two models against each other as well.
//
// The words a step reports (the Action, State and Reason constants) are declared by the store and
// by the trace format. The test pairs every such constant of actordelivery with its traces twin,
// compares their values, and reads both packages' sources so that a word declared on one side only
// fails too.
//
// The records the store returns (Message, OutboxRow, DeadLetter, Redrive) have twins in the trace
// format (MessageRow, OutboxRow, DeadLetterRow, RedriveRecord). The test pairs every exported field
// by name, or by a listed rename, and fails naming a field that one side lacks or whose type does
// not map (time.Time to int64 seconds, []byte to string, a token string to its symbol). Fields the
// store keeps on purpose are listed with why.
package rulecopies
