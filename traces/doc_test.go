package traces

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

const (
	docPath     = "../docs/trace-format.md"
	docTableBeg = "<!-- BEGIN ops table: generated from traces.Spec by `go test ./traces -run TestDocOpsTable -update` -->\n"
	docTableEnd = "<!-- END ops table -->\n"
)

// opsTable renders Spec as the Markdown table docs/trace-format.md shows.
func opsTable() string {
	var b strings.Builder
	b.WriteString("| op | kind | required args | optional args | results |\n|---|---|---|---|---|\n")
	list := func(names []string) string {
		if len(names) == 0 {
			return "—"
		}
		return "`" + strings.Join(names, "`, `") + "`"
	}
	for _, op := range Ops {
		sp := Spec[op]
		kind := "store"
		if sp.Protocol {
			kind = "protocol"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s |\n", op, kind, list(sp.Args), list(sp.OptionalArgs), list(sp.Results))
	}
	return b.String()
}

// TestDocOpsTable keeps the operations table in docs/trace-format.md equal to Spec.
func TestDocOpsTable(t *testing.T) {
	doc, err := os.ReadFile(docPath)
	if err != nil {
		t.Fatal(err)
	}
	text := string(doc)
	beg := strings.Index(text, docTableBeg)
	end := strings.Index(text, docTableEnd)
	if beg < 0 || end < beg {
		t.Fatalf("%s lacks the generated-table markers", docPath)
	}
	beg += len(docTableBeg)
	want := opsTable()
	if got := text[beg:end]; got != want {
		if *update {
			if err := os.WriteFile(docPath, []byte(text[:beg]+want+text[end:]), 0o644); err != nil {
				t.Fatal(err)
			}
			return
		}
		t.Errorf("the ops table in %s does not match Spec (go test ./traces -run TestDocOpsTable -update rewrites it)\n--- doc\n%s--- Spec\n%s", docPath, got, want)
	}
}

// TestDocExamplesAreReal checks that the example files the doc names exist and that the trace it
// quotes in full is byte-identical to the example file.
func TestDocExamplesAreReal(t *testing.T) {
	doc, err := os.ReadFile(docPath)
	if err != nil {
		t.Fatal(err)
	}
	text := string(doc)
	for _, path := range files(t, "testdata/good/*.json") {
		if !strings.Contains(text, "traces/"+path) {
			t.Errorf("%s does not mention the example traces/%s", docPath, path)
		}
	}
	const quoted = "testdata/good/outbox-split-crash-redelivery.json"
	example, err := os.ReadFile(quoted)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text, "```json\n"+string(example)+"```\n") {
		t.Errorf("%s does not quote %s verbatim", docPath, quoted)
	}
}
