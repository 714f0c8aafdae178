package targets

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/pconform/pconform/actordelivery"
	"github.com/pconform/pconform/traces"
)

// SQLiteTemplate is an empty store database, migrated once, that SQLite store targets start from
// (StoreDB.Template): a target writes a copy of it as its file and opens that, so the migrations'
// DDL runs once per template instead of once per target. The copy is the very file the store
// wrote when it migrated a fresh database (closed, so the write-ahead log is checkpointed into
// it), with the same clock a target starts with: opening it is opening a fresh store that was
// opened and closed once before. The migrations themselves are still run (and checked) by
// NewSQLiteTemplate and by every target made without a template. The zero value is no template.
type SQLiteTemplate struct {
	data []byte
}

// NewSQLiteTemplate migrates a fresh store in a scratch directory under dir and keeps its file in
// memory; the scratch directory is removed before it returns.
func NewSQLiteTemplate(dir string) (*SQLiteTemplate, error) {
	scratch, err := os.MkdirTemp(dir, "pconform-template-")
	if err != nil {
		return nil, fmt.Errorf("targets: sqlite template: %w", err)
	}
	defer func() { _ = os.RemoveAll(scratch) }()
	path := filepath.Join(scratch, "replay.db")
	st, err := actordelivery.Open(path, actordelivery.Options{Clock: actordelivery.NewManualClock(traces.Epoch)})
	if err != nil {
		return nil, fmt.Errorf("targets: sqlite template: %w", err)
	}
	if err := st.Close(); err != nil {
		return nil, fmt.Errorf("targets: sqlite template: close: %w", err)
	}
	// The last connection's close checkpoints the log into the file and deletes it; a log or
	// shared-memory file left behind would mean the file alone is not the whole database.
	for _, suffix := range []string{"-wal", "-shm", "-journal"} {
		if _, err := os.Stat(path + suffix); !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("targets: sqlite template: %s%s is still there after the store closed (%v): the file alone is not the database", path, suffix, err)
		}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("targets: sqlite template: %w", err)
	}
	if len(data) == 0 {
		return nil, fmt.Errorf("targets: sqlite template: %s is empty after migrating", path)
	}
	return &SQLiteTemplate{data: data}, nil
}

// writeTo writes the template's database as path, which must not exist yet.
func (tp *SQLiteTemplate) writeTo(path string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("targets: store target: copying the template: %w", err)
	}
	_, werr := f.Write(tp.data)
	if err := errors.Join(werr, f.Close()); err != nil {
		return fmt.Errorf("targets: store target: copying the template to %s: %w", path, err)
	}
	return nil
}

// WriteTo writes the template's database as path, which must not exist yet: a test that opens
// the store itself (the kit's adapter for actordelivery) starts from a migrated file.
func (tp *SQLiteTemplate) WriteTo(path string) error { return tp.writeTo(path) }
