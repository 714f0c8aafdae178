#!/usr/bin/env bash
# The mutation stage, outside the default gate: how many mutants of actordelivery the rest of the
# gate kills on its own, with actordelivery's own unit tests excluded.
#
#   scripts/mutation.sh                 # the SQL-bearing files of actordelivery
#   scripts/mutation.sh FILE...         # only these files of actordelivery (e.g. mailbox.go)
#   scripts/mutation.sh --summary [LOG] # the per-file table of a run's log (default
#                                       # out/mutation/gremlins.log; a stopped run's log too)
#   scripts/mutation.sh --hand [SEEDS [NAME...]]  # the hand-written mutants of scripts/mutants/
#                                       # (*.patch, or only NAME.patch), each under seeds
#                                       # 1..SEEDS (default 10), observe included
#
# gremlins (github.com/go-gremlins/gremlins, installed into the git-ignored .tools/bin from the
# module mirror, never into go.mod) mutates one operator of actordelivery at a time (conditionals
# boundary and negation, arithmetic, increment/decrement, inverted negatives) and runs "the tests"
# for each mutant. Here "the tests" are not actordelivery's: gremlins runs `go test` through a
# stand-in `go` on its PATH (written below) that replaces every `go test` with the oracle, cheapest
# first, stopping at the first that fails:
#
#   0. (not an oracle) `go build ./actordelivery`: a mutant that does not compile is NOT VIABLE;
#   1. the analyzers: `go vet -vettool=pconform-vet ./actordelivery` on the mutated source;
#   2. properties: the probe test (TestFencingProbes), the contention check (TestContention: two
#      writers on one SQLite file, and on PostgreSQL a call that meets a held row lock or a
#      serialization failure, each counted exactly), the row-lock races on PostgreSQL
#      (TestRowLockRaces: workers racing for one head, a fetch and a claim beside a held head, a
#      decision read racing a nack), the drain of a stopped worker group checked from its recorded
#      history (TestShutdownDrain), the wake-up after its commit, local and by NOTIFY
#      (TestWakeAfterCommit), then the stateful property test against the
#      store with its fencing probes, on SQLite and on PostgreSQL (TestPropertyStore,
#      TestPropertyStorePostgres, PCONFORM_SEQUENCES sequences, default 200 as in the gate, seed 1);
#   3. replay: the hand-written traces (TestSymbolPathsAgree, SQLite), then every committed trace
#      against a SQLite store that records, its recorded history read back, required complete and
#      checked by the Go model (TestRecordedHistory), then the committed corpus against the store
#      on both backends, the store reopened before every step and the model (TestCorpus);
#   4. with --hand only: `pconform observe` (the gate's observe stage) on SQLite and PostgreSQL,
#      with and without --kill, under the mutant's seed.
#
# The hand-written mutants (scripts/mutants/*.patch, one realistic bug each, named
# <class>-<what>.patch) are the classes operator mutants cannot write: a row lock dropped, a wake
# sent early, a worker that fetches after stop. --hand applies each to a copy of the source and
# runs the oracle above once per seed (PCONFORM_SEED, the properties' and observe's seed); its
# table says in how many seeds a non-unit layer killed the mutant, and which layer.
#
# A mutant is KILLED when the oracle fails, LIVED when it passes, NOT COVERED when no oracle test
# runs its line (coverage is gathered from the oracle alone, -coverpkg=actordelivery), TIMED OUT
# when the oracle runs past gremlins' limit, NOT VIABLE when it does not build. Efficacy =
# killed / (killed + lived); NOT COVERED mutants count against mutant coverage, not efficacy.
# Results: out/mutation/ (gremlins' JSON report and log, and oracle.log: per mutant the changed
# lines, the verdict, the oracle that decided it and the seconds of each phase).
#
# Both backends: the run starts one throwaway PostgreSQL cluster (scripts/pg.sh's pg_start, or
# uses the server PCONFORM_PG_DSN names) and stops it at the end, also on failure; the oracle's
# tests get its DSN, so the PostgreSQL files are covered and mutated too. Workers never meet on
# the server: every oracle run's test binaries work in schemas of their own with random names
# (replay.OpenPGServer, TestContention), dropped when the binary ends. No server is a failure.
#
# Environment (all optional):
#   PCONFORM_SEQUENCES            property sequences per mutant            (default 200)
#   PCONFORM_MUTATION_WORKERS     mutants tested in parallel               (default 1)
#   PCONFORM_MUTATION_TIMEOUT     gremlins' --timeout-coefficient          (default 30)
#
# gremlins gives each mutant the time of its coverage pass (one `go test` of the oracle's tests,
# about 17 s to 40 s) times the coefficient. A mutant's oracle run builds actordelivery and up to
# two test binaries first, so under load one run takes several times the coverage pass: with the
# coefficient 3 one run over seven files timed out 34 mutants, none of them decided. A mutant that
# really hangs still times out, after 30 times the coverage pass.
#   PCONFORM_MUTATION_TMP         where the oracle's SQLite files go       (default /dev/shm if writable)
#   PCONFORM_MUTATION_PART_TIMEOUT seconds one oracle part's test binary may run (default 600)
#
# A hang is a failure the oracle saw (a mutant that returns before closing a query's rows keeps a
# reader connection, and the next read waits for one forever), but gremlins would count it as
# TIMED OUT only after its own limit. So each oracle part's test binary (properties, replay) runs
# with its own -test.timeout: past it the binary panics, the mutant is KILLED, and oracle.log's
# line ends "-- oracle part P timed out after Ns in TestX". The default, 600 s, is over four times
# gremlins' coverage pass of the whole oracle on both backends under load (143 s, both test
# binaries built with coverage and all six tests run) and seven times the longest part measured
# on SQLite alone (replay 82.8 s; docs/notes/2026-12-01-gate-history.md), so a slow but correct run is never cut short; and
# far below gremlins' limit (the coverage pass times the coefficient 30).
set -euo pipefail
# shellcheck source=scripts/env.sh
. "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$PCONFORM_ROOT"

