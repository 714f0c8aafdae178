#!/usr/bin/env bash
# The pconform gate: one command that a new user or CI runs on a fresh checkout.
#
#   scripts/check.sh [--full | --quick] [--junit FILE] [STAGE ...]
#
# The gate (the default, and what .ci/run runs) has two tiers. The store tier always runs: build,
# lint, unit, replay (the committed corpus, crash points), properties (each broken variant hunted
# with one seed) and observe, on SQLite and PostgreSQL. The efficacy tier checks the toolkit's own
# power: models (the P checker, counterexamples included), toolkit (its slow Go tests that never
# run the store), corpus (the committed corpus up to date, the bridge against the checker, the wide
# corpus) and hunts (each broken variant, 20 seeds). The default gate runs it unless
# scripts/efficacy.stamp says that its inputs (every file but actordelivery/ and docs/) are those
# of its last full pass (scripts/tiers.sh); `--full` always runs it. A gate that ran both tiers and
# passed writes the stamp; commit it with the change. `--quick` is for local iteration: gofmt and
# go vet, the unit tests but the slow ones (-short), and a replay of the committed corpus; it
# needs neither the P tool nor staticcheck. Naming stages runs only those (and the stages they
# need), whatever their tier. It installs what it needs first (Go 1.26 and the P tool into
# .tools/, see scripts/bootstrap.sh) and uses the offline module mirror at ../shared/goproxy when
# that folder exists.
#
# Stages run as soon as the stages they need have passed, several at a time, so the P checker (.NET)
# works while Go compiles and tests. Every Go package and tool is compiled once, by the build stage,
# with one set of flags; the other stages compile only the test variants, in go test. Nothing whose
# inputs are unchanged runs again: the P compile and checker runs come from scripts/pmodels.sh's
# cache, Go test results from the go command's test cache, other steps are stamped in out/gate. One
# gate at a time per checkout (out/gate/lock). Each stage prints one line when it finishes; a failing
# stage's own output is shown. At the end: a table (stage, result, wall and CPU seconds, what ran),
# optionally JUnit XML, and the last line `check: N passed, N failed`. Exit status 0 only if every
# stage passed. docs/gate.md explains the structure, the caches and the budgets.
#
# Budgets have defaults and environment overrides for long runs:
#   PCONFORM_SCHEDULES      schedules per green P test              (default 1000)
#   PCONFORM_CE_SCHEDULES   schedule budget per P counterexample     (default 100)
#   PCONFORM_SEED           checker and property seed               (default 1)
#   PCONFORM_SEQUENCES      property sequences per property         (default 200)
#   PCONFORM_HUNT_SEEDS     seeds per broken variant in the hunts stage, SQLite (default 20)
#   PCONFORM_HUNT_SEEDS_POSTGRES  the same on PostgreSQL, at most the above (default 5)
#   PCONFORM_REPLAY_SCHEDULES  schedules per green P test replayed against the store (default 100)
#   PCONFORM_CHECK_JOBS     stages run at the same time             (default 3)
#   PCONFORM_PG_DSN         run the PostgreSQL checks against this server instead of a throwaway one
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 2
# shellcheck source=scripts/env.sh
. scripts/env.sh

# ---- stages --------------------------------------------------------------------------------------
# One row per stage: its name, the stages it needs ("-" for none) and its tier (store or efficacy,
# see scripts/tiers.sh). The body is the function stage_<name>; its first output line "what: ..."
# describes it in the table. Rows are in order of preference: when more stages are ready than may
# run, the earlier row starts first. The longest stages lead (docs/notes/2026-12-04-gate-tiers.md).
# Adding a stage is a row here and a function below; a stage of the efficacy tier must need
# nothing from actordelivery/ or docs/ that the store tier does not check too (docs/gate.md).
FULL_STAGES=(
  "build       -             store"
  "records     -             efficacy"
  "hunts       build         efficacy"
  "corpus      build,records efficacy"
  "models      records       efficacy"
  "unit        build         store"
  "properties  build         store"
  "toolkit     build         efficacy"
  "lint        build         store"
  "replay      build         store"
  "observe     build         store"
)
QUICK_STAGES=(
  "build       -             store"
  "unit        build         store"
  "lint        build         store"
  "replay      build         store"
)

# ---- services ------------------------------------------------------------------------------------
# A service runs for the whole gate: service_<name>_start runs before the first stage (it may export
# variables the stages read; a failure stops the gate), service_<name>_stop runs on exit, whatever
# happened. Adding one is defining both functions and appending its name to SERVICES (or
# QUICK_SERVICES for the quick gate).
# The quick gate starts none: its store tests run on SQLite, and on PostgreSQL only when
# PCONFORM_PG_DSN names a server.
SERVICES=(pg)
QUICK_SERVICES=()

# pg: every check runs on SQLite and PostgreSQL; a throwaway server (or PCONFORM_PG_DSN's), see
# scripts/pg.sh. Under CI=true a server that cannot be started fails the gate.
# shellcheck source=scripts/pg.sh
. scripts/pg.sh
service_pg_start() { pg_start; }
service_pg_stop() { pg_stop; }

