package maintenance

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/bucket"
	"github.com/zae-limiter/zae-limiter-go/core/bucketitem"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
	"github.com/zae-limiter/zae-limiter-go/internal/ddbtest"
)

func TestMain(m *testing.M) { ddbtest.Main(m) }

// now is the fixed clock of every test, epoch ms.
const now int64 = 1_800_000_000_000

const testNS = "nsA"

func clockAt(ms int64) func() time.Time { return func() time.Time { return time.UnixMilli(ms) } }

func bid(entity string, shard int) schema.BucketID {
	return schema.BucketID{Namespace: testNS, Entity: entity, Resource: "gpt-4", Shard: shard}
}

type item = map[string]types.AttributeValue

func nv(n int64) types.AttributeValue  { return &types.AttributeValueMemberN{Value: fmt.Sprint(n)} }
func sv(s string) types.AttributeValue { return &types.AttributeValueMemberS{Value: s} }
func bv(b bool) types.AttributeValue   { return &types.AttributeValueMemberBOOL{Value: b} }

// lim is one limit on a test bucket, millitokens and ms.
type lim struct {
	name               string
	tk, cp, ra, rp, tc int64
}

// rpm is 100 tokens per minute; wcu the reserved limit at full balance.
func rpm(tk, tc int64) lim { return lim{"rpm", tk, 100_000, 100_000, 60_000, tc} }
func wcu(tk, tc int64) lim {
	return lim{schema.WCULimit, tk, bucket.WCUCapacity, bucket.WCURefillAmount, bucket.WCURefillPeriod, tc}
}

// bucketItem builds a bucket item as a client create writes it. sc 0 means
// no shard_count attribute.
func bucketItem(id schema.BucketID, rf, sc int64, limits ...lim) item {
	it := schema.BucketItemKeys(id.Namespace, id.Entity, id.Resource, id.Shard).Item()
	it[schema.AttrEntityID] = sv(id.Entity)
	it[schema.AttrResource] = sv(id.Resource)
	it[schema.AttrRF] = nv(rf)
	if sc > 0 {
		it[schema.AttrShardCount] = nv(sc)
	}
	for _, l := range limits {
		it[schema.BucketAttr(l.name, schema.LimitTokens)] = nv(l.tk)
		it[schema.BucketAttr(l.name, schema.LimitCapacity)] = nv(l.cp)
		it[schema.BucketAttr(l.name, schema.LimitRefillAmount)] = nv(l.ra)
		it[schema.BucketAttr(l.name, schema.LimitRefillPeriod)] = nv(l.rp)
		it[schema.BucketAttr(l.name, schema.LimitConsumed)] = nv(l.tc)
	}
	return it
}

// with returns a copy of it with kv (name, value, name, value, …) set; a nil
// value deletes.
func with(it item, kv ...any) item {
	out := maps.Clone(it)
	for i := 0; i < len(kv); i += 2 {
		k := kv[i].(string)
		switch v := kv[i+1].(type) {
		case nil:
			delete(out, k)
		case int:
			out[k] = nv(int64(v))
		case int64:
			out[k] = nv(v)
		case string:
			out[k] = sv(v)
		case bool:
			out[k] = bv(v)
		case types.AttributeValue:
			out[k] = v
		default:
			panic(fmt.Sprintf("with: %T", v))
		}
	}
	return out
}

func tk(name string) string { return schema.BucketAttr(name, schema.LimitTokens) }
func tc(name string) string { return schema.BucketAttr(name, schema.LimitConsumed) }

// record builds a MODIFY (old != nil) or INSERT record; decoded leaves the
// images for Run to decode when false.
func record(t testing.TB, id schema.BucketID, old, nw item) Record {
	t.Helper()
	r := Record{Seq: "1", ID: id, NewItem: nw, OldItem: old}
	img, err := bucketitem.Decode(nw)
	if err != nil {
		t.Fatalf("decode new: %v", err)
	}
	r.NewImage = &img
	if old != nil {
		o, err := bucketitem.Decode(old)
		if err != nil {
			t.Fatalf("decode old: %v", err)
		}
		r.OldImage = &o
	}
	return r
}

func put(t testing.TB, db DB, table string, it item) {
	t.Helper()
	if _, err := db.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(table), Item: it}); err != nil {
		t.Fatalf("put: %v", err)
	}
}

