#!/usr/bin/env bash
# Writes a small P corpus for every shipped profile (profiles/NAME.json) into traces/profiles/NAME:
# the P model compiled under the profile, every green test case, -s 5 --seed 1, two distinct
# traces kept per test case, each with expect.profile set. A test case that profiles/check/NAME.txt
# shows breaking a monitor under the profile is left out: its counterexample is there instead. Not part of the gate (a P compile and
# about 2 minutes per profile); TestProfileCorpora (conformtest) fails when one is older than the P
# model or its profile. The default profile's deep corpus is traces/corpus.
#
#   bash scripts/profile-corpus.sh [PROFILE.json...]
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/env.sh
files=("$@")
[ ${#files[@]} -gt 0 ] || files=(profiles/*.json)
green=$(grep -ho '^test tc[A-Za-z0-9_]*' models/p/PTst/*.p | awk '{print $2}' | grep -v 'Counterexample$' | paste -sd, -)
for f in "${files[@]}"; do
  name=$(basename "$f" .json)
  out=traces/profiles/$name
  broken=$(grep -ho '^  tc[A-Za-z0-9_]*, schedule' "profiles/check/$name.txt" 2>/dev/null | awk '{print $1}' | tr -d , | sort -u || true)
  tests=$(tr , '\n' <<<"$green" | grep -vxF -f <(echo "$broken"; echo "-") | paste -sd, -)
  go run ./bridge/cmd/pconform-corpus -profile "$f" -out "$out" -schedules 5 -per-test 2 -tests "$tests"
  rm -f "$out/README.md"
  echo "profile-corpus: wrote $out"
done
