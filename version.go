package main

import (
	"fmt"
	"runtime/debug"
)

// Set at build time with -ldflags "-X main.version=... -X main.revision=...".
var (
	version  = "dev"
	revision = ""
)

func versionString() string {
	rev := revision
	if rev == "" {
		if bi, ok := debug.ReadBuildInfo(); ok {
			for _, s := range bi.Settings {
				if s.Key == "vcs.revision" {
					rev = s.Value
				}
			}
		}
	}
	if rev == "" {
		rev = "unknown"
	}
	return fmt.Sprintf("bragerone_exporter %s (revision %s)", version, rev)
}
