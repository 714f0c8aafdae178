package suppress

import (
	"go/ast"
	"go/parser"
	"go/token"
	"slices"
	"testing"
)

func TestParse(t *testing.T) {
	tests := []struct {
		text   string
		names  []string
		reason string
		ok     bool
	}{
		{"//pconform:ignore txerr seed bug on purpose", []string{"txerr"}, "seed bug on purpose", true},
		{"//pconform:ignore txerr,unfencedack  both on purpose ", []string{"txerr", "unfencedack"}, "both on purpose", true},
		{"//pconform:ignore txerr", []string{"txerr"}, "", true},
		{"//pconform:ignore", nil, "", true},
		{"//pconform:txcommit", nil, "", false},
		{"// pconform:ignore txerr why", nil, "", false},
	}
	for _, tt := range tests {
		names, reason, ok := Parse(tt.text)
		if ok != tt.ok || reason != tt.reason || !slices.Equal(names, tt.names) {
			t.Errorf("Parse(%q) = %v, %q, %v; want %v, %q, %v", tt.text, names, reason, ok, tt.names, tt.reason, tt.ok)
		}
	}
}

const src = `package p

//pconform:ignore txerr reproduces the seed bug
func whole() {
	a() // line 5
}

func lines() {
	//pconform:ignore txerr next line only
	a() // line 10
	a() // line 11
	a() //pconform:ignore txerr,rawattempts this line
	a() //pconform:ignore txerr
	a() //pconform:ignore rawattempts not for txerr
}

func a() {}
`

func TestFilter(t *testing.T) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "p.go", src, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	var malformed []int
	filter := New(fset, []*ast.File{f}, "txerr", func(c *ast.Comment) {
		malformed = append(malformed, fset.Position(c.Pos()).Line)
	})
	tf := fset.File(f.Pos())
	want := map[int]bool{5: true, 10: true, 11: false, 12: true, 13: false, 14: false, 17: false}
	for line, suppressed := range want {
		pos := tf.LineStart(line) + 1
		if got := filter.Covers(pos); got != suppressed {
			t.Errorf("line %d: Covers = %v, want %v", line, got, suppressed)
		}
	}
	if !slices.Equal(malformed, []int{13}) {
		t.Errorf("malformed directives on lines %v, want [13]", malformed)
	}
}
