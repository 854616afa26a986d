// Package scale_test applies manifests of the sizes DynamoDB can hold, on a
// DynamoDB Local of its own: the largest test of the provisioner, apart
// from the package's other tests so that it neither waits for nor slows
// them (docs/design.md §12).
package scale_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/config"
	"github.com/zae-limiter/zae-limiter-go/core/internal/capability"
	"github.com/zae-limiter/zae-limiter-go/core/manifest"
	"github.com/zae-limiter/zae-limiter-go/core/provision"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
	"github.com/zae-limiter/zae-limiter-go/internal/ddbtest"
	"github.com/zae-limiter/zae-limiter-go/internal/faultproxy"
)

func TestMain(m *testing.M) { ddbtest.Main(m, ddbtest.SustainedLoad()) }

// Any manifest whose items DynamoDB can hold applies, and its Delete
// removes every item it wrote: 1,700 entities with 250-character ids (a
// single state record of them would pass DynamoDB's 400 KB item limit),
// and 10,000 entities.
func TestLargeManifests(t *testing.T) {
	for _, tc := range []struct {
		entities, idLen int
	}{{1700, 250}, {10000, 10}} {
		t.Run(fmt.Sprintf("%dx%d", tc.entities, tc.idLen), func(t *testing.T) {
			ctx := context.Background()
			tbl := ddbtest.NewTable(t)
			ns, _, err := config.NewStore(tbl.DB, tbl.Name).Writer(capability.ConfigWrite{}).RegisterNamespace(ctx, "tenant-alpha")
			if err != nil {
				t.Fatal(err)
			}
			clk := func() time.Time { return time.Date(2028, 2, 29, 0, 30, 0, 0, time.UTC) }
			prov := provision.New(tbl.DB, tbl.Name, provision.Options{Clock: clk, Workers: 16,
				Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			req := provision.Request{Owner: provision.Owner{Stack: "stack-a", Name: "Limits"},
				PhysicalID: "T/NS/limits/stack-a/Limits/000000000000", Principal: "cfn:stack-a"}
			var doc strings.Builder
			doc.WriteString("namespace: tenant-alpha\nentities:\n")
			for i := range tc.entities {
				id := fmt.Sprintf("%0*d", tc.idLen, i)
				fmt.Fprintf(&doc, "  k%s: {resources: {gpt-4: {limits: {rpm: {capacity: 10}}}}}\n", id[1:])
			}
			m, err := manifest.Parse([]byte(doc.String()))
			if err != nil {
				t.Fatal(err)
			}
			res, err := prov.Apply(ctx, ns, m, req)
			if err != nil || res.Created != tc.entities || len(res.Errors) > 0 {
				t.Fatalf("apply: %v %+v", err, res)
			}
			if configs, claims, owners := count(t, tbl, ns); configs != tc.entities || claims != tc.entities || owners != 1 {
				t.Fatalf("after the apply: %d configs, %d claims, %d owner records", configs, claims, owners)
			}
			res, err = prov.Release(ctx, ns, req)
			if err != nil || res.Deleted != tc.entities || len(res.Errors) > 0 {
				t.Fatalf("release: %v %+v", err, res)
			}
			if configs, claims, owners := count(t, tbl, ns); configs+claims+owners != 0 {
				t.Fatalf("after the release: %d configs, %d claims, %d owner records", configs, claims, owners)
			}
			reg, err := tbl.DB.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(tbl.Name),
				Key: schema.EntityConfigRegistryKey(ns).AttributeValues(), ConsistentRead: aws.Bool(true)})
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := reg.Item["gpt-4"]; ok {
				t.Fatalf("the registry still counts gpt-4: %v", reg.Item)
			}
		})
	}
}

