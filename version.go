package main

// What the binary says about its build. --version, the landing page and
// bragerone_exporter_build_info all read github.com/prometheus/common/version,
// whose variables the build stamps (scripts/build.sh, the Dockerfile):
//
//	-ldflags "-X github.com/prometheus/common/version.Version=…
//	          -X github.com/prometheus/common/version.Revision=…
//	          -X github.com/prometheus/common/version.Branch=…
//	          -X github.com/prometheus/common/version.BuildUser=…
//	          -X github.com/prometheus/common/version.BuildDate=…"

import (
	"log/slog"

	"github.com/prometheus/common/version"
)

// programName names the program in --version.
const programName = "bragerone_exporter"

// unstampedVersion is the version of a build that stamped none (go build,
// go run): without it --version would print an empty one. The revision of
// such a build is the commit Go recorded, or unknown.
const unstampedVersion = "dev"

func init() {
	if version.Version == "" {
		version.Version = unstampedVersion
	}
}

// versionString is the build on one line, as the landing page shows it:
// (version=…, branch=…, revision=…).
func versionString() string { return version.Info() }

// versionText is what --version prints: version, branch, revision, build
// user and date, Go version, platform and build tags.
func versionText() string { return version.Print(programName) }

// logStart logs the build at start, as node_exporter does: the version
// line of the landing page, then the build context (Go version, platform,
// build user and date, tags).
func logStart(logger *slog.Logger) {
	logger.Info("Starting "+programName, "version", version.Info())
	logger.Info("Build context", "build_context", version.BuildContext())
}
