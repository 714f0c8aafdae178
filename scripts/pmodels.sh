#!/usr/bin/env bash
# The `models` stage of the gate: compile the P models (models/p) and run every P test case by its
# exact name with the real P checker.
#
#   scripts/pmodels.sh            # all tests
#   scripts/pmodels.sh NAME...    # only these tests (still compiled and listed first)
#   scripts/pmodels.sh --logs ... # also record every test's first schedules with -v for the bridge
#
# The tests the stage requires are the `test` declarations in models/p's sources: each must be in
# the checker's listing, and the listing must hold nothing else (a stale compile). A test whose name
# ends in "Counterexample" must find a bug within PCONFORM_CE_SCHEDULES schedules; every other test
# must explore PCONFORM_SCHEDULES schedules without one. Those rules and the checker's command line
# are package bridge's: the checker runs are planned, made and judged by bridge/cmd/pconform-pcheck
# (built into out/gate/pmodels/ unless PCONFORM_PCHECK names it), so the gate and the corpus drive
# the checker one way; this script keeps the cache, the parallel jobs and the report. The stage fails (exit 1) on a compile
# error, on a declared test missing from the listing or a listed test not declared, on a green test
# with a bug, on a counterexample without one, and on a checker run whose result cannot be read; in
# each case it prints the checker's (or compiler's) own output.
#
# With --logs the stage also records runs for the bridge in models/p/PCheckerOutput/recorded (the
# layout the bridge's Config.FromRuns reads, see bridge's package documentation, "Recorded runs"):
# each green test's first PCONFORM_RECORD_SCHEDULES schedules run again with -v, and each
# counterexample's one run (made with -v, it stops at its bug). The gate's corpora are made from
# these (`pconform-corpus -from models/p/PCheckerOutput/recorded`). The verdict runs themselves go
# without -v: -v roughly doubles a run's CPU, and nothing reads the logs of schedules past the
# corpora's (docs/notes/2026-12-01-gate-history.md, "The checker's runs").
#
# Nothing is computed twice: every checker run's output is kept in a content-addressed cache,
# keyed by the P sources (every .p and .pproj), `p --version`, the .NET runtimes, and the run's
# exact command line (test case, budget, seed, timeout, -v); a run whose key is cached is restored
# from it instead of run. The compile is skipped likewise when the compiled project was made from
# the same sources by the same P tool. Only runs that pass are cached, so a failure is always rerun.
# PCONFORM_P_CACHE=off turns the cache off.
#
# Environment (all optional):
#   PCONFORM_SCHEDULES         schedules per green test                   (default 1000)
#   PCONFORM_CE_SCHEDULES      schedule budget per counterexample         (default 100)
#   PCONFORM_RECORD_SCHEDULES  schedules per green test recorded by --logs (default 100)
#   PCONFORM_SEED              checker seed, at least 1                   (default 1)
#   PCONFORM_JOBS              checker runs in parallel                   (default 2)
#   PCONFORM_TEST_TIMEOUT      seconds per checker run, at least 1        (default 600)
#   PCONFORM_P_CACHE           the cache directory, or "off"              (default out/gate/pcache)
#   PCONFORM_PCHECK            a built pconform-pcheck to use             (default: build it)
#
# Per-test checker output stays in models/p/PCheckerOutput/<test>/ (git-ignored): <test>.log is the
# checker's stdout, run.txt the run's test case, seed, budget, -v and exit code, key its cache key,
# BugFinding/ its summary and, on a bug, the readable trace (.txt), the JSON log (.trace.json) and
# the schedule (.schedule) to replay. list.log and version.log beside them are
# `p check --list-tests` and `p --version`; compile.key says what the compiled project was made from.
set -uo pipefail
# shellcheck source=scripts/env.sh
. "$(dirname "${BASH_SOURCE[0]}")/env.sh"

