#!/usr/bin/env bash
# The `models` stage of the gate: compile the P models (models/p) and run every P test case by its
# exact name with the real P checker.
#
#   scripts/pmodels.sh            # all tests
#   scripts/pmodels.sh NAME...    # only these tests (still compiled and listed first)
#   scripts/pmodels.sh --logs ... # also keep every schedule's JSON log (-v) for the bridge
#
# With --logs the output directory is a record of the runs that the bridge reads instead of running
# the checker again (`pconform-corpus -from models/p/PCheckerOutput`, see bridge's package
# documentation, "Recorded runs"): the gate runs the checker once per test case and makes the
# corpora from these runs. -v costs time and disk (a green test's 1000 schedules log ~200 MB).
#
# A test whose name ends in "Counterexample" must find a bug within PCONFORM_CE_SCHEDULES schedules;
# every other test must explore PCONFORM_SCHEDULES schedules without one. The stage fails (exit 1)
# on a compile error, on an expected test missing from the checker's listing, on a green test with a
# bug, on a counterexample without one, and on a checker run whose result cannot be read; in each
# case it prints the checker's (or compiler's) own output.
#
# Environment (all optional):
#   PCONFORM_SCHEDULES     schedules per green test            (default 1000)
#   PCONFORM_CE_SCHEDULES  schedule budget per counterexample  (default 100)
#   PCONFORM_SEED          checker seed                        (default 1)
#   PCONFORM_JOBS          checker runs in parallel            (default 2)
#   PCONFORM_TEST_TIMEOUT  seconds per checker run             (default 600)
#
# Per-test checker output stays in models/p/PCheckerOutput/<test>/ (git-ignored): <test>.log is the
# checker's stdout, run.txt the run's test case, seed, budget, -v and exit code, BugFinding/ its
# summary and, on a bug, the readable trace (.txt), the JSON log (.trace.json) and the schedule
# (.schedule) to replay; with --logs also every schedule's log (_verbose.trace.json). list.log and
# version.log beside them are `p check --list-tests` and `p --version`.
set -uo pipefail
# shellcheck source=scripts/env.sh
. "$(dirname "${BASH_SOURCE[0]}")/env.sh"

MODELS="$PCONFORM_ROOT/models/p"
OUT="$MODELS/PCheckerOutput"
PROJECT=PConform
DLL="PGenerated/PChecker/net8.0/$PROJECT.dll"
SCHEDULES=${PCONFORM_SCHEDULES:-1000}
CE_SCHEDULES=${PCONFORM_CE_SCHEDULES:-100}
SEED=${PCONFORM_SEED:-1}
JOBS=${PCONFORM_JOBS:-2}
TEST_TIMEOUT=${PCONFORM_TEST_TIMEOUT:-600}

# The tests the stage requires. A listed test that is not here still runs (classified by its name).
EXPECTED=(
  tcLeasedWorkers
  tcLeaselessWorker
  tcPriorityKeyedFifo
  tcOutboxFold
  tcOutboxSplitCorrect
  tcCrashRestart
  tcPipeline
  tcRawStoreOps
  tcOutboxSplitWriteCounterexample
  tcLeaselessRawAttemptsCounterexample
  tcUnfencedAckCounterexample
  tcFifoOvertakeCounterexample
)

VERBOSE=0
if [ "${1:-}" = --logs ]; then
  VERBOSE=1
  shift
fi

for v in SCHEDULES CE_SCHEDULES SEED JOBS TEST_TIMEOUT; do
  case ${!v} in
    '' | *[!0-9]*) echo "pmodels: PCONFORM_$v must be a non-negative integer, got '${!v}'" >&2; exit 2 ;;
  esac
done
[ "$JOBS" -ge 1 ] || JOBS=1

kind_of() { case $1 in *Counterexample) echo counterexample ;; *) echo green ;; esac; }

if ! command -v p >/dev/null 2>&1; then
  "$PCONFORM_ROOT/scripts/bootstrap.sh" p || { echo "pmodels: FAIL: cannot install the P tool" >&2; exit 1; }
  hash -r
fi

stage_start=$SECONDS
mkdir -p "$OUT"
cd "$MODELS" || exit 1

# ---- compile -------------------------------------------------------------------------------------
echo "pmodels: compiling models/p"
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

# ---- list ----------------------------------------------------------------------------------------
if ! p check "$DLL" --list-tests >"$OUT/list.log" 2>&1; then
  echo "pmodels: FAIL: p check --list-tests failed:" >&2
  cat "$OUT/list.log" >&2
  exit 1
fi
p --version >"$OUT/version.log" 2>&1 || { echo "pmodels: FAIL: p --version failed:" >&2; cat "$OUT/version.log" >&2; exit 1; }
mapfile -t LISTED < <(sed -n '/List of test cases/,/^\. Done/p' "$OUT/list.log" | sed '1d;$d' | tr -d '\r' | grep -v '^\s*$')
if [ "${#LISTED[@]}" -eq 0 ]; then
  echo "pmodels: FAIL: the checker lists no test cases:" >&2
  cat "$OUT/list.log" >&2
  exit 1
fi

failed=0
for t in "${EXPECTED[@]}"; do
  if ! printf '%s\n' "${LISTED[@]}" | grep -qxF "$t"; then
    echo "pmodels: FAIL: expected test $t is not in the checker's listing (${LISTED[*]})" >&2
    failed=1
  fi
done

