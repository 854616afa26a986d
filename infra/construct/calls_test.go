package construct_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/cfn"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/aggregator"
	"github.com/zae-limiter/zae-limiter-go/core/config"
	"github.com/zae-limiter/zae-limiter-go/core/control"
	"github.com/zae-limiter/zae-limiter-go/core/limit"
	"github.com/zae-limiter/zae-limiter-go/core/limiter"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
	"github.com/zae-limiter/zae-limiter-go/core/streampoll"
	"github.com/zae-limiter/zae-limiter-go/core/usage"
	aggregatorhandler "github.com/zae-limiter/zae-limiter-go/functions/aggregator/handler"
	"github.com/zae-limiter/zae-limiter-go/functions/provisioner/customresource"
	"github.com/zae-limiter/zae-limiter-go/functions/provisioner/handler"
	"github.com/zae-limiter/zae-limiter-go/internal/clock"
	"github.com/zae-limiter/zae-limiter-go/internal/ddbtest"
	"github.com/zae-limiter/zae-limiter-go/internal/iamcalls"
)

// observed is what the real code did on DynamoDB Local, each principal
// through its own recording client: the platform's operator (namespace
// registration, the table's client_min_version), a tenant's operator, a
// tenant's reader and a tenant's service (the acquire path), all in the
// tenant's namespace ns, the aggregator and the provisioner; and the
// aggregator's EMF documents.
type observed struct {
	platform, operator, reader, limiter, aggregator, provisioner *iamcalls.Recorder

	ns  string // the tenant namespace's id
	emf [][]byte
}

