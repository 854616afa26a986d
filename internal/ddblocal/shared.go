package ddblocal

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"

	"github.com/zae-limiter/zae-limiter-go/core/dynamodblocal"
)

// EndpointEnv is the AWS SDK's variable for DynamoDB's endpoint, which the
// test harness (internal/ddbtest) reads before it starts an emulator.
const EndpointEnv = "AWS_ENDPOINT_URL_DYNAMODB"

// SharedHeapMB is the Java heap of an emulator that RunShared starts: it
// holds every test package's tables, and the stream records of those
// with a stream, for as long as the command runs.
const SharedHeapMB = 512

// RunShared runs the command name with args against one DynamoDB Local,
// started here, and stops the emulator when the command ends: make test's
// unit step, so that its test binaries share one emulator instead of
// starting one each (docs/design.md §1). The command's environment is this
// process's with EndpointEnv set to the emulator. When EndpointEnv is set
// already, the command runs against that endpoint and nothing is started.
// The emulator runs in memory with both JIT tiers: it serves minutes of
// load. It returns the command's exit code; an error is a failure to start
// either.
//
// When ctx ends (the caller's interrupt or terminate), the command gets
// SIGTERM and RunShared waits for it; the emulator goes with this process
// in any case (dynamodblocal.Options.Detach is false).
func RunShared(ctx context.Context, dir string, name string, args []string, stdout, stderr io.Writer) (int, error) {
	env := os.Environ()
	if os.Getenv(EndpointEnv) == "" {
		srv, err := dynamodblocal.Start(ctx, dynamodblocal.Options{Dir: dir, MaxHeapMB: SharedHeapMB})
		if err != nil {
			return 0, err
		}
		defer func() { _ = srv.Stop() }()
		env = append(env, EndpointEnv+"="+srv.Endpoint)
	}
	cmd := exec.Command(name, args...)
	cmd.Env = env
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, stdout, stderr
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("ddblocal: %w", err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-ctx.Done():
		_ = cmd.Process.Signal(syscall.SIGTERM)
		err = <-done
	}
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0, nil
	case errors.As(err, &exit):
		if code := exit.ExitCode(); code >= 0 {
			return code, nil
		}
		return 1, nil // ended by a signal
	}
	return 0, fmt.Errorf("ddblocal: %w", err)
}
