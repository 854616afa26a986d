package main

import (
	"bufio"
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/rogpeppe/go-internal/testscript"

	"github.com/zae-limiter/zae-limiter-go/core/config"
	"github.com/zae-limiter/zae-limiter-go/core/limiter"
	"github.com/zae-limiter/zae-limiter-go/internal/ddblocal"
	"github.com/zae-limiter/zae-limiter-go/internal/usageseed"
)

// cmdSeedUsage makes real usage snapshots in namespace NAME of the script's
// table from the traffic in FILE: `seed-usage tenant-alpha traffic.txt`.
// Each line of FILE is an acquire, `INSTANT ENTITY RESOURCE LIMIT=N...`
// (INSTANT in RFC 3339; # starts a comment); consecutive lines of one
// instant are made at that instant of the limiter's clock, then the
// aggregator files the stream's records under it (internal/usageseed). Run
// it once per script: its poller reads the stream from the start.
func cmdSeedUsage(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: seed-usage NAMESPACE FILE")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	endpoint, table := ts.Getenv("AWS_ENDPOINT_URL_DYNAMODB"), ts.Getenv("ZAEL_TABLE")
	db := ddblocal.DynamoDB(endpoint)
	ns, err := config.NewStore(db, table).ResolveNamespace(ctx, args[0])
	if err != nil {
		ts.Fatalf("seed-usage: %v", err)
	}
	desc, err := db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
	if err != nil {
		ts.Fatalf("seed-usage: %v", err)
	}
	steps, err := parseTraffic(ts.ReadFile(args[1]))
	if err != nil {
		ts.Fatalf("seed-usage %s: %v", args[1], err)
	}
	if len(steps) == 0 {
		ts.Fatalf("seed-usage %s: no traffic", args[1])
	}
	tr, err := usageseed.New(db, ddblocal.Streams(endpoint), table, aws.ToString(desc.Table.LatestStreamArn), ns, steps[0].at, usageseed.Options{})
	if err != nil {
		ts.Fatalf("seed-usage: %v", err)
	}
	for _, s := range steps {
		if err := tr.At(ctx, s.at, s.acquires...); err != nil {
			ts.Fatalf("seed-usage: %v", err)
		}
	}
}

// trafficStep is the acquires of one instant.
type trafficStep struct {
	at       time.Time
	acquires []usageseed.Acquire
}

// parseTraffic reads seed-usage's traffic file.
func parseTraffic(text string) ([]trafficStep, error) {
	var steps []trafficStep
	sc := bufio.NewScanner(strings.NewReader(text))
	for n := 1; sc.Scan(); n++ {
		line, _, _ := strings.Cut(sc.Text(), "#")
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if len(f) < 4 {
			return nil, fmt.Errorf("line %d: want INSTANT ENTITY RESOURCE LIMIT=N...", n)
		}
		at, err := time.Parse(time.RFC3339, f[0])
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		acq := usageseed.Acquire{Entity: f[1], Resource: f[2], Consume: limiter.Consume{}}
		for _, kv := range f[3:] {
			name, amount, ok := strings.Cut(kv, "=")
			v, err := strconv.ParseInt(amount, 10, 64)
			if !ok || err != nil {
				return nil, fmt.Errorf("line %d: %q is not LIMIT=N", n, kv)
			}
			acq.Consume[name] = v
		}
		if len(steps) == 0 || !steps[len(steps)-1].at.Equal(at) {
			steps = append(steps, trafficStep{at: at})
		}
		steps[len(steps)-1].acquires = append(steps[len(steps)-1].acquires, acq)
	}
	return steps, sc.Err()
}
