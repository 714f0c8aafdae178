// Package gen derives, from the trace format's tables in package traces ([traces.Spec], the
// [traces.Args] and [traces.Result] structs), the files that would otherwise restate them by hand:
//
//   - traces/schema/trace.schema.json, the JSON Schema of the format ([Schema]): the op
//     vocabulary, the dispatch from op to its definition and one definition per op, inserted
//     into a hand-written frame (schema_frame.json) that holds everything not about one op;
//   - replay/args_gen.go ([ReplayArgs]): replay's Args and Observation types and the functions
//     that copy a step's fields between them and traces.Args and traces.Result;
//   - replay/rows_gen.go ([ReplayRows]): replay's Message, ClaimedRow, MessageRow and OutboxRow,
//     the traces records with real tokens, and the copies from them to the traces records; and
//     internal/modeltarget/rows_gen.go ([ModelTargetRows]), the copies the other way;
//   - from the profile choices ([profile.Choices]): profile/profile_gen.go ([ProfileGo]), the
//     Profile type; models/p/PSrc/Profile_gen.p ([PProfile]), the P model's constants for the
//     default profile (pconform profile check writes another profile's into a copy of the
//     project); and the choices table of docs/semantics.md ([SemanticsChoices]), between markers;
//   - from the variant catalogue ([variants.All]): its table in docs/architecture.md
//     ([ArchitectureVariants]) and the target list of internal/targets/doc.go ([TargetsDoc]),
//     both between markers;
//   - from the store's own SQL (actordelivery's sqlite_queries.go and postgres_queries.go):
//     internal/brokenstore/storesql_gen.go ([BrokenstoreSQL]), the text of each of the store's
//     constants per backend, from which brokenstore builds its variants' statements.
//
// Files lists every generated file with its generator. The generators are pure functions of the
// tables, or (BrokenstoreSQL) of the source files they read from the repository root they are
// given; cmd/pconform-gen writes their output (run it with `go generate ./internal/gen`), and
// a test fails when a committed file differs from what its generator makes, so a change to the
// tables that forgets to regenerate cannot land.
//
// What is not generated is derived where it is used: the bridge reads its per-op field list from
// traces.Spec and the field types from the traces structs at run time.
package gen

//go:generate go run ./cmd/pconform-gen -root ../..
