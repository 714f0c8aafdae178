// Package bridge is everything P-specific in pconform: it runs the P checker on the P models,
// reads the checker's JSON logs, and turns the observations each explored schedule announced into
// traces (package traces), which it keeps as the committed corpus. It is also the P oracle of
// observed histories: it derives the spec events a history raises and runs the spec monitors on
// them (see "The P oracle").
//
// # Usage
//
// [Regenerate] runs the checker on every test case of the P project ([RunChecker]) and writes the
// corpus; [CheckUpToDate] does the same into a temporary directory and reports, wrapping
// [ErrCorpusStale], how the committed corpus differs. The command bridge/cmd/pconform-corpus
// wraps both. [CheckModels] is the gate's models stage (bridge/cmd/pconform-pcheck models, which
// scripts/pmodels.sh runs): it compiles the models, checks every test case with the checker, keeps
// passing runs in a cache and records the runs the corpora are made from (see "The models stage").
// For a single log, [ConvertLogFile] detects the layout and converts every schedule.
// The layers below are usable on their own: [ReadVerboseLog], [ReadBugLog] and [ReadLog] parse
// logs into [Event]s, and [Convert] turns one schedule's events into a trace.
//
// # Contract
//
//   - The observation contract (the eObs* events, their payload fields, the test-case to variant
//     mapping) is the one stated for the P models; the payload fields of eObs<Op> are derived
//     from traces.Spec, so the two cannot drift apart silently.
//   - Strict: a log that is not JSON, is truncated, or has the wrong shape, and an observation
//     with an unknown eObs name or a missing, unexpected or mistyped field, is an error naming the
//     schedule, the entry, the event and the field ([*LogError]). Nothing in this package panics
//     on bad input.
//   - Every trace it returns passes traces.Validate. Announcements of events that are not eObs*
//     and all other log entries are ignored.
//   - A test case that announces a step the trace format has no op for would be [Untraced]
//     (Convert refuses it with [ErrUntraced]); none is now. The batch steps' observations are
//     declared by hand in models/p/PSrc/Observations.p ([HandDeclared]) and decoded by rules of
//     their own (batch.go). Counterexamples of broken model machines are internal/variants'
//     ModelOnlyCounterexamples.
//   - Deterministic: a fixed seed and schedule count give the same traces, names and files on
//     every run; [Regenerate] writes canonical files and a README without timestamps.
//   - The conversion core (the readers, [Convert]) is pure; only [RunChecker], [Regenerate],
//     [CheckUpToDate], [CheckModels], [ModelHash], [ListTests] and [ConvertLogFile] run processes
//     or touch files. It never modifies the P project apart from what `p compile` generates and
//     the checker's output (PGenerated, PCheckerOutput).
//   - Every invocation of the P compiler and checker is in this package: scripts only run its
//     commands (TestOneCompilePath fails on a script that runs `p compile` or `p check`).
//   - A corpus made from recorded runs ([Config.FromRuns]) is byte for byte the corpus a fresh
//     checker run with the asked-for budget gives; the gate's bridge integration test checks this
//     against the real checker on every run.
//
// # The P oracle
//
// [SpecDeriver] maps an observed history, step by step in commit order, to the events of the
// project's spec monitors its results state (pspec.go: the one place that says which). Two
// drivers raise them: [PDriver] writes a trace's events into the P source of a test case, which
// [CheckObserved] and [CheckObservedAll] compile and check; [PStreamDriver] reads them at run time,
// one line each ([AppendSpecLine]), and [Stream] and [StreamChecker] (an observe.Checker, beside
// observe's model oracle) feed it. The generated driver text and the spec lines are part of the
// streaming project's sources, so a change to either changes its cache key ([StreamKey]). Package
// observe keeps the log's reading, ordering and partitioning and the Go model oracle; it knows
// nothing of P.
//
// # Compiling
//
// Every P project is compiled by one path (compile.go): its sources, as a map of file to content,
// are written into a cache directory named by their sha256 ([StreamKey] is the streaming
// oracle's), compiled there once, and renamed into place when the DLL is there. The streaming
// oracle ([CompileStream]) keeps its cache across runs (Config.StreamCache), the profile check's
// copy of the models ([CompileProfile]) and the rule cases ([CheckCases]) in the directory they
// are given, and the observed drivers ([CheckObservedAll]) in a temporary directory, since no
// other run has the same drivers. The models stage ([CheckModels]) keeps the models' compiled
// projects in ModelsConfig.CompileCache, keyed also by `p --version` and the .NET runtimes, and
// copies the one it uses into the project's own PGenerated, where the checker's runs and a person
// replaying a bug find it. [Config.Compile] compiles the project where it lies; it runs the same
// `p compile` (TestOneCompilePath fails on any other).
//
// # The models stage
//
// [CheckModels] requires the test cases the sources declare (`test NAME [main = ...]` at the start
// of a line) to be exactly those `p check --list-tests` lists: a declared test missing, or a listed
// one no source declares (a stale compile), fails the stage. It runs each test by its exact name
// with --fail-on-maxsteps; a counterexample must find a bug within its budget, every other test
// must explore its whole budget without one ([Verdict]). The pure decisions (the declarations, the
// plan of runs, their cache keys, the report) are in modelsplan.go; models.go runs them.
//
// Every run's output is kept in ProjectDir/PCheckerOutput/<test>/: <test>.log (the checker's
// output), rc, cpu (its CPU seconds), result ("schedules bugs seconds" from the test's own
// section of the output), ran (how many tests -tc matched), [RecordedRunFile], key (its cache key,
// only for a run that passed) and the checker's BugFinding/ (the summary; on a bug the readable
// .txt, the .trace.json and the .schedule to replay). Beside them: [RecordedListFile],
// [RecordedVersionFile], compile.key (the compile key PGenerated was made from and its DLL's
// hash) and compile.log. A run that passed is copied into ModelsConfig.RunCache under a key
// made of the compile key and its command line; a run whose key is cached is restored instead of
// run, and a directory that holds its run already is left untouched (its files' ages are inputs
// of the Go tests that read them). A run of every test that passes keeps in the cache only what
// it and the full run before it used; a run of one part ([ModelsConfig.Part]) keeps what its
// own part's last two runs used and what the other part's runs used. With ModelsConfig.Logs it
// records runs in PCheckerOutput/recorded, the layout below: each green test's first
// RecordSchedules schedules again with -v, and each counterexample's verdict run, made with -v.
// The part ModelsRecords makes only those; ModelsVerdicts makes the green tests' verdict runs,
// and leaves the recorded runs as they are.
//
// # Recorded runs
//
// With [Config.FromRuns] the bridge runs no checker: it reads runs recorded earlier, so that the
// gate makes the committed corpus's check and the wide corpus from the runs its models stage
// recorded ([CheckModels] with Logs, scripts/pmodels.sh --logs: each green test case's first
// schedules again with -v, each counterexample's verdict run). The directory holds [RecordedListFile] (`p check --list-tests`),
// [RecordedVersionFile] (`p --version`) and, per test case, a directory named after it with:
//
//   - <test case>.log, the checker's output;
//   - [RecordedRunFile], "key:value" lines test_case, seed, schedules (the -s budget), verbose
//     (1 for -v) and exit (the checker's exit code);
//   - the checker's output directory (-o): the summary, the verbose log and, for a bug, the bug log.
//
// A run stands in for one with the same seed and a budget no larger than its own: the checker's
// random strategy explores the same schedules in the same order for a seed whatever the budget,
// so the first N schedules of a 100-schedule run are what `-s N` explores. Schedules past N are
// counted (against the summary) but not decoded ([ReadVerboseLogPrefix]). A counterexample's
// recorded run stands in when its bug came within the asked-for budget. Runs older than any P
// source of the project are refused.
//
// # Implementation notes
//
// P 3.1 prints a map[string, ...] key as the P value's text, quotes included, so the final
// state's effects map arrives with keys like "\"inbox\""; the converter strips one pair of
// surrounding quotes. `state` is a keyword of P, so snapshot rows spell that field `row_state`
// (the contract's `state` is accepted too, see stateFieldNames).
//
// `p check -tc NAME` matches test cases by prefix and each matched test overwrites the previous
// one's logs, so RunChecker refuses ([ErrAmbiguousTestCase]) a test case whose name is a prefix of
// another's rather than mix two tests' schedules.
//
// Schedules are numbered from 1, as the checker prints them ("Schedule #N"); a counterexample run
// stops at its first buggy schedule, which is the verbose log's last and the one the bug log
// holds. The bridge converts the bug log and checks that both logs announce the same observations.
package bridge
