#!/usr/bin/env bash
# Tests scripts/pmodels.sh's cache of compiles and checker runs against a stand-in `p` (and
# `dotnet`): an unchanged input reruns nothing, and every input of a run (a source's content, a new
# source, the P tool's version, the .NET runtimes, the seed, the budgets, -v) makes it run again. It
# also checks that the expected tests come from the sources' `test` declarations, that a failing
# run is never cached, and that --logs records the runs the bridge reads. The stand-in writes what
# the real checker writes that pmodels.sh reads. Run: bash scripts/pmodels_test.sh (the lint stage
# does).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 2
# shellcheck source=scripts/env.sh
. scripts/env.sh
tmp=$(mktemp -d "${TMPDIR:-/tmp}/pmodels-test.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
failed=0

# A repository of its own: the two scripts, a P project with three tests, and the stand-ins in
# .tools/bin (which scripts/env.sh puts first on PATH).
root="$tmp/repo"
mkdir -p "$root/scripts" "$root/models/p/PSrc" "$root/models/p/PTst" "$root/.tools/bin"
cp scripts/env.sh scripts/pmodels.sh "$root/scripts/"
cat >"$root/models/p/M.pproj" <<'EOF'
<Project><ProjectName>PConform</ProjectName></Project>
EOF
echo 'machine Main { start state Init { } }' >"$root/models/p/PSrc/Main.p"
cat >"$root/models/p/PTst/Tests.p" <<'EOF'
test tcGreen [main = Main]: assert S in { Main };
test tcOther [main = Main]:
  assert S in { Main };
test tcThingCounterexample [main = Main]: assert S in { Main };
EOF

cat >"$root/.tools/bin/p" <<'EOF'
#!/usr/bin/env bash
# Stand-in for the P tool. Logs every call to $FAKE_P_CALLS; FAKE_P_VERSION is its version,
# FAKE_P_BUG a green test that finds a bug, FAKE_P_EXTRA a test it lists beyond the declared ones.
echo "$*" >>"$FAKE_P_CALLS"
case $1 in
  --version) echo "${FAKE_P_VERSION:-3.1.0}"; exit 0 ;;
  compile)
    mkdir -p PGenerated/PChecker/net8.0
    cat $(find . -name '*.p' | sort) | sha256sum >PGenerated/PChecker/net8.0/PConform.dll
    exit 0 ;;
esac
shift 2 # check DLL
if [ "$1" = --list-tests ]; then
  echo ". List of test cases"
  sed -n 's/^test \([A-Za-z]*\) .*/\1/p' $(find . -name '*.p' | sort)
  [ -n "${FAKE_P_EXTRA:-}" ] && echo "$FAKE_P_EXTRA"
  echo ". Done"
  exit 0
fi
tc="" s="" out="" v=0
while [ $# -gt 0 ]; do
  case $1 in
    -tc) tc=$2; shift 2 ;; -s) s=$2; shift 2 ;; -o) out=$2; shift 2 ;; -v) v=1; shift ;;
    *) shift ;;
  esac
done
bugs=0 explored=$s
case $tc in *Counterexample) bugs=1 explored=1 ;; esac
[ "$tc" = "${FAKE_P_BUG:-}" ] && bugs=1 explored=1
mkdir -p "$out/BugFinding"
printf 'bugs:%s\nschedules:%s\n' "$bugs" "$explored" >"$out/BugFinding/PConform_pchecker_summary.txt"
[ $v = 1 ] && echo '[]' >"$out/BugFinding/PConform_0_verbose.trace.json"
echo ".. Test case :: $tc"
echo "..... Found $bugs bugs."
echo "... Explored $explored schedules"
echo "... Elapsed 0.1 sec."
[ $bugs = 0 ] || exit 1
EOF
cat >"$root/.tools/bin/dotnet" <<'EOF'
#!/usr/bin/env bash
echo "Microsoft.NETCore.App ${FAKE_DOTNET:-10.0.0} [/nowhere]"
EOF
chmod +x "$root/.tools/bin/p" "$root/.tools/bin/dotnet"
# The checker's driver pmodels.sh calls, built from this repository (the copy has no Go sources).
go build -o "$tmp/pconform-pcheck" ./bridge/cmd/pconform-pcheck || { echo "pmodels_test: cannot build bridge/cmd/pconform-pcheck"; exit 1; }
export PCONFORM_PCHECK="$tmp/pconform-pcheck"
export FAKE_P_CALLS="$tmp/calls"
unset PCONFORM_SCHEDULES PCONFORM_CE_SCHEDULES PCONFORM_RECORD_SCHEDULES PCONFORM_SEED PCONFORM_P_CACHE PCONFORM_GATE_LOCKED
export PCONFORM_JOBS=1