# summary prints, per file, the verdicts of gremlins' log lines ("KILLED CONDITIONALS_BOUNDARY at
# mailbox.go:313:127") and the efficacy, killed / (killed + lived).
summary() {
  awk '
    $NF ~ /\.go:[0-9]+:[0-9]+$/ && $(NF-1) == "at" {
      status = $1; if ($1 == "NOT" || $1 == "TIMED") status = $1 " " $2
      split($NF, pos, ":"); f = pos[1]; files[f] = 1; n[f, status]++; n["all", status]++
    }
    function row(f, k, l) {
      k = n[f, "KILLED"] + 0; l = n[f, "LIVED"] + 0
      printf "| %s | %d | %d | %d | %d | %d | %s |\n", f, k, l, n[f, "TIMED OUT"] + 0, n[f, "NOT COVERED"] + 0,
        n[f, "NOT VIABLE"] + 0, (k + l > 0 ? sprintf("%.0f%% (%d / %d)", 100 * k / (k + l), k, k + l) : "-")
    }
    END {
      print "| file | killed | lived | timed out | not covered | not viable | efficacy |"
      print "|---|---:|---:|---:|---:|---:|---:|"
      m = 0; for (f in files) list[++m] = f
      for (i = 2; i <= m; i++) for (j = i; j > 1 && list[j] < list[j-1]; j--) { t = list[j]; list[j] = list[j-1]; list[j-1] = t }
      for (i = 1; i <= m; i++) row(list[i])
      row("all")
    }' "$1"
}
hand=0 seeds=10 names=()
if [ "${1:-}" = --hand ]; then
  hand=1 seeds=${2:-10}
  case $seeds in '' | *[!0-9]* | 0) echo "mutation: --hand SEEDS must be a whole number >= 1, got '$seeds'" >&2; exit 2 ;; esac
  names=("${@:3}")
  set --
fi
if [ "${1:-}" = --summary ]; then
  summary "${2:-$PCONFORM_ROOT/out/mutation/gremlins.log}"
  exit 0
fi

