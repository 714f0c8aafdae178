package variants_test

import (
	"fmt"
	"os"

	"github.com/pconform/pconform/internal/variants"
)

// ExampleLocate prints where the rule a variant breaks lives, as `pconform explain` can.
func ExampleLocate() {
	r, _ := variants.Lookup(variants.StaleExtend)
	loc, err := variants.Locate(os.DirFS("../.."), r.SQLSymbol())
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(r.Name, "breaks", r.SQL, "in", loc[:len("actordelivery/")])
	// Output: stale-extend breaks qExtend in actordelivery/
}