MODELS="$PCONFORM_ROOT/models/p"
OUT="$MODELS/PCheckerOutput"
RECORDED="$OUT/recorded"
STATUS="$OUT/status"
PROJECT=PConform
DLL="PGenerated/PChecker/net8.0/$PROJECT.dll"
SCHEDULES=${PCONFORM_SCHEDULES:-1000}
CE_SCHEDULES=${PCONFORM_CE_SCHEDULES:-100}
RECORD_SCHEDULES=${PCONFORM_RECORD_SCHEDULES:-100}
SEED=${PCONFORM_SEED:-1}
JOBS=${PCONFORM_JOBS:-2}
TEST_TIMEOUT=${PCONFORM_TEST_TIMEOUT:-600}
CACHE=${PCONFORM_P_CACHE:-$PCONFORM_ROOT/out/gate/pcache}

RECORD=0
if [ "${1:-}" = --logs ]; then
  RECORD=1
  shift
fi

for v in SCHEDULES CE_SCHEDULES RECORD_SCHEDULES SEED JOBS TEST_TIMEOUT; do
  case ${!v} in
    '' | *[!0-9]*) echo "pmodels: PCONFORM_$v must be a non-negative integer, got '${!v}'" >&2; exit 2 ;;
  esac
done
[ "$JOBS" -ge 1 ] || JOBS=1
for v in SEED TEST_TIMEOUT; do
  [ "${!v}" -ge 1 ] || { echo "pmodels: PCONFORM_$v must be at least 1, got '${!v}'" >&2; exit 2; }
done
if [ "$RECORD_SCHEDULES" -gt "$SCHEDULES" ]; then
  echo "pmodels: PCONFORM_RECORD_SCHEDULES ($RECORD_SCHEDULES) exceeds PCONFORM_SCHEDULES ($SCHEDULES)" >&2
  exit 2
fi

# one_of WORD LIST...: whether WORD is one of LIST. (Not `printf | grep -q`: grep quits at the first
# match, printf may then die of SIGPIPE, and with pipefail the pipeline fails.)
one_of() { local w=$1 x; shift; for x in "$@"; do [ "$x" = "$w" ] && return 0; done; return 1; }
# first_line FILE [DEFAULT]: the file's first line, or DEFAULT when it cannot be read (no fork).
first_line() { local l; if { read -r l || [ -n "$l" ]; } 2>/dev/null <"$1"; then printf '%s' "$l"; else printf '%s' "${2:-}"; fi; }

if ! command -v p >/dev/null 2>&1; then
  "$PCONFORM_ROOT/scripts/bootstrap.sh" p || { echo "pmodels: FAIL: cannot install the P tool" >&2; exit 1; }
  hash -r
fi

# The checker's driver (see above), built with the go command's cache: a second or less when
# nothing changed.
PCHECK=${PCONFORM_PCHECK:-}
if [ -z "$PCHECK" ]; then
  command -v go >/dev/null 2>&1 || { "$PCONFORM_ROOT/scripts/bootstrap.sh" go && hash -r; } ||
    { echo "pmodels: FAIL: cannot install Go to build the checker's driver" >&2; exit 1; }
  PCHECK="$PCONFORM_ROOT/out/gate/pmodels/pconform-pcheck"
  if ! (cd "$PCONFORM_ROOT" && go build -o "$PCHECK" ./bridge/cmd/pconform-pcheck); then
    echo "pmodels: FAIL: cannot build bridge/cmd/pconform-pcheck" >&2
    exit 1
  fi
fi

# One stage at a time per checkout: two would overwrite each other's runs. The gate holds this lock
# already (and says so in PCONFORM_GATE_LOCKED); run alone, the script takes it itself.
mkdir -p "$PCONFORM_ROOT/out/gate"
if [ -z "${PCONFORM_GATE_LOCKED:-}" ]; then
  exec 9>"$PCONFORM_ROOT/out/gate/lock"
  if ! flock -n 9; then
    echo "pmodels: another gate or pmodels.sh run holds out/gate/lock in this checkout; waiting for it"
    flock 9
  fi
fi

