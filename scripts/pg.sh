# shellcheck shell=bash
# A throwaway PostgreSQL server for the gate and for local runs.
#
#   . scripts/pg.sh; pg_start || exit 1; ...; pg_stop      (scripts/check.sh does this)
#   bash scripts/pg.sh COMMAND [ARG ...]                   (runs COMMAND with a server, then stops it)
#
# pg_start exports PCONFORM_PG_DSN for the tests. If PCONFORM_PG_DSN is already set, it uses that
# server and starts nothing. Otherwise it installs Debian's postgresql package when no server
# binaries are found (apt-get update first; needs root), runs initdb as the unprivileged postgres
# user into a fresh temporary directory, and starts the cluster listening only on 127.0.0.1 and a
# socket directory of its own, on a free port. Durability settings are off (fsync, synchronous
# commit): the cluster lives for one run, and the tests kill clients, never the server.
#
# pg_stop stops the cluster (pg_ctl -m immediate) and deletes its directory; call it from an EXIT
# trap so a failing run stops it too. Under CI=true a server that cannot be installed or started is
# a failure (pg_start returns 1); locally it is a warning, and the tests that need PostgreSQL skip
# and say so.

PCONFORM_PG_DIR=""

pg_bindir() {
  local d
  for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
    if [ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ]; then echo "$d"; return 0; fi
  done
  return 1
}

pg_as_postgres() {
  if command -v runuser >/dev/null 2>&1; then
    runuser -u postgres -- "$@"
  else
    su postgres -s /bin/sh -c "$(printf '%q ' "$@")"
  fi
}

pg_fail() {
  echo "pg: $*" >&2
  if [ "${CI:-}" = "true" ]; then return 1; fi
  echo "pg: continuing without PostgreSQL; tests that need it will skip (set PCONFORM_PG_DSN to use your own server)" >&2
  return 0
}

pg_start() {
  if [ -n "${PCONFORM_PG_DSN:-}" ]; then
    echo "pg: using the server in PCONFORM_PG_DSN"
    return 0
  fi
  local bin
  if ! bin=$(pg_bindir); then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
      echo "pg: installing Debian's postgresql package"
      if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql; } >/dev/null 2>&1; then
        pg_fail "apt-get install postgresql failed"; return
      fi
    fi
    bin=$(pg_bindir) || { pg_fail "no PostgreSQL server binaries under /usr/lib/postgresql"; return; }
  fi
  if [ "$(id -u)" = 0 ] && ! id postgres >/dev/null 2>&1; then
    pg_fail "no 'postgres' user to run the server as (initdb refuses root)"; return
  fi
  PCONFORM_PG_DIR=$(mktemp -d "${TMPDIR:-/tmp}/pconform-pg.XXXXXX")
  chmod 755 "$PCONFORM_PG_DIR"
  mkdir -p "$PCONFORM_PG_DIR/sock"
  [ "$(id -u)" = 0 ] && chown -R postgres "$PCONFORM_PG_DIR"
  local run=()
  [ "$(id -u)" = 0 ] && run=(pg_as_postgres)
  if ! "${run[@]}" "$bin/initdb" -D "$PCONFORM_PG_DIR/data" -U postgres -A trust --no-sync -E UTF8 \
    >"$PCONFORM_PG_DIR/initdb.log" 2>&1; then
    cat "$PCONFORM_PG_DIR/initdb.log" >&2
    pg_stop; pg_fail "initdb failed"; return
  fi
  # The first port tried is the same on every run from this checkout, so that PCONFORM_PG_DSN is too:
  # the go command's test cache keys a result on the variables the tests read, and a DSN that
  # changed on every run would rerun every PostgreSQL test of an unchanged package. Another run
  # holding that port gets a random one.
  local port tries=0 home_port
  home_port=$((20000 + $(printf '%s' "${PCONFORM_ROOT:-$PWD}" | cksum | cut -d' ' -f1) % 40000))
  while :; do
    tries=$((tries + 1))
    if [ $tries = 1 ]; then port=$home_port; else port=$((20000 + RANDOM % 40000)); fi
    # A port nobody answers on is free (the server's own bind is the final check).
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then continue; fi
    if "${run[@]}" "$bin/pg_ctl" -D "$PCONFORM_PG_DIR/data" -l "$PCONFORM_PG_DIR/server.log" -w -t 30 start \
      -o "-p $port -k $PCONFORM_PG_DIR/sock -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=300" \
      >/dev/null 2>&1; then
      break
    fi
    if [ $tries -ge 5 ]; then
      cat "$PCONFORM_PG_DIR/server.log" >&2
      pg_stop; pg_fail "the server did not start"; return
    fi
  done
  local version
  version=$("$bin/pg_ctl" --version | awk '{print $3}')
  # The server's version is in the DSN (as the connection's application name) so that a cached test
  # result on one version never stands in for a run on another.
  export PCONFORM_PG_DSN="postgres://postgres@127.0.0.1:$port/postgres?sslmode=disable&application_name=pconform-pg$version"
  echo "pg: throwaway PostgreSQL $version on 127.0.0.1:$port"
}

pg_stop() {
  [ -n "$PCONFORM_PG_DIR" ] || return 0
  local bin
  if bin=$(pg_bindir) && [ -f "$PCONFORM_PG_DIR/data/postmaster.pid" ]; then
    if [ "$(id -u)" = 0 ]; then
      pg_as_postgres "$bin/pg_ctl" -D "$PCONFORM_PG_DIR/data" -m immediate -w stop >/dev/null 2>&1
    else
      "$bin/pg_ctl" -D "$PCONFORM_PG_DIR/data" -m immediate -w stop >/dev/null 2>&1
    fi
  fi
  rm -rf "$PCONFORM_PG_DIR"
  PCONFORM_PG_DIR=""
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  set -uo pipefail
  [ $# -gt 0 ] || { echo "usage: scripts/pg.sh COMMAND [ARG ...]" >&2; exit 2; }
  trap pg_stop EXIT
  pg_start || exit 1
  "$@"
fi
