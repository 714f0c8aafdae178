#!/usr/bin/env bash
# The pconform gate: one command that a new user or CI runs on a fresh checkout.
#
#   scripts/check.sh [--junit FILE] [STAGE ...]
#
# Stages, in order: lint, unit, models, replay, properties (default: all of them). It installs what it
# needs first (Go 1.26 and the P tool into .tools/, see scripts/bootstrap.sh) and uses the offline
# module mirror at ../shared/goproxy when that folder exists. Each stage prints a progress line while it
# runs; a failing stage's own output is shown. At the end: a table (stage, what ran, result, seconds),
# optionally JUnit XML, and the last line `check: N passed, N failed`. Exit status 0 only if every
# stage passed.
#
# Budgets have quick defaults and environment overrides for long runs:
#   PCONFORM_SCHEDULES      schedules per green P test              (default 1000)
#   PCONFORM_CE_SCHEDULES   schedule budget per P counterexample     (default 100)
#   PCONFORM_SEED           checker and property seed               (default 1)
#   PCONFORM_SEQUENCES      property sequences per property         (default 200)
#   PCONFORM_REPLAY_SCHEDULES  schedules per green P test replayed against the store (default 100)
#   PCONFORM_PG_DSN         run the PostgreSQL checks against this server instead of a throwaway one
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 2
# shellcheck source=scripts/env.sh
. scripts/env.sh

ALL_STAGES=(lint unit models replay properties)
junit=""
stages=()
while [ $# -gt 0 ]; do
  case "$1" in
    --junit) junit=${2:?--junit needs a file}; shift 2 ;;
    --junit=*) junit=${1#--junit=}; shift ;;
    -h|--help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    lint|unit|models|replay|properties) stages+=("$1"); shift ;;
    *) echo "check: unknown stage or flag '$1' (stages: ${ALL_STAGES[*]}; flags: --junit FILE)" >&2; exit 2 ;;
  esac
done
[ ${#stages[@]} -gt 0 ] || stages=("${ALL_STAGES[@]}")

logdir=$(mktemp -d "${TMPDIR:-/tmp}/pconform-check.XXXXXX")
# shellcheck source=scripts/pg.sh
. scripts/pg.sh
trap 'pg_stop; rm -rf "$logdir"' EXIT

echo "check: setting up toolchains"
if ! bash scripts/bootstrap.sh all >"$logdir/bootstrap.log" 2>&1; then
  cat "$logdir/bootstrap.log"
  echo "check: 0 passed, 1 failed"
  exit 1
fi
sed 's/^/  /' "$logdir/bootstrap.log"
# Chromium is installed now: the browser test must run, not skip.
export PCONFORM_REQUIRE_BROWSER=1
# Every check runs on SQLite and PostgreSQL: start a throwaway server (or use PCONFORM_PG_DSN).
if ! pg_start; then
  echo "check: PostgreSQL is required (CI=true) but could not be started"
  echo "check: 0 passed, 1 failed"
  exit 1
fi

go_files() { git ls-files --cached --others --exclude-standard -- '*.go' | grep -v '/testdata/' ; }

stage_lint() {
  echo "what: gofmt, go mod tidy -diff, go vet, staticcheck, pconform-vet"
  local unformatted
  unformatted=$(go_files | xargs -r gofmt -l)
  if [ -n "$unformatted" ]; then echo "gofmt would change:"; echo "$unformatted"; return 1; fi
  go mod tidy -diff || { echo "go.mod or go.sum is not tidy: run go mod tidy"; return 1; }
  go vet ./... || return 1
  go tool staticcheck ./... || return 1
  if [ -d cmd/pconform-vet ]; then
    go run ./cmd/pconform-vet ./... || return 1
  fi
}

stage_unit() {
  # properties/ has its own stage (its hunts are the long part); every other package runs here.
  echo "what: go test ./... (but properties/, which has its own stage)"
  go test -count=1 $(go list ./... | grep -v '/properties$')
}

stage_models() {
  echo "what: P compile + check of every test case in models/p"
  bash scripts/pmodels.sh
}

stage_replay() {
  local wide=${PCONFORM_REPLAY_SCHEDULES:-100}
  echo "what: corpus up to date; corpus replay (store, model, crash before every step); $wide more schedules per green test replayed"
  go run ./bridge/cmd/pconform-corpus -check -out traces/corpus || return 1
  go test -count=1 -run Corpus -v ./replay/ || return 1
  # The committed corpus keeps a few traces per test case; replay many more, generated now from the
  # same models, so that every explored execution of the green tests meets the real store.
  local big="$logdir/wide-corpus"
  go run ./bridge/cmd/pconform-corpus -out "$big" -schedules "$wide" -per-test "$wide" -seed "${PCONFORM_SEED:-1}" || return 1
  echo "wide corpus: $(ls "$big"/*.json | wc -l) traces"
  # Its databases live in memory when /dev/shm is writable: the wide run is about the protocol, and
  # the committed corpus above already replays on disk with synchronous=FULL.
  local scratch=${TMPDIR:-/tmp}
  if [ -d /dev/shm ] && [ -w /dev/shm ]; then scratch=/dev/shm; fi
  TMPDIR=$scratch go test -count=1 -run 'TestCorpus$' ./replay/ -corpus "$big"
}

stage_properties() {
  echo "what: gopter properties against the real store and hunts of every broken variant (PCONFORM_SEQUENCES=${PCONFORM_SEQUENCES:-200})"
  go test -count=1 -v ./properties/
}

declare -a rows=()
passed=0 failed=0
junit_cases=""
xml_escape() { sed -e 's/&/\&amp;/g' -e 's/</\&lt;/g' -e 's/>/\&gt;/g' -e 's/"/\&quot;/g'; }
for stage in "${stages[@]}"; do
  echo "check: [$stage] running ..."
  start=$(date +%s.%N)
  "stage_$stage" >"$logdir/$stage.log" 2>&1
  rc=$?
  secs=$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN{printf "%.1f", e-s}')
  what=$(sed -n 's/^what: //p' "$logdir/$stage.log" | head -1)
  if [ $rc -eq 0 ]; then
    result=PASS; passed=$((passed + 1))
    echo "check: [$stage] PASS in ${secs}s"
    junit_cases+="  <testcase classname=\"check\" name=\"$stage\" time=\"$secs\"/>"$'\n'
  else
    result=FAIL; failed=$((failed + 1))
    echo "check: [$stage] FAIL in ${secs}s — its output:"
    sed 's/^/  | /' "$logdir/$stage.log"
    msg=$(tail -n 200 "$logdir/$stage.log" | xml_escape)
    junit_cases+="  <testcase classname=\"check\" name=\"$stage\" time=\"$secs\"><failure message=\"stage $stage failed\">$msg</failure></testcase>"$'\n'
  fi
  rows+=("$(printf '%-11s %-6s %7ss  %s' "$stage" "$result" "$secs" "$what")")
done

echo
printf '%-11s %-6s %8s  %s\n' STAGE RESULT SECONDS WHAT
for r in "${rows[@]}"; do echo "$r"; done
if [ -n "$junit" ]; then
  {
    echo '<?xml version="1.0" encoding="UTF-8"?>'
    echo "<testsuite name=\"pconform-check\" tests=\"$((passed + failed))\" failures=\"$failed\">"
    printf '%s' "$junit_cases"
    echo '</testsuite>'
  } >"$junit"
  echo "check: JUnit XML written to $junit"
fi
echo "check: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
