#!/usr/bin/env bash
# What a reader of a cut-off log needs first, from a `go test` log, with or without -v (or a gate
# stage's log that holds one): each failed test's own output (with -v the lines go test puts under
# it, the last 40), its --- FAIL line, every FAIL line of a package and any panic. The gate prints
# this after its table, so a log that keeps only its tail still names the cause.
#
#   bash scripts/failure-digest.sh LOG
#
# Prints nothing for a log without a failure. At most 400 lines.
set -uo pipefail
log=${1:?usage: failure-digest.sh LOG}
[ -r "$log" ] || { echo "failure-digest: cannot read $log" >&2; exit 2; }
awk '
  # Two passes over the log. The first tells whether it is verbose: go test -v names the test whose
  # lines follow (=== RUN, === CONT, === NAME, === PAUSE); without -v the lines of a failed test
  # follow its --- FAIL line, indented.
  NR == FNR { if (/^=== (RUN|CONT|NAME|PAUSE)[ \t]/) verbose = 1; next }
  /^=== (RUN|CONT|NAME|PAUSE)[ \t]/ { cur = $3; follow = 0; next }
  /^[ \t]*--- FAIL: / {
    name = $3
    if (!verbose) { print; follow = 1; next }
    if (cnt[name] == 0) { if (!(name in done) && !(name in late)) { late[name] = $0; order[nl++] = name }; next }
    from = cnt[name] > 40 ? cnt[name] - 40 : 0
    for (i = from; i < cnt[name]; i++) print buf[name, i]
    print
    done[name] = 1; cnt[name] = 0
    next
  }
  /^(FAIL|panic:|fatal error:)/ { follow = 0; if (!seen[$0]++) print; next }
  follow && /^[ \t]/ && !/--- (PASS|SKIP)/ { print; next }
  { follow = 0 }
  cur != "" { buf[cur, cnt[cur]++] = $0 }
  # A --- FAIL line seen before the output of its test (a summary above the log) goes last,
  # unless the log printed it again with its output.
  END { for (i = 0; i < nl; i++) if (!(order[i] in done)) print late[order[i]] }
' "$log" "$log" | head -n 400
