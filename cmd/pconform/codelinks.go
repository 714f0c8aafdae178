package main

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/pconform/pconform/internal/codelink"
	"github.com/pconform/pconform/internal/targets"
)

// sourceRoot finds the module's source tree: the first directory up from the working directory
// whose go.mod declares this module, else the tree this binary was built from, when it is still
// there. "" when neither is.
func sourceRoot() string {
	isRoot := func(dir string) bool {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		return err == nil && strings.HasPrefix(string(b), "module github.com/pconform/pconform\n")
	}
	if dir, err := os.Getwd(); err == nil {
		for {
			if isRoot(dir) {
				return dir
			}
			parent := filepath.Dir(dir)
			if parent == dir {
				break
			}
			dir = parent
		}
	}
	if _, file, _, ok := runtime.Caller(0); ok {
		if dir := filepath.Dir(filepath.Dir(filepath.Dir(file))); isRoot(dir) {
			return dir
		}
	}
	return ""
}

// variantCode says, for a page about variant, what its broken check is and where its code lives
// (file:line, relative to the module root). Links that need the sources are left out when the
// sources cannot be found.
func variantCode(variant string) (check string, code []string) {
	if variant == "" {
		return "", nil
	}
	var links []codelink.Link
	if root := sourceRoot(); root != "" {
		links, _ = codelink.Broken(variant, os.DirFS(root))
	} else {
		links, _ = codelink.Broken(variant, nil)
	}
	for _, l := range links {
		code = append(code, l.String()+" ("+l.What+")")
	}
	return targets.Describe(variant), code
}
