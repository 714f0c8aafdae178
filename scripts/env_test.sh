#!/usr/bin/env bash
# Tests scripts/env.sh in fresh shells (sh, and dash, bash, zsh where installed): pconform, go and
# p land on PATH from the system PATH, from a PATH that already holds .tools/go/bin, and sourcing
# twice adds nothing. Then it runs the go doc command docs/service.md gives, from the repository and
# from a user's module that requires this one, and checks that it prints the API and nothing on
# stderr. Run: bash scripts/env_test.sh (the lint stage does).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 2
root=$(pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/env-test.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
failed=0
syspath=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

check() { # NAME GOT WANT
  if [ "$2" != "$3" ]; then
    printf 'FAIL %s:\n  got  %s\n  want %s\n' "$1" "$2" "$3"
    failed=1
  else
    echo "ok   $1"
  fi
}

# in_shell SHELL PATH SCRIPT: runs SCRIPT in SHELL from the repository root, with only PATH, HOME
# and the script's own settings in its environment.
in_shell() {
  env -i HOME="$HOME" PATH="$2" "$1" -c "$3" 2>&1
}

shells=()
for sh in sh dash bash zsh; do
  if command -v "$sh" >/dev/null; then shells+=("$sh"); fi
done
want="$root/scripts/bin/pconform $root/.tools/go/bin/go"
for sh in "${shells[@]}"; do
  # zsh knows its sourced file as $0 only where the sourcing names it: from the root it is found.
  check "$sh: from the system PATH" \
    "$(in_shell "$sh" "$syspath" '. scripts/env.sh && echo "$(command -v pconform) $(command -v go)"')" "$want"
  check "$sh: .tools/go/bin already on PATH" \
    "$(in_shell "$sh" "$root/.tools/go/bin:$syspath" '. scripts/env.sh && echo "$(command -v pconform) $(command -v go)"')" "$want"
  check "$sh: sourced twice, PATH unchanged" \
    "$(in_shell "$sh" "$syspath" '. scripts/env.sh && a=$PATH && . scripts/env.sh && [ "$a" = "$PATH" ] && echo same')" same
done
check "no directory twice on PATH" \
  "$(in_shell bash "$root/.tools/go/bin:$syspath" '. scripts/env.sh && . scripts/env.sh && tr : "\n" <<<"$PATH" | sort | uniq -d')" ""

# The go doc command of docs/service.md, verbatim.
godoc=$(sed -n 's/^ *\(GO111MODULE=off go doc .*\)$/\1/p' docs/service.md)
if [ -z "$godoc" ] || [ "$(printf '%s\n' "$godoc" | wc -l)" != 1 ]; then
  echo "FAIL docs/service.md gives no single GO111MODULE=off go doc command: '$godoc'"
  failed=1
elif [ ! -x .tools/go/bin/go ]; then
  echo "skip go doc: no Go in .tools/go (run scripts/bootstrap.sh)"
else
  # A user's module: requires this one through a replace directive, with its go.sum.
  mkdir -p "$tmp/svc"
  cat >"$tmp/svc/go.mod" <<EOF
module example.invalid/svc

go 1.26.0

require github.com/pconform/pconform v0.0.0

replace github.com/pconform/pconform => $root
EOF
  printf 'package main\n\nimport "github.com/pconform/pconform/actordelivery"\n\nfunc main() { _ = actordelivery.Options{} }\n' >"$tmp/svc/main.go"
  cp go.sum "$tmp/svc/go.sum"
  for dir in "$root" "$tmp/svc"; do
    where="the repository"
    [ "$dir" = "$root" ] || where="a user's module"
    out=$(env -i HOME="$HOME" PATH="$syspath" bash -c ". '$root/scripts/env.sh' && cd '$dir' && $godoc" 2>"$tmp/stderr")
    code=$?
    case "$out" in
      *"type Options struct"*) got="exit $code, $(wc -c <"$tmp/stderr" | tr -d ' ') bytes on stderr" ;;
      *) got="exit $code, no Options in: $(head -c 300 <<<"$out")" ;;
    esac
    check "go doc from $where" "$got" "exit 0, 0 bytes on stderr"
    [ -s "$tmp/stderr" ] && head -5 "$tmp/stderr"
  done
fi

[ "$failed" = 0 ] && echo "env_test: every case passed"
exit "$failed"