stage_start=$SECONDS
mkdir -p "$OUT" "$STATUS"
rm -f "$STATUS"/*
cd "$MODELS" || exit 1

# ---- inputs --------------------------------------------------------------------------------------
# The P sources, as the bridge's modelSources finds them: every .p and .pproj outside the generated
# and output directories and hidden ones.
mapfile -t SOURCES < <(find . -mindepth 1 \( -type d \( -name PGenerated -o -name PCheckerOutput -o -name '.*' \) -prune \) \
  -o -type f \( -name '*.p' -o -name '*.pproj' \) -print | sed 's|^\./||' | LC_ALL=C sort)
if [ "${#SOURCES[@]}" -eq 0 ]; then
  echo "pmodels: FAIL: no .p or .pproj files in models/p" >&2
  exit 1
fi

# The test cases the sources declare: `test NAME [main = ...]: ...` at the start of a line.
mapfile -t DECLARED < <(sed -n 's/^[[:space:]]*test[[:space:]]\{1,\}\([A-Za-z_][A-Za-z0-9_]*\)[[:space:]]*\[.*/\1/p' "${SOURCES[@]}" | LC_ALL=C sort -u)
if [ "${#DECLARED[@]}" -eq 0 ]; then
  echo "pmodels: FAIL: the sources in models/p declare no test case (no line 'test NAME [main = ...]')" >&2
  exit 1
fi

if ! p --version >"$STATUS/version.new" 2>&1; then
  echo "pmodels: FAIL: p --version failed:" >&2
  cat "$STATUS/version.new" >&2
  exit 1
fi
# Replace a file only when its content changed: its age, and the age of the directory holding it,
# are inputs of the Go tests that read them (the go command's test cache). Scratch files go to
# $STATUS for the same reason.
install_if_changed() { if cmp -s "$1" "$2"; then rm -f "$1"; else mv -f "$1" "$2"; fi; }
install_if_changed "$STATUS/version.new" "$OUT/version.log"

# compile_key: what the compiled project depends on: every source's name and content, the P tool's
# version and the .NET runtimes it may roll forward to.
COMPILE_KEY=$({
  echo "pmodels compile v1"
  sha256sum -- "${SOURCES[@]}" | sed 's/^\([0-9a-f]*\)  /\1 /'
  cat "$OUT/version.log"
  dotnet --list-runtimes 2>&1
} | sha256sum | cut -c1-64)

# ---- compile -------------------------------------------------------------------------------------
compiled_from() { # prints the compile key the project in PGenerated was made from, if still intact
  local key dllsum
  read -r key dllsum <"$OUT/compile.key" 2>/dev/null || return 1
  [ -f "$DLL" ] && [ "$(sha256sum <"$DLL" | cut -c1-64)" = "$dllsum" ] && echo "$key"
}
if [ "$(compiled_from)" = "$COMPILE_KEY" ] && [ -s "$OUT/list.log" ]; then
  echo "pmodels: compile skipped: PGenerated was compiled from these sources by this P tool ($OUT/compile.key)"
else
  echo "pmodels: compiling models/p"
  rm -f "$OUT/compile.key"
  if ! p compile >"$OUT/compile.log" 2>&1; then
    # The P compiler reports parse and type errors as "[Error:] [file:L:C] msg"; a failed C# build
    # reports "error CSxxxx". Show those, then the whole log for context.
    echo "pmodels: FAIL: models/p does not compile. Compiler output:" >&2
    grep -E '\[(Parser |Semantic |)Error|Error:|error [A-Z]+[0-9]+|NotSupportedError' "$OUT/compile.log" >&2
    echo "---- full compiler output ($OUT/compile.log) ----" >&2
    cat "$OUT/compile.log" >&2
    exit 1
  fi
  echo "pmodels: compiled in $((SECONDS - stage_start))s"
  # ---- list ------------------------------------------------------------------------------------
  if ! p check "$DLL" --list-tests >"$STATUS/list.new" 2>&1; then
    echo "pmodels: FAIL: p check --list-tests failed:" >&2
    cat "$STATUS/list.new" >&2
    exit 1
  fi
  install_if_changed "$STATUS/list.new" "$OUT/list.log"
  echo "$COMPILE_KEY $(sha256sum <"$DLL" | cut -c1-64)" >"$OUT/compile.key"
