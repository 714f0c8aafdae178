#!/usr/bin/env bash
# Installs what the gate needs into .tools/ (git-ignored), so a bare machine and CI start the same way:
#   - Go 1.26, when the machine has no go >= 1.26 on PATH: Debian's golang-1.26-go and golang-1.26-src
#     packages, fetched with apt-get into a private apt state and unpacked with dpkg -x (nothing is
#     installed system-wide). The archive is the machine's own: its URI (and keyring) come from the
#     apt configuration (deb822 /etc/apt/sources.list.d/*.sources, or /etc/apt/sources.list); only
#     the suite is changed, to one that carries golang-1.26 ($GO_SUITE). The script names no host.
#   - the P compiler and checker 3.1.0, a .NET tool from NuGet: dotnet tool install --tool-path;
#   - Chromium, for the test that loads the HTML timeline in a real browser: Debian's chromium
#     package (apt-get; the one system-wide install, since a browser needs its shared libraries);
#   - the pconform CLI itself, built into .tools/bin/pconform (on PATH after `. scripts/env.sh`;
#     scripts/pconform runs it, rebuilding when the sources changed).
# Usage: scripts/bootstrap.sh [go|p|browser|pconform|all]   (default all). Idempotent; prints what
# it did. `scripts/bootstrap.sh archive` prints the archive URI and keyring the Go install would use.
set -euo pipefail
# shellcheck source=scripts/env.sh
. "$(dirname "${BASH_SOURCE[0]}")/env.sh"

P_VERSION=3.1.0
GO_SERIES=1.26
# The Debian suite that carries golang-$GO_SERIES.
GO_SUITE=${PCONFORM_GO_SUITE:-sid}
# Where the machine's apt configuration lives (a test points it at fixtures).
APT_ETC=${PCONFORM_APT_ETC:-/etc/apt}

# machine_archive prints "URI KEYRING" for the machine's main Debian archive: the first deb source
# whose suites are not a security suite, from the deb822 files in $APT_ETC/sources.list.d (in name
# order), else from the one-line $APT_ETC/sources.list. KEYRING is the source's Signed-By file, or
# "-" when it names none. Prints nothing when there is no such source.
machine_archive() {
  local f found=""
  for f in "$APT_ETC"/sources.list.d/*.sources; do
    [ -r "$f" ] || continue
    found=$(awk '
      function flush() {
        if (types ~ /(^|[ \t])deb([ \t]|$)/ && uris != "" && suites !~ /-security/) {
          split(uris, u, /[ \t]+/); print u[1], (signed == "" ? "-" : signed); done = 1; exit
        }
        types = ""; uris = ""; suites = ""; signed = ""
      }
      /^[ \t]*$/ { flush(); next }
      /^#/ { next }
      /^Types:/ { types = $0; sub(/^Types:[ \t]*/, "", types) }
      /^URIs:/ { uris = $0; sub(/^URIs:[ \t]*/, "", uris) }
      /^Suites:/ { suites = $0; sub(/^Suites:[ \t]*/, "", suites) }
      /^Signed-By:/ { signed = $0; sub(/^Signed-By:[ \t]*/, "", signed) }
      END { if (!done) flush() }' "$f")
    if [ -n "$found" ]; then echo "$found"; return; fi
  done
  [ -r "$APT_ETC/sources.list" ] || return 0
  awk '
    $1 != "deb" { next }
    {
      i = 2; signed = "-"
      if ($2 ~ /^\[/) {
        for (; i <= NF; i++) {
          if ($i ~ /^\[?signed-by=/) { signed = $i; sub(/^\[?signed-by=/, "", signed); sub(/\]$/, "", signed) }
          if ($i ~ /\]$/) { i++; break }
        }
      }
      if ($(i + 1) ~ /-security/) next
      print $i, signed; exit
    }' "$APT_ETC/sources.list"
}

