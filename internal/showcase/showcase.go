// Package showcase is what `make run` runs: it brings up DynamoDB Local (or
// uses the endpoint it is given), creates the limiter table from the schema
// definition and walks through what the product does so far, printing each
// step. Every capability the project adds shows up here.
package showcase

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"

	"github.com/zae-limiter/zae-limiter-go/core/aggregator"
	"github.com/zae-limiter/zae-limiter-go/core/config"
	"github.com/zae-limiter/zae-limiter-go/core/control"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
	"github.com/zae-limiter/zae-limiter-go/core/streamimage"
	"github.com/zae-limiter/zae-limiter-go/core/streampoll"
	"github.com/zae-limiter/zae-limiter-go/internal/ddblocal"
)

// Options configure Run.
type Options struct {
	// Endpoint of a running DynamoDB Local; empty starts one for the run and
	// stops it on return.
	Endpoint string
	// Table to create; empty picks a fresh name.
	Table string
	// Now is the clock (default time.Now).
	Now func() time.Time
	// ZL is the zl binary the command-line step runs; empty builds one
	// from this module with the go command.
	ZL string
}

// demo holds one run's clients and table.
type demo struct {
	out       io.Writer
	endpoint  string
	zl        string
	db        *dynamodb.Client
	streams   *dynamodbstreams.Client
	table     string
	streamARN string
	ns        string
	now       time.Time
}

// Run performs the walk-through, writing a human-readable account to out.
func Run(ctx context.Context, out io.Writer, o Options) error {
	if o.Now == nil {
		o.Now = time.Now
	}
	endpoint := o.Endpoint
	if endpoint == "" {
		srv, err := ddblocal.StartDefault(ctx)
		if err != nil {
			return err
		}
		defer func() {
			_ = srv.Stop()
			fmt.Fprintf(out, "\nDynamoDB Local (pid %d) stopped.\n", srv.PID)
		}()
		endpoint = srv.Endpoint
		fmt.Fprintf(out, "DynamoDB Local started at %s (pid %d, log %s)\n", endpoint, srv.PID, srv.LogFile)
	} else {
		fmt.Fprintf(out, "Using DynamoDB Local at %s\n", endpoint)
	}
	d := &demo{
		out:      out,
		endpoint: endpoint,
		zl:       o.ZL,
		db:       ddblocal.DynamoDB(endpoint),
		streams:  ddblocal.Streams(endpoint),
		table:    o.Table,
		now:      o.Now().UTC(),
	}
	if d.table == "" {
		d.table = fmt.Sprintf("zae-limiter-local-%d", d.now.Unix())
	}
	steps := []struct {
		title string
		run   func(context.Context) error
	}{
		{"Create the table", d.createTable},
		{"Register a namespace", d.registerNamespace},
		{"Write one record of each kind through the key builders", d.writeRecords},
		{"Query the indexes as the limiter uses them", d.queryIndexes},
		{"The stream, delivered as Lambda DynamoDB events", d.stream},
		{"Validation refuses bad input with typed errors", d.validation},
		{"Acquire: limits, the fast and slow paths, a 429, leases", d.acquire},
		{"The aggregator turns that traffic into usage snapshots", d.snapshots},
		{"Operator controls: disable with a carve-out, soft limits, bypass, top-up and reset, audited", d.controls},
		{"Declarative limits: a manifest applied by the provisioner as CloudFormation does", d.provisioner},
		{"HTTP: the middleware's RateLimit fields, then a 429 with problem details", d.httpMiddleware},
		{"The command line: zl reads entities, limits, usage and the audit trail, and writes through the audited door", d.commandLine},
	}
	for i, s := range steps {
		fmt.Fprintf(out, "\n== %d. %s\n", i+1, s.title)
		if err := s.run(ctx); err != nil {
			return fmt.Errorf("%s: %w", s.title, err)
		}
	}
	return nil
}

