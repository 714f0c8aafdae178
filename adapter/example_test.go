package adapter_test

import (
	"fmt"

	"github.com/pconform/pconform/adapter"
	"github.com/pconform/pconform/examples/ledgerstore"
	"github.com/pconform/pconform/examples/memstore"
)

// A store with its own consumer and publisher puts them under test with WithRuntime; a store
// without them takes the kit's reference ones with WithProtocol. OwnersOf says which ran.
func ExampleWithRuntime() {
	st := ledgerstore.New()
	own := adapter.WithRuntime(st, ledgerstore.Profile(), st.Runtime())
	fmt.Println(adapter.OwnersOf(own))

	kit := memstore.NewTarget() // adapter.WithProtocol inside
	fmt.Println(adapter.OwnersOf(kit))
	// Output:
	// consumer: the store's own; publisher: the store's own
	// consumer: the kit's reference (adapter.WithProtocol); publisher: the kit's reference (adapter.WithProtocol)
}
