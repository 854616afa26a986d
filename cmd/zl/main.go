// Command zl is the operator's command line for a zae-limiter table:
// namespaces, limits manifests, status (see cmd/zl/internal/cli).
//
//	go install github.com/zae-limiter/zae-limiter-go/cmd/zl@latest
//	zl --help
package main

import (
	"os"
	// Manifests name IANA zones (docs/design.md §14): the zone database is
	// built in, so zl needs none on its host.
	_ "time/tzdata"

	"github.com/zae-limiter/zae-limiter-go/cmd/zl/internal/cli"
)

func main() { os.Exit(cli.Main()) }