func (d *demo) createTable(ctx context.Context) error {
	def := schema.Definition()
	desc, err := def.CreateTable(ctx, d.db, d.table, time.Minute)
	if err != nil {
		return err
	}
	d.streamARN = aws.ToString(desc.LatestStreamArn)
	fmt.Fprintf(d.out, "table %s: key PK/SK, TTL on %q, stream %s, billing %s\n",
		d.table, def.TTLAttribute, def.StreamView, def.BillingMode)
	for _, ix := range def.GlobalIndexes {
		fmt.Fprintf(d.out, "  %s  %s/%s  %s\n", ix.Name, ix.PartitionKey, ix.SortKey, ix.Projection)
	}
	for _, ix := range def.LocalIndexes {
		fmt.Fprintf(d.out, "  %s  PK/%s  %s (reserved)\n", ix.Name, ix.SortKey, ix.Projection)
	}
	// The version record, stamped as a deployed stack's version stamp does.
	store := config.NewStore(d.db, d.table, config.WithClock(func() time.Time { return d.now }))
	if err := store.StampVersion(ctx, "make run"); err != nil {
		return err
	}
	rec, _, err := store.ReadVersion(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(d.out, "version record %s %s: schema_version %s, lambda_version %s, client_min_version %s, updated_by %s\n",
		schema.TableSystemPK, schema.SKVersion, rec.SchemaVersion, rec.LambdaVersion, rec.ClientMinVersion, rec.UpdatedBy)
	return nil
}

// registerNamespace registers the namespace through the operator API: R1
// and R2 in one transaction, each under attribute_not_exists(PK) (docs/design.md §2).
func (d *demo) registerNamespace(ctx context.Context) error {
	ops := control.New(d.db, d.table, control.Options{Clock: func() time.Time { return d.now }})
	ns, err := ops.RegisterNamespace(ctx, "demo", "make run")
	if err != nil {
		return err
	}
	d.ns = ns
	fmt.Fprintf(d.out, "namespace %q registered as id %s (R1 %s, R2 %s)\n", "demo", ns,
		schema.NamespaceForwardKey("demo").SK, schema.NamespaceReverseKey(ns).SK)
	return nil
}

// writeRecords writes entities, configs and buckets of a small org: a root
// entity org-acme with two child API keys, limits at system, resource and
// entity level, and bucket shards.
func (d *demo) writeRecords(ctx context.Context) error {
	ns := d.ns
	created := d.now.Format("2006-01-02T15:04:05Z")
	var items []map[string]types.AttributeValue
	add := func(k schema.ItemKeys, attrs map[string]types.AttributeValue) {
		item := k.Item()
		for a, v := range attrs {
			item[a] = v
		}
		items = append(items, item)
	}
	add(schema.EntityMetaItemKeys(ns, "org-acme", ""), map[string]types.AttributeValue{
		schema.AttrEntityID: s("org-acme"), schema.AttrName: s("Acme Corp"), schema.AttrCreatedAt: s(created),
		schema.AttrParentID: &types.AttributeValueMemberNULL{Value: true}, schema.AttrCascade: b(false),
	})
	for _, key := range []string{"key-1", "key-2"} {
		add(schema.EntityMetaItemKeys(ns, key, "org-acme"), map[string]types.AttributeValue{
			schema.AttrEntityID: s(key), schema.AttrName: s(key), schema.AttrCreatedAt: s(created),
			schema.AttrParentID: s("org-acme"), schema.AttrCascade: b(true),
		})
	}
	limit := func(attrs map[string]types.AttributeValue, name string, cp, ra, rp int64) map[string]types.AttributeValue {
		attrs[schema.ConfigAttr(name, schema.LimitCapacity)] = n(cp)
		attrs[schema.ConfigAttr(name, schema.LimitRefillAmount)] = n(ra)
		attrs[schema.ConfigAttr(name, schema.LimitRefillPeriod)] = n(rp)
		return attrs
	}
	add(schema.SystemConfigItemKeys(ns), limit(map[string]types.AttributeValue{
		schema.AttrConfigVersion: n(1), schema.AttrOnUnavailable: s("block"),
	}, "rpm", 60, 60, 60))
	add(schema.ResourceConfigItemKeys(ns, "openai/gpt-4"), limit(map[string]types.AttributeValue{
		schema.AttrConfigVersion: n(1), schema.AttrResource: s("openai/gpt-4"),
	}, "tpm", 100_000, 100_000, 60))
	add(schema.EntityConfigItemKeys(ns, "key-1", "openai/gpt-4"), limit(map[string]types.AttributeValue{
		schema.AttrConfigVersion: n(1), schema.AttrEntityID: s("key-1"), schema.AttrResource: s("openai/gpt-4"),
	}, "tpm", 10_000, 10_000, 60))
	for _, bk := range []struct {
		entity string
		shard  int
	}{{"key-1", 0}, {"key-1", 1}, {"key-2", 0}, {"org-acme", 0}} {
		attrs := map[string]types.AttributeValue{
			schema.AttrEntityID: s(bk.entity), schema.AttrResource: s("openai/gpt-4"),
			schema.AttrRF: n(d.now.UnixMilli()), schema.AttrShardCount: n(2),
		}
		for name, v := range map[string]int64{"tpm": 5_000_000, "wcu": 1_000_000} {
			attrs[schema.BucketAttr(name, schema.LimitTokens)] = n(v)
			attrs[schema.BucketAttr(name, schema.LimitCapacity)] = n(v * 2)
			attrs[schema.BucketAttr(name, schema.LimitRefillAmount)] = n(v * 2)
			attrs[schema.BucketAttr(name, schema.LimitRefillPeriod)] = n(60_000)
			attrs[schema.BucketAttr(name, schema.LimitConsumed)] = n(0)
		}
		add(schema.BucketItemKeys(ns, bk.entity, "openai/gpt-4", bk.shard), attrs)
	}
	add(schema.UsageItemKeys(ns, "key-1", "openai/gpt-4", d.hourKey()), map[string]types.AttributeValue{
		schema.AttrEntityID: s("key-1"), schema.AttrResource: s("openai/gpt-4"), schema.AttrWindow: s("hourly"),
		schema.AttrWindowStart: s(aggregator.WindowKey(aggregator.Hourly, d.now)), "tpm": n(1200), schema.AttrTotalEvents: n(3),
	})
	for _, item := range items {
		if _, err := d.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(d.table), Item: item}); err != nil {
			return err
		}
		pk, sk := item[schema.AttrPK].(*types.AttributeValueMemberS).Value, item[schema.AttrSK].(*types.AttributeValueMemberS).Value
		fmt.Fprintf(d.out, "  %-4s %-44s %s\n", kindLabel(schema.ClassifyKey(pk, sk).Kind), pk, sk)
	}
	return nil
}

