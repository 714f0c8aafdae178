# shellcheck shell=sh
# Sourced by scripts/check.sh, scripts/pconform and .ci/run, and by people (`. scripts/env.sh` from
# the repository root, in sh, dash, bash or zsh): puts the project's toolchains and pconform on
# PATH (scripts/bin/pconform, which rebuilds the installed binary when the sources are newer) and
# points the Go command at the offline module mirror when one sits beside the checkout. Installs
# nothing itself; scripts/bootstrap.sh does that. POSIX sh: a sourced file cannot learn its own
# path portably, so bash's $BASH_SOURCE and zsh's $0 are used when there, and the current
# directory otherwise (it must then be the repository root).

if [ -n "${BASH_SOURCE:-}" ]; then
  pconform_env_file=$BASH_SOURCE
elif [ -n "${ZSH_VERSION:-}" ]; then
  pconform_env_file=$0
else
  pconform_env_file=scripts/env.sh
fi
if [ ! -f "$pconform_env_file" ]; then
  echo "scripts/env.sh: cannot find myself; source me from the repository root: . scripts/env.sh" >&2
  unset pconform_env_file
  return 1 2>/dev/null || exit 1
fi
PCONFORM_ROOT=$(cd "$(dirname "$pconform_env_file")/.." && pwd)
unset pconform_env_file
export PCONFORM_ROOT
export PCONFORM_TOOLS="$PCONFORM_ROOT/.tools"

if [ -d "$PCONFORM_ROOT/../shared/goproxy" ]; then
  GOPROXY="file://$(cd "$PCONFORM_ROOT/../shared/goproxy" && pwd)"
  export GOPROXY GOSUMDB=off
fi
export GOTOOLCHAIN=local
export CGO_ENABLED=1
# The P tool and the checker projects it generates target net8.0; the machine may only have a newer .NET.
export DOTNET_ROLL_FORWARD=Major
export DOTNET_CLI_TELEMETRY_OPTOUT=1 DOTNET_NOLOGO=1

# Each directory is put in front unless PATH has it already, so sourcing twice adds nothing, and
# a PATH that already holds one of them (a shell that put .tools/go/bin there itself) still gets
# the others: scripts/bin, where pconform is, first. Listed last to first.
for pconform_env_dir in "$PCONFORM_TOOLS/p" "$PCONFORM_TOOLS/go/bin" "$PCONFORM_TOOLS/bin" "$PCONFORM_ROOT/scripts/bin"; do
  case ":$PATH:" in
    *":$pconform_env_dir:"*) ;;
    *) PATH="$pconform_env_dir:$PATH" ;;
  esac
done
unset pconform_env_dir
export PATH
