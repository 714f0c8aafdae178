package traces

import (
	"bytes"
	"embed"
)

//go:embed schema/trace.schema.json
var schemaFS embed.FS

// SchemaPath is the schema's path inside the repository, relative to this package.
const SchemaPath = "schema/trace.schema.json"

// Schema returns the JSON Schema (draft 2020-12) of the trace format, for tools outside Go. It
// states the format's shape (fields, types, vocabularies, ranges, which op takes which field);
// rules that span fields or steps (time order, token symbols, snapshot order, diverges_at's range)
// are the parser's alone, so a file the schema accepts may still be refused by [Read], never the
// other way round. Each call returns a fresh copy.
func Schema() []byte {
	b, err := schemaFS.ReadFile(SchemaPath)
	if err != nil {
		// The file is compiled into the binary; failing to read it is a build defect.
		panic("traces: embedded schema missing: " + err.Error())
	}
	return bytes.Clone(b)
}
