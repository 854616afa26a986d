package main

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/aggregator"
	"github.com/zae-limiter/zae-limiter-go/core/control"
	"github.com/zae-limiter/zae-limiter-go/core/limit"
	"github.com/zae-limiter/zae-limiter-go/core/limiter"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
	"github.com/zae-limiter/zae-limiter-go/functions/aggregator/handler"
	"github.com/zae-limiter/zae-limiter-go/internal/ddblocal"
	"github.com/zae-limiter/zae-limiter-go/internal/ddbtest"
)

func TestMain(m *testing.M) { ddbtest.Main(m) }

// TestFollowTailsTheStream runs -follow against a real table: acquires made
// after it starts turn into snapshots, and it stops cleanly when its
// context ends.
func TestFollowTailsTheStream(t *testing.T) {
	tbl := ddbtest.NewTable(t, ddbtest.WithStream())
	for k, v := range map[string]string{
		"TABLE_NAME": tbl.Name, "AWS_ENDPOINT_URL_DYNAMODB": tbl.Endpoint, "AWS_REGION": ddblocal.Region,
		"AWS_ACCESS_KEY_ID": ddblocal.AccessKeyID, "AWS_SECRET_ACCESS_KEY": ddblocal.SecretAccessKey,
	} {
		t.Setenv(k, v)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	awsCfg, err := awsconfig.LoadDefaultConfig(ctx)
	if err != nil {
		t.Fatal(err)
	}
	db := dynamodb.NewFromConfig(awsCfg, func(o *dynamodb.Options) { o.DisableValidateResponseChecksum = true })
	log := slog.New(slog.NewJSONHandler(&bytes.Buffer{}, nil))
	h, err := handler.New(db, handler.Settings{Config: aggregator.Config{TableName: tbl.Name}}, log)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- followStream(ctx, awsCfg, db, h, tbl.Name, true, log) }()

	lim, err := limiter.New(tbl.DB, tbl.Name, "fOlLoWnAmEs", limiter.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ops := control.New(tbl.DB, tbl.Name, control.Options{Caches: []control.Cache{lim}})
	if _, err := ops.SetResourceLimits(ctx, "fOlLoWnAmEs", "api", []limit.Limit{limit.PerMinute("rpm", 100)}, "test"); err != nil {
		t.Fatal(err)
	}
	// The poller starts at LATEST once it has described the stream; keep
	// acquiring until the snapshot shows up, within a bound.
	deadline := time.Now().Add(30 * time.Second)
	for usageCount(t, tbl) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no snapshot from -follow within 30 s")
		}
		if _, err := lim.Acquire(ctx, "u", "api", limiter.Consume{"rpm": 1}); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-done:
			t.Fatalf("follow stopped early: %v", err)
		case <-time.After(100 * time.Millisecond):
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("follow after cancel: %v", err)
	}
}

// TestWireValidatesChecksumsUnderLambda: the Lambda path wires with
// response-checksum validation on even when AWS_ENDPOINT_URL_DYNAMODB is set
// (under Lambda that is a legitimate VPC or FIPS endpoint); only the local
// modes, against an emulator, turn it off.
func TestWireValidatesChecksumsUnderLambda(t *testing.T) {
	t.Setenv("TABLE_NAME", "t")
	t.Setenv("AWS_REGION", "eu-west-1")
	t.Setenv("AWS_ENDPOINT_URL_DYNAMODB", "https://vpce-123.dynamodb.eu-west-1.vpce.amazonaws.com")
	log := slog.New(slog.NewJSONHandler(&bytes.Buffer{}, nil))
	_, w, err := wire(context.Background(), log, false)
	if err != nil {
		t.Fatal(err)
	}
	if w.db.Options().DisableValidateResponseChecksum {
		t.Fatal("the Lambda wiring turned response-checksum validation off")
	}
	// The snapshot writes go straight to the same endpoint.
	if ok, why := w.direct.Direct(); !ok || w.direct.Endpoint() != "https://vpce-123.dynamodb.eu-west-1.vpce.amazonaws.com/" {
		t.Fatalf("the Lambda wiring sends snapshot writes to %q (direct %v: %s)", w.direct.Endpoint(), ok, why)
	}
	_, w, err = wire(context.Background(), log, true)
	if err != nil {
		t.Fatal(err)
	}
	if !w.db.Options().DisableValidateResponseChecksum {
		t.Fatal("the emulator wiring kept validation on (DynamoDB Local sends no checksum on 4xx)")
	}
}

// TestLambdaBuildHasNoLocalModes: the deployed build (lambda.norpc, as
// scripts/build-lambdas.sh builds it) refuses -event outside Lambda and
// links neither the stream poller nor the emulator tooling.
func TestLambdaBuildHasNoLocalModes(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("no go command on PATH: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "bootstrap")
	build := exec.Command(goBin, "build", "-tags", "lambda.norpc", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	list := exec.Command(goBin, "list", "-tags", "lambda.norpc", "-deps", ".")
	deps, err := list.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, pkg := range []string{"core/streampoll", "internal/ddblocal"} {
		if strings.Contains(string(deps), "zae-limiter-go/"+pkg+"\n") {
			t.Errorf("the Lambda build links %s", pkg)
		}
	}
	cmd := exec.Command(bin, "-event", filepath.Join("..", "..", "events", "stream-insert.json"))
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err = cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 2 || !strings.Contains(stderr.String(), "serves Lambda only") {
		t.Fatalf("the Lambda build outside Lambda: %v\n%s", err, stderr.String())
	}
}

// usageCount is the number of usage snapshot items in tbl.
func usageCount(t *testing.T, tbl *ddbtest.Table) int32 {
	t.Helper()
	out, err := tbl.DB.Scan(context.Background(), &dynamodb.ScanInput{
		TableName: aws.String(tbl.Name), Select: types.SelectCount,
		FilterExpression:          aws.String("begins_with(SK, :usage)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":usage": schema.Str("#" + schema.PrefixUsage)},
	})
	if err != nil {
		t.Fatal(err)
	}
	return out.Count
}
