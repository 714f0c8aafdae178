package traces

import (
	"bytes"
	"encoding/json"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

func compileSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(Schema()))
	if err != nil {
		t.Fatalf("schema is not JSON: %v", err)
	}
	const url = "https://github.com/pconform/pconform/traces/schema/trace.schema.json"
	c := jsonschema.NewCompiler()
	if err := c.AddResource(url, doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile(url)
	if err != nil {
		t.Fatalf("schema does not compile: %v", err)
	}
	return sch
}

func schemaValidate(sch *jsonschema.Schema, data []byte) error {
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return err
	}
	return sch.Validate(inst)
}

// validTraceFiles are the traces every check must accept: the examples and, once the bridge has
// produced it, the corpus.
func validTraceFiles(t *testing.T) []string {
	t.Helper()
	paths := files(t, "testdata/good/*.json")
	if _, err := os.Stat("corpus"); err == nil {
		corpus, err := Walk("corpus")
		if err != nil {
			t.Fatal(err)
		}
		paths = append(paths, corpus...)
	}
	return paths
}

// TestSchemaAcceptsValidTraces: the schema must never be stricter than the parser, so every trace
// the parser accepts (the examples, the corpus and a batch of random traces) must pass it.
func TestSchemaAcceptsValidTraces(t *testing.T) {
	sch := compileSchema(t)
	for _, path := range validTraceFiles(t) {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Unmarshal(data, path); err != nil {
			t.Errorf("parser: %v", err)
		}
		if err := schemaValidate(sch, data); err != nil {
			t.Errorf("schema rejects %s: %v", path, err)
		}
	}
	seed := *seedFlag
	rng := rand.New(rand.NewSource(seed))
	for i := range 300 {
		tr := randomTrace(rng, i)
		data, err := Marshal(tr)
		if err != nil {
			t.Fatalf("seed %d trace #%d: %v", seed, i, err)
		}
		if err := schemaValidate(sch, data); err != nil {
			t.Fatalf("seed %d trace #%d: schema rejects a trace the parser accepts: %v\n%s", seed, i, err, data)
		}
	}
}

// parserOnly lists the bad files that break a rule JSON Schema cannot state, so only the parser
// refuses them. Every other bad file that is well-formed JSON must be refused by both.
var parserOnly = map[string]string{
	"at-decreasing":                          "time order spans steps",
	"expect-diverges-out-of-range":           "the range depends on the number of steps",
	"claim-over-limit":                       "compares a result with an argument's value",
	"claim-token-mismatch":                   "compares array items with each other",
	"result-token-reused":                    "token freshness spans steps",
	"final-attempts-over-max":                "compares two fields' values",
	"final-dead-letter-attempts-over-max":    "compares two fields' values",
	"final-unsorted":                         "row order",
	"final-token-never-issued":               "token binding spans steps",
	"top-duplicate-field":                    "a schema sees the decoded object, where a repeated key has vanished",
	"result-redrive-after-step":              "compares a record's time with its step's",
	"result-redrive-other-id":                "compares a record's id with the step's argument",
	"final-dead-letter-missing-max-attempts": "required unless final.unknown declares it, which ties a row's fields to a sibling list",
	"final-unknown-reported":                 "ties a row's fields to a sibling list (final.unknown)",
	"final-unknown-unsorted":                 "list order",
	"final-dead-letter-v1-mixed":             "compares rows with each other",
}

func TestSchemaRejectsBadFiles(t *testing.T) {
	sch := compileSchema(t)
	for _, path := range files(t, "testdata/bad/*.json") {
		name := strings.TrimSuffix(filepath.Base(path), ".json")
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(name, "syntax-") {
			continue // not JSON, nothing for a schema to judge
		}
		if _, err := Unmarshal(data, path); err == nil {
			t.Errorf("%s: the parser accepts it", name)
		}
		err = schemaValidate(sch, data)
		if why, ok := parserOnly[name]; ok {
			if err == nil {
				continue
			}
			t.Errorf("%s: listed as parser-only (%s) but the schema rejects it too; drop it from parserOnly: %v", name, why, err)
			continue
		}
		if err == nil {
			t.Errorf("%s: the schema accepts a file the parser refuses", name)
		}
	}
	for name := range parserOnly {
		if _, err := os.Stat(filepath.Join("testdata/bad", name+".json")); err != nil {
			t.Errorf("parserOnly names %s, which is not a bad file", name)
		}
	}
}

