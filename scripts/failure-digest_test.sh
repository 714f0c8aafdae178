#!/usr/bin/env bash
# Tests scripts/failure-digest.sh on the logs of real `go test` runs of a throwaway module, with
# and without -v: a failing test's own lines and its --- FAIL line are in the digest, a passing
# test's are not, the package's FAIL line is, a summary line printed above the log is not
# repeated, and a log without a failure gives nothing. Run: bash scripts/failure-digest_test.sh
# (the lint stage does).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 2
digest=$PWD/scripts/failure-digest.sh
tmp=$(mktemp -d "${TMPDIR:-/tmp}/failure-digest-test.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
failed=0
fail() { echo "FAIL: $*"; failed=1; }

mkdir -p "$tmp/mod"
cat >"$tmp/mod/go.mod" <<'MOD'
module digesttest

go 1.22
MOD
cat >"$tmp/mod/d_test.go" <<'GO'
package digesttest

import "testing"

func TestQuiet(t *testing.T) { t.Log("quiet-line") }

func TestLoud(t *testing.T) {
	t.Parallel()
	t.Log("loud-context")
	t.Run("inner", func(t *testing.T) { t.Error("inner-broke") })
}

func TestAlsoQuiet(t *testing.T) { t.Parallel(); t.Log("also-quiet-line") }
GO
(cd "$tmp/mod" && GOFLAGS=-mod=mod GOPROXY=off GOWORK=off go test -count=1 -v ./... >"$tmp/test.log" 2>&1)
# As the unit stage writes it: a summary of FAIL lines, then the whole log.
{ grep -E '^(ok|FAIL|---)' "$tmp/test.log"; echo "---- the whole go test -v output ----"; cat "$tmp/test.log"; } >"$tmp/stage.log"
out=$(bash "$digest" "$tmp/stage.log")
for want in loud-context inner-broke '--- FAIL: TestLoud/inner' '--- FAIL: TestLoud ' '^FAIL'; do
  grep -q -e "$want" <<<"$out" || fail "digest lacks '$want':"$'\n'"$out"
done
for unwanted in quiet-line also-quiet-line; do
  ! grep -q "$unwanted" <<<"$out" || fail "digest holds a passing test's line '$unwanted':"$'\n'"$out"
done
[ "$(grep -c -e '--- FAIL: TestLoud/inner' <<<"$out")" = 1 ] || fail "digest repeats the --- FAIL line:"$'\n'"$out"
[ "$(grep -o -e '--- FAIL: TestLoud/inner.*' -e 'inner-broke' <<<"$out" | head -1)" != '--- FAIL: TestLoud/inner' ] ||
  fail "the --- FAIL line comes before the test's own lines:"$'\n'"$out"

# Without -v: the lines of a failed test follow its --- FAIL line.
(cd "$tmp/mod" && GOFLAGS=-mod=mod GOPROXY=off GOWORK=off go test -count=1 ./... >"$tmp/plain.log" 2>&1)
out=$(bash "$digest" "$tmp/plain.log")
for want in loud-context inner-broke '--- FAIL: TestLoud/inner' '^FAIL'; do
  grep -q -e "$want" <<<"$out" || fail "digest of a log without -v lacks '$want':"$'\n'"$out"
done

grep -v -e FAIL -e broke "$tmp/test.log" >"$tmp/green.log"
out=$(bash "$digest" "$tmp/green.log")
[ -z "$out" ] || fail "digest of a green log is not empty:"$'\n'"$out"

bash "$digest" "$tmp/missing.log" >/dev/null 2>&1 && fail "a missing log is not an error"

if [ $failed = 0 ]; then echo "failure-digest: ok"; fi
exit $failed
