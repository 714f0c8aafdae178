package targets

import (
	"reflect"
	"runtime"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/pconform/pconform/internal/variants"
)

// TestBuildsMatchCatalogue keeps builds and internal/variants in step: one build per row, and
// each row's brokenstore part is the one its build installs.
func TestBuildsMatchCatalogue(t *testing.T) {
	all := builds()
	var keys []string
	for k := range all {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	want := variants.Names()
	sort.Strings(want)
	if !slices.Equal(keys, want) {
		t.Fatalf("builds has %q, the catalogue %q", keys, want)
	}
	for _, r := range variants.All() {
		if got := partOf(all[r.Name]); got != r.Part {
			t.Errorf("%s: the catalogue names part %q, its build installs %q", r.Name, r.Part, got)
		}
		if (all[r.Name].model != nil) != (strings.HasPrefix(r.Name, Model) || r.OnModel) {
			t.Errorf("%s: a model build should be exactly a model-named target", r.Name)
		}
	}
}

// partOf names the brokenstore part a build installs, in the catalogue's spelling.
func partOf(b build) string {
	var parts []string
	if r := b.store.rules; r != nil {
		v := reflect.ValueOf(*r)
		set := []string{}
		for i := range v.NumField() {
			if !v.Field(i).IsZero() {
				set = append(set, "Rules."+v.Type().Field(i).Name)
			}
		}
		if len(set) == 0 {
			set = []string{"Rules"}
		}
		parts = append(parts, set...)
	}
	for _, f := range []any{b.store.handle, b.store.deliverSplit, b.store.handleBatch} {
		if v := reflect.ValueOf(f); !v.IsNil() {
			name := runtime.FuncForPC(v.Pointer()).Name()
			parts = append(parts, name[strings.LastIndex(name, ".")+1:])
		}
	}
	return strings.Join(parts, "+")
}