func get(t testing.TB, db DB, table string, id schema.BucketID) item {
	t.Helper()
	out, err := db.GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName: aws.String(table), Key: id.Key().AttributeValues(), ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		t.Fatalf("get: %v", err)
	}
	return out.Item
}

// flat renders an item as name → "T:value" for comparison.
func flat(it item) map[string]string {
	out := make(map[string]string, len(it))
	for k, v := range it {
		out[k] = render(v)
	}
	return out
}

// render is ddbtest.Render.
func render(v types.AttributeValue) string { return ddbtest.Render(v) }

// sameItem fails t unless got and want hold the same attributes.
func sameItem(t testing.TB, what string, got, want item) {
	t.Helper()
	g, w := flat(got), flat(want)
	if maps.Equal(g, w) {
		return
	}
	var diff []string
	for _, k := range slices.Sorted(maps.Keys(w)) {
		if g[k] != w[k] {
			diff = append(diff, fmt.Sprintf("  %s: got %q, want %q", k, g[k], w[k]))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(g)) {
		if _, ok := w[k]; !ok {
			diff = append(diff, fmt.Sprintf("  %s: got %q, want absent", k, g[k]))
		}
	}
	t.Errorf("%s differs:\n%s", what, strings.Join(diff, "\n"))
}

// recDB records every write it forwards to next (or answers success when
// next is nil; fail, when set, may answer an error instead).
type recDB struct {
	next DB
	fail func(op string, key item) error

	mu      sync.Mutex
	updates []*dynamodb.UpdateItemInput
	puts    []*dynamodb.PutItemInput
	gets    int
	txs     int
}

func (r *recDB) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	r.mu.Lock()
	r.updates = append(r.updates, in)
	r.mu.Unlock()
	if r.fail != nil {
		if err := r.fail("UpdateItem", in.Key); err != nil {
			return nil, err
		}
	}
	if r.next == nil {
		return &dynamodb.UpdateItemOutput{}, nil
	}
	return r.next.UpdateItem(ctx, in, o...)
}

func (r *recDB) PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	r.mu.Lock()
	r.puts = append(r.puts, in)
	r.mu.Unlock()
	if r.fail != nil {
		if err := r.fail("PutItem", in.Item); err != nil {
			return nil, err
		}
	}
	if r.next == nil {
		return &dynamodb.PutItemOutput{}, nil
	}
	return r.next.PutItem(ctx, in, o...)
}

func (r *recDB) GetItem(ctx context.Context, in *dynamodb.GetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	r.mu.Lock()
	r.gets++
	r.mu.Unlock()
	if r.next == nil {
		return &dynamodb.GetItemOutput{}, nil
	}
	return r.next.GetItem(ctx, in, o...)
}

func (r *recDB) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, o ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	r.mu.Lock()
	r.txs++
	r.mu.Unlock()
	if r.next == nil {
		return nil, errors.New("recDB: no transactions")
	}
	return r.next.TransactWriteItems(ctx, in, o...)
}

func (r *recDB) writes() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.updates) + len(r.puts) + r.txs
}

var errCCF = &types.ConditionalCheckFailedException{Message: aws.String("The conditional request failed")}

// fixture is a fresh table with a maintainer writing to it through a
// recording wrapper.
type fixture struct {
	tbl *ddbtest.Table
	rec *recDB
	m   *Maintainer
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	tbl := ddbtest.NewTable(t)
	rec := &recDB{next: tbl.DB}
	return &fixture{tbl: tbl, rec: rec, m: New(rec, tbl.Name, Options{Clock: clockAt(now)})}
}

func (f *fixture) put(t testing.TB, it item) { t.Helper(); put(t, f.tbl.DB, f.tbl.Name, it) }
func (f *fixture) get(t testing.TB, id schema.BucketID) item {
	t.Helper()
	return get(t, f.tbl.DB, f.tbl.Name, id)
}

func (f *fixture) run(t testing.TB, recs ...Record) Stats {
	t.Helper()
	return f.m.Run(context.Background(), recs)
}

// wantStats compares the counters that matter to a test.
func wantStats(t testing.TB, got, want Stats) {
	t.Helper()
	if got != want {
		t.Errorf("stats = %+v, want %+v", got, want)
	}
}