GREMLINS_VERSION=v0.6.0
bin=$PCONFORM_TOOLS/bin
mkdir -p "$bin"
# The module proxy's build carries no version stamp (`gremlins --version` says "dev"), so a stamp
# file beside it says which version was installed.
if [ "$hand" = 0 ] && { [ ! -x "$bin/gremlins" ] || [ "$(cat "$bin/.gremlins-version" 2>/dev/null)" != "$GREMLINS_VERSION" ]; }; then
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
# shellcheck source=scripts/pg.sh
. "$PCONFORM_ROOT/scripts/pg.sh"
trap 'pg_stop; rm -rf "$work"' EXIT
trap 'exit 130' INT TERM
pg_start || exit 1
if [ -z "${PCONFORM_PG_DSN:-}" ]; then
  echo "mutation: no PostgreSQL server (see above); the oracle runs on both backends" >&2
  exit 1
fi
pg_dsn=$(printf %q "$PCONFORM_PG_DSN")

# A copy of the tracked files as they are in the work tree: gremlins copies the whole module once
# per worker, and the git-ignored outputs (out/, the P checker's) need not come along.
mkdir -p "$work/src"
git ls-files -z | xargs -0 cp --parents -t "$work/src"
# The analyzers are built once, from the unmutated source (they do not import actordelivery).
go build -o "$work/pconform-vet" ./cmd/pconform-vet
# The analyzers' findings on the pristine source: the baseline a mutant's findings are compared with.
go vet -vettool="$work/pconform-vet" ./actordelivery 2>&1 | grep -v '^#' | sort >"$work/vet-baseline.txt" || true

# The stand-in `go`: anything but `go test` goes to the real go command. A `go test` runs the
# oracle from the module root of the copy it is called in (gremlins' package argument is ignored,
# its -timeout and -coverprofile kept). gremlins reads the exit status: 1 killed, 2 not viable (the
# mutant does not build), anything else lived.
#
# gremlins' coverage pass (the one `go test` with -coverprofile) runs the whole oracle in one
# `go test` over both packages, as the gate would. A mutant's run is ordered by cost and stops at
# the first oracle that fails (a killed mutant needs only one):
#   1. the analyzers (type-checks actordelivery, links nothing);
#   2. the properties' test binary (built for this mutant): TestFencingProbes, TestContention,
#      TestPropertyStore, TestPropertyStorePostgres;
#   3. replay's test binary (built only if the properties passed), one run per test, in this
#      order: TestSymbolPathsAgree, TestRecordedHistory, TestCorpus.
# What makes a mutant cheap without making the oracle weaker:
#   - each test binary is built once per mutant with `go test -c`, without the go command's own vet
#     pass (it checks the test packages, which a mutant of actordelivery never changes) and without
#     DWARF (-ldflags='-s -w'; stack traces keep their file:line). Not -trimpath: it would make
#     each worker rebuild the standard library and the cgo SQLite driver once, uncached;
#   - the SQLite files the tests create live on a memory file system (TMPDIR on /dev/shm when the
#     machine has one): the same statements, no wait for the disk's fsync.
# Each mutant's verdict, the oracle that decided it and the seconds of each phase are appended to
# out/mutation/oracle.log (the mutated line is found by comparing the copy with the pristine source).
real_go=$(command -v go)
module=$(go list -m)
shm=${PCONFORM_MUTATION_TMP:-}
if [ -z "$shm" ]; then
  if [ -d /dev/shm ] && [ -w /dev/shm ]; then shm=/dev/shm; else shm=${TMPDIR:-/tmp}; fi
fi
shm=$(mktemp -d "$shm/pconform-mutation-XXXXXX")
trap 'pg_stop; rm -rf "$work" "$shm"' EXIT
sequences=${PCONFORM_SEQUENCES:-200}
part_timeout=${PCONFORM_MUTATION_PART_TIMEOUT:-600}
case $part_timeout in
  '' | *[!0-9]* | 0) echo "mutation: PCONFORM_MUTATION_PART_TIMEOUT must be a whole number of seconds >= 1, got '$part_timeout'" >&2; exit 2 ;;
