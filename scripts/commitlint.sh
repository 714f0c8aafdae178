#!/usr/bin/env bash
# Checks the subjects of the commits after a base commit (the lint stage of scripts/check.sh runs it).
#
#   bash scripts/commitlint.sh [BASE]
#
# BASE defaults to the last commit before the rule was adopted; every commit after it on HEAD's
# history is checked. A subject passes when it
#   - is at most 72 characters long;
#   - reads "pkg: verb phrase": one or more places, separated by ", ", then ": ", then a phrase that
#     starts right after the ': ' (a name such as P or a flag such as --follow may open it) and does
#     not end with a period;
#   - names real places: each is a path in the commit's tree (or its parent's, for a removal), the
#     last element of a directory in it (a package's name), or one of the words in $words.
# Merge commits are not checked. Without a git repository it says so and passes. In a shallow clone
# that lacks BASE it checks the commits it has, all of which come after BASE, and says so (a place
# that the oldest of them removed cannot be seen there, and is not checked).
# Exit status: 0 when every checked subject passes, 1 when one does not, 2 on a usage error.
set -uo pipefail

# The commit before this rule: 4a3e5a0 on main's first-parent history.
default_base=4a3e5a0a439c2e4af5b7bbb25d9402dac65099cf
base=${1:-$default_base}
words=" all docs scripts ci gate deps "
max=72
# Commits already on main whose subjects break a rule. main's history is never rewritten, so each
# is listed here, with why, and skipped; add to it only for a commit that landed by mistake.
#   e94e19b: a 73-character subject, landed before its lint run was read.
landed=" e94e19b2901304323194b83a1674dd13eaaea7db "

if ! git rev-parse --git-dir >/dev/null 2>&1; then
  echo "commitlint: not a git repository: no commit subjects to check"
  exit 0
fi

if git cat-file -e "$base^{commit}" 2>/dev/null; then
  range=("$base..HEAD")
  scope="after ${base:0:12}"
elif [ "$(git rev-parse --is-shallow-repository)" = true ]; then
  range=(HEAD)
  scope="present in this shallow clone (${base:0:12} is not; fetch the full history to check all)"
else
  echo "commitlint: base commit $base is not in this repository's history" >&2
  exit 2
fi

mapfile -t commits < <(git rev-list --no-merges --reverse "${range[@]}")

# names_in COMMIT: every path in COMMIT's tree and the last element of every directory, one a line.
names_in() {
  git ls-tree -r -t --name-only "$1" 2>/dev/null | awk '{ print; n = split($0, p, "/"); print p[n] }'
}

prefix_re='^[a-z0-9][a-z0-9._/-]*(, [a-z0-9][a-z0-9._/-]*)*: [^[:space:]]'
bad=0
for c in "${commits[@]}"; do
  [[ $landed == *" $c "* ]] && continue
  subject=$(git log -1 --format=%s "$c")
  short=$(git rev-parse --short "$c")
  why=""
  if [ "${#subject}" -gt "$max" ]; then
    why="${#subject} characters, at most $max"
  elif ! [[ $subject =~ $prefix_re ]]; then
    why="not of the form 'pkg: verb phrase' (lower-case places, ': ', then the phrase)"
  elif [[ $subject == *. ]]; then
    why="ends with a period"
  else
    places=${subject%%: *}
    known=""
    IFS=',' read -ra list <<<"$places"
    for p in "${list[@]}"; do
      p=${p# }
      p=${p%/}
      [[ $words == *" $p "* ]] && continue
      [ -n "$known" ] || known=$( { names_in "$c"; git rev-parse -q --verify "$c^" >/dev/null && names_in "$c^"; } | sort -u)
      grep -qxF -- "$p" <<<"$known" && continue
      if ! git rev-parse -q --verify "$c^" >/dev/null && [ "$(git rev-parse --is-shallow-repository)" = true ]; then
        # A shallow clone's oldest commit has no parent here: a place it removed cannot be seen.
        echo "commitlint: $short: '$p' not in its tree, and its parent is not in this shallow clone: not checked"
        continue
      fi
      why="'$p' is neither a path nor a package of the tree, nor one of:$words"
      break
    done
  fi
  if [ -n "$why" ]; then
    echo "commitlint: $short \"$subject\": $why"
    bad=$((bad + 1))
  fi
done

echo "commitlint: ${#commits[@]} commit subjects $scope checked, $bad refused"
[ "$bad" -eq 0 ]