// runTheCode drives the acquire path through every branch core/limiter has
// (open by name, create, fast path, rejection, refill pass, lease adjust,
// commit and rollback, cascade cold and warm with a parent refund, bypass,
// disabled, soft overdraft, a WithLimits override, a wcu doubling and a
// second process creating the new shard), then the aggregator with its
// maintainer over the table's real stream, then operator calls the setup
// did not make (audit reads, reset, top-up, entity deletion, listing) and
// a tenant reader's calls (configs, entities, audit trail, live buckets,
// top consumers, snapshots and summaries). Each principal goes through its
// own recording client; the platform registers the namespace and raises
// client_min_version to what the tenant's soft limits and cascade need,
// which a tenant's role cannot (docs/design.md §13). It fails the test if
// a branch it means to reach is not reached.
func runTheCode(t *testing.T) observed {
	t.Helper()
	ctx := context.Background()
	tbl := ddbtest.NewTable(t, ddbtest.WithStream())
	out := observed{platform: iamcalls.New(), operator: iamcalls.New(), reader: iamcalls.New(),
		limiter: iamcalls.New(), aggregator: iamcalls.New(), provisioner: iamcalls.New()}
	quiet := control.Options{Logger: slog.New(slog.DiscardHandler)}
	platform := control.New(dynamodb.New(tbl.DB.Options(), out.platform.Option()), tbl.Name, quiet)
	ns, err := platform.RegisterNamespace(ctx, "iam", "iam")
	if err != nil {
		t.Fatal(err)
	}
	out.ns = ns
	check := func(_ any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, v := range []string{config.SoftBypassVersion, config.CascadePolicyVersion, config.QuotaTopUpVersion} {
		check(nil, platform.Store().Ratchet(ctx, v))
	}
	ops := control.New(dynamodb.New(tbl.DB.Options(), out.operator.Option()), tbl.Name, quiet)
	if id, err := ops.Store().ResolveNamespace(ctx, "iam"); err != nil || id != ns {
		t.Fatalf("the tenant operator resolves its namespace: %q, %v", id, err)
	}
	check(ops.SetResourceLimits(ctx, ns, "api", []limit.Limit{limit.PerMinute("rpm", 10), limit.PerMinute("tpm", 1000)}, "test"))
	check(ops.SetResourceLimits(ctx, ns, "busy", []limit.Limit{limit.PerMinute("rpm", 1000)}, "test"))
	check(ops.SetResourceLimits(ctx, ns, "chat", []limit.Limit{limit.PerMinute("rpm", 100), limit.PerMinute("tpm", 10).AsSoft()}, "test"))
	check(ops.CreateEntity(ctx, ns, "org", config.EntityOptions{}, "test"))
	check(ops.CreateEntity(ctx, ns, "key", config.EntityOptions{ParentID: "org", Cascade: true}, "test"))
	check(ops.SetEntityLimits(ctx, ns, "org", "api", []limit.Limit{limit.PerMinute("rpm", 3)}, "test"))
	check(ops.SetEntityLimits(ctx, ns, "key", "api", []limit.Limit{limit.PerMinute("rpm", 100)}, "test"))
	check(ops.SetAccess(ctx, ns, "vip", "api", config.AccessBypass, "test"))
	check(ops.SetAccess(ctx, ns, "banned", "api", config.AccessDisabled, "test"))

	db := dynamodb.New(tbl.DB.Options(), out.limiter.Option())
	clk := clock.NewManual(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))
	lim, err := limiter.Open(ctx, db, tbl.Name, "iam", limiter.Options{Clock: clk.Now, Rand: func(int) int { return 0 }, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	acquire := func(l *limiter.Limiter, entity, resource string, c limiter.Consume, opts ...limiter.AcquireOption) (*limiter.Lease, error) {
		t.Helper()
		lease, err := l.Acquire(ctx, entity, resource, c, opts...)
		if err != nil && !limiter.IsRateLimitError(err) && !errors.As(err, new(*limiter.ResourceDisabled)) {
			t.Fatalf("acquire %s/%s: %v", entity, resource, err)
		}
		return lease, err
	}
	commit := func(l *limiter.Lease) {
		t.Helper()
		if err := l.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}

	// Create, fast path, rejection; a refill pass once the minute is over.
	rejected := false
	for range 12 {
		lease, err := acquire(lim, "u", "api", limiter.Consume{"rpm": 1, "tpm": 50})
		if err != nil {
			rejected = true
			continue
		}
		commit(lease)
	}
	clk.Advance(61 * time.Second)
	lease, err := acquire(lim, "u", "api", limiter.Consume{"rpm": 1, "tpm": 100})
	if err != nil || !rejected {
		t.Fatalf("after the refill: %v; rejected before: %v", err, rejected)
	}
	// A lease adjusted and committed, one rolled back.
	if err := lease.Adjust("tpm", 50); err != nil {
		t.Fatal(err)
	}
	commit(lease)
	if lease, err = acquire(lim, "u", "api", limiter.Consume{"rpm": 1, "tpm": 10}); err == nil {
		if err := lease.Rollback(ctx); err != nil {
			t.Fatal(err)
		}
	}

	// Cascade: cold (one transaction), warm (parallel fast paths), the
	// parent exhausted (the child refunded).
	cascaded, parentShort := false, false
	for range 5 {
		lease, err := acquire(lim, "key", "api", limiter.Consume{"rpm": 1})
		if err != nil {
			parentShort = true
			continue
		}
		cascaded = cascaded || lease.Parent() == "org"
		commit(lease)
	}
	if !cascaded || !parentShort {
		t.Fatalf("cascade reached: %v, parent short: %v", cascaded, parentShort)
	}

	// Bypass, disabled, a soft overdraft, an override.
	if lease, err := acquire(lim, "vip", "api", limiter.Consume{"rpm": 1}); err != nil || !lease.Bypassed() {
		t.Fatalf("bypass: %v", err)
	}
	if _, err := acquire(lim, "banned", "api", limiter.Consume{"rpm": 1}); !errors.As(err, new(*limiter.ResourceDisabled)) {
		t.Fatalf("disabled: %v", err)
	}
	if lease, err := acquire(lim, "s", "chat", limiter.Consume{"rpm": 1, "tpm": 50}); err != nil || len(lease.Overdrawn()) == 0 {
		t.Fatalf("soft overdraft: %v", err)
	}
	if _, err := acquire(lim, "o", "adhoc", limiter.Consume{"rpm": 1}, limiter.WithLimits(limit.PerMinute("rpm", 3))); err != nil {
		t.Fatal(err)
	}

	// A wcu doubling: shard 0 runs out of write units, the next acquire
	// doubles shard_count; a second process draws a new shard and creates it.
	check(acquire(lim, "hot", "busy", limiter.Consume{"rpm": 1}))
	_, err = tbl.DB.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(tbl.Name), Key: schema.BucketKey(ns, "hot", "busy", 0).AttributeValues(),
		UpdateExpression:          aws.String("SET b_wcu_tk = :z"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":z": &types.AttributeValueMemberN{Value: "500"}},
	})
	check(nil, err)
	check(acquire(lim, "hot", "busy", limiter.Consume{"rpm": 1}))
	other, err := limiter.New(db, tbl.Name, ns, limiter.Options{Clock: clk.Now, Rand: func(n int) int { return n - 1 }})
	check(nil, err)
	// The other process meets the short shard 0 too (doubling it again),
	// then draws its last shard and creates it.
	check(acquire(other, "hot", "busy", limiter.Consume{"rpm": 1}))
	if lease, err := acquire(other, "hot", "busy", limiter.Consume{"rpm": 1}); err != nil || lease.Shard() == 0 {
		t.Fatalf("no new shard: %v", err)
	}

	// The aggregator and its maintainer, on everything the stream holds.
	adb := dynamodb.New(tbl.DB.Options(), out.aggregator.Option())
	s, err := aggregatorhandler.SettingsFromEnv(func(k string) string { return map[string]string{"TABLE_NAME": tbl.Name}[k] })
	check(nil, err)
	var emf bytes.Buffer // one document a line; the poller invokes one batch at a time
	s.Clock, s.Metrics = clk.Now, aggregator.WriterSink(&emf)
	aggHandler, err := aggregatorhandler.New(adb, s, slog.New(slog.DiscardHandler))
	check(nil, err)
	poller, err := streampoll.New(tbl.Streams, tbl.StreamARN, streampoll.Options{
		Handler: aggHandler.Handle, StartingPosition: streampoll.TrimHorizon, MaxRetries: 3, BisectOnError: true,
	})
	check(nil, err)
	st, err := poller.DrainOnce(ctx)
	check(nil, err)
	if st.Records == 0 {
		t.Fatal("the aggregator saw no record")
	}
	out.emf = bytes.Split(bytes.TrimSpace(emf.Bytes()), []byte("\n"))

	check(ops.AuditEvents(ctx, ns, "org"))
	check(ops.Reset(ctx, ns, "u", "api", nil, control.OperationOptions{Principal: "test"}))
	check(ops.TopUp(ctx, ns, "u", "api", map[string]int64{"rpm": 1}, control.OperationOptions{Principal: "test"}))
	check(ops.CreateEntity(ctx, ns, "gone", config.EntityOptions{}, "test"))
	check(nil, ops.DeleteEntity(ctx, ns, "gone", "test"))
	if ents, _, err := ops.Store().ListEntities(ctx, ns, "", 10); err != nil || len(ents) == 0 {
		t.Fatalf("list entities: %v, %v", ents, err)
	}
	check(ops.SyncLimits(ctx, ns, control.Scope{Resource: "api"}))
	runTheReader(t, dynamodb.New(tbl.DB.Options(), out.reader.Option()), tbl.Name, clk.Now())

	runTheProvisioner(t, dynamodb.New(tbl.DB.Options(), out.provisioner.Option()), tbl.Name)
	return out
}