// hourKey is the key of the hourly snapshot of d.now under the default
// windows.
func (d *demo) hourKey() string {
	return aggregator.SnapshotKey(aggregator.Hourly, d.now, aggregator.DefaultWindows())
}

func kindLabel(k schema.RecordKind) string { return "R" + strconv.Itoa(int(k)) }

func (d *demo) queryIndexes(ctx context.Context) error {
	ns := d.ns
	queries := []struct {
		what, index, pk, prefix string
		pkAttr, skAttr          string
	}{
		{"GSI1 children of org-acme", schema.GSI1, schema.ParentGSI1PK(ns, "org-acme"), "", schema.AttrGSI1PK, schema.AttrGSI1SK},
		{"GSI2 buckets of openai/gpt-4", schema.GSI2, schema.ResourcePK(ns, "openai/gpt-4"), schema.PrefixBucket, schema.AttrGSI2PK, schema.AttrGSI2SK},
		{"GSI2 usage of openai/gpt-4", schema.GSI2, schema.ResourcePK(ns, "openai/gpt-4"), schema.PrefixUsage, schema.AttrGSI2PK, schema.AttrGSI2SK},
		{"GSI3 entities with their own openai/gpt-4 limits", schema.GSI3, schema.EntityConfigGSI3PK(ns, "openai/gpt-4"), "", schema.AttrGSI3PK, schema.AttrGSI3SK},
		{"GSI3 buckets of key-1 on openai/gpt-4", schema.GSI3, schema.EntityPK(ns, "key-1"), schema.BucketGSI3SKPrefix("openai/gpt-4"), schema.AttrGSI3PK, schema.AttrGSI3SK},
		{"GSI4 everything in the namespace (purge)", schema.GSI4, ns, "", schema.AttrGSI4PK, schema.AttrGSI4SK},
	}
	for _, q := range queries {
		in := &dynamodb.QueryInput{
			TableName: aws.String(d.table), IndexName: aws.String(q.index),
			KeyConditionExpression:    aws.String("#pk = :pk"),
			ExpressionAttributeNames:  map[string]string{"#pk": q.pkAttr},
			ExpressionAttributeValues: map[string]types.AttributeValue{":pk": s(q.pk)},
		}
		if q.prefix != "" {
			in.KeyConditionExpression = aws.String("#pk = :pk AND begins_with(#sk, :p)")
			in.ExpressionAttributeNames["#sk"] = q.skAttr
			in.ExpressionAttributeValues[":p"] = s(q.prefix)
		}
		out, err := d.db.Query(ctx, in)
		if err != nil {
			return fmt.Errorf("%s: %w", q.what, err)
		}
		fmt.Fprintf(d.out, "%s: %d\n", q.what, len(out.Items))
		for _, it := range out.Items {
			if v, ok := it[q.skAttr].(*types.AttributeValueMemberS); ok {
				fmt.Fprintf(d.out, "    %s\n", v.Value)
			}
		}
	}
	return nil
}