// TestSchemaAgreesWithSpec reads the schema as plain JSON and checks, op by op, that it allows
// exactly the argument and result fields Spec allows and requires exactly Spec's arguments.
func TestSchemaAgreesWithSpec(t *testing.T) {
	var root map[string]any
	if err := json.Unmarshal(Schema(), &root); err != nil {
		t.Fatal(err)
	}
	defs := obj(t, root, "$defs")
	step := obj(t, defs, "step")

	var enum []string
	for _, v := range obj(t, obj(t, step, "properties"), "op")["enum"].([]any) {
		enum = append(enum, v.(string))
	}
	var ops []string
	for _, op := range Ops {
		ops = append(ops, string(op))
	}
	if !slices.Equal(enum, ops) {
		t.Errorf("schema op enum %v, Ops %v", enum, ops)
	}

	dispatch := map[string]string{}
	for _, e := range step["allOf"].([]any) {
		branch := e.(map[string]any)
		op := obj(t, obj(t, obj(t, branch, "if"), "properties"), "op")["const"].(string)
		dispatch[op] = obj(t, branch, "then")["$ref"].(string)
	}

	for _, op := range Ops {
		sp := Spec[op]
		ref, ok := dispatch[string(op)]
		if want := "#/$defs/op_" + string(op); !ok || ref != want {
			t.Errorf("%s: step dispatches to %q, want %q", op, ref, want)
			continue
		}
		def := obj(t, defs, "op_"+string(op))
		props := obj(t, def, "properties")
		args := resolve(t, defs, obj(t, props, "args"))
		result := resolve(t, defs, obj(t, props, "result"))

		if got, want := keys(args["properties"]), sorted(slices.Concat(sp.Args, sp.OptionalArgs)); !slices.Equal(got, want) {
			t.Errorf("%s: schema args %v, Spec %v", op, got, want)
		}
		if got, want := strs(args["required"]), sorted(sp.Args); !slices.Equal(got, want) {
			t.Errorf("%s: schema requires args %v, Spec %v", op, got, want)
		}
		if got, want := keys(result["properties"]), sorted(sp.Results); !slices.Equal(got, want) {
			t.Errorf("%s: schema results %v, Spec %v", op, got, want)
		}
		if args["additionalProperties"] != false && args["maxProperties"] != float64(0) {
			t.Errorf("%s: schema args admit unknown fields", op)
		}
		if result["additionalProperties"] != false && result["maxProperties"] != float64(0) {
			t.Errorf("%s: schema result admits unknown fields", op)
		}
	}
}

func TestSchemaIsACopy(t *testing.T) {
	a := Schema()
	a[0] = 'x'
	if Schema()[0] != '{' {
		t.Error("Schema returns shared bytes")
	}
	disk, err := os.ReadFile(SchemaPath)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(disk, Schema()) {
		t.Error("embedded schema differs from the file")
	}
}

func obj(t *testing.T, m map[string]any, key string) map[string]any {
	t.Helper()
	v, ok := m[key].(map[string]any)
	if !ok {
		t.Fatalf("schema: %q is not an object", key)
	}
	return v
}

// resolve follows a local "$ref" to a definition, as the ops without arguments use.
func resolve(t *testing.T, defs, s map[string]any) map[string]any {
	t.Helper()
	if ref, ok := s["$ref"].(string); ok {
		return obj(t, defs, strings.TrimPrefix(ref, "#/$defs/"))
	}
	return s
}

func keys(v any) []string {
	m, _ := v.(map[string]any)
	out := []string{}
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func strs(v any) []string {
	out := []string{}
	list, _ := v.([]any)
	for _, x := range list {
		s, _ := x.(string)
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

func sorted(s []string) []string {
	out := append([]string{}, s...)
	sort.Strings(out)
	return out
}
