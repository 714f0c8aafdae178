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
// end time, is held to every profile. The P model's copy (LeaseLive in models/p/PSrc/Rules.p,
// which the Store machine and the spec monitors call) is not evaluated here: it needs a P compile
// per profile. bridge's TestObservedMonitorsTakeTheProfile runs it through the monitors at
// until == now under the default and under lease_at_until "live".
//
// The attempts rule (the attempt a failed delivery counts as: stored on the leased path, stored + 1
// on the leaseless path) has two Go copies, actordelivery.EffectiveAttempts and
// models.CorrectAttempts; the test holds both to the rule on every stored count a fetched message
// can carry. It has no profile choice. Its P copy (EffectiveAttempt in Rules.p) is not evaluated.
//
// The words a step reports (the Action, State and Reason constants) are declared by the store and
// by the trace format. The test pairs every such constant of actordelivery with its traces twin,
// compares their values, and reads both packages' sources so that a word declared on one side only
// fails too.
package rulecopies
