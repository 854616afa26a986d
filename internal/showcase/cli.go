package showcase

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/zae-limiter/zae-limiter-go/internal/ddblocal"
)

// zlPackage is the import path of the operator command line.
const zlPackage = "github.com/zae-limiter/zae-limiter-go/cmd/zl"

// commandLine drives the real zl binary against this run's table: the
// reads an operator starts with (entities, a resource's limits, the audit
// trail, the snapshots the aggregator wrote in step 8, the top consumers),
// one audited write with its fan-out counts, and two mistakes answered
// with exit codes and what to do.
func (d *demo) commandLine(ctx context.Context) error {
	bin, cleanup, err := d.zlBinary(ctx)
	if err != nil {
		return err
	}
	defer cleanup()
	fmt.Fprintf(d.out, "the zl binary, pointed at this table through its environment (ZAEL_TABLE, AWS_ENDPOINT_URL_DYNAMODB):\n")
	for _, args := range [][]string{
		{"-N", "demo", "entity", "list", "-o", "table"},
		{"-N", "demo", "resource", "get", acqResource, "-o", "table"},
		{"-N", "demo", "usage", "list", "--resource", acqResource, "--window", "hourly", "--since", "24h", "-o", "table"},
		{"-N", "demo", "usage", "top", "--resource", acqResource, "--limit", "tpm", "-o", "table"},
		{"-N", "demo", "access", "disable", "--resource", acqOther, "--yes", "-o", "table"},
		{"-N", "demo", "audit", "list", "--resource", acqOther, "-o", "yaml"},
		{"-N", "nope", "entity", "list"},
		{"-N", "demo", "usage", "list", "--resource", acqResource, "--window", "weekly"},
	} {
		if err := d.runZL(ctx, bin, args); err != nil {
			return err
		}
	}
	return nil
}

// zlBinary returns the zl binary to run: Options.ZL, or one built from
// this module into a temporary directory (the go command's cache makes a
// second build quick).
func (d *demo) zlBinary(ctx context.Context) (string, func(), error) {
	if d.zl != "" {
		return d.zl, func() {}, nil
	}
	dir, err := os.MkdirTemp("", "zl-showcase-")
	if err != nil {
		return "", nil, err
	}
	cleanup := func() { _ = os.RemoveAll(dir) }
	bin := filepath.Join(dir, "zl")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, zlPackage)
	if out, err := build.CombinedOutput(); err != nil {
		cleanup()
		return "", nil, fmt.Errorf("go build %s: %w\n%s", zlPackage, err, out)
	}
	return bin, cleanup, nil
}

// runZL runs one zl command and prints it, its output and, when it is not
// 0, its exit code. A command that cannot start is an error; a command
// that exits non-zero is part of the walk-through.
func (d *demo) runZL(ctx context.Context, bin string, args []string) error {
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(),
		"ZAEL_TABLE="+d.table,
		"AWS_ENDPOINT_URL_DYNAMODB="+d.endpoint,
		// DynamoDB Local keeps a database per access key and region.
		"AWS_REGION="+ddblocal.Region,
		"AWS_ACCESS_KEY_ID="+ddblocal.AccessKeyID,
		"AWS_SECRET_ACCESS_KEY="+ddblocal.SecretAccessKey,
		"AWS_PROFILE=",
		"NO_COLOR=1",
	)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		return fmt.Errorf("zl %s: %w", strings.Join(args, " "), err)
	}
	fmt.Fprintf(d.out, "\n$ zl %s\n", strings.Join(args, " "))
	for _, text := range []string{stdout.String(), stderr.String()} {
		if text = strings.TrimRight(text, "\n"); text != "" {
			fmt.Fprintln(d.out, text)
		}
	}
	if code != 0 {
		fmt.Fprintf(d.out, "(exit %d)\n", code)
	}
	return nil
}