have_go() {
  command -v go >/dev/null 2>&1 || return 1
  local v
  v=$(go env GOVERSION 2>/dev/null) || return 1
  v=${v#go}
  local major=${v%%.*} rest=${v#*.}
  local minor=${rest%%.*}
  [ "$major" -gt 1 ] || { [ "$major" -eq 1 ] && [ "$minor" -ge 26 ]; }
}

install_go() {
  if have_go; then
    echo "bootstrap: go $(go env GOVERSION) at $(command -v go)"
    return
  fi
  echo "bootstrap: installing Go $GO_SERIES into .tools/go from Debian's archive"
  local archive uri keyring
  archive=$(machine_archive)
  if [ -z "$archive" ]; then
    echo "bootstrap: no Debian archive in the apt configuration ($APT_ETC/sources.list.d/*.sources or $APT_ETC/sources.list); install Go $GO_SERIES yourself" >&2
    exit 1
  fi
  read -r uri keyring <<<"$archive"
  local opt=""
  [ "$keyring" = "-" ] || opt="[signed-by=$keyring] "
  echo "bootstrap: using the machine's archive $uri, suite $GO_SUITE"
  local apt="$PCONFORM_TOOLS/apt"
  rm -rf "$apt" && mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial" "$apt/debs"
  echo "deb ${opt}${uri} ${GO_SUITE} main" >"$apt/sources.list"
  local opts=(-o "Dir::Etc::SourceList=$apt/sources.list" -o Dir::Etc::SourceParts=/dev/null
    -o "Dir::State::Lists=$apt/lists" -o "Dir::Cache=$apt/cache" -o APT::Sandbox::User=root)
  apt-get "${opts[@]}" -qq update
  (cd "$apt/debs" && apt-get "${opts[@]}" -qq download "golang-$GO_SERIES-go" "golang-$GO_SERIES-src")
  local stage="$apt/root"
  mkdir -p "$stage"
  for deb in "$apt"/debs/*.deb; do dpkg -x "$deb" "$stage"; done
  rm -rf "$PCONFORM_TOOLS/go"
  # The package splits GOROOT across /usr/lib and /usr/share with symlinks; copy it into one tree.
  cp -rL "$stage/usr/lib/go-$GO_SERIES" "$PCONFORM_TOOLS/go"
  rm -rf "$apt"
  hash -r
  have_go || { echo "bootstrap: Go install failed: $(command -v go || echo 'no go on PATH')" >&2; exit 1; }
  echo "bootstrap: go $(go env GOVERSION) installed at $PCONFORM_TOOLS/go"
}

install_p() {
  if [ -x "$PCONFORM_TOOLS/p/p" ] && "$PCONFORM_TOOLS/p/p" --version 2>/dev/null | grep -q "$P_VERSION"; then
    echo "bootstrap: p $P_VERSION at $PCONFORM_TOOLS/p/p"
    return
  fi
  command -v dotnet >/dev/null 2>&1 || { echo "bootstrap: the .NET SDK (dotnet) is needed for the P toolchain" >&2; exit 1; }
  echo "bootstrap: installing P $P_VERSION into .tools/p"
  rm -rf "$PCONFORM_TOOLS/p"
  dotnet tool install --tool-path "$PCONFORM_TOOLS/p" p --version "$P_VERSION" >/dev/null
  "$PCONFORM_TOOLS/p/p" --version | head -1
}

install_browser() {
  local b
  for b in chromium chromium-browser google-chrome; do
    if command -v "$b" >/dev/null 2>&1; then
      echo "bootstrap: browser $(command -v "$b")"
      return
    fi
  done
  command -v apt-get >/dev/null 2>&1 || { echo "bootstrap: no Chromium and no apt-get to install it" >&2; exit 1; }
  echo "bootstrap: installing Debian's chromium package"
  export DEBIAN_FRONTEND=noninteractive
  apt-get -qq update
  apt-get -qq install -y --no-install-recommends chromium >/dev/null
  command -v chromium >/dev/null 2>&1 || { echo "bootstrap: chromium install failed" >&2; exit 1; }
  echo "bootstrap: browser $(command -v chromium)"
}

install_pconform() {
  have_go || install_go
  echo "bootstrap: building pconform into .tools/bin (the first build compiles SQLite: a minute or more)"
  mkdir -p "$PCONFORM_TOOLS/bin"
  (cd "$PCONFORM_ROOT" && go build -o "$PCONFORM_TOOLS/bin/pconform.tmp" ./cmd/pconform)
  mv "$PCONFORM_TOOLS/bin/pconform.tmp" "$PCONFORM_TOOLS/bin/pconform"
  echo "bootstrap: $("$PCONFORM_TOOLS/bin/pconform" --version)"
  echo "bootstrap: run it as scripts/pconform, or as pconform after . scripts/env.sh"
}

case "${1:-all}" in
  archive) machine_archive ;;
  go) install_go ;;
  p) install_p ;;
  browser) install_browser ;;
  pconform) install_pconform ;;
  all) install_go; install_p; install_browser; install_pconform ;;
  *) echo "usage: scripts/bootstrap.sh [go|p|browser|pconform|all|archive]" >&2; exit 2 ;;
esac