// count counts namespace ns's entity configs, claims and owner records
// (GSI4: every item of a namespace is there).
func count(t *testing.T, tbl *ddbtest.Table, ns string) (configs, claims, owners int) {
	t.Helper()
	in := &dynamodb.QueryInput{
		TableName: aws.String(tbl.Name), IndexName: aws.String(schema.GSI4),
		KeyConditionExpression:    aws.String("#0 = :0"),
		ExpressionAttributeNames:  map[string]string{"#0": schema.AttrGSI4PK},
		ExpressionAttributeValues: map[string]types.AttributeValue{":0": schema.Str(ns)},
	}
	for {
		page, err := tbl.DB.Query(context.Background(), in)
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range page.Items {
			sk := it["SK"].(*types.AttributeValueMemberS).Value
			switch {
			case strings.HasPrefix(sk, schema.SKConfigPrefix):
				configs++
			case strings.HasPrefix(sk, schema.SKClaimPrefix):
				claims++
			case strings.HasPrefix(sk, schema.SKOwnerPrefix):
				owners++
			}
		}
		if len(page.LastEvaluatedKey) == 0 {
			return
		}
		in.ExclusiveStartKey = page.LastEvaluatedKey
	}
}

// A CloudFormation Create of a 98,923-resource manifest (4 MB) whose
// claims stop after 28,500 (the write cut from there on) is rolled back by
// its Delete, the release of what it wrote: the release's calls grow with
// the claims written, not with the manifest — it reads the claims and
// their targets, deletes the claims, and owes no fan-out for a target it
// leaves as it is (docs/design.md §12). The bound below is about 3 calls a
// hundred claims; the fan-outs the release used to owe every held target
// made it about 6 calls a claim.
func TestRollbackOfAFailedHugeCreate(t *testing.T) {
	const resources, transactions = 98_923, 285 // 100 claims a transaction
	ctx := context.Background()
	tbl := ddbtest.NewTable(t)
	proxy := faultproxy.Start(t, tbl.Endpoint)
	ns, _, err := config.NewStore(tbl.DB, tbl.Name).Writer(capability.ConfigWrite{}).RegisterNamespace(ctx, "tenant-alpha")
	if err != nil {
		t.Fatal(err)
	}
	clk := func() time.Time { return time.Date(2028, 2, 29, 0, 30, 0, 0, time.UTC) }
	db := proxy.DynamoDB(func(o *dynamodb.Options) { o.RetryMaxAttempts = 1 })
	prov := provision.New(db, tbl.Name, provision.Options{Clock: clk, Workers: 16,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	req := provision.Request{Owner: provision.Owner{Stack: "stack-a", Name: "Limits", StackID: "arn:aws:cloudformation:us-east-1:123456789012:stack/stack-a/guid"},
		PhysicalID: "T/NS/limits/stack-a/Limits/000000000000", Principal: "cfn:stack-a"}
	var doc strings.Builder
	doc.WriteString("namespace: tenant-alpha\nresources:\n")
	for i := range resources {
		fmt.Fprintf(&doc, "  r%05d: {limits: {rpm: {capacity: 1}}}\n", i)
	}
	m, err := manifest.Parse([]byte(doc.String()))
	if err != nil {
		t.Fatal(err)
	}
	cut := proxy.Add(faultproxy.Rule{Operation: "TransactWriteItems", After: transactions, Fault: faultproxy.InternalServerError()})
	if _, err := prov.Apply(ctx, ns, m, req); err == nil {
		t.Fatal("the cut Create succeeded")
	}
	proxy.Remove(cut)
	if _, claims, owners := count(t, tbl, ns); claims != 100*transactions || owners != 1 {
		t.Fatalf("the failed Create left %d claims and %d owner records, want %d and 1", claims, owners, 100*transactions)
	}
	// Past the bound every call fails, so a release that would make more
	// fails at once instead of running for an hour.
	const limit = 3*transactions + 50
	proxy.ResetStats()
	over := proxy.Add(faultproxy.Rule{After: limit, Fault: faultproxy.InternalServerError()})
	start := time.Now()
	res, err := prov.Release(ctx, ns, req)
	took := time.Since(start)
	calls := 0
	for _, s := range proxy.Stats() {
		calls += s.Requests
	}
	if proxy.Fired(over) > 0 {
		t.Fatalf("the release needed more than %d calls for %d claims: %v", limit, 100*transactions, err)
	}
	if err != nil || len(res.Errors) > 0 {
		t.Fatalf("the rollback's release: %v %+v", err, res)
	}
	t.Logf("released %d claims in %s with %d calls (%.3f a claim)", 100*transactions, took.Round(time.Millisecond), calls, float64(calls)/(100*transactions))
	if configs, claims, owners := count(t, tbl, ns); configs+claims+owners != 0 {
		t.Fatalf("after the release: %d configs, %d claims, %d owner records", configs, claims, owners)
	}
}