# pm [ARG...]: runs pmodels.sh, keeping its output in $tmp/out and its checker calls in $tmp/calls.
pm() {
  : >"$FAKE_P_CALLS"
  bash "$root/scripts/pmodels.sh" "$@" >"$tmp/out" 2>&1
}
# expect NAME WANT_EXIT WANT_COMPILES WANT_RUNS [PATTERN]: the last pm's exit status, number of
# compiles, number of checker runs of a test, and a line of output it must have printed.
expect() {
  local name=$1 want_rc=$2 want_compiles=$3 want_runs=$4 pattern=${5:-} got_rc=$rc compiles runs
  compiles=$(grep -c '^compile' "$FAKE_P_CALLS")
  runs=$(grep -c -- ' -tc ' "$FAKE_P_CALLS")
  if [ "$got_rc" != "$want_rc" ] || [ "$compiles" != "$want_compiles" ] || [ "$runs" != "$want_runs" ] ||
    { [ -n "$pattern" ] && ! grep -qE -- "$pattern" "$tmp/out"; }; then
    echo "FAIL $name: exit $got_rc, $compiles compiles, $runs checker runs; want exit $want_rc, $want_compiles, $want_runs${pattern:+, output matching '$pattern'}"
    sed 's/^/    /' "$tmp/out"
    failed=1
  else
    echo "ok   $name"
  fi
}

pm; rc=$?
expect "first run compiles and runs every declared test" 0 1 3 'pmodels: PASS: 3 tests, 3 checker runs'
pm; rc=$?
expect "nothing changed: no compile, no run" 0 0 0 'PASS: 3 tests, 0 checker runs, 3 reused'
touch "$root/models/p/PSrc/Main.p"
pm; rc=$?
expect "a source touched but unchanged reruns nothing" 0 0 0
if [ "$root/models/p/PSrc/Main.p" -nt "$root/models/p/PCheckerOutput/list.log" ]; then
  echo "FAIL the listing is older than a source after a run: the bridge would refuse the recorded runs"; failed=1
fi
rm -rf "$root/models/p/PCheckerOutput/tcGreen"
pm; rc=$?
expect "a run's directory deleted comes back from the cache" 0 0 0
[ -f "$root/models/p/PCheckerOutput/tcGreen/run.txt" ] || { echo "FAIL tcGreen's run was not restored"; failed=1; }

echo 'machine Other { start state Init { } }' >>"$root/models/p/PSrc/Main.p"
pm; rc=$?
expect "a source's content changed: compile and every run again" 0 1 3
echo 'machine Third { start state Init { } }' >"$root/models/p/PSrc/New.p"
pm; rc=$?
expect "a new source: compile and every run again" 0 1 3
rm "$root/models/p/PSrc/New.p"
pm; rc=$?
expect "back to the sources before: every run from the cache, compile again" 0 1 0 '3 reused'
# The cache keeps the runs of the last two full runs: going back to the inputs before a change
# reruns nothing.
back() { pm; rc=$?; expect "  and back: nothing runs" 0 "$1" 0; }
FAKE_P_VERSION=3.1.1 pm; rc=$?
expect "another P version: compile and every run again" 0 1 3
back 1
FAKE_DOTNET=11.0.0 pm; rc=$?
expect "other .NET runtimes: compile and every run again" 0 1 3
# Each change below is on top of the one before, so the runs it does not reach are the last run's.
export FAKE_DOTNET=11.0.0
PCONFORM_SEED=2 pm; rc=$?
expect "another seed: every run again" 0 0 3
PCONFORM_SEED=2 PCONFORM_SCHEDULES=500 pm; rc=$?
expect "another green budget: the green tests run again" 0 0 2
PCONFORM_SEED=2 PCONFORM_SCHEDULES=500 PCONFORM_CE_SCHEDULES=50 pm; rc=$?
expect "another counterexample budget: the counterexample runs again" 0 0 1
PCONFORM_SEED=2 PCONFORM_SCHEDULES=500 PCONFORM_CE_SCHEDULES=50 PCONFORM_TEST_TIMEOUT=60 pm; rc=$?
expect "another timeout: every run again" 0 0 3
unset FAKE_DOTNET
pm; rc=$?
expect "back to the defaults: compile; the runs were pruned (older than the last two runs), so they run" 0 1 3

