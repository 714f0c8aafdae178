package gen

import (
	"reflect"
	"strings"
	"testing"
)

// TestRecordFieldsRefusesWhatACopyGetsWrong checks that the row generator stops, naming the
// field, on a traces record that a field-by-field copy with one token replaced would get wrong,
// rather than generating a replay record that still carries a symbol.
func TestRecordFieldsRefusesWhatACopyGetsWrong(t *testing.T) {
	type nested struct{ Token int }
	for _, c := range []struct {
		name string
		rec  reflect.Type
		want string // in the error
	}{
		{"no token", reflect.TypeFor[struct{ ID string }](), "no Token field"},
		{"token not a symbol", reflect.TypeFor[struct{ Token string }](), "Token is a string"},
		{"nested record", reflect.TypeFor[struct {
			Token int
			Inner nested
		}](), ".Inner is a struct"},
		{"list", reflect.TypeFor[struct {
			Token int
			IDs   []string
		}](), ".IDs is a slice"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := recordFields(c.rec)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("recordFields = %v, want an error containing %q", err, c.want)
			}
		})
	}
	for _, r := range records {
		if _, err := recordFields(r.trace); err != nil {
			t.Errorf("%s: %v", r.trace, err)
		}
	}
}
