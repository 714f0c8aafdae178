#!/usr/bin/env bash
# Runs bench/peer: the store's batch scenarios beside goqite's, in one run, on SQLite with
# synchronous=FULL (docs/performance.md, "Beside goqite"). goqite is not a dependency of the
# project, so bring its source: a checkout of goqite v0.4.0 (its Go package and schema are all
# that is used). The script copies the package, its internal/sql and schema_sqlite.sql into
# bench/peer/goqite (git-ignored) with a go.mod of its own that needs only the SQLite driver the
# store uses, then runs the benchmark.
#
#   bash scripts/peer-bench.sh GOQITE_SOURCE_DIR [go test flags...]
#
# The default flags: -benchtime 10000x -count 3 (about 3 minutes on an idle 2-core machine).
set -euo pipefail
src=${1:?usage: scripts/peer-bench.sh GOQITE_SOURCE_DIR [go test flags...]}
shift
src=$(cd "$src" && pwd)
cd "$(dirname "$0")/.."
. scripts/env.sh
for f in goqite.go schema_sqlite.sql internal/sql; do
  [ -e "$src/$f" ] || { echo "peer-bench: $src/$f not found: is $src goqite's source?" >&2; exit 2; }
done
dst=bench/peer/goqite
rm -rf "$dst"
mkdir -p "$dst/internal"
cp "$src/goqite.go" "$src/schema_sqlite.sql" "$dst/"
cp -r "$src/internal/sql" "$dst/internal/"
find "$dst" -name '*_test.go' -delete
sqlite=$(go list -m -f '{{.Version}}' github.com/mattn/go-sqlite3)
printf 'module maragu.dev/goqite\n\ngo 1.24.0\n\nrequire github.com/mattn/go-sqlite3 %s\n' "$sqlite" >"$dst/go.mod"
flags=("$@")
[ ${#flags[@]} -gt 0 ] || flags=(-benchtime 10000x -count 3)
cd bench/peer
go test -run '^$' -bench Peer "${flags[@]}" .
