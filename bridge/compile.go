package bridge

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sort"
)

// The one compile path. Every P project pconform compiles goes through compileCached (the
// streaming oracle's, the observed drivers', a profile's copy of the models, the models stage's)
// or, for a project compiled where it lies, through RunChecker's Config.Compile; both run
// `p compile` in pCompile and nowhere else (TestOneCompilePath holds the repository to it).

// compileJob is a P project to compile from its sources.
type compileJob struct {
	// Cache is the directory of compiled projects; each is kept in Cache/<key>, key the hash of
	// Format and Files (compileKey). It is made when missing.
	Cache string
	// Format changes when the layout of the projects a caller writes changes, so that a cache
	// made by an older layout is not reused.
	Format string
	// Project is the <ProjectName> of the .pproj among Files: it names the DLL.
	Project string
	// Files are the project's sources: slash-separated path relative to the project, to content.
	Files map[string][]byte
	// What names the project in errors ("the streaming P oracle").
	What string
	// Compiling, when not nil, is called with the directory a compile is about to run in (the
	// cache had no project of these sources): a compile takes about a minute.
	Compiling func(dir string)
	// Log, when not "", receives the compiler's whole output, whether it failed or not: the
	// error wraps only its last lines, and a type error may be further up.
	Log string
}

// compiledDLL is where `p compile` puts the DLL of project in dir.
func compiledDLL(dir, project string) string {
	return filepath.Join(dir, "PGenerated", "PChecker", "net8.0", project+".dll")
}

// compileKey is the cache key of a project's sources: the sha256 of format, then of each file's
// name, length and content in name order, as 24 hex digits.
func compileKey(format string, files map[string][]byte) string {
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00", format)
	for _, n := range names {
		fmt.Fprintf(h, "%s\x00%d\x00", n, len(files[n]))
		h.Write(files[n])
	}
	return hex.EncodeToString(h.Sum(nil))[:24]
}

// compileCached returns the directory of job's compiled project and its DLL, compiling it when
// job.Cache has none for its sources' key. compiled says whether it compiled. A compile runs in a
// temporary directory of the cache that is renamed into place once the DLL is there, so a
// concurrent caller never sees half a project and a failed compile leaves nothing behind.
func compileCached(ctx context.Context, cfg Config, job compileJob) (dir, dll string, compiled bool, err error) {
	dir = filepath.Join(job.Cache, compileKey(job.Format, job.Files))
	if _, err := os.Stat(compiledDLL(dir, job.Project)); err == nil {
		return dir, compiledDLL(dir, job.Project), false, nil
	}
	if err := os.MkdirAll(job.Cache, 0o755); err != nil {
		return "", "", false, fmt.Errorf("bridge: cache of %s: %w", job.What, err)
	}
	tmp, err := os.MkdirTemp(job.Cache, "compiling-")
	if err != nil {
		return "", "", false, fmt.Errorf("bridge: cache of %s: %w", job.What, err)
	}
	defer os.RemoveAll(tmp)
	for rel, data := range job.Files {
		p := filepath.Join(tmp, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return "", "", false, err
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			return "", "", false, err
		}
	}
	if job.Compiling != nil {
		job.Compiling(tmp)
	}
	out, err := pCompile(ctx, cfg, tmp, job.What)
	if job.Log != "" && out != nil {
		if werr := os.WriteFile(job.Log, out, 0o644); werr != nil && err == nil {
			err = fmt.Errorf("bridge: compiler output of %s: %w", job.What, werr)
		}
	}
	if err != nil {
		return "", "", false, err
	}
	if _, err := os.Stat(compiledDLL(tmp, job.Project)); err != nil {
		return "", "", false, fmt.Errorf("bridge: p compile of %s wrote no %s: %w", job.What, job.Project+".dll", err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		// Another process put the same project in place first: use it.
		if _, serr := os.Stat(compiledDLL(dir, job.Project)); serr != nil {
			return "", "", false, fmt.Errorf("bridge: cache of %s: %w", job.What, err)
		}
	}
	return dir, compiledDLL(dir, job.Project), true, nil
}

// pCompile runs `p compile` in the P project dir, the only place pconform does, and returns the
// compiler's output. Errors wrap [ErrChecker] and end with the compiler's last lines.
func pCompile(ctx context.Context, cfg Config, dir, what string) ([]byte, error) {
	cfg.ProjectDir = dir
	out, code, err := runP(ctx, cfg, "compile")
	if err != nil {
		return nil, err
	}
	if code != 0 {
		return out, fmt.Errorf("bridge: %w: p compile of %s exited %d:\n%s", ErrChecker, what, code, tail(out, 40))
	}
	return out, nil
}
