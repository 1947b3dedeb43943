// Command bragerone_exporter is a Prometheus exporter and health monitor for the
// BragerOne device cloud. The command line lives in internal/cli; this file
// only runs it.
//
// The command is the module's root package, so that `go run .` (the README's
// quick start) runs it and `go install <module>@<version>` names the binary
// bragerone_exporter.
package main

import (
	"os"

	"github.com/bragerone/bragerone_exporter/internal/cli"
)

func main() {
	os.Exit(cli.Run(os.Args[1:], os.Stdout, os.Stderr))
}
