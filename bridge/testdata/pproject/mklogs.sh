#!/usr/bin/env bash
# Regenerates the checker-log fixtures in ../logs from this tiny P project with the real checker.
# Run from anywhere after `. scripts/env.sh`; the outputs are committed, the tests never run p.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
logs="$here/../logs"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$here"
p compile >/dev/null
p check -tc tcBridgeGreen -s 4 --seed 1 -v -o "$tmp/green" >/dev/null
cp "$tmp"/green/BugFinding/Tiny_0_verbose.trace.json "$logs/green_verbose.json"
# A counterexample run exits 1: it found the bug it exists to find.
p check -tc tcLeaselessRawAttemptsCounterexample -s 4 --seed 1 -v -o "$tmp/bad" >/dev/null || [ $? -eq 1 ]
cp "$tmp"/bad/BugFinding/Tiny_0_verbose.trace.json "$logs/bad_verbose.json"
cp "$tmp"/bad/BugFinding/Tiny_0_0.trace.json "$logs/bad_bug.json"
rm -rf PGenerated PCheckerOutput
