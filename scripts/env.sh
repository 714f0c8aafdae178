# shellcheck shell=bash
# Sourced by scripts/check.sh and .ci/run: puts the project's toolchains on PATH and points the Go
# command at the offline module mirror when one sits beside the checkout. Installs nothing itself;
# scripts/bootstrap.sh does that.

PCONFORM_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
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

case ":$PATH:" in
  *":$PCONFORM_TOOLS/go/bin:"*) ;;
  *) export PATH="$PCONFORM_TOOLS/go/bin:$PCONFORM_TOOLS/p:$PATH" ;;
esac
