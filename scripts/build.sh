#!/usr/bin/env bash
# Builds the static bragerone_exporter binary without Docker, with the same
# flags as the Dockerfile: CGO_ENABLED=0, -trimpath, and the build facts
# stamped into github.com/prometheus/common/version, which --version and
# bragerone_exporter_build_info read.
#
#   scripts/build.sh [OUTPUT]          default OUTPUT: ./bragerone_exporter
#
# Environment: VERSION (default: git describe), REVISION (default: the commit),
# BRANCH (default: the checked-out branch), BUILD_USER (default: user@host),
# BUILD_DATE (default: now, UTC, as 20060102-15:04:05), GO (default: go),
# GOOS/GOARCH for a cross build.
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
branch="${BRANCH:-$(git rev-parse --abbrev-ref HEAD 2>/dev/null || echo unknown)}"
build_user="${BUILD_USER:-$(id -un 2>/dev/null || echo unknown)@$(hostname 2>/dev/null || echo unknown)}"
build_date="${BUILD_DATE:-$(date -u +%Y%m%d-%H:%M:%S)}"

v=github.com/prometheus/common/version
CGO_ENABLED=0 "$go_cmd" build -trimpath \
	-ldflags "-s -w -X ${v}.Version=${version} -X ${v}.Revision=${revision} -X ${v}.Branch=${branch} -X ${v}.BuildUser=${build_user} -X ${v}.BuildDate=${build_date}" \
	-o "$out" .

# Print the stamped version; a cross-built binary cannot run here.
if [ "$("$go_cmd" env GOOS)/$("$go_cmd" env GOARCH)" = "$("$go_cmd" env GOHOSTOS)/$("$go_cmd" env GOHOSTARCH)" ]; then
	"$out" --version
else
	echo "bragerone_exporter, version ${version} (branch: ${branch}, revision: ${revision}) for $("$go_cmd" env GOOS)/$("$go_cmd" env GOARCH): $out"
fi