TESTS=("${LISTED[@]}")
if [ $# -gt 0 ]; then
  TESTS=()
  for t in "$@"; do
    if printf '%s\n' "${LISTED[@]}" | grep -qxF "$t"; then
      TESTS+=("$t")
    else
      echo "pmodels: FAIL: no test named $t (listed: ${LISTED[*]})" >&2
      failed=1
    fi
  done
fi

# ---- run -----------------------------------------------------------------------------------------
# run_one NAME: runs one test into $OUT/NAME and writes $OUT/NAME/result as
# "schedules bugs seconds" read from the test's own section of the checker's stdout. -tc matches by
# prefix, so when NAME is a prefix of other tests the checker runs them too; the section headed
# ".. Test case :: NAME" is still NAME's own, and the summary file (which the last test overwrites)
# is only cross-checked when NAME ran alone.
run_one() {
  local name=$1 dir="$OUT/$1" budget
  if [ "$(kind_of "$name")" = counterexample ]; then budget=$CE_SCHEDULES; else budget=$SCHEDULES; fi
  local verbose=()
  [ "$VERBOSE" = 1 ] && verbose=(-v)
  rm -rf "$dir"
  mkdir -p "$dir"
  p check "$DLL" -tc "$name" -s "$budget" --seed "$SEED" -t "$TEST_TIMEOUT" --fail-on-maxsteps "${verbose[@]}" -o "$dir" \
    >"$dir/$name.log" 2>&1
  local rc=$?
  echo $rc >"$dir/rc"
  printf 'test_case:%s\nseed:%s\nschedules:%s\nverbose:%s\nexit:%s\n' "$name" "$SEED" "$budget" "$VERBOSE" "$rc" >"$dir/run.txt"
  awk -v name="$name" '
    /^\.\. Test case :: / { cur = substr($0, length(".. Test case :: ") + 1); next }
    cur != name { next }
    /Found [0-9]+ bugs?\./ { for (i = 1; i <= NF; i++) if ($i == "Found") bugs = $(i + 1) }
    /Explored [0-9]+ schedules?$/ { for (i = 1; i <= NF; i++) if ($i == "Explored") scheds = $(i + 1) }
    /^\.\.\. Elapsed [0-9.]+ sec\.$/ { secs = $3 }
    END { if (bugs != "" && scheds != "") printf "%s %s %s\n", scheds, bugs, (secs == "" ? "?" : sprintf("%.1f", secs)) }
  ' "$dir/$name.log" >"$dir/result"
  local ran
  ran=$(grep -c '^\.\. Test case :: ' "$dir/$name.log")
  echo "$ran" >"$dir/ran"
}

running=0
for t in "${TESTS[@]}"; do
  run_one "$t" &
  running=$((running + 1))
  if [ "$running" -ge "$JOBS" ]; then
    wait -n
    running=$((running - 1))
  fi
done
wait

# ---- report --------------------------------------------------------------------------------------
printf '\n%-40s %-14s %9s %5s %8s %-6s %s\n' TEST EXPECTED SCHEDULES BUGS SECONDS RESULT NOTE
found_lines=()
for t in "${TESTS[@]}"; do
  dir="$OUT/$t"
  kind=$(kind_of "$t")
  rc=$(cat "$dir/rc" 2>/dev/null || echo '?')
  read -r scheds bugs secs <"$dir/result" || { scheds='?'; bugs='?'; secs='?'; }
  verdict=FAIL
  note=""
  summary="$dir/BugFinding/${PROJECT}_pchecker_summary.txt"
  if [ "$scheds" = '?' ]; then
    note="no result in the checker output (exit $rc)"
  elif [ "$rc" = 2 ]; then
    note="checker internal error (exit 2)"
  elif [ "$(cat "$dir/ran")" = 1 ] && { [ ! -f "$summary" ] ||
      ! grep -qx "bugs:$bugs" "$summary" || ! grep -qx "schedules:$scheds" "$summary"; }; then
    note="summary file disagrees with the checker output"
  elif [ "$kind" = green ]; then
    if [ "$bugs" != 0 ]; then
      note="bug found"
    elif [ "$scheds" -lt "$SCHEDULES" ]; then
      note="only $scheds of $SCHEDULES schedules explored"
    else
      verdict=PASS
    fi
  else
    if [ "$bugs" -ge 1 ]; then
      verdict=PASS
      note="bug found at schedule $scheds"
      found_lines+=("$t: bug found after $scheds schedule(s) (seed $SEED, budget $CE_SCHEDULES)")
    else
      note="no bug within $scheds schedules"
    fi
  fi
  if [ "$(cat "$dir/ran" 2>/dev/null)" != 1 ]; then
    note="${note:+$note; }-tc matched $(cat "$dir/ran" 2>/dev/null) tests"
  fi
  printf '%-40s %-14s %9s %5s %8s %-6s %s\n' "$t" "$kind" "$scheds" "$bugs" "$secs" "$verdict" "$note"
  if [ "$verdict" = FAIL ]; then
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

if [ "${#found_lines[@]}" -gt 0 ]; then
  echo
  printf '%s\n' "${found_lines[@]}"
fi
echo
if [ "$failed" -ne 0 ]; then
  echo "pmodels: FAIL ($((SECONDS - stage_start))s)"
  exit 1
fi
echo "pmodels: PASS: ${#TESTS[@]} tests ($((SECONDS - stage_start))s; seed $SEED, $SCHEDULES schedules per green test, counterexample budget $CE_SCHEDULES)"
