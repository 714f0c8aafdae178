# shellcheck shell=bash
# The gate's two tiers, and the stamp that lets the default gate leave the efficacy tier out.
# Sourced by scripts/check.sh and scripts/tiers_test.sh; docs/gate.md, "Tiers", explains it.
#
# The store tier checks the store: it always runs. The efficacy tier checks the toolkit's own
# power (the P models and their counterexamples, the committed corpus being up to date, the wide
# corpus, every broken variant found by the hunts at 20 seeds). Its inputs are every file of the
# repository but those under TIER_STORE_PATHS and the stamp itself. scripts/efficacy.stamp holds
# a hash of those inputs as of the last gate that ran the efficacy tier and passed. The default
# gate runs the efficacy tier whenever the current hash differs from the stamp, so only a change
# confined to TIER_STORE_PATHS can leave it out. Nothing but the files counts: no cache, no
# previous run, so a fresh clone in CI decides as a working copy does.

# The paths a change may touch and still leave the efficacy tier out: the store and the prose.
# Everything else (the models, the toolkit's packages, the scripts, go.mod) is an input.
TIER_STORE_PATHS=(actordelivery/ docs/)
TIER_STAMP=scripts/efficacy.stamp

# tier_inputs: the efficacy tier's input files, one per line, sorted: what git tracks or would
# track (untracked files that are not ignored count), less TIER_STORE_PATHS and the stamp.
tier_inputs() {
  git ls-files --cached --others --exclude-standard 2>/dev/null | LC_ALL=C sort -u | awk -v stamp="$TIER_STAMP" -v skip="${TIER_STORE_PATHS[*]}" '
    BEGIN { n = split(skip, p, " ") }
    $0 == stamp { next }
    { for (i = 1; i <= n; i++) if (index($0, p[i]) == 1) next; print }'
}

# tier_key [WORD...]: a hash of the words (the budgets the tier ran with) and of the names and
# contents of the efficacy tier's inputs. A file git tracks that the working tree has deleted is
# left out, which changes the key as well.
tier_key() {
  {
    local w
    for w in "$@"; do printf 'word %s\n' "$w"; done
    # sha256sum prints "HASH  NAME" per file.
    tier_inputs | tr '\n' '\0' | xargs -0r sha256sum 2>/dev/null
  } | sha256sum | cut -c1-64
}

# tier_budgets: the budgets the efficacy tier runs with, one word each, as scripts/check.sh
# passes them to tier_key: a gate run at other budgets never counts as the tier's full pass.
tier_budgets() {
  echo "schedules=${PCONFORM_SCHEDULES:-1000} ce=${PCONFORM_CE_SCHEDULES:-100} seed=${PCONFORM_SEED:-1}" \
    "sequences=${PCONFORM_SEQUENCES:-200} replay=${PCONFORM_REPLAY_SCHEDULES:-100}" \
    "hunt-seeds=${PCONFORM_HUNT_SEEDS:-20} hunt-seeds-postgres=${PCONFORM_HUNT_SEEDS_POSTGRES:-5}"
}

# tier_stamped: the key the stamp holds, or nothing when it has none.
tier_stamped() {
  sed -n 's/^efficacy \([0-9a-f]\{64\}\)$/\1/p' "$TIER_STAMP" 2>/dev/null | head -1
}

# tier_decide KEY: prints "run REASON" or "skip REASON" for the default gate.
tier_decide() {
  local key=$1 stamped
  stamped=$(tier_stamped)
  if ! git rev-parse --git-dir >/dev/null 2>&1; then
    echo "run not a git checkout: its inputs cannot be listed"
  elif [ -z "$stamped" ]; then
    echo "run $TIER_STAMP holds no key"
  elif [ "$stamped" != "$key" ]; then
    echo "run its inputs (all but ${TIER_STORE_PATHS[*]}) differ from $TIER_STAMP (key ${key:0:12}, stamped ${stamped:0:12})"
  else
    echo "skip its inputs (all but ${TIER_STORE_PATHS[*]}) are those of its last full pass (key ${key:0:12} in $TIER_STAMP)"
  fi
}

# tier_write_stamp KEY: records KEY as the efficacy tier's last full pass.
tier_write_stamp() {
  {
    echo "# The efficacy tier's inputs (every file but ${TIER_STORE_PATHS[*]} and this one) at its last"
    echo "# full pass. Written by scripts/check.sh when the whole gate, efficacy tier included, passed."
    echo "# Commit it with the change. docs/gate.md, \"Tiers\"."
    echo "efficacy $1"
  } >"$TIER_STAMP"
}
