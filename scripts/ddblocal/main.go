// Command ddblocal installs, starts and stops DynamoDB Local for `make run`,
// `make test`, `make bench` and CI.
//
//	go run ./scripts/ddblocal install
//	go run ./scripts/ddblocal start [-port N] [-pidfile F] [-envfile F]
//	go run ./scripts/ddblocal stop  [-pidfile F]
//	go run ./scripts/ddblocal run -- COMMAND [ARG...]
//
// start refuses a port that is already taken, prints the endpoint and leaves
// the emulator running; stop ends it by the pid that start recorded. run
// starts one on a free port, runs COMMAND with AWS_ENDPOINT_URL_DYNAMODB
// pointing at it, stops it when COMMAND ends and exits with COMMAND's
// code (ddblocal.RunShared; make test's unit step).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/zae-limiter/zae-limiter-go/core/dynamodblocal"
	"github.com/zae-limiter/zae-limiter-go/internal/ddblocal"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "run" {
		os.Exit(runShared(os.Args[2:]))
	}
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("usage: ddblocal install | start [-port N] [-pidfile F] | stop [-pidfile F] | run -- COMMAND [ARG...]")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	fs := flag.NewFlagSet(args[0], flag.ContinueOnError)
	port := fs.Int("port", 0, "loopback port (0 picks a free one)")
	pidfile := fs.String("pidfile", ".cache/dynamodb-local.pid", "where start records the pid")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	dir, err := ddblocal.DefaultDir()
	if err != nil {
		return err
	}
	switch args[0] {
	case "install":
		if err := dynamodblocal.Install(ctx, dir); err != nil {
			return err
		}
		fmt.Println("DynamoDB Local installed in", dir)
		return nil
	case "start":
		if err := dynamodblocal.Install(ctx, dir); err != nil {
			return err
		}
		s, err := dynamodblocal.Start(ctx, dynamodblocal.Options{Dir: dir, Port: *port, Detach: true})
		if err != nil {
			return err
		}
		if err := os.WriteFile(*pidfile, []byte(strconv.Itoa(s.PID)+"\n"), 0o644); err != nil {
			_ = s.Stop()
			return err
		}
		fmt.Println(s.Endpoint)
		return nil
	case "stop":
		b, err := os.ReadFile(*pidfile)
		if os.IsNotExist(err) {
			return nil
		}
		if err != nil {
			return err
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil {
			return fmt.Errorf("pid file %s: %w", *pidfile, err)
		}
		if err := dynamodblocal.StopPID(pid); err != nil {
			return err
		}
		return os.Remove(*pidfile)
	default:
		return fmt.Errorf("unknown command %q", args[0])
	}
}

// runShared is the run subcommand: args are -- COMMAND [ARG...].
func runShared(args []string) int {
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "usage: ddblocal run -- COMMAND [ARG...]")
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	dir, err := ddblocal.InstallDefault(ctx)
	if err == nil {
		var code int
		if code, err = ddblocal.RunShared(ctx, dir, args[0], args[1:], os.Stdout, os.Stderr); err == nil {
			return code
		}
	}
	fmt.Fprintln(os.Stderr, err)
	return 1
}
