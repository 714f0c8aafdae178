package main

import (
	"fmt"
	"runtime/debug"
	"strings"
)

// version describes the running binary from its build information: the module version, the VCS
// revision it was built from (with "+modified" when the work tree had uncommitted changes) and the
// Go version. `go run` and test binaries carry no VCS stamp; the line then says so.
func version() string {
	info, ok := debug.ReadBuildInfo()
	return describeBuild(info, ok)
}

// describeBuild renders build information as one line; ok is false when the binary carries none.
func describeBuild(info *debug.BuildInfo, ok bool) string {
	if !ok || info == nil {
		return "pconform (no build information)"
	}
	mod := info.Main.Version
	if mod == "" {
		mod = "(devel)"
	}
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	var b strings.Builder
	fmt.Fprintf(&b, "pconform %s", mod)
	switch rev := settings["vcs.revision"]; rev {
	case "":
		b.WriteString(" revision unknown (no VCS stamp: go run, a test binary, or a build outside a git clone)")
	default:
		fmt.Fprintf(&b, " revision %s", rev)
		if settings["vcs.modified"] == "true" {
			b.WriteString("+modified")
		}
		if t := settings["vcs.time"]; t != "" {
			fmt.Fprintf(&b, " (%s)", t)
		}
	}
	if info.GoVersion != "" {
		fmt.Fprintf(&b, " %s", info.GoVersion)
	}
	return b.String()
}
