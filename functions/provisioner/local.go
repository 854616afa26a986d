//go:build !lambda.norpc

package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"time"
)

// runLocal serves the command line: one CloudFormation request or
// invocation from a file (-event), or a manifest file planned or applied
// (-manifest with -plan or -apply).
func runLocal(log *slog.Logger) int {
	fs := flag.NewFlagSet("provisioner", flag.ContinueOnError)
	eventFile := fs.String("event", "", "handle this Lambda payload (a CloudFormation request or a plan/apply invocation) and print the answer")
	manifestFile := fs.String("manifest", "", "a limits manifest file (YAML or JSON, snake_case)")
	plan := fs.Bool("plan", false, "with -manifest: print the changes, write nothing")
	apply := fs.Bool("apply", false, "with -manifest: apply the changes")
	nsID := fs.String("namespace-id", "", "with -manifest: the namespace id (default: resolve the manifest's namespace)")
	timeout := fs.Duration("timeout", 5*time.Minute, "the deadline the handler runs under, as Lambda's would be")
	if err := fs.Parse(os.Args[1:]); err != nil {
		return 2
	}
	if (*eventFile == "") == (*manifestFile == "") || (*manifestFile != "" && *plan == *apply) {
		fmt.Fprintln(os.Stderr, "usage: provisioner -event FILE | provisioner -manifest FILE (-plan | -apply) [-namespace-id ID]")
		fs.PrintDefaults()
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	h, err := wire(ctx, log, os.Getenv("AWS_ENDPOINT_URL_DYNAMODB") != "")
	if err != nil {
		log.Error("provisioner init failed", "error", err)
		return 1
	}
	if *eventFile != "" {
		return exit(log, h.RunEvent(ctx, *eventFile, os.Stdout))
	}
	return exit(log, h.RunManifest(ctx, *manifestFile, *nsID, *apply, os.Stdout))
}

func exit(log *slog.Logger, err error) int {
	if err != nil {
		log.Error("provisioner", "error", err)
		return 1
	}
	return 0
}