quick=0
full=0
junit=""
selected=()
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=1; shift ;;
    --full) full=1; shift ;;
    --junit) junit=${2:?--junit needs a file}; shift 2 ;;
    --junit=*) junit=${1#--junit=}; shift ;;
    -h|--help) sed -n '2,40p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "check: unknown flag '$1' (flags: --full, --quick, --junit FILE)" >&2; exit 2 ;;
    *) selected+=("$1"); shift ;;
  esac
done
if [ "$quick" = 1 ] && [ "$full" = 1 ]; then echo "check: --quick and --full exclude each other" >&2; exit 2; fi
if [ "$quick" = 1 ]; then
  table=("${QUICK_STAGES[@]}"); services=("${QUICK_SERVICES[@]}")
else
  table=("${FULL_STAGES[@]}"); services=("${SERVICES[@]}")
fi

declare -A needs=() tier=()
order=()
for row in "${table[@]}"; do
  read -r name deps t <<<"$row"
  order+=("$name")
  tier[$name]=$t
  needs[$name]=${deps//,/ }
  [ "${needs[$name]}" = - ] && needs[$name]=""
done

# Named stages run with the stages they need, transitively.
if [ ${#selected[@]} -gt 0 ]; then
  declare -A want=()
  add_stage() {
    [ -n "${needs[$1]+x}" ] || { echo "check: unknown stage '$1' (stages: ${order[*]})" >&2; exit 2; }
    [ -n "${want[$1]+x}" ] && return
    want[$1]=1
    local d
    for d in ${needs[$1]}; do add_stage "$d"; done
  }
  for s in "${selected[@]}"; do add_stage "$s"; done
  kept=()
  for s in "${order[@]}"; do [ -n "${want[$s]+x}" ] && kept+=("$s"); done
  order=("${kept[@]}")
fi

# The tiers (scripts/tiers.sh). The key covers the efficacy tier's inputs and the budgets it runs
# with, so a stamp written at other budgets does not count. Named stages run whatever their tier.
# shellcheck source=scripts/tiers.sh
. scripts/tiers.sh
efficacy=1 efficacy_key="" efficacy_reason=""
if [ "$quick" = 0 ]; then
  # shellcheck disable=SC2046 # one word per budget
  efficacy_key=$(tier_key $(tier_budgets))
  if [ "$full" = 1 ]; then
    efficacy_reason="--full"
  elif [ ${#selected[@]} -gt 0 ]; then
    efficacy_reason="stages named"
  else
    read -r verdict efficacy_reason <<<"$(tier_decide "$efficacy_key")"
    [ "$verdict" = run ] || efficacy=0
  fi
fi
left_out=()
if [ "$efficacy" = 0 ]; then
  kept=()
  for s in "${order[@]}"; do
    if [ "${tier[$s]}" = efficacy ]; then left_out+=("$s"); else kept+=("$s"); fi
  done
  order=("${kept[@]}")
fi
# Whether the hunts stage runs in this gate: if not, the properties stage hunts each variant once.
hunting=0
for s in "${order[@]}"; do [ "$s" = hunts ] && hunting=1; done

jobs=${PCONFORM_CHECK_JOBS:-3}
case $jobs in '' | *[!0-9]* | 0) echo "check: PCONFORM_CHECK_JOBS must be a positive integer, got '$jobs'" >&2; exit 2 ;; esac

# One gate at a time per checkout: two would share out/gate and models/p/PCheckerOutput. A second
# one waits for the first (scripts/pmodels.sh, run alone, takes the same lock).
mkdir -p out/gate
# out/ is a module of its own for the go command, so that its walks of the main module (./...,
# go mod tidy) never enter the caches the models stage writes while they run.
[ -f out/go.mod ] || printf 'module pconform.invalid/out\n' >out/go.mod
exec 9>out/gate/lock
if ! flock -n 9; then
  echo "check: another gate (or scripts/pmodels.sh) is running in this checkout; waiting for it to finish"
  flock 9
fi
export PCONFORM_GATE_LOCKED=1

logdir=$(mktemp -d "${TMPDIR:-/tmp}/pconform-check.XXXXXX")
# What the gate keeps between runs, in the git-ignored out/gate/: the tools the build stage
# compiles (the go command relinks one only when it is out of date), the stamps of the steps that
# are not rerun while their inputs are unchanged, the wide corpus, and the P checker's cache
# (scripts/pmodels.sh). Test results are kept by the go command's own test cache.
bin="$PWD/out/gate/bin"
stamps="$PWD/out/gate/stamps"
rm -rf out/gate/test # test binaries of gates before the go command's test cache was used
mkdir -p "$bin" "$stamps"
started_services=()
cleanup() {
  local s
  for s in "${started_services[@]}"; do "service_${s}_stop" >>"$logdir/service-$s.log" 2>&1; done
  rm -rf "$logdir"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "check: setting up toolchains"
if [ "$quick" = 1 ]; then what_to_install=go; else what_to_install=all; fi
if ! bash scripts/bootstrap.sh "$what_to_install" >"$logdir/bootstrap.log" 2>&1; then
  cat "$logdir/bootstrap.log"
  echo "check: 0 passed, 1 failed"
  exit 1
fi
sed 's/^/  /' "$logdir/bootstrap.log"
# In the full gate Chromium is installed now: the browser test must run, not skip.
[ "$quick" = 1 ] || export PCONFORM_REQUIRE_BROWSER=1

for s in "${services[@]}"; do
  # Not in a subshell: a service's start may export what the stages read.
  "service_${s}_start" >"$logdir/service-$s.log" 2>&1
  rc=$?
  started_services+=("$s")
  if [ $rc -ne 0 ]; then
    echo "check: service $s could not be started:"
    sed 's/^/  | /' "$logdir/service-$s.log"
    echo "check: 0 passed, 1 failed"
    exit 1
  fi
  sed 's/^/  /' "$logdir/service-$s.log"
done

go_files() { git ls-files --cached --others --exclude-standard -- '*.go' | grep -v '/testdata/' ; }

# Every package's import path and directory, read once.
declare -A pkg_dir=() pkg_tests=()
while read -r path dir tests; do
  pkg_dir[$path]=$dir
  pkg_tests[$path]=$tests
done < <(go list -f '{{.ImportPath}} {{.Dir}} {{len .TestGoFiles}}{{len .XTestGoFiles}}' ./...)
module=$(go list -m)

# run_tests [GO TEST FLAGS ...] -- PACKAGE...: `go test` of the packages, two test binaries at a
# time. Its output says `ok` or `FAIL` per package, `(cached)` for a result the go command's test
# cache holds: that cache reruns a package's tests only when the test binary, the flags, an
# environment variable the tests read (PCONFORM_PG_DSN, PCONFORM_SEED, ...) or a file in the module
# they opened (the corpus, the recorded checker runs) changed. Only the cacheable test flags may be
# used here (-run, -skip, -short, -v, -timeout): any other makes the go command run the tests every
# time. -vet=off: the lint stage vets every package once.
run_tests() {
  local flags=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do flags+=("$1"); shift; done
  shift
  go test -vet=off -timeout 40m "${flags[@]}" "$@"
}

# slowest_tests LOG: the ten slowest top-level tests of a `go test -v` log, with their package
# (a cached package's from the run that is cached): where a test stage's time goes.
slowest_tests() {
  echo "slowest tests (seconds, test, package):"
  awk '/^--- (PASS|FAIL|SKIP): / { t = $4; gsub(/[()s]/, "", t); buf[n++] = t " " $3; next }
    /^(ok|FAIL|---)[ \t]+[a-z]/ && $2 ~ /\// { for (i = 0; i < n; i++) print buf[i] " " $2; n = 0 }' "$1" |
    sort -rn | head -10 | sed 's/^/  /'
}

# report_tests LOG RC: what a test stage shows of its `go test -v` LOG, whose run exited RC: each
# package's ok or FAIL line, the failed tests, panics and the ten slowest tests, without the
# passing tests' lines, which would bury them; when RC is not 0, the whole log too, since a
# failure's own output is in it. Returns RC. The unit and toolkit stages share it, so that they
# report alike.
report_tests() {
  local log=$1 rc=$2
  grep -E '^(ok|FAIL|---|panic:)' "$log" | grep -v '^--- \(PASS\|SKIP\)'
  slowest_tests "$log"
  if [ "$rc" != 0 ]; then
    echo "---- the whole go test -v output ----"
    cat "$log"
  fi
  return "$rc"
}

# cached NAME KEY COMMAND...: runs COMMAND unless the last run of NAME that passed had the same KEY
# (a hash of every input of COMMAND); then it says so and passes. Stamps are in out/gate/stamps.
cached() {
  local name=$1 key=$2
  shift 2
  if [ "$(cat "$stamps/$name" 2>/dev/null)" = "$key" ]; then
    echo "$name: inputs unchanged since it last passed (key ${key:0:12}): not rerun"
    return 0
  fi
  rm -f "$stamps/$name"
  "$@" || return 1
  echo "$key" >"$stamps/$name"
}

# inputs_key [WORD...] -- PATH...: a hash of the words (flags, say) and of the names and contents
# of the files given and of every file under the directories given. A path that does not exist
# counts as missing (and a later run that finds it computes another key).
inputs_key() {
  {
    while [ $# -gt 0 ] && [ "$1" != -- ]; do printf 'word %s\n' "$1"; shift; done
    shift
    local a
    for a in "$@"; do
      if [ -d "$a" ]; then
        find "$a" -type f -print0 | LC_ALL=C sort -z | xargs -0r sha256sum
      elif [ -f "$a" ]; then
        sha256sum "$a"
      else
        printf 'missing %s\n' "$a"
      fi
    done
  } | sha256sum | cut -c1-64
}

stage_build() {
  if [ "$quick" = 1 ]; then
    echo "what: every package and every package the tests import, compiled once"
  else
    echo "what: every package and every package the tests import, pconform, pconform-corpus, pconform-vet, staticcheck: compiled once"
  fi
  # Everything the stages after this one compile but the test variants of the packages themselves
  # (compiled, linked and cached by their own go test): so that unit, replay and properties, which
  # run at the same time, never compile one package twice. The same flags everywhere, so the build
  # cache serves every stage.
  local deps
  mapfile -t deps < <(go list -test -deps -f '{{if and (not .Standard) (not .ForTest) (ne .Name "main")}}{{.ImportPath}}{{end}}' ./... | sort -u)
  go build "${deps[@]}" || return 1
  go build ./... || return 1
  if [ "$quick" = 0 ]; then
    go build -o "$bin/" ./cmd/pconform ./bridge/cmd/pconform-corpus ./cmd/pconform-vet honnef.co/go/tools/cmd/staticcheck || return 1
  fi
  echo "${#deps[@]} packages (and their dependencies) compiled for the tests"
}

stage_lint() {
  if [ "$quick" = 1 ]; then echo "what: gofmt, commit subjects, go vet"; else echo "what: gofmt, commit subjects, go mod tidy -diff, script tests, go vet, staticcheck, pconform-vet"; fi
  local unformatted
  unformatted=$(go_files | xargs -r gofmt -l)
  if [ -n "$unformatted" ]; then echo "gofmt would change:"; echo "$unformatted"; return 1; fi
  # Subjects "pkg: verb phrase", at most 72 characters (docs/gate.md, "Commit subjects").
  bash scripts/commitlint.sh || return 1
  if [ "$quick" = 0 ]; then
    cached commitlint_test "$(inputs_key -- scripts/commitlint.sh scripts/commitlint_test.sh)" \
      bash scripts/commitlint_test.sh || return 1
    cached failure_digest_test "$(inputs_key -- scripts/failure-digest.sh scripts/failure-digest_test.sh)" \
      bash scripts/failure-digest_test.sh || return 1
    go mod tidy -diff || { echo "go.mod or go.sum is not tidy: run go mod tidy"; return 1; }
    cached bootstrap_test "$(inputs_key -- scripts/bootstrap.sh scripts/bootstrap_test.sh scripts/env.sh)" \
      bash scripts/bootstrap_test.sh || return 1
    cached env_test "$(inputs_key -- scripts/env.sh scripts/env_test.sh docs/service.md go.mod go.sum)" \
      bash scripts/env_test.sh || return 1
    cached tiers_test "$(inputs_key -- scripts/tiers.sh scripts/tiers_test.sh)" \
      bash scripts/tiers_test.sh || return 1
  fi
  go vet ./... || return 1
  [ "$quick" = 1 ] && return 0
  "$bin/staticcheck" ./... || return 1
  # Through go vet, which caches each package's result keyed by the tool's build and the package.
  go vet -vettool="$bin/pconform-vet" ./... || return 1
}

# The toolkit's slow Go tests: those that compile the project's P models and run the P checker on
# traces, event logs and observed histories (the P counterexamples, the spec deriver, the
# streaming P oracle, the models stage on a tiny project) or on the P copies of the rules
# (internal/rulecopies, a compile per shipped profile); the command tests that build
# pconform-vet and pconform-corpus and run them on their fixtures; the Go model held to the naive
# model; the 50,000-step page in the browser; the README's first commands in a fresh copy of the
# repository. They read models/, bridge/, traces/, profiles/, analysis/testdata, README.md and
# their own testdata, never actordelivery/ or docs/; what they run of the store (the README's
# replay of one corpus trace, the attempts rule the P copies are held to) the store tier checks
# too. So they belong to the efficacy tier (the toolkit stage); the unit stage skips them. A name
# here that does not run and pass fails the toolkit stage. Costs:
# docs/notes/2026-12-06-gate-split.md.
TOOLKIT_TESTS=(TestCheckObservedOnTheChecker TestStreamOnTheChecker TestStreamCheckerOnALog
  TestCompileStreamCaches TestCheckPCounterexamples TestCheckPLog TestProfileCheck TestCommand
  TestModelMatchesNaive TestModelMatchesNaiveUnderProfiles TestLargeTracePageInBrowser
  TestReadmeFromAFreshClone TestModelsOnTheChecker TestPRuleCopiesAgree)
toolkit_regex="^($(IFS='|'; echo "${TOOLKIT_TESTS[*]}"))\$"

# Which tier runs a package's unit tests. The store tier's unit stage runs those that can see a
# change confined to TIER_STORE_PATHS (scripts/tiers.sh): every package whose test binary links
# actordelivery, every package under those paths, and STORE_READERS, whose tests link no store but
# read its sources or the docs. The other packages' tests depend only on the efficacy tier's
# inputs, so the toolkit stage runs them. STORE_READER_TESTS are single tests of such a package
# that read the store's files: the unit stage runs them, the toolkit stage the rest of the package.
# A test that starts reading actordelivery/ or docs/ puts its package (or itself) in these lists.
STORE_READERS=(traces profile examples/ledgerstore internal/variants internal/gen analysis/internal/storeapi)
STORE_READER_TESTS=("bridge TestOneCompilePath")

# store_unit_packages: the packages whose unit tests the store tier runs (but properties/, which
# has its own stages), one per line.
store_unit_packages() {
  local store_paths="${TIER_STORE_PATHS[*]}" r
  {
    # A test binary's Deps list every package linked into it.
    go list -test -f '{{if not .ForTest}}{{.ImportPath}},{{join .Deps ","}}{{end}}' ./... |
      awk -F, -v store="$module/actordelivery" '$1 ~ /\.test$/ {
        for (i = 2; i <= NF; i++) if ($i == store || index($i, store " [") == 1) { p = $1; sub(/\.test$/, "", p); print p; break } }'
    for r in "${STORE_READERS[@]}"; do echo "$module/$r"; done
    printf '%s\n' "${!pkg_dir[@]}" | awk -v m="$module/" -v paths="$store_paths" '
      BEGIN { n = split(paths, p, " ") }
      { rel = substr($0, length(m) + 1) "/"; for (i = 1; i <= n; i++) if (index(rel, p[i]) == 1) print }'
  } | grep -v "^$module/properties\$" | LC_ALL=C sort -u
}

# unit_packages: every package with tests but properties/ (which has its own stages), one per
# line.
unit_packages() {
  printf '%s\n' "${!pkg_dir[@]}" | grep -v "^$module/properties\$" | LC_ALL=C sort
}

# toolkit_unit_packages: every other package with tests, one per line.
toolkit_unit_packages() {
  unit_packages | LC_ALL=C comm -23 - <(store_unit_packages)
}

# store_reader_runs: each of STORE_READER_TESTS as "PACKAGE TEST", one per line.
store_reader_runs() {
  local t
  for t in "${STORE_READER_TESTS[@]}"; do echo "$module/${t% *} ${t#* }"; done
}

stage_unit() {
  local pkgs
  if [ "$quick" = 1 ]; then
    # The quick gate ignores the tiers: every package but properties/, without the slow tests.
    mapfile -t pkgs < <(unit_packages)
    echo "what: unit tests of every package but properties/, without the slow ones (-short); corpus replay in the replay stage"
    run_tests -short -skip '^TestCorpus$' -- "${pkgs[@]}"
    return
  fi
  mapfile -t pkgs < <(store_unit_packages)
  echo "what: unit tests of the ${#pkgs[@]} packages that link the store or read its files (the others in toolkit); corpus replay in the replay stage, the toolkit's slow tests in toolkit"
  # replay's TestCorpus and bridge's TestIntegrationModels belong to the replay and corpus stages,
  # the toolkit's slow tests to the toolkit stage: each runs once per gate, there.
  local rc=0 pkg test
  run_tests -v -skip "^(TestCorpus|TestIntegrationModels)\$|$toolkit_regex" -- "${pkgs[@]}" >"$logdir/unit-tests.log" 2>&1 || rc=1
  while read -r pkg test; do
    run_tests -v -run "^$test\$" -- "$pkg" >>"$logdir/unit-tests.log" 2>&1 || rc=1
    grep -q "^--- PASS: $test " "$logdir/unit-tests.log" ||
      { echo "unit: $test of $pkg did not run and pass (renamed?); update STORE_READER_TESTS in scripts/check.sh"; rc=1; }
  done < <(store_reader_runs)
  report_tests "$logdir/unit-tests.log" $rc
}

stage_toolkit() {
  echo "what: the unit tests of the packages that never touch the store or the docs; the toolkit's slow Go tests: the P checker on counterexamples, event logs and observed histories; pconform-vet and pconform-corpus as commands; the Go model against the naive one; the 50,000-step page; the README in a fresh copy"
  local rc=0 pkgs store_tests
  mapfile -t pkgs < <(toolkit_unit_packages)
  store_tests=$(store_reader_runs | awk '{ printf "%s%s", sep, $2; sep = "|" }')
  run_tests -v -skip "^(TestIntegrationModels${store_tests:+|$store_tests})\$|$toolkit_regex" -- "${pkgs[@]}" >"$logdir/toolkit-tests.log" 2>&1 || rc=1
  # The slow tests, only in the packages that declare one of them: linking every test binary
  # again would cost more than the tests.
  mapfile -t pkgs < <(git ls-files '*_test.go' | xargs grep -lE "^func ($(IFS='|'; echo "${TOOLKIT_TESTS[*]}"))\(" 2>/dev/null |
    sed -E 's#/[^/]*$##' | sort -u | sed "s#^#$module/#")
  [ ${#pkgs[@]} -gt 0 ] || { echo "toolkit: no package declares ${TOOLKIT_TESTS[*]}"; return 1; }
  run_tests -v -run "$toolkit_regex" -- "${pkgs[@]}" >>"$logdir/toolkit-tests.log" 2>&1 || rc=1
  report_tests "$logdir/toolkit-tests.log" $rc || return $rc
  # Each listed test must have run (and passed): a renamed test would otherwise drop out unseen.
  local t missing=0
  for t in "${TOOLKIT_TESTS[@]}"; do
    if ! grep -q "^--- PASS: $t " "$logdir/toolkit-tests.log"; then
      echo "toolkit: $t did not run and pass (renamed or skipped?); update TOOLKIT_TESTS in scripts/check.sh"
      missing=1
    fi
  done
  return $missing
}

# The checker's runs, in two stages: records, the first schedules of each green test case recorded
# with -v (--logs) in models/p/PCheckerOutput/recorded, from which the corpus stage makes both
# corpora, and each counterexample's verdict run (its record); then models, each green test case's
# verdict run, beside the corpus stage. Runs whose inputs have not changed come from
# scripts/pmodels.sh's cache.
recorded=models/p/PCheckerOutput/recorded
# The recorded schedules cover the committed corpus's and the wide corpus's.
committed_schedules=20
record_schedules=$((${PCONFORM_REPLAY_SCHEDULES:-100} > committed_schedules ? ${PCONFORM_REPLAY_SCHEDULES:-100} : committed_schedules))

stage_records() {
  echo "what: P compile; the first $record_schedules schedules of each green test case in models/p recorded for the corpus stage; every counterexample must find its bug; unchanged runs from the cache"
  PCONFORM_RECORD_SCHEDULES=$record_schedules bash scripts/pmodels.sh --logs --part records
}

stage_models() {
  echo "what: the P checker on every green test case of models/p at its full budget; unchanged runs from the cache"
  PCONFORM_RECORD_SCHEDULES=$record_schedules bash scripts/pmodels.sh --logs --part verdicts
}

# corpus_source SEED [SCHEDULES]: the pconform-corpus flags that make a corpus with SEED (and
# SCHEDULES schedules per green test case): the models stage's recorded runs when they cover it
# (the same seed, at least as many schedules), else a checker run of its own (only with
# non-default budgets).
corpus_source() {
  if [ "$1" = "${PCONFORM_SEED:-1}" ] && [ "${2:-$committed_schedules}" -le "$record_schedules" ]; then
    echo "-from $recorded"
  else
    echo "-compile"
  fi
}

# recorded_key: a hash of the recorded runs: each run's cache key (which covers the P sources, the
# P tool and the run's flags), the listing and the version.
recorded_key() {
  local keys
  mapfile -t keys < <(find "$recorded" -mindepth 2 -maxdepth 2 -name key | LC_ALL=C sort)
  inputs_key -- "$recorded/list.log" "$recorded/version.log" "${keys[@]}"
}

stage_replay() {
  # The committed corpus on SQLite and (with PCONFORM_PG_DSN) PostgreSQL, with its situations and
  # the variants only its scripted traces catch.
  echo "what: committed corpus replay (store, model, crash before every step)"
  run_tests -run Corpus -v -- "$module/replay"
}

stage_corpus() {
  local wide=${PCONFORM_REPLAY_SCHEDULES:-100} seed=${PCONFORM_SEED:-1}
  echo "what: committed corpus up to date; bridge against the real checker; $wide schedules per green test replayed (the wide corpus)"
  # The committed corpus: seed 1, the bridge's default schedules (see traces/corpus/README.md).
  # Checked again only when the corpus, the recorded runs or the tool changed.
  local flags
  flags=$(corpus_source 1)
  # shellcheck disable=SC2086 # corpus_source prints flags to split
  cached corpus_check "$(inputs_key $flags "$(recorded_key)" -- "$bin/pconform-corpus" traces/corpus)" \
    "$bin/pconform-corpus" -check -out traces/corpus $flags || return 1
  # The one test that runs the real checker on the real models, from the compiled project the
  # models stage left; it also checks that the recorded runs give what fresh, shorter runs give.
  PCONFORM_RECORDED_RUNS=$PWD/$recorded run_tests -run '^TestIntegrationModels$' -v -- "$module/bridge" || return 1
  # The committed corpus keeps a few traces per test case; replay many more, generated from the
  # same runs, so that every explored execution of the green tests meets the real store. It is
  # made again only when its inputs changed: its files' ages are inputs of the replay's test cache.
  local big="$PWD/out/gate/wide-corpus"
  flags="-schedules $wide -per-test $wide -seed $seed $(corpus_source "$seed" "$wide")"
  make_wide() { rm -rf "$big" && "$bin/pconform-corpus" -out "$big" "$@"; }
  [ -d "$big" ] || rm -f "$stamps/wide_corpus"
  # shellcheck disable=SC2086
  cached wide_corpus "$(inputs_key $flags "$(recorded_key)" -- "$bin/pconform-corpus")" make_wide $flags || return 1
  echo "wide corpus: $(ls "$big"/*.json | wc -l) traces"
  # Its databases live in memory when /dev/shm is writable: the wide run is about the protocol, and
  # the replay stage replays the committed corpus on disk with synchronous=FULL.
  local scratch=${TMPDIR:-/tmp}
  if [ -d /dev/shm ] && [ -w /dev/shm ]; then scratch=/dev/shm; fi
  PCONFORM_CORPUS=$big TMPDIR=$scratch run_tests -run 'TestCorpus$' -- "$module/replay" || return 1
  # The situation x count table of the wide corpus (replay/situations_gate_test.go), in the stage log, and
  # the variants whose bug only a scripted situation shows, each required to diverge on it.
  PCONFORM_CORPUS=$big run_tests -run '^(TestCorpusSituations|TestCorpusCatchesBlindVariants)$' -v -- "$module/replay"
}

# properties_tests NAME [GO TEST FLAGS]: go test -v of properties/, its log shown with its ten
# slowest tests.
properties_tests() {
  local name=$1
  shift
  run_tests -v "$@" -- "$module/properties" >"$logdir/$name-tests.log" 2>&1
  local rc=$?
  cat "$logdir/$name-tests.log"
  slowest_tests "$logdir/$name-tests.log"
  return $rc
}

stage_properties() {
  # When the hunts stage runs, it hunts every variant with 20 seeds; without it each
  # variant is still hunted once, so that a store change that leaves a variant unbroken (they are
  # built from the store) or out of the hunts' reach fails here.
  if [ "$hunting" = 1 ]; then
    echo "what: gopter properties against the real store (PCONFORM_SEQUENCES=${PCONFORM_SEQUENCES:-200}), contention, row locks, drain, wake; the hunts in their own stage"
    properties_tests properties -skip '^TestHuntVariants$'
  else
    echo "what: gopter properties against the real store (PCONFORM_SEQUENCES=${PCONFORM_SEQUENCES:-200}), contention, row locks, drain, wake; each broken variant hunted with one seed"
    PCONFORM_HUNT_SEEDS=1 properties_tests properties
  fi
}

stage_hunts() {
  local seeds=${PCONFORM_HUNT_SEEDS:-20} pg=${PCONFORM_HUNT_SEEDS_POSTGRES:-5}
  [ "$pg" -le "$seeds" ] 2>/dev/null || pg=$seeds
  echo "what: every broken variant hunted with $seeds seeds on SQLite and the first $pg on PostgreSQL, each found, shrunk and replayed"
  PCONFORM_HUNT_SEEDS=$seeds PCONFORM_HUNT_SEEDS_POSTGRES=$pg properties_tests hunts -run '^TestHuntVariants$'
}

stage_observe() {
  local seed=${PCONFORM_SEED:-1} budget=${PCONFORM_OBSERVE_BUDGET:-3s} dir="$logdir/observe"
  echo "what: the real store observed under a concurrent workload for $budget (seed $seed) on SQLite and PostgreSQL, in one process (single and batched workers) and in child processes killed at random, each history checked by the model; a broken variant's caught"
  mkdir -p "$dir"
  "$bin/pconform" observe --seed "$seed" --budget "$budget" --out "$dir/store.json" --events "$dir/store.jsonl" || return 1
  # The same with every loop in a child process SIGKILLed at random: the commit log's history.
  "$bin/pconform" observe --kill --seed "$seed" --budget "$budget" --out "$dir/killed.json" || return 1
  # With batched workers and a batched fold publisher beside single ones: the batch steps.
  "$bin/pconform" observe --batch 4 --seed "$seed" --budget "$budget" --out "$dir/batched.json" --events "$dir/batched.jsonl" || return 1
  # The first again on PostgreSQL (the pg service's server; its tables under a prefix of its own):
  # both consumer paths, two leased workers per leased mailbox, both publishers.
  if [ -n "${PCONFORM_PG_DSN:-}" ]; then
    "$bin/pconform" observe --backend postgres --seed "$seed" --budget "$budget" --out "$dir/store-pg.json" --events "$dir/store-pg.jsonl" || return 1
    # And with every loop in a child process SIGKILLed at random, on PostgreSQL.
    "$bin/pconform" observe --backend postgres --kill --seed "$seed" --budget "$budget" --out "$dir/killed-pg.json" || return 1
    "$bin/pconform" observe --backend postgres --batch 4 --seed "$seed" --budget "$budget" --out "$dir/batched-pg.json" --events "$dir/batched-pg.jsonl" || return 1
  elif [ "${CI:-}" = true ]; then
    echo "observe: PCONFORM_PG_DSN is not set and CI=true: the PostgreSQL runs must run in CI"; return 1
  else
    echo "observe: PCONFORM_PG_DSN is not set: the PostgreSQL runs are skipped"
  fi
  # A variant the model must refuse (exit 1): the check that the stage can fail.
  local rc=0
  # One second is enough: refused in seeds 1-18, its finding within the first few hundred steps
  # (37 to 508 in seeds 11-18, four runs at a time); a second gives a thousand or more.
  "$bin/pconform" observe --target raw-attempts --seed "$seed" --budget 1s --out "$dir/raw-attempts.json" || rc=$?
  if [ "$rc" != 1 ]; then echo "observe: raw-attempts exited $rc, want 1 (the model oracle must refuse it)"; return 1; fi
}

# ---- the scheduler -------------------------------------------------------------------------------
# run_stage NAME: the stage's body in a subshell of its own, its output in $logdir/NAME.log; writes
# $logdir/NAME.rc with the exit code and the CPU seconds (user + system) of the stage's whole process
# tree, from bash's `times` (children count once they are waited for, and every stage waits for
# its own).
run_stage() {
  "stage_$1" >"$logdir/$1.log" 2>&1
  local rc=$?
  # `times` must run in this shell, not in a pipeline's subshell, to see this shell's children.
  times >"$logdir/$1.times"
  echo "$rc $(awk '{for (i = 1; i <= NF; i++) { split($i, t, /[ms]/); s += t[1] * 60 + t[2] }} END {printf "%.1f", s}' "$logdir/$1.times")" >"$logdir/$1.rc"
}

declare -A state=() start=() pid_stage=()
declare -a rows=()
passed=0 failed=0
junit_cases=""
xml_escape() { sed -e 's/&/\&amp;/g' -e 's/</\&lt;/g' -e 's/>/\&gt;/g' -e 's/"/\&quot;/g'; }
record() { # record NAME RESULT WALL CPU: one finished (or skipped) stage
  local name=$1 result=$2 wall=$3 cpu=$4 what
  what=$(sed -n 's/^what: //p' "$logdir/$name.log" 2>/dev/null | head -1)
  if [ "$result" = PASS ]; then
    passed=$((passed + 1))
    echo "check: [$name] PASS in ${wall}s (cpu ${cpu}s)"
    junit_cases+="  <testcase classname=\"check\" name=\"$name\" time=\"$wall\"/>"$'\n'
  else
    failed=$((failed + 1))
    local msg
    if [ "$result" = SKIP ]; then
      msg="not run: a stage it needs (${needs[$name]}) did not pass"
      echo "check: [$name] SKIP: $msg"
      what=${what:-$msg}
    else
      echo "check: [$name] FAIL in ${wall}s (cpu ${cpu}s) — its output:"
      sed 's/^/  | /' "$logdir/$name.log"
      msg=$(tail -n 200 "$logdir/$name.log")
    fi
    junit_cases+="  <testcase classname=\"check\" name=\"$name\" time=\"$wall\"><failure message=\"stage $name $result\">$(printf '%s' "$msg" | xml_escape)</failure></testcase>"$'\n'
  fi
  rows+=("$(printf '%-11s %-6s %7s %7s  %s' "$name" "$result" "$wall" "$cpu" "$what")")
}

for s in "${order[@]}"; do state[$s]=pending; done
tier_line=""
if [ "$quick" = 0 ]; then
  if [ ${#selected[@]} -gt 0 ]; then
    tier_line="check: stages named: run whatever their tier; the stamp is left as it is"
  elif [ "$efficacy" = 1 ]; then
    tier_line="check: tiers store and efficacy (efficacy: $efficacy_reason)"
  else
    tier_line="check: tier store only; efficacy tier (${left_out[*]}) not run: $efficacy_reason; scripts/check.sh --full runs it"
  fi
  echo "$tier_line"
fi
echo "check: stages ${order[*]} (up to $jobs at a time)"
gate_start=$(date +%s.%N)
running=0
while :; do
  # Start (or skip) whatever is ready, in table order.
  for s in "${order[@]}"; do
    [ "${state[$s]}" = pending ] || continue
    ready=1 blocked=0
    for d in ${needs[$s]}; do
      case ${state[$d]:-pass} in
        pass) ;;
        fail | skip) blocked=1 ;;
        *) ready=0 ;;
      esac
    done
    if [ $blocked = 1 ]; then
      state[$s]=skip
      record "$s" SKIP 0.0 0.0
    elif [ $ready = 1 ] && [ $running -lt "$jobs" ]; then
      state[$s]=running
      start[$s]=$(date +%s.%N)
      run_stage "$s" &
      pid_stage[$!]=$s
      running=$((running + 1))
    fi
  done
  [ $running -gt 0 ] || break
  wait -n -p done_pid
  s=${pid_stage[$done_pid]}
  running=$((running - 1))
  wall=$(awk -v s="${start[$s]}" -v e="$(date +%s.%N)" 'BEGIN{printf "%.1f", e-s}')
  rc=1 cpu=0.0
  [ -f "$logdir/$s.rc" ] && read -r rc cpu <"$logdir/$s.rc"
  if [ "$rc" = 0 ]; then state[$s]=pass; record "$s" PASS "$wall" "$cpu"; else state[$s]=fail; record "$s" FAIL "$wall" "$cpu"; fi
done
gate_wall=$(awk -v s="$gate_start" -v e="$(date +%s.%N)" 'BEGIN{printf "%.1f", e-s}')

echo
printf '%-11s %-6s %7s %7s  %s\n' STAGE RESULT WALL_S CPU_S WHAT
for r in "${rows[@]}"; do echo "$r"; done
printf '%-11s %-6s %7s\n' total "" "$gate_wall"
for s in "${order[@]}"; do
  [ "${state[$s]}" = fail ] || continue
  echo
  echo "check: [$s] failed; its failing tests and FAIL lines (the whole log is above):"
  bash scripts/failure-digest.sh "$logdir/$s.log" | sed 's/^/  | /'
done
if [ -n "$junit" ]; then
  {
    echo '<?xml version="1.0" encoding="UTF-8"?>'
    echo "<testsuite name=\"pconform-check\" tests=\"$((passed + failed))\" failures=\"$failed\" time=\"$gate_wall\">"
    printf '%s' "$junit_cases"
    echo '</testsuite>'
  } >"$junit"
  echo "check: JUnit XML written to $junit"
fi
# A gate that ran every stage of both tiers and passed records the efficacy tier's inputs.
if [ "$quick" = 0 ] && [ "$efficacy" = 1 ] && [ ${#selected[@]} -eq 0 ] && [ "$failed" -eq 0 ]; then
  if [ "$(tier_stamped)" = "$efficacy_key" ]; then
    echo "check: $TIER_STAMP already holds this pass (key ${efficacy_key:0:12})"
  else
    tier_write_stamp "$efficacy_key"
    echo "check: wrote $TIER_STAMP (key ${efficacy_key:0:12}): commit it with the change"
  fi
fi
[ -n "$tier_line" ] && echo "$tier_line"
echo "check: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
