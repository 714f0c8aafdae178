// Package modeltarget is the pure reference model (models) as a [replay.Target]: the oracle the
// conformance kit, the adapter's tests and internal/targets' "model" target all run.
// [StoreOnly] is the same model with store-level operations only: the store a test puts under
// adapter.WithProtocol to hold the kit's reference steps to the model.
//
// # Contract
//
//   - Pure: no I/O, no clock, no global state. It links no database driver, so a store author's
//     test that imports conformtest links neither cgo SQLite nor pgx through it.
//   - Tokens are the model's integer tokens written in decimal; any other token matches nothing.
//   - Reopen changes nothing: the model's state is a value and has nothing to lose.
package modeltarget
