// Command fusee is the operator tool for a durable-workflow engine's data:
// it reshards closed data directories, inspects and verifies them, and
// plans the rings that place a namespace's instances on cells.
//
// This file only wires the process (signals, exit code) to package cli.
package main

import (
	"os"

	"github.com/fusee-dev/fusee/cmd/internal/cli"
)

// version is set at build time: -ldflags "-X main.version=v1.2.3".
var version = ""

func main() {
	os.Exit(cli.Main(version, os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
