#!/usr/bin/env bash
# Tests scripts/tiers.sh on temporary repositories: the efficacy tier is left out only when its
# stamp holds the current key; a change under actordelivery/ or docs/ keeps the key, any other
# change (an edit, a new untracked file, a deleted file, other budgets, a stamp without a key)
# makes the gate run the tier; a fresh clone of a stamped commit decides as its origin does.
# Run: bash scripts/tiers_test.sh (the lint stage does).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 2
tiers=$PWD/scripts/tiers.sh
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tiers-test.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
failed=0
export GIT_AUTHOR_NAME=test GIT_AUTHOR_EMAIL=test@example.com GIT_COMMITTER_NAME=test GIT_COMMITTER_EMAIL=test@example.com
export GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_NOSYSTEM=1
# shellcheck source=scripts/tiers.sh
. "$tiers"

fail() { echo "FAIL: $*"; failed=1; }

# expect WANT CASE [WORD...]: the decision for the current working copy is WANT (run or skip).
expect() {
  local want=$1 name=$2 got
  shift 2
  got=$(tier_decide "$(tier_key "$@")")
  [ "${got%% *}" = "$want" ] || fail "$name: decided '$got', want $want"
}

repo=$tmp/repo
git init -q -b main "$repo" && cd "$repo" || exit 2
mkdir -p actordelivery docs bridge models/p scripts
echo 'package actordelivery' >actordelivery/store.go
echo '# semantics' >docs/semantics.md
echo 'package bridge' >bridge/checker.go
echo 'machine M {}' >models/p/M.p
echo 'out/' >.gitignore
git add -A && git commit -q -m base

expect run "no stamp file"
echo "efficacy not-a-key" >"$TIER_STAMP"
expect run "a stamp without a key"
tier_write_stamp "$(tier_key budget=1)"
expect skip "the stamped inputs" budget=1
expect run "other budgets" budget=2
git add -A && git commit -q -m stamp
expect skip "the stamp committed" budget=1

# Changes the store tier alone answers.
echo '// a change' >>actordelivery/store.go
echo 'new' >actordelivery/new.go
echo 'more' >>docs/semantics.md
expect skip "a change under actordelivery/ and docs/" budget=1
mkdir -p out && echo x >out/ignored
expect skip "an ignored file" budget=1
git add -A && git commit -q -m store
expect skip "a committed store change" budget=1

# Changes that must run the efficacy tier, each undone before the next.
while IFS='|' read -r name change undo; do
  eval "$change"
  expect run "$name" budget=1
  eval "$undo"
  expect skip "$name, undone" budget=1
done <<'CASES'
an edit of the bridge|echo '// x' >>bridge/checker.go|git checkout -q bridge/checker.go
an edit of a P model|echo '// x' >>models/p/M.p|git checkout -q models/p/M.p
a new untracked file|echo x >bridge/new.go|rm bridge/new.go
a deleted file|rm models/p/M.p|git checkout -q models/p/M.p
a file beside the store paths|echo x >actordelivery.go|rm actordelivery.go
a new directory named like the store|mkdir -p actordeliveryx && echo x >actordeliveryx/a.go|rm -r actordeliveryx
CASES

# The budgets are words of the key: another budget is another key.
# shellcheck disable=SC2046 # one word per budget
default=$(tier_key $(tier_budgets))
[ "$(tier_key $(PCONFORM_HUNT_SEEDS=19 tier_budgets))" != "$default" ] || fail "PCONFORM_HUNT_SEEDS=19 gives the default key"
[ "$(tier_key $(PCONFORM_SCHEDULES=999 tier_budgets))" != "$default" ] || fail "PCONFORM_SCHEDULES=999 gives the default key"
[ "$(tier_key $(tier_budgets))" = "$default" ] || fail "the same budgets give another key"

# A fresh clone of the stamped commit, elsewhere: the same decision, from the files alone.
git clone -q "$repo" "$tmp/clone" && cd "$tmp/clone" || exit 2
expect skip "a fresh clone" budget=1
echo '// x' >>bridge/checker.go
expect run "a fresh clone with a bridge edit" budget=1

# A copy that is not a git checkout (a tarball, say) cannot list its inputs: it runs the tier,
# even with a stamp of the key it computes there.
mkdir -p "$tmp/plain" && cp -r "$repo/." "$tmp/plain/" && rm -rf "$tmp/plain/.git" && cd "$tmp/plain" || exit 2
export GIT_CEILING_DIRECTORIES=$tmp
tier_write_stamp "$(tier_key budget=1)"
expect run "not a git checkout" budget=1

if [ "$failed" = 0 ]; then echo "tiers_test: ok"; fi
exit "$failed"