pm --logs; rc=$?
expect "--logs: green tests recorded with -v, the counterexample run with -v" 0 0 3 '100 recorded per green test'
for t in tcGreen tcOther tcThingCounterexample; do
  if ! grep -qx 'verbose:1' "$root/models/p/PCheckerOutput/recorded/$t/run.txt" 2>/dev/null; then
    echo "FAIL --logs recorded no -v run of $t"; failed=1
  fi
done
grep -qx 'schedules:100' "$root/models/p/PCheckerOutput/recorded/tcGreen/run.txt" ||
  { echo "FAIL tcGreen's record is not 100 schedules"; failed=1; }
[ -f "$root/models/p/PCheckerOutput/recorded/list.log" ] || { echo "FAIL no list.log in the recorded runs"; failed=1; }
before=$(stat -c %Y.%i "$root/models/p/PCheckerOutput/recorded/tcGreen/run.txt" "$root/models/p/PCheckerOutput/recorded/list.log")
sleep 1
pm --logs; rc=$?
expect "--logs again: nothing runs" 0 0 0
after=$(stat -c %Y.%i "$root/models/p/PCheckerOutput/recorded/tcGreen/run.txt" "$root/models/p/PCheckerOutput/recorded/list.log")
[ "$before" = "$after" ] || { echo "FAIL --logs again rewrote the recorded runs (their ages are Go test inputs)"; failed=1; }
PCONFORM_RECORD_SCHEDULES=20 pm --logs; rc=$?
expect "another record budget: the green records run again" 0 0 2

# Under a new seed (so no run is cached), tcOther finds a bug: the stage fails, and the failing
# run is not cached: the same inputs run it again.
FAKE_P_BUG=tcOther PCONFORM_SEED=3 pm; rc=$?
expect "a green test with a bug fails the stage" 1 0 3 'tcOther .* FAIL +bug found'
FAKE_P_BUG=tcOther PCONFORM_SEED=3 pm; rc=$?
expect "a failing run is not cached" 1 0 1
PCONFORM_SEED=3 pm; rc=$?
expect "fixed: only the run that failed runs again" 0 0 1

PCONFORM_SEED=3 FAKE_P_EXTRA=tcUndeclared pm; rc=$?
expect "the listing is kept with the compile it was made from" 0 0 0
echo 'machine Fourth { start state Init { } }' >>"$root/models/p/PSrc/Main.p"
FAKE_P_EXTRA=tcUndeclared pm; rc=$?
expect "a listed test no source declares fails" 1 1 4 'which no source in models/p declares'
sed -i 's/^test tcOther /test tcRenamed /' "$root/models/p/PTst/Tests.p"
pm; rc=$?
expect "a renamed test runs under its new name" 0 1 3 'tcRenamed .* PASS'
# A compiled project that no longer matches its stamp (compiled by hand, say) is compiled again.
echo stale >"$root/models/p/PGenerated/PChecker/net8.0/PConform.dll"
pm; rc=$?
expect "a compiled project changed behind the script's back: compile again" 0 1 0

(
  exec 9>"$root/out/gate/lock"
  flock 9
  sleep 3
) &
sleep 1
pm; rc=$?
wait
expect "a second run waits for the lock" 0 0 0 'holds out/gate/lock'

# The README's step 4 checks one test case by name: it must name a test the models declare, and
# the one-test form runs only that test's checker run.
readme_tc=$(sed -n 's|^ *scripts/pmodels.sh \(tc[A-Za-z0-9]*\)$|\1|p' README.md)
if [ -z "$readme_tc" ] || ! grep -rqE "^test $readme_tc[[:space:][]" models/p --include='*.p'; then
  echo "FAIL the README's 'scripts/pmodels.sh TEST' names no test of models/p: '$readme_tc'"; failed=1
else
  echo "ok   the README's one-test command names $readme_tc, a declared test"
fi
pm tcThingCounterexample; rc=$?
expect "one test case by name checks that test alone" 0 0 0 'PASS: 1 tests, 0 checker runs, 1 reused'

[ $failed = 0 ] && echo "pmodels_test: PASS" || echo "pmodels_test: FAIL"
exit $failed