// runTheReader makes the calls of a tenant's read-only principal in the
// namespace "iam" runTheCode filled: its name resolved, configs, entities
// and their children, the audit trail, a live bucket, top consumers,
// snapshots of an entity and of a resource, a summary.
func runTheReader(t *testing.T, db *dynamodb.Client, table string, now time.Time) {
	t.Helper()
	ctx := context.Background()
	check := func(_ any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	rd := control.New(db, table, control.Options{Logger: slog.New(slog.DiscardHandler)})
	st := rd.Store()
	ns, err := st.ResolveNamespace(ctx, "iam")
	check(nil, err)
	check(st.NamespaceName(ctx, ns))
	check(st.GetEntity(ctx, ns, "key"))
	check(st.Children(ctx, ns, "org"))
	check(st.EntityConfigs(ctx, ns, "key"))
	check(st.GetResourceConfig(ctx, ns, "api"))
	check(st.ListResources(ctx, ns))
	if _, _, err := st.ListEntities(ctx, ns, "", 10); err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.GetSystemLimits(ctx, ns); err != nil {
		t.Fatal(err)
	}
	check(rd.AuditEvents(ctx, ns, "org"))
	r, err := usage.New(db, table, ns, usage.Options{Clock: func() time.Time { return now }})
	check(nil, err)
	check(r.Bucket(ctx, "u", "api"))
	check(r.Top(ctx, "api", "rpm", 5))
	// Snapshot windows come from the stream records' times, the machine's
	// clock, not the test's: select every window there can be.
	from, to := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC)
	n := 0
	for _, sel := range []usage.Selection{usage.ForEntity("u", "api", usage.Hourly, from, to), usage.ForResource("api", usage.Hourly, from, to)} {
		for _, err := range r.Snapshots(ctx, sel) {
			check(nil, err)
			n++
		}
		check(r.Summary(ctx, sel))
	}
	if n == 0 {
		t.Fatal("the reader found no snapshot: the run no longer covers the snapshot reads")
	}
}