esac
: >"$out/oracle.log"
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
tmp=\$(mktemp -d "$shm/pconform-mutant-XXXXXX") || exit 3
trap 'rm -rf "\$tmp"' EXIT
export TMPDIR=\$tmp PCONFORM_SEQUENCES=$sequences PCONFORM_PG_DSN=$pg_dsn PCONFORM_SEED=\${PCONFORM_SEED:-1}
oracle='^(TestCorpus|TestSymbolPathsAgree|TestRecordedHistory|TestPropertyStore|TestPropertyStorePostgres|TestFencingProbes|TestContention|TestRowLockRaces|TestShutdownDrain|TestWakeAfterCommit)\$'
if [ \${#cover[@]} -gt 0 ]; then
  exec "\$real" test -count=1 "\${timeout[@]}" "\${cover[@]}" -run "\$oracle" ./replay ./properties >/dev/null 2>&1
fi
# Which mutant this is: the one file of actordelivery that differs from the pristine copy.
where=?
for f in actordelivery/*.go; do
  if ! cmp -s "\$f" "$work/src/\$f"; then
    where=\$f:\$(diff "$work/src/\$f" "\$f" | sed -n 's/^\([0-9]*\)[acd].*/\1/p' | paste -sd, -)
    break
  fi
done
t0=\$(date +%s.%N) phases=""
phase() { phases+=" \$1=\$(awk -v a="\$t0" -v b="\$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}')"; t0=\$(date +%s.%N); }
verdict() { echo "\$where \$1 \$2 \$phases\${4:+ \$4}" >>"$out/oracle.log"; exit "\$3"; }
# part NAME DIR RUN [LABEL]: runs NAME's test binary in DIR (tests RUN) with the part's own
# timeout; LABEL (default NAME) names the part in oracle.log. A part that fails kills the mutant;
# one that runs past the timeout (a hang: a connection never given back, a lock never released)
# kills it too, and the log says which part and which test hung.
part() {
  local label=\${4:-\$1}
  (cd "\$2" && "\$bin/\$1.test" -test.count=1 -test.failfast -test.timeout ${part_timeout}s -test.run "\$3" >"\$tmp/\$label.log" 2>&1)
  rc=\$?; phase "\$label"
  [ \$rc -eq 0 ] && return 0
  if grep -q '^panic: test timed out after' "\$tmp/\$label.log"; then
    hung=\$(sed -n '/running tests:/{n;s/^[[:space:]]*\([^[:space:]]*\).*/\1/p;q;}' "\$tmp/\$label.log")
    verdict KILLED "\$label" 1 "-- oracle part \$label timed out after ${part_timeout}s in \${hung:-?}"
  fi
  verdict KILLED "\$label" 1
}
# A mutant that does not compile (gremlins' arithmetic mutants of a string concatenation) is not
# viable; without this check the analyzers' type-checking failure would count it as killed.
"\$real" build ./actordelivery >/dev/null 2>&1 || { phase build; verdict NOT-VIABLE build 2; }
phase build
# Only a finding the pristine source does not have kills the mutant (the test files, which no
# mutant changes, may carry findings of their own).
"\$real" vet -vettool=$work/pconform-vet ./actordelivery 2>&1 | grep -v '^#' | sort >"\$tmp/vet.txt"
phase vet
if comm -13 "$work/vet-baseline.txt" "\$tmp/vet.txt" | grep -q .; then verdict KILLED analyzers 1; fi
bin=\$tmp/bin
"\$real" test -c -vet=off -ldflags='-s -w' -o "\$bin/" ./properties >"\$tmp/build.log" 2>&1 || { phase build-properties; verdict NOT-VIABLE build 2 "-- \$(tail -n 3 "\$tmp/build.log" | tr '\n' ' ')"; }
phase build-properties
part properties properties '^(TestFencingProbes|TestContention|TestRowLockRaces|TestShutdownDrain|TestWakeAfterCommit)\$' probes
part properties properties '^(TestPropertyStore|TestPropertyStorePostgres)\$'
"\$real" test -c -vet=off -ldflags='-s -w' -o "\$bin/" ./replay >"\$tmp/build.log" 2>&1 || { phase build-replay; verdict NOT-VIABLE build 2 "-- \$(tail -n 3 "\$tmp/build.log" | tr '\n' ' ')"; }
phase build-replay
# Replay's parts run one binary invocation each, cheapest first (within one invocation the tests
# would run in source file order): the hand-written traces, the recording part, the corpus.
part replay replay '^TestSymbolPathsAgree\$'
part replay replay '^TestRecordedHistory\$' recording
part replay replay '^TestCorpus\$' corpus
if [ -n "\${PCONFORM_MUTATION_OBSERVE:-}" ]; then
  "\$real" build -o "\$bin/pconform" ./cmd/pconform >/dev/null 2>&1 || { phase build-pconform; verdict NOT-VIABLE build 2; }
  phase build-pconform
  for run in "sqlite" "sqlite --kill" "postgres" "postgres --kill"; do
    # shellcheck disable=SC2086 # run is a backend and an optional flag
    set -- \$run
    label=observe-\$1\${2:+-kill}
    rc=0
    "\$bin/pconform" observe --backend "\$@" --seed "\$PCONFORM_SEED" --budget 3s --out "\$tmp/\$label.json" >"\$tmp/\$label.log" 2>&1 || rc=\$?
    phase "\$label"
    [ \$rc -eq 0 ] || verdict KILLED "\$label" 1
  done
fi
verdict LIVED - 0
EOF
chmod +x "$work/shim/go"

# --hand: each patch on a copy of the source, the oracle once per seed; oracle.log's lines are
# prefixed with the patch and the seed.
if [ "$hand" = 1 ]; then
  patches=("$PCONFORM_ROOT"/scripts/mutants/*.patch)
  if [ ${#names[@]} -gt 0 ]; then
    patches=()
    for n in "${names[@]}"; do
      [ -f "$PCONFORM_ROOT/scripts/mutants/$n.patch" ] || { echo "mutation: no mutant scripts/mutants/$n.patch" >&2; exit 2; }
      patches+=("$PCONFORM_ROOT/scripts/mutants/$n.patch")
    done
  fi
  : >"$out/hand.log"
  echo "mutation: ${#patches[@]} hand-written mutants, seeds 1..$seeds, oracle: analyzers, properties, replay, observe on SQLite and PostgreSQL"
  # A seed whose oracle could not build (rc 2) decides nothing: it is counted apart.
  echo "| mutant | killed seeds | undecided | by |" >"$out/hand.md"
  echo "|---|---:|---:|---|" >>"$out/hand.md"
  for patch in "${patches[@]}"; do
    name=$(basename "$patch" .patch)
    rm -rf "$work/mutant" && cp -r "$work/src" "$work/mutant"
    (cd "$work/mutant" && git apply "$patch") || { echo "mutation: $name does not apply" >&2; exit 1; }
    killed=0 undecided=0 by=""
    for seed in $(seq 1 "$seeds"); do
      rc=0
      (cd "$work/mutant" && PCONFORM_SEED=$seed PCONFORM_MUTATION_OBSERVE=1 PATH="$work/shim:$PATH" go test ./actordelivery) || rc=$?
      line=$(tail -n 1 "$out/oracle.log")
      echo "$name seed=$seed $line" >>"$out/hand.log"
      if [ "$rc" = 1 ]; then killed=$((killed + 1)); by+=" $(echo "$line" | awk '{print $3}')"; fi
      if [ "$rc" = 2 ]; then undecided=$((undecided + 1)); fi
      echo "mutation: $name seed $seed: $(echo "$line" | awk '{print $2, $3}')"
    done
    by=$(echo "$by" | tr ' ' '\n' | sed '/^$/d' | sort | uniq -c | awk '{printf "%s%s (%d)", sep, $2, $1; sep=", "}')
    echo "| $name | $killed / $seeds | $undecided | ${by:--} |" >>"$out/hand.md"
  done
  cat "$out/hand.md"
  exit 0
fi

# Everything in actordelivery but the chosen files is excluded from mutation.
exclude=()
for f in actordelivery/*.go; do
  base=${f#actordelivery/}
  case " ${files[*]} " in *" $base "*) ;; *) exclude+=(--exclude-files "^${base//./\\.}\$") ;; esac
done

cd "$work/src"
echo "mutation: gremlins over actordelivery (${files[*]}), oracle: analyzers, replay, properties on SQLite and PostgreSQL (actordelivery's unit tests excluded)"
start=$(date +%s)
PATH="$work/shim:$PATH" "$bin/gremlins" unleash ./actordelivery \
  --workers "${PCONFORM_MUTATION_WORKERS:-1}" --timeout-coefficient "${PCONFORM_MUTATION_TIMEOUT:-30}" \
  --output "$out/report.json" "${exclude[@]}" 2>&1 | tee "$out/gremlins.log"
echo "mutation: done in $(($(date +%s) - start))s; report in out/mutation/report.json, log in out/mutation/gremlins.log"
summary "$out/gremlins.log"
