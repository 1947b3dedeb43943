#!/usr/bin/env bash
# Builds the static bragerone_exporter binary without Docker, with the same
# flags as the Dockerfile: CGO_ENABLED=0, -trimpath, and the version and
# revision stamped into the binary.
#
#   scripts/build.sh [OUTPUT]          default OUTPUT: ./bragerone_exporter
#
# Environment: VERSION (default: git describe), REVISION (default: the commit),
# GO (default: go), GOOS/GOARCH for a cross build.
set -euo pipefail

out="${1:-}"
if [ -n "$out" ] && [ "${out#/}" = "$out" ]; then
	out="$PWD/$out" # relative to the caller, not to the repository
fi
cd "$(dirname "$0")/.."
out="${out:-$PWD/bragerone_exporter}"

go_cmd="${GO:-go}"
version="${VERSION:-$(git describe --tags --always --dirty 2>/dev/null || echo dev)}"
revision="${REVISION:-$(git rev-parse HEAD 2>/dev/null || echo unknown)}"

CGO_ENABLED=0 "$go_cmd" build -trimpath \
	-ldflags "-s -w -X main.version=${version} -X main.revision=${revision}" \
	-o "$out" .

# Print the stamped version; a cross-built binary cannot run here.
if [ "$("$go_cmd" env GOOS)/$("$go_cmd" env GOARCH)" = "$("$go_cmd" env GOHOSTOS)/$("$go_cmd" env GOHOSTARCH)" ]; then
	"$out" --version
else
	echo "bragerone_exporter ${version} (revision ${revision}) for $("$go_cmd" env GOOS)/$("$go_cmd" env GOARCH): $out"
fi
