#!/usr/bin/env bash
# The `models` stage of the gate: compile the P models (models/p) and run every P test case by its
# exact name with the real P checker.
#
#   scripts/pmodels.sh            # all tests
#   scripts/pmodels.sh NAME...    # only these tests (still compiled and listed first)
#   scripts/pmodels.sh --logs ... # also record every test's first schedules with -v for the bridge
#   scripts/pmodels.sh --logs --part records    # only the runs the bridge reads (the gate's records stage)
#   scripts/pmodels.sh --logs --part verdicts   # only the green tests' verdict runs (its models stage)
#
# The stage is Go: `pconform-pcheck models` (bridge/cmd/pconform-pcheck, bridge.CheckModels in
# bridge/models.go) compiles, lists, runs, caches, records and reports; its documentation gives
# the rules, the environment (PCONFORM_SCHEDULES, PCONFORM_CE_SCHEDULES, PCONFORM_RECORD_SCHEDULES,
# PCONFORM_SEED, PCONFORM_JOBS, PCONFORM_TEST_TIMEOUT, PCONFORM_P_CACHE) and the exit codes (0
# pass, 1 fail, 2 usage). This script installs the P tool when it is missing, builds the command
# into out/gate/pmodels/ (unless PCONFORM_PCHECK names a built one) and holds the checkout's lock,
# so that two gates never write models/p/PCheckerOutput at once.
set -uo pipefail
# shellcheck source=scripts/env.sh
. "$(dirname "${BASH_SOURCE[0]}")/env.sh"

if ! command -v p >/dev/null 2>&1; then
  "$PCONFORM_ROOT/scripts/bootstrap.sh" p || { echo "pmodels: FAIL: cannot install the P tool" >&2; exit 1; }
  hash -r
fi

# Built with the go command's cache: a second or less when nothing changed.
PCHECK=${PCONFORM_PCHECK:-}
if [ -z "$PCHECK" ]; then
  command -v go >/dev/null 2>&1 || { "$PCONFORM_ROOT/scripts/bootstrap.sh" go && hash -r; } ||
    { echo "pmodels: FAIL: cannot install Go to build pconform-pcheck" >&2; exit 1; }
  PCHECK="$PCONFORM_ROOT/out/gate/pmodels/pconform-pcheck"
  if ! (cd "$PCONFORM_ROOT" && go build -o "$PCHECK" ./bridge/cmd/pconform-pcheck); then
    echo "pmodels: FAIL: cannot build bridge/cmd/pconform-pcheck" >&2
    exit 1
  fi
fi

# The gate holds this lock already (and says so in PCONFORM_GATE_LOCKED); run alone, the script
# takes it itself, and the command inherits it.
mkdir -p "$PCONFORM_ROOT/out/gate"
if [ -z "${PCONFORM_GATE_LOCKED:-}" ]; then
  exec 9>"$PCONFORM_ROOT/out/gate/lock"
  if ! flock -n 9; then
    echo "pmodels: another gate or pmodels.sh run holds out/gate/lock in this checkout; waiting for it"
    flock 9
  fi
fi

cd "$PCONFORM_ROOT" || exit 1
exec "$PCHECK" models "$@"