// stream makes one MODIFY (a consumption ADDed to a bucket, the shape the
// fast path writes) and one REMOVE, then drains the table's stream through
// the poller into a handler of the Lambda signature. The handler reports the
// MODIFY as a batch item failure once, as the aggregator does when a
// snapshot write fails, and the poller re-delivers from that record.
func (d *demo) stream(ctx context.Context) error {
	bucket := schema.BucketKey(d.ns, "key-1", "openai/gpt-4", 0)
	_, err := d.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(d.table), Key: bucket.AttributeValues(),
		UpdateExpression:    aws.String("ADD #t0 :n0, #c0 :p0, #wt :nw, #wc :pw"),
		ConditionExpression: aws.String("attribute_exists(PK) AND #t0 >= :p0 AND #wt >= :pw"),
		ExpressionAttributeNames: map[string]string{
			"#t0": schema.BucketAttr("tpm", schema.LimitTokens), "#c0": schema.BucketAttr("tpm", schema.LimitConsumed),
			"#wt": schema.BucketAttr("wcu", schema.LimitTokens), "#wc": schema.BucketAttr("wcu", schema.LimitConsumed),
		},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":n0": n(-1_500_000), ":p0": n(1_500_000), ":nw": n(-1000), ":pw": n(1000),
		},
	})
	if err != nil {
		return err
	}
	usage := schema.UsageKey(d.ns, "key-1", "openai/gpt-4", d.hourKey())
	if _, err := d.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(d.table), Key: usage.AttributeValues()}); err != nil {
		return err
	}
	failedOnce := false
	handler := func(_ context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		fmt.Fprintf(d.out, "batch of %d records\n", len(ev.Records))
		var resp events.DynamoDBEventResponse
		for _, rec := range ev.Records {
			pk := rec.Change.Keys[schema.AttrPK].String()
			sk := rec.Change.Keys[schema.AttrSK].String()
			line := fmt.Sprintf("  %-6s seq %s  R%d %s %s", rec.EventName, rec.Change.SequenceNumber,
				schema.ClassifyKey(pk, sk).Kind, pk, sk)
			if rec.EventName == "MODIFY" {
				line += tcChange(rec)
				if !failedOnce {
					failedOnce = true
					resp.BatchItemFailures = append(resp.BatchItemFailures,
						events.DynamoDBBatchItemFailure{ItemIdentifier: rec.Change.SequenceNumber})
					line += "  -> reported as a batch item failure"
				}
			}
			fmt.Fprintln(d.out, line)
		}
		return resp, nil
	}
	p, err := streampoll.New(d.streams, d.streamARN, streampoll.Options{
		Handler: handler, MaxRetries: 3,
		Logger: slog.New(slog.DiscardHandler), // the handler above narrates the failure itself
	})
	if err != nil {
		return err
	}
	st, err := p.DrainOnce(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(d.out, "delivered %d records in %d batches, %d re-delivery after the reported failure\n",
		st.Records, st.Batches, st.Redeliveries)
	return nil
}

// tcChange describes the consumption counter change of a bucket MODIFY,
// read through the SDK attribute types the aggregator will use.
func tcChange(rec events.DynamoDBEventRecord) string {
	newImg, err := streamimage.ImageToDynamoDB(rec.Change.NewImage)
	if err != nil {
		return " (unreadable image)"
	}
	oldImg, err := streamimage.ImageToDynamoDB(rec.Change.OldImage)
	if err != nil {
		return " (unreadable image)"
	}
	attr := schema.BucketAttr("tpm", schema.LimitConsumed)
	num := func(img map[string]types.AttributeValue) string {
		if v, ok := img[attr].(*types.AttributeValueMemberN); ok {
			return v.Value
		}
		return "-"
	}
	return fmt.Sprintf("  %s %s -> %s millitokens", attr, num(oldImg), num(newImg))
}

func (d *demo) validation(context.Context) error {
	checks := []struct {
		what string
		err  error
	}{
		{"entity id with '#'", schema.ValidateEntityID("user#1")},
		{"reserved limit name wcu", schema.ValidateLimitName("wcu")},
		{"reserved limit name ttl", schema.ValidateLimitName("ttl")},
		{"resource _default_", schema.ValidateResource("_default_")},
		{"resource openai/gpt-4", schema.ValidateResource("openai/gpt-4")},
	}
	for _, c := range checks {
		if c.err == nil {
			fmt.Fprintf(d.out, "  %-28s accepted\n", c.what)
		} else {
			fmt.Fprintf(d.out, "  %-28s %T: %v\n", c.what, c.err, c.err)
		}
	}
	return nil
}

func s(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
func n(v int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)}
}
func b(v bool) types.AttributeValue { return &types.AttributeValueMemberBOOL{Value: v} }
