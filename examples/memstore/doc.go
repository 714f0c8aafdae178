// Package memstore is the worked example of docs/bring-your-own-store.md: a small in-memory
// mailbox and outbox (store.go) that settles two rules otherwise than docs/semantics.md (a lease
// is live at its end time; an ack deletes the row), its adapter for the conformance kit
// (adapter.go, store-level operations only, with adapter.WithProtocol for the protocol steps), and
// its profile (profile.json).
//
// memstore_test.go runs conformtest under the store's profile, which passes, and shows that under
// the default profile the kit fails and names the rule.
//
// A store with a consumer and publisher of its own should put those under test instead, with
// adapter.WithRuntime: examples/ledgerstore shows how.
//
// The store is not for production: it keeps everything in memory and its "disk" is a byte slice.
package memstore

import (
	"bytes"
	_ "embed"

	"github.com/pconform/pconform/adapter"
)

//go:embed profile.json
var profileFile []byte

// Profile is the store's declared profile, read from profile.json.
func Profile() adapter.Profile {
	p, err := adapter.ReadProfile(bytes.NewReader(profileFile))
	if err != nil {
		// profile.json is part of the package; TestProfileReads keeps it valid.
		panic("memstore: profile.json: " + err.Error())
	}
	return p
}