// runTheProvisioner drives the provisioner function's handler as
// CloudFormation would, on the buckets runTheCode left: the version stamp,
// then a limits resource created (resource access, cascade, soft limits,
// an entity carve-out, an entity `_default_` with limits: every fan-out and
// the parameter sync reach existing buckets), updated (levels removed),
// updated again unchanged, and deleted.
func runTheProvisioner(t *testing.T, db *dynamodb.Client, table string) {
	t.Helper()
	ctx := context.Background()
	var mu sync.Mutex
	var answers []cfn.Response
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var resp cfn.Response
		_ = json.NewDecoder(r.Body).Decode(&resp)
		mu.Lock()
		answers = append(answers, resp)
		mu.Unlock()
	}))
	defer srv.Close()
	quiet := slog.New(slog.DiscardHandler)
	h := handler.New(db, handler.Settings{Table: table, Respond: customresource.Options{Logger: quiet}}, quiet)
	physical := ""
	send := func(kind cfn.RequestType, resourceType string, props map[string]any) {
		t.Helper()
		raw, err := json.Marshal(cfn.Event{RequestType: kind, RequestID: "r", ResponseURL: srv.URL, ResourceType: resourceType,
			LogicalResourceID: "L", PhysicalResourceID: physical, StackID: "arn:aws:cloudformation:us-east-1:123456789012:stack/s/1",
			ResourceProperties: props})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := h.Invoke(ctx, raw); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		last := answers[len(answers)-1]
		mu.Unlock()
		if last.Status != cfn.StatusSuccess || last.Data["ErrorCount"] != nil && last.Data["ErrorCount"] != "0" {
			t.Fatalf("%s %s: %+v", kind, resourceType, last)
		}
		physical = last.PhysicalResourceID
	}
	send(cfn.RequestCreate, "Custom::ZaeLimiterVersion", map[string]any{"TableName": table, "LambdaVersion": config.BuildVersion})
	physical = ""
	manifest := map[string]any{
		"Namespace": "iam",
		"System":    map[string]any{"OnUnavailable": "allow", "Limits": map[string]any{"rpm": map[string]any{"Capacity": "1000"}}},
		"Resources": map[string]any{
			"api":  map[string]any{"Cascade": "true", "Limits": map[string]any{"rpm": map[string]any{"Capacity": "20"}, "tpm": map[string]any{"Capacity": "2000", "Soft": "true"}}},
			"chat": map[string]any{"Disabled": "true"},
		},
		"Entities": map[string]any{
			"u":   map[string]any{"Resources": map[string]any{"api": map[string]any{"Disabled": "false"}}},
			"key": map[string]any{"Resources": map[string]any{"_default_": map[string]any{"Disabled": "bypass", "Limits": map[string]any{"rpm": map[string]any{"Capacity": "5"}}}}},
		},
	}
	send(cfn.RequestCreate, "Custom::ZaeLimiterLimits", manifest)
	delete(manifest["Resources"].(map[string]any), "chat")
	manifest["Entities"] = map[string]any{}
	send(cfn.RequestUpdate, "Custom::ZaeLimiterLimits", manifest)
	send(cfn.RequestUpdate, "Custom::ZaeLimiterLimits", manifest)
	send(cfn.RequestDelete, "Custom::ZaeLimiterLimits", manifest)
}

// emfTotals sums the aggregator's metrics over its documents.
func emfTotals(t *testing.T, docs [][]byte) map[string]float64 {
	t.Helper()
	totals := map[string]float64{}
	for _, d := range docs {
		var doc struct {
			AWS struct {
				CloudWatchMetrics []struct {
					Namespace string
					Metrics   []struct{ Name string }
				}
			} `json:"_aws"`
		}
		var values map[string]any
		if err := json.Unmarshal(d, &doc); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(d, &values); err != nil {
			t.Fatal(err)
		}
		for _, dir := range doc.AWS.CloudWatchMetrics {
			if dir.Namespace != aggregator.MetricsNamespace {
				t.Fatalf("EMF namespace %q", dir.Namespace)
			}
			for _, m := range dir.Metrics {
				v, _ := values[m.Name].(float64)
				totals[m.Name] += v
			}
		}
	}
	return totals
}
