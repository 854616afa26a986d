package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/aggregator"
	"github.com/zae-limiter/zae-limiter-go/core/aggregator/maintenance"
	"github.com/zae-limiter/zae-limiter-go/core/control"
	"github.com/zae-limiter/zae-limiter-go/core/limit"
	"github.com/zae-limiter/zae-limiter-go/core/limiter"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
	"github.com/zae-limiter/zae-limiter-go/internal/ddblocal"
	"github.com/zae-limiter/zae-limiter-go/internal/ddbtest"
)

func TestMain(m *testing.M) { ddbtest.Main(m) }

// TestSampleEvents runs every file in events/ through the -event mode on
// DynamoDB Local: each is a valid Lambda event, nothing is reported (the
// poison record is skipped), and the samples that carry consumption write
// their snapshots.
func TestSampleEvents(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "events", "stream-*.json"))
	if err != nil || len(files) < 6 {
		t.Fatalf("sample events: %v %v", files, err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			tbl := ddbtest.NewTable(t)
			cfg := aggregator.Config{TableName: tbl.Name}
			if filepath.Base(f) == "stream-midnight-first.json" {
				cfg.Windows = []aggregator.Window{aggregator.Hourly, aggregator.Daily, aggregator.Monthly}
			}
			log := slog.New(slog.NewJSONHandler(&bytes.Buffer{}, nil))
			agg, err := aggregator.New(tbl.DB, cfg, aggregator.Options{
				Logger: log, Maintainer: maintenance.New(tbl.DB, tbl.Name, maintenance.Options{Logger: log}),
			})
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			if err := processFile(context.Background(), agg, f, &out); err != nil {
				t.Fatal(err)
			}
			var resp events.DynamoDBEventResponse
			if err := json.Unmarshal(out.Bytes(), &resp); err != nil {
				t.Fatalf("response %q: %v", out.String(), err)
			}
			if len(resp.BatchItemFailures) != 0 {
				t.Fatalf("failures reported: %+v", resp.BatchItemFailures)
			}
			snaps := scanUsage(t, tbl)
			switch filepath.Base(f) {
			case "stream-remove.json":
				if len(snaps) != 0 {
					t.Fatalf("a REMOVE wrote %d snapshots", len(snaps))
				}
			case "stream-midnight-first.json":
				// One token at 23:59:30 on 30 November, one at 00:00:10,
				// 00:59:50 and 01:00:05 on 1 December: every window has its
				// own item with its own count.
				got := map[string]string{}
				for _, it := range snaps {
					sk := it["SK"].(*types.AttributeValueMemberS).Value
					got[strings.TrimPrefix(sk, "#USAGE#gpt-4#")] = it["window"].(*types.AttributeValueMemberS).Value + " " +
						it["rpm"].(*types.AttributeValueMemberN).Value
				}
				want := map[string]string{
					"2026-11-30T23:00:00Z": "hourly 1", "2026-11-30T00:00:00Z": "daily 1", "2026-11-01T00:00:00Z": "monthly 1",
					"2026-12-01T00:00:00Z#hourly": "hourly 2", "2026-12-01T01:00:00Z": "hourly 1",
					"2026-12-01T00:00:00Z#daily": "daily 3", "2026-12-01T00:00:00Z": "monthly 3",
				}
				if !maps.Equal(got, want) {
					t.Fatalf("snapshots %v, want %v", got, want)
				}
			case "stream-doubling.json":
				if len(snaps) == 0 {
					t.Fatal("no snapshots")
				}
				clone := getItem(t, tbl, schema.BucketKey("a1B2c3D4e5F", "hot-key", "gpt-4", 1))
				if clone == nil {
					t.Fatal("the doubling did not clone shard 0 into shard 1")
				}
			default:
				if len(snaps) == 0 {
					t.Fatal("no snapshots")
				}
			}
		})
	}
}

func TestProcessFileRejectsBadInput(t *testing.T) {
	tbl := ddbtest.NewTable(t)
	agg, err := aggregator.New(tbl.DB, aggregator.Config{TableName: tbl.Name}, aggregator.Options{})
	if err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(bad, []byte(`{"Records": [`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := processFile(context.Background(), agg, bad, &bytes.Buffer{}); err == nil {
		t.Fatal("a truncated event file must be an error")
	}
	if err := processFile(context.Background(), agg, filepath.Join(t.TempDir(), "missing.json"), &bytes.Buffer{}); err == nil {
		t.Fatal("a missing event file must be an error")
	}
}

func scanUsage(t *testing.T, tbl *ddbtest.Table) []map[string]types.AttributeValue {
	t.Helper()
	out, err := tbl.DB.Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String(tbl.Name)})
	if err != nil {
		t.Fatal(err)
	}
	var snaps []map[string]types.AttributeValue
	for _, it := range out.Items {
		if sk, ok := it["SK"].(*types.AttributeValueMemberS); ok && len(sk.Value) > 7 && sk.Value[:7] == "#USAGE#" {
			snaps = append(snaps, it)
		}
	}
	return snaps
}

func getItem(t *testing.T, tbl *ddbtest.Table, k schema.Key) map[string]types.AttributeValue {
	t.Helper()
	out, err := tbl.DB.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(tbl.Name), Key: k.AttributeValues(), ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	return out.Item
}

// TestFollowTailsTheStream runs -follow against a real table: acquires made
// after it starts turn into snapshots, and it stops cleanly when its
// context ends.
func TestFollowTailsTheStream(t *testing.T) {
	tbl := ddbtest.NewTable(t)
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
	agg, err := aggregator.New(db, aggregator.Config{TableName: tbl.Name}, aggregator.Options{Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- followStream(ctx, awsCfg, db, agg, tbl.Name, true, log) }()

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
	for len(scanUsage(t, tbl)) == 0 {
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
