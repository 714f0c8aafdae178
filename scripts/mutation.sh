#!/usr/bin/env bash
# The mutation stage, outside the default gate: how many mutants of actordelivery the rest of the
# gate kills on its own, with actordelivery's own unit tests excluded.
#
#   scripts/mutation.sh                 # the SQL-bearing files of actordelivery
#   scripts/mutation.sh FILE...         # only these files of actordelivery (e.g. mailbox.go)
#
# gremlins (github.com/go-gremlins/gremlins, installed into the git-ignored .tools/bin from the
# module mirror, never into go.mod) mutates one operator of actordelivery at a time (conditionals
# boundary and negation, arithmetic, increment/decrement, inverted negatives) and runs "the tests"
# for each mutant. Here "the tests" are not actordelivery's: gremlins runs `go test` through a
# stand-in `go` on its PATH (written below) that replaces every `go test` with the oracle:
#
#   1. the analyzers: `go vet -vettool=pconform-vet ./actordelivery` on the mutated source;
#   2. replay: the committed corpus against the store, the store reopened before every step and
#      the model (TestCorpus), and the hand-written traces (TestSymbolPathsAgree);
#   3. properties: the stateful property test against the store with its fencing probes
#      (TestPropertyStore, PCONFORM_SEQUENCES sequences, default 100 here) and the probe tests
#      (TestFencingProbes).
#
# A mutant is KILLED when the oracle fails, LIVED when it passes, NOT COVERED when no oracle test
# runs its line (coverage is gathered from the oracle alone, -coverpkg=actordelivery), TIMED OUT
# when the oracle runs past gremlins' limit. Efficacy = killed / (killed + lived); NOT COVERED
# mutants count against mutant coverage, not efficacy. Results: out/mutation/ (gremlins' JSON
# report and log). Runs on SQLite only (no PCONFORM_PG_DSN is passed to the oracle).
#
# Environment (all optional):
#   PCONFORM_SEQUENCES            property sequences per mutant            (default 100)
#   PCONFORM_MUTATION_WORKERS     mutants tested in parallel               (default 1)
#   PCONFORM_MUTATION_TIMEOUT     gremlins' --timeout-coefficient          (default 3)
set -euo pipefail
# shellcheck source=scripts/env.sh
. "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$PCONFORM_ROOT"

GREMLINS_VERSION=v0.6.0
bin=$PCONFORM_TOOLS/bin
mkdir -p "$bin"
# The module proxy's build carries no version stamp (`gremlins --version` says "dev"), so a stamp
# file beside it says which version was installed.
if [ ! -x "$bin/gremlins" ] || [ "$(cat "$bin/.gremlins-version" 2>/dev/null)" != "$GREMLINS_VERSION" ]; then
  echo "mutation: installing gremlins $GREMLINS_VERSION into .tools/bin"
  GOBIN=$bin go install "github.com/go-gremlins/gremlins/cmd/gremlins@$GREMLINS_VERSION"
  echo "$GREMLINS_VERSION" >"$bin/.gremlins-version"
fi

# The SQL-bearing files: those that hold, build or run the store's statements.
default_files=(backend.go checkpoint.go mailbox.go outbox.go postgres.go postgres_queries.go recorder.go retention.go sqlite_queries.go store.go)
files=("${default_files[@]}")
if [ $# -gt 0 ]; then files=("$@"); fi
for f in "${files[@]}"; do
  if [ ! -f "actordelivery/$f" ]; then
    echo "mutation: actordelivery/$f does not exist" >&2
    exit 2
  fi
done

out=$PCONFORM_ROOT/out/mutation
mkdir -p "$out"
work=$(mktemp -d "${TMPDIR:-/tmp}/pconform-mutation-XXXXXX")
trap 'rm -rf "$work"' EXIT

# A copy of the tracked files as they are in the work tree: gremlins copies the whole module once
# per worker, and the git-ignored outputs (out/, the P checker's) need not come along.
mkdir -p "$work/src"
git ls-files -z | xargs -0 cp --parents -t "$work/src"
# The analyzers are built once, from the unmutated source (they do not import actordelivery).
go build -o "$work/pconform-vet" ./cmd/pconform-vet

# The stand-in `go`: anything but `go test` goes to the real go command; `go test` runs the
# oracle from the module root of the copy it is called in (gremlins' package argument is ignored,
# its -timeout and -coverprofile kept).
real_go=$(command -v go)
module=$(go list -m)
mkdir -p "$work/shim"
cat >"$work/shim/go" <<EOF
#!/usr/bin/env bash
set -uo pipefail
real=$real_go
if [ "\${1:-}" != test ]; then exec "\$real" "\$@"; fi
shift
timeout=() cover=()
while [ \$# -gt 0 ]; do
  case \$1 in
    -timeout) timeout=(-timeout "\$2"); shift 2 ;;
    -coverprofile) cover=(-coverpkg $module/actordelivery -coverprofile "\$2"); shift 2 ;;
    -tags|-coverpkg) shift 2 ;;
    *) shift ;;
  esac
done
root=\$("\$real" env GOMOD); root=\${root%/go.mod}
cd "\$root" || exit 3
if [ \${#cover[@]} -eq 0 ]; then
  "\$real" vet -vettool=$work/pconform-vet ./actordelivery >/dev/null 2>&1 || exit 1
fi
PCONFORM_SEQUENCES=\${PCONFORM_SEQUENCES:-100} PCONFORM_PG_DSN= "\$real" test -count=1 -failfast "\${timeout[@]}" "\${cover[@]}" \\
  -run '^(TestCorpus|TestSymbolPathsAgree|TestPropertyStore|TestFencingProbes)\$' ./replay ./properties >/dev/null 2>&1
EOF
chmod +x "$work/shim/go"

# Everything in actordelivery but the chosen files is excluded from mutation.
exclude=()
for f in actordelivery/*.go; do
  base=${f#actordelivery/}
  case " ${files[*]} " in *" $base "*) ;; *) exclude+=(--exclude-files "^${base//./\\.}\$") ;; esac
done

cd "$work/src"
echo "mutation: gremlins over actordelivery (${files[*]}), oracle: analyzers, replay, properties (actordelivery's unit tests excluded)"
start=$(date +%s)
PATH="$work/shim:$PATH" "$bin/gremlins" unleash ./actordelivery \
  --workers "${PCONFORM_MUTATION_WORKERS:-1}" --timeout-coefficient "${PCONFORM_MUTATION_TIMEOUT:-3}" \
  --output "$out/report.json" "${exclude[@]}" 2>&1 | tee "$out/gremlins.log"
echo "mutation: done in $(($(date +%s) - start))s; report in out/mutation/report.json, log in out/mutation/gremlins.log"
