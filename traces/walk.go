package traces

import (
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"
)

// Walk lists the trace files under dir: every regular file whose name ends in ".json", in any
// subdirectory, as paths joined onto dir and sorted, so that a corpus directory is walked in the
// same order on every machine. Directories whose names start with "." are skipped.
func Walk(dir string) ([]string, error) {
	var paths []string
	err := filepath.WalkDir(dir, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() {
			if path != dir && strings.HasPrefix(e.Name(), ".") {
				return filepath.SkipDir
			}
			return nil
		}
		if e.Type().IsRegular() && strings.HasSuffix(e.Name(), ".json") {
			paths = append(paths, path)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("traces: walk %s: %w", dir, err)
	}
	sort.Strings(paths)
	return paths, nil
}
