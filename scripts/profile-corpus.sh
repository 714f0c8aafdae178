#!/usr/bin/env bash
# Writes a small P corpus for every shipped profile (profiles/NAME.json) into traces/profiles/NAME:
# the P model compiled under the profile, every green test case, -s 5 --seed 1, two distinct
# traces kept per test case, each with expect.profile set. A test case that profiles/check/NAME.txt
# shows breaking a monitor under the profile is left out: its counterexample is there instead. Not part of the gate (a P compile and
# about 2 minutes per profile); TestProfileCorpora (conformtest) fails when one is older than the P
# model or its profile. The default profile's deep corpus is traces/corpus.
#
# Then `pconform profile corpus` adds the replacement counterexamples, NAME-replaced-s<seed>-<n>, for
# the committed counterexamples that the profile moves off their bug's path (the kit reports them
# as not exercised and names the replacement); it says when a bug cannot happen under the profile.
# An example profile (examples/NAME/profile.json) gets traces/profiles/NAME with its replacements
# only, when it needs any. A replacement run takes about 20 s a profile after the P compile.
#
#   bash scripts/profile-corpus.sh [PROFILE.json...]
#   bash scripts/profile-corpus.sh --replacements-only   # only the replacements, every profile
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/env.sh
replace() { go run ./cmd/pconform profile corpus "$1" --out "$2"; }
if [ "${1:-}" = --replacements-only ]; then
  for f in profiles/*.json; do replace "$f" "traces/profiles/$(basename "$f" .json)"; done
  for f in examples/*/profile.json; do replace "$f" "traces/profiles/$(basename "$(dirname "$f")")"; done
  exit 0
fi
files=("$@")
[ ${#files[@]} -gt 0 ] || files=(profiles/*.json examples/*/profile.json)
green=$(grep -ho '^test tc[A-Za-z0-9_]*' models/p/PTst/*.p | awk '{print $2}' | grep -v 'Counterexample$' | paste -sd, -)
for f in "${files[@]}"; do
  name=$(basename "$f" .json)
  if [ "$name" = profile ]; then
    # An example profile: its corpus holds the replacements it needs, nothing else.
    replace "$f" "traces/profiles/$(basename "$(dirname "$f")")"
    continue
  fi
  out=traces/profiles/$name
  broken=$(grep -ho '^  tc[A-Za-z0-9_]*, schedule' "profiles/check/$name.txt" 2>/dev/null | awk '{print $1}' | tr -d , | sort -u || true)
  tests=$(tr , '\n' <<<"$green" | grep -vxF -f <(echo "$broken"; echo "-") | paste -sd, -)
  go run ./bridge/cmd/pconform-corpus -profile "$f" -out "$out" -schedules 5 -per-test 2 -tests "$tests"
  rm -f "$out/README.md"
  replace "$f" "$out"
  echo "profile-corpus: wrote $out"
done
