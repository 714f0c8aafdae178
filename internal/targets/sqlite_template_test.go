package targets

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/pconform/pconform/replay"
	"github.com/pconform/pconform/traces"
)

// dumpSQLite lists what a database file holds apart from its rows' data pages: every schema
// object with its SQL, the schema_version rows, and the header settings a store relies on.
func dumpSQLite(t *testing.T, path string) []string {
	t.Helper()
	db, err := sql.Open("sqlite3", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var out []string
	query := func(q string) {
		rows, err := db.Query(q)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		defer rows.Close()
		cols, _ := rows.Columns()
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			out = append(out, fmt.Sprintf("%s: %v", q, vals))
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
	}
	query(`SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY type, name`)
	query(`SELECT * FROM schema_version ORDER BY version`)
	for _, p := range []string{"journal_mode", "user_version", "page_size", "auto_vacuum", "encoding"} {
		query("PRAGMA " + p)
	}
	return out
}

// TestTemplateIsAFreshStore: a store target started from the template is the store a fresh
// migration makes (the same schema objects, schema versions, journal mode and header settings),
// and a trace replays on it to the same verdict and final state as on a freshly migrated one.
func TestTemplateIsAFreshStore(t *testing.T) {
	tp, err := NewSQLiteTemplate(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	tr, err := traces.ReadFile(filepath.Join("..", "..", "traces", "corpus", "tcRawStoreOps-s1-1-ok.json"))
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		verdict string
		final   replay.Snapshot
		dump    []string
	}
	run := func(db StoreDB) result {
		tg, err := NewOn(Store, db)
		if err != nil {
			t.Fatal(err)
		}
		v, err := replay.Run(context.Background(), tr, tg, replay.Options{})
		if err != nil {
			t.Fatal(err)
		}
		snap, err := tg.Snapshot(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if err := tg.Close(); err != nil {
			t.Fatal(err)
		}
		return result{verdict: v.String(), final: snap, dump: dumpSQLite(t, filepath.Join(db.Dir, "replay.db"))}
	}
	fresh := run(StoreDB{Dir: t.TempDir()})
	copied := run(StoreDB{Dir: t.TempDir(), Template: tp})
	if !strings.Contains(fresh.verdict, ": match (") {
		t.Errorf("the fresh store's verdict on %s is %q, want a match", tr.Name, fresh.verdict)
	}
	if diff := cmp.Diff(fresh, copied, cmp.AllowUnexported(result{})); diff != "" {
		t.Errorf("a store started from the template differs from a freshly migrated one (-fresh +template):\n%s", diff)
	}
	if len(fresh.dump) < 10 {
		t.Errorf("the dump of the store's file has %d lines, too few to compare anything:\n%s", len(fresh.dump), strings.Join(fresh.dump, "\n"))
	}
}

// TestTemplateErrors: a template that is not a database is refused with an error naming the
// file, and a template is never written over an existing file.
func TestTemplateErrors(t *testing.T) {
	dir := t.TempDir()
	bad := &SQLiteTemplate{data: []byte("not a database")}
	if _, err := NewOn(Store, StoreDB{Dir: dir, Template: bad}); err == nil || !strings.Contains(err.Error(), "replay.db") {
		t.Errorf("a template that is no database: err = %v, want an error naming the file", err)
	}
	if err := bad.writeTo(filepath.Join(dir, "replay.db")); err == nil || !errors.Is(err, fs.ErrExist) {
		t.Errorf("writing a template over an existing file: err = %v, want it refused as existing", err)
	}
	if _, err := NewSQLiteTemplate(filepath.Join(dir, "no", "such", "dir")); err == nil {
		t.Errorf("a template in a missing directory: no error")
	}
}