fi
# The bridge refuses recorded runs whose listing is older than a source (made from other models);
# the listing is current (the compile key says so), so only its age may need setting right.
for f in "${SOURCES[@]}"; do
  if [ "$f" -nt "$OUT/list.log" ]; then touch "$OUT/list.log"; break; fi
done

mapfile -t LISTED < <(sed -n '/List of test cases/,/^\. Done/p' "$OUT/list.log" | sed '1d;$d' | tr -d '\r' | grep -v '^\s*$')
if [ "${#LISTED[@]}" -eq 0 ]; then
  echo "pmodels: FAIL: the checker lists no test cases:" >&2
  cat "$OUT/list.log" >&2
  exit 1
fi

failed=0
for t in "${DECLARED[@]}"; do
  if ! one_of "$t" "${LISTED[@]}"; then
    echo "pmodels: FAIL: test $t is declared in models/p but not in the checker's listing (${LISTED[*]})" >&2
    failed=1
  fi
done
for t in "${LISTED[@]}"; do
  if ! one_of "$t" "${DECLARED[@]}"; then
    echo "pmodels: FAIL: the checker lists $t, which no source in models/p declares (declared: ${DECLARED[*]}; a stale compile?)" >&2
    failed=1
  fi
done

TESTS=("${LISTED[@]}")
if [ $# -gt 0 ]; then
  TESTS=()
  for t in "$@"; do
    if one_of "$t" "${LISTED[@]}"; then
      TESTS+=("$t")
    else
      echo "pmodels: FAIL: no test named $t (listed: ${LISTED[*]})" >&2
      failed=1
    fi
  done
fi

# ---- run -----------------------------------------------------------------------------------------
# run_one NAME BUDGET VERBOSE DIR KEY: one checker run of test NAME into DIR, unless DIR holds the
# run already (its key file says so; only a run that passed has one) or the cache does; KEY is the
# run's cache key (from pconform-pcheck plan). The run itself is `pconform-pcheck run`, which writes
# DIR/result as "schedules bugs seconds" read from the test's own section of the checker's stdout
# and DIR/cpu (CPU seconds of the run); $STATUS/<NAME>.<verbose> says whether it ran, was kept or
# came from the cache. -tc matches by prefix, so when NAME is a prefix of other tests the checker
# runs them too; the section headed ".. Test case :: NAME" is still NAME's own, and the summary
# file (which the last test overwrites) is only cross-checked when NAME ran alone.
run_one() {
  local name=$1 budget=$2 verbose=$3 dir=$4 key=$5
  local status="$STATUS/$name.$verbose"
  echo "$key" >"$status.key"
  # Left untouched when it is this run already: its files' ages are inputs of the Go tests that read
  # them, and rewriting them would make those tests run again.
  if [ "$(first_line "$dir/key")" = "$key" ] && [ -f "$dir/result" ]; then
    echo kept >"$status"
    return
  fi
  rm -rf "$dir"
  if [ "$CACHE" != off ] && [ -d "$CACHE/$key" ]; then
    mkdir -p "$(dirname "$dir")"
    if cp -al "$CACHE/$key" "$dir" 2>/dev/null || cp -a "$CACHE/$key" "$dir"; then
      echo cached >"$status"
      return
    fi
    rm -rf "$dir"
  fi
  echo ran >"$status"
  local v=()
  [ "$verbose" = 1 ] && v=(-v)
  "$PCHECK" run -dll "$DLL" -tc "$name" -s "$budget" -seed "$SEED" -timeout "$TEST_TIMEOUT" "${v[@]}" -dir "$dir" ||
    echo "pmodels: pconform-pcheck run $name failed (exit $?)" >&2
  # DIR/key is written by the report, and only for a run that passed: a failing run is run again.
}

# verdict NAME DIR BUDGET: prints "PASS|FAIL NOTE" for the run in DIR (pconform-pcheck verdict).
verdict() {
  "$PCHECK" verdict -tc "$1" -dir "$2" -budget "$3" -project "$PROJECT" 2>&1 || echo "FAIL pconform-pcheck verdict failed"
}

# The jobs, as pconform-pcheck plans them: every test's verdict run, and with --logs each green
# test's recorded run (a counterexample's verdict run is made with -v and serves as its record).
JOB_NAMES=() JOB_BUDGETS=() JOB_VERBOSE=() JOB_KINDS=() JOB_KEYS=() JOB_DIRS=()
plan_flags=(-compile-key "$COMPILE_KEY" -dll "$DLL" -seed "$SEED" -timeout "$TEST_TIMEOUT" -schedules "$SCHEDULES"
  -ce-schedules "$CE_SCHEDULES" -out "$OUT")
[ "$RECORD" = 1 ] && plan_flags+=(-logs -record "$RECORD_SCHEDULES" -recorded "$RECORDED")
if ! "$PCHECK" plan "${plan_flags[@]}" "${TESTS[@]}" >"$STATUS/plan"; then
  echo "pmodels: FAIL: pconform-pcheck plan failed" >&2
  exit 1
fi
while read -r name budget verbose kind key dir; do
  JOB_NAMES+=("$name") JOB_BUDGETS+=("$budget") JOB_VERBOSE+=("$verbose") JOB_KINDS+=("$kind") JOB_KEYS+=("$key") JOB_DIRS+=("$dir")
done <"$STATUS/plan"

running=0
for i in "${!JOB_NAMES[@]}"; do
  run_one "${JOB_NAMES[$i]}" "${JOB_BUDGETS[$i]}" "${JOB_VERBOSE[$i]}" "${JOB_DIRS[$i]}" "${JOB_KEYS[$i]}" &
  running=$((running + 1))
  if [ "$running" -ge "$JOBS" ]; then
    wait -n
    running=$((running - 1))
  fi
done
wait

# ---- report --------------------------------------------------------------------------------------
printf '\n%-42s %-14s %-8s %9s %5s %8s %6s %-7s %-6s %s\n' TEST EXPECTED RUN SCHEDULES BUGS SECONDS CPU_S SOURCE RESULT NOTE
found_lines=()
used_keys=()
ran=0 reused=0
for i in "${!JOB_NAMES[@]}"; do
  t=${JOB_NAMES[$i]} dir=${JOB_DIRS[$i]} budget=${JOB_BUDGETS[$i]} verbose=${JOB_VERBOSE[$i]} kind=${JOB_KINDS[$i]}
  source=$(first_line "$STATUS/$t.$verbose" '?')
  case $source in ran) ran=$((ran + 1)) ;; *) reused=$((reused + 1)) ;; esac
  read -r scheds bugs secs <"$dir/result" 2>/dev/null || { scheds='?'; bugs='?'; secs='?'; }
  cpu=$(first_line "$dir/cpu" '?')
  read -r result note < <(verdict "$t" "$dir" "$budget")
  if [ "$dir" = "$RECORDED/$t" ]; then what="record" ; elif [ "$verbose" = 1 ]; then what="verdict+record"; else what=verdict; fi
  printf '%-42s %-14s %-8s %9s %5s %8s %6s %-7s %-6s %s\n' "$t" "$kind" "$what" "$scheds" "$bugs" "$secs" "$cpu" "$source" "$result" "$note"
  key=$(first_line "$STATUS/$t.$verbose.key")
  if [ "$result" = PASS ]; then
    used_keys+=("$key")
    [ "$source" = ran ] && echo "$key" >"$dir/key"
    if [ "$source" = ran ] && [ "$CACHE" != off ]; then
      mkdir -p "$CACHE"
      tmp="$CACHE/.tmp.$key.$$"
      rm -rf "$tmp"
      if { cp -al "$dir" "$tmp" 2>/dev/null || cp -a "$dir" "$tmp"; } && ! [ -e "$CACHE/$key" ]; then
        mv -T "$tmp" "$CACHE/$key" 2>/dev/null
      fi
      rm -rf "$tmp"
    fi
    if [ "$kind" = counterexample ] && [ "$what" != record ]; then
      found_lines+=("$t: bug found after $scheds schedule(s) (seed $SEED, budget $CE_SCHEDULES)")
    fi
  else
    failed=1
    {
      echo "---- $t: checker output ($dir/$t.log) ----"
      grep -hE '<ErrorLog>|Assertion|liveness|Exception|Error' "$dir"/BugFinding/*.txt 2>/dev/null | head -20
      tail -n 25 "$dir/$t.log"
      sched=$(ls "$dir"/BugFinding/*.schedule 2>/dev/null | head -1)
      if [ -n "$sched" ]; then
        echo "replay: (cd models/p && p check $DLL -tc $t --replay ${sched#"$MODELS/"} -v)"
      fi
    } >&2
  fi
done

# The recorded-runs directory: the counterexamples' runs (made with -v) linked in beside the green
# tests' recorded runs, and the listing and version. Files are replaced only when they changed.
if [ "$RECORD" = 1 ]; then
  mkdir -p "$RECORDED"
  for i in "${!JOB_NAMES[@]}"; do
    t=${JOB_NAMES[$i]}
    [ "${JOB_KINDS[$i]}" = counterexample ] || continue
    if [ "$(first_line "$RECORDED/$t/key")" != "$(first_line "$OUT/$t/key")" ]; then
      rm -rf "$RECORDED/$t"
      cp -al "$OUT/$t" "$RECORDED/$t" 2>/dev/null || cp -a "$OUT/$t" "$RECORDED/$t"
    fi
  done
  for f in list.log version.log; do
    cp -p "$OUT/$f" "$STATUS/$f.new" && install_if_changed "$STATUS/$f.new" "$RECORDED/$f"
  done
  for f in "${SOURCES[@]}"; do
    if [ "$f" -nt "$RECORDED/list.log" ]; then touch "$RECORDED/list.log"; break; fi
  done
  # Runs of tests that are no longer listed must not stand in for anything.
  for d in "$RECORDED"/*/; do
    [ -d "$d" ] || continue
    n=$(basename "$d")
    one_of "$n" "${LISTED[@]}" || rm -rf "$d"
  done
fi

# The cache keeps what this run used and what the run before it used (so switching between two
# branches reruns nothing); older entries are deleted. Only a run of every test prunes.
if [ "$CACHE" != off ] && [ -d "$CACHE" ] && [ $# -eq 0 ] && [ "$failed" -eq 0 ]; then
  [ -f "$CACHE/used.keys" ] && mv -f "$CACHE/used.keys" "$CACHE/used-before.keys"
  printf '%s\n' "${used_keys[@]}" >"$CACHE/used.keys"
  for e in "$CACHE"/*/; do
    k=$(basename "$e")
    grep -qxF "$k" "$CACHE/used.keys" "$CACHE/used-before.keys" 2>/dev/null || rm -rf "$e"
  done
fi

if [ "${#found_lines[@]}" -gt 0 ]; then
  echo
  printf '%s\n' "${found_lines[@]}"
fi
echo
if [ "$failed" -ne 0 ]; then
  echo "pmodels: FAIL ($((SECONDS - stage_start))s)"
  exit 1
fi
echo "pmodels: PASS: ${#TESTS[@]} tests, $ran checker runs, $reused reused ($((SECONDS - stage_start))s; seed $SEED, $SCHEDULES schedules per green test, counterexample budget $CE_SCHEDULES$([ "$RECORD" = 1 ] && echo ", $RECORD_SCHEDULES recorded per green test"))"
