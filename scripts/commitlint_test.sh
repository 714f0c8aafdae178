#!/usr/bin/env bash
# Tests scripts/commitlint.sh on temporary repositories: good subjects pass; a long subject, one not
# of the form "pkg: verb phrase", one ending with a period and one naming no place of the tree are
# refused, each with its reason; merges and the commits before the base are not checked; a shallow
# clone without the base checks what it has and says so. Run: bash scripts/commitlint_test.sh (the
# lint stage does).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 2
lint=$PWD/scripts/commitlint.sh
tmp=$(mktemp -d "${TMPDIR:-/tmp}/commitlint-test.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
failed=0
export GIT_AUTHOR_NAME=test GIT_AUTHOR_EMAIL=test@example.com GIT_COMMITTER_NAME=test GIT_COMMITTER_EMAIL=test@example.com
export GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_NOSYSTEM=1

fail() { echo "FAIL: $*"; failed=1; }

# commit SUBJECT [FILE]: a commit in the current repository that touches FILE (default replay/a.go).
commit() {
  local f=${2:-replay/a.go}
  mkdir -p "$(dirname "$f")"
  echo "$RANDOM $1" >>"$f"
  git add -A && git commit -q -m "$1" -m "The body may be as long as it likes."
}

# expect WANT_RC WANT_OUTPUT [BASE]: runs the lint in the current repository.
expect() {
  local want=$1 text=$2 out rc
  out=$(bash "$lint" ${3:+"$3"} 2>&1)
  rc=$?
  [ "$rc" = "$want" ] || fail "exit $rc, want $want; output: $out"
  grep -qF -- "$text" <<<"$out" || fail "output lacks '$text': $out"
}

repo=$tmp/repo
git init -q -b main "$repo" && cd "$repo" || exit 2
commit "An old subject from before the rule, far longer than seventy-two characters, which is not checked"
base=$(git rev-parse HEAD)
commit "replay: move targets into internal/targets"
commit "docs: say how to run one stage" docs/gate.md
commit "replay, actordelivery: share the fixture" actordelivery/b.go
commit "docs/gate.md: state the commit rule" docs/gate.md
commit "targets: name a package by its last element" replay/internal/targets/t.go
git rm -q replay/internal/targets/t.go && git commit -q -m "replay/internal/targets/t.go: remove the file"
git checkout -q -b side && commit "side: a branch" side/x.go && git checkout -q main
git merge -q --no-ff side -m "Merge branch 'side' with a subject that is not checked at all, being a merge"
expect 0 "7 commit subjects after" "$base"

# Each refused subject, after the good commits, with the reason the lint must give.
good=$(git rev-parse HEAD)
while IFS='|' read -r subject reason; do
  commit "$subject"
  expect 1 "$reason" "$base"
  git reset -q --hard "$good"
done <<'CASES'
replay: a subject of seventy-three characters, one more than the limit xx|73 characters, at most 72
Replay: Move targets|not of the form 'pkg: verb phrase'
move targets into internal/targets|not of the form 'pkg: verb phrase'
replay:  two blanks before the phrase|not of the form 'pkg: verb phrase'
replay: move targets.|ends with a period
nosuchpkg: add a thing|'nosuchpkg' is neither a path nor a package
CASES
expect 0 "0 refused" "$base"

# The default base is not in this repository and it is not shallow: a usage error.
expect 2 "is not in this repository's history"

# A shallow clone without the base: the commits it has, said so.
git clone -q --depth 2 "file://$repo" "$tmp/shallow" && cd "$tmp/shallow" || exit 2
expect 0 "present in this shallow clone" "$base"
commit "Not a subject the rule allows, in a shallow clone"
expect 1 "not of the form" "$base"

# Outside a repository: nothing to check, said so.
mkdir "$tmp/plain" && cd "$tmp/plain" || exit 2
GIT_CEILING_DIRECTORIES=$tmp expect 0 "not a git repository"

if [ "$failed" = 0 ]; then echo "commitlint_test: PASS"; else echo "commitlint_test: FAIL"; exit 1; fi
