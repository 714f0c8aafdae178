#!/usr/bin/env bash
# Tests scripts/bootstrap.sh's choice of Debian archive: it must come from the machine's own apt
# configuration (deb822 first, then the one-line sources.list), skip security suites, keep the
# source's keyring, and the script itself must name no archive host. The fixtures use file: URIs,
# so no host name appears here either. Run: bash scripts/bootstrap_test.sh (the lint stage does).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 2
tmp=$(mktemp -d "${TMPDIR:-/tmp}/bootstrap-test.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
failed=0

expect() { # NAME WANT: runs `bootstrap.sh archive` against $tmp/NAME
  local got
  got=$(PCONFORM_APT_ETC="$tmp/$1" bash scripts/bootstrap.sh archive 2>&1)
  if [ "$got" != "$2" ]; then
    echo "FAIL $1: got '$got', want '$2'"
    failed=1
  else
    echo "ok   $1"
  fi
}

mkdir -p "$tmp/deb822/sources.list.d"
cat >"$tmp/deb822/sources.list.d/debian.sources" <<'SRC'
Types: deb
# a comment inside the stanza
URIs: file:/srv/mirror/debian-security
Suites: bookworm-security
Components: main
Signed-By: /srv/keys/security.gpg

Types: deb-src
URIs: file:/srv/mirror/sources
Suites: bookworm
Components: main

Types: deb
URIs: file:/srv/mirror/debian file:/srv/other/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /srv/keys/archive.gpg
SRC
# A one-line file beside deb822 sources loses: deb822 is read first.
echo "deb file:/srv/ignored/debian bookworm main" >"$tmp/deb822/sources.list"
expect deb822 "file:/srv/mirror/debian /srv/keys/archive.gpg"

mkdir -p "$tmp/oneline"
cat >"$tmp/oneline/sources.list" <<'SRC'
# comment
deb-src file:/srv/src/debian bookworm main
deb [arch=amd64 signed-by=/srv/keys/sec.gpg] file:/srv/sec/debian-security bookworm-security main
deb [arch=amd64 signed-by=/srv/keys/archive.gpg] file:/srv/main/debian bookworm main
SRC
expect oneline "file:/srv/main/debian /srv/keys/archive.gpg"

mkdir -p "$tmp/plain"
echo "deb file:/srv/plain/debian bookworm main contrib" >"$tmp/plain/sources.list"
expect plain "file:/srv/plain/debian -"

mkdir -p "$tmp/none/sources.list.d"
expect none ""

if grep -nE '[a-z]+://[A-Za-z0-9.-]+' scripts/bootstrap.sh; then
  echo "FAIL scripts/bootstrap.sh names a host (above): take it from the apt configuration"
  failed=1
else
  echo "ok   bootstrap.sh names no host"
fi
exit $failed
