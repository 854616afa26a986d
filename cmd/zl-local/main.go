// Command zl-local is what `make run` runs: DynamoDB Local, the limiter
// table, and a walk-through of what the product does (see internal/showcase).
// With AWS_ENDPOINT_URL_DYNAMODB set it uses that emulator instead of
// starting one.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/zae-limiter/zae-limiter-go/internal/showcase"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := showcase.Run(ctx, os.Stdout, showcase.Options{Endpoint: os.Getenv("AWS_ENDPOINT_URL_DYNAMODB"), ZL: os.Getenv("ZL")})
	if err != nil {
		fmt.Fprintln(os.Stderr, "zl-local:", err)
		os.Exit(1)
	}
}
