package control_test

import (
	"context"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/aggregator/maintenance"
	"github.com/zae-limiter/zae-limiter-go/core/limit"
	"github.com/zae-limiter/zae-limiter-go/core/limiter"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
	"github.com/zae-limiter/zae-limiter-go/internal/ddbtest"
)

// staleConfig is a DynamoDB client whose eventually consistent reads of
// config items answer from a snapshot taken while stale is set, as a read
// that has not seen a recent write may (DynamoDB Local is always
// consistent, so the lag is played here: a fault it cannot produce).
// Strongly consistent reads and everything else pass through.
type staleConfig struct {
	limiter.DB
	mu    sync.Mutex
	snap  map[string]map[string]types.AttributeValue // PK|SK → item
	stale bool
}

// freeze snapshots the config items of ns as they are now and plays them
// back from then on.
func (s *staleConfig) freeze(t *testing.T, tbl *ddbtest.Table, ns string) {
	t.Helper()
	out, err := tbl.DB.Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String(tbl.Name)})
	if err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.snap = map[string]map[string]types.AttributeValue{}
	for _, it := range out.Items {
		pk, _ := it[schema.AttrPK].(*types.AttributeValueMemberS)
		sk, _ := it[schema.AttrSK].(*types.AttributeValueMemberS)
		if pk != nil && sk != nil && strings.HasPrefix(pk.Value, ns+"/") && strings.HasPrefix(sk.Value, "#CONFIG") {
			s.snap[pk.Value+"|"+sk.Value] = it
		}
	}
	s.stale = true
}

func (s *staleConfig) BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	out, err := s.DB.BatchGetItem(ctx, in, o...)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil || !s.stale {
		return out, err
	}
	for table, ka := range in.RequestItems {
		if aws.ToBool(ka.ConsistentRead) {
			continue
		}
		var items []map[string]types.AttributeValue
		for _, it := range out.Responses[table] {
			sk, _ := it[schema.AttrSK].(*types.AttributeValueMemberS)
			if sk == nil || !strings.HasPrefix(sk.Value, "#CONFIG") {
				items = append(items, it)
			}
		}
		for _, k := range ka.Keys {
			pk, _ := k[schema.AttrPK].(*types.AttributeValueMemberS)
			sk, _ := k[schema.AttrSK].(*types.AttributeValueMemberS)
			if pk == nil || sk == nil {
				continue
			}
			if old, ok := s.snap[pk.Value+"|"+sk.Value]; ok {
				items = append(items, old)
			}
		}
		out.Responses[table] = items
	}
	return out, nil
}

// TestNoStaleWriteBack: a process whose reads still show the old limits —
// its config cache, and an eventually consistent read that has not seen
// the change — never writes them over the new ones (docs/decisions.md
// P58): its slow path sees the shard's limits differ from what it read,
// reads the config again strongly consistent after the shard, and writes
// nothing older; a shard it creates from the stale read carries a recheck
// deadline, by which a check brings it in line.
func TestNoStaleWriteBack(t *testing.T) {
	tbl := ddbtest.NewTable(t)
	r := newReach(t, tbl, limiter.Options{})
	stale := &staleConfig{DB: tbl.DB}
	slow, err := limiter.New(stale, tbl.Name, r.ns, limiter.Options{Clock: r.clk.Now, DisableSpeculativeWrites: true, Rand: func(int) int { return 0 }})
	if err != nil {
		t.Fatal(err)
	}
	const res = "stale"
	r.level("resource", "", res, 100)
	if _, err := slow.Acquire(r.ctx, "u", res, limiter.Consume{"rpm": 10}); err != nil {
		t.Fatal(err)
	}
	stale.freeze(t, tbl, r.ns) // the slow process's eventually consistent reads stop here
	r.clk.Advance(time.Second)
	if p := r.level("resource", "", res, 20); p.Stamped != 1 {
		t.Fatalf("lowering: %+v", p)
	}
	admitted := 0
	for range 30 {
		if _, err := slow.Acquire(r.ctx, "u", res, limiter.Consume{"rpm": 1}); err == nil {
			admitted++
		}
	}
	if admitted != 20 {
		t.Errorf("the stale process admitted %d after rpm 100 → 20, want 20", admitted)
	}
	if cp, _ := num(bucketOf(t, tbl, r.ns, "u", res), schema.BucketAttr("rpm", schema.LimitCapacity)); cp != 20_000 {
		t.Errorf("rpm cp %d after the stale process's writes, want 20000 (never the old 100000)", cp)
	}

	// A shard the stale process creates from its stale read: the old
	// limits, but a recheck deadline a minute on; there the check, a
	// strongly consistent read, brings it in line.
	if _, err := slow.Acquire(r.ctx, "v", res, limiter.Consume{"rpm": 1}); err != nil {
		t.Fatal(err)
	}
	it := bucketOf(t, tbl, r.ns, "v", res)
	if cp, _ := num(it, schema.BucketAttr("rpm", schema.LimitCapacity)); cp != 100_000 {
		t.Fatalf("the create read rpm cp %d: the stale read was not played", cp)
	}
	if rc, _ := num(it, schema.AttrRecheck); rc != r.clk.Now().UnixMilli()+60_000 {
		t.Errorf("recheck %d, want a minute on", rc)
	}
	r.clk.Advance(time.Minute)
	admitted = 0
	for range 40 {
		if _, err := slow.Acquire(r.ctx, "v", res, limiter.Consume{"rpm": 1}); err == nil {
			admitted++
		}
	}
	if it = bucketOf(t, tbl, r.ns, "v", res); !hasNo(it, schema.AttrRecheck) {
		t.Error("the check left the recheck stamp")
	}
	if cp, _ := num(it, schema.BucketAttr("rpm", schema.LimitCapacity)); cp != 20_000 || admitted != 20 {
		t.Errorf("after the recheck deadline: cp %d, %d admitted; want 20000 and the 20 of the new ceiling", cp, admitted)
	}
}

func hasNo(it map[string]types.AttributeValue, attr string) bool {
	_, ok := it[attr]
	return !ok
}

// TestAggregatorNeverWritesOldLimits: the aggregator's refill and clones
// come from stream images that a limit change may have passed. A refill
// built from an image older than the change loses its rf pin (the
// change's write moved rf) and writes nothing; a clone of shard 0's
// older image carries a recheck deadline, and the first pass after it
// brings the clone in line — no more admitted than its share of the new
// capacity.
func TestAggregatorNeverWritesOldLimits(t *testing.T) {
	tbl := ddbtest.NewTable(t)
	r := newReach(t, tbl, limiter.Options{})
	const res = "agg"
	r.level("resource", "", res, 100)
	// A heavy user's records: an INSERT with tc up 95 (5 left: a refill is
	// due), then a doubling of shard 0 (a clone is due); both are read
	// from the stream after the change.
	r.take("u", res, 1)
	r.clk.Advance(61 * time.Second) // the created shard's one check, at its recheck deadline
	if got := r.take("u", res, 94); got != 94 {
		t.Fatal(got)
	}
	created := bucketOf(t, tbl, r.ns, "u", res)
	if !hasNo(created, schema.AttrRecheck) {
		t.Fatal("shard 0 still unchecked")
	}
	if _, err := tbl.DB.UpdateItem(r.ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(tbl.Name), Key: schema.BucketKey(r.ns, "u", res, 0).AttributeValues(),
		UpdateExpression: aws.String("SET shard_count = :s"), ExpressionAttributeValues: map[string]types.AttributeValue{":s": schema.Num(2)},
	}); err != nil {
		t.Fatal(err)
	}
	doubled := bucketOf(t, tbl, r.ns, "u", res)
	r.clk.Advance(3 * time.Second)
	if p := r.level("resource", "", res, 20); p.Stamped != 1 {
		t.Fatalf("lowering: %+v", p)
	}
	after := bucketOf(t, tbl, r.ns, "u", res)
	m := maintenance.New(tbl.DB, tbl.Name, maintenance.Options{Clock: r.clk.Now})
	st := m.Run(r.ctx, []maintenance.Record{
		record(t, r.ns, "u", res, 0, nil, created, r.clk.Now()),
		record(t, r.ns, "u", res, 0, created, doubled, r.clk.Now()),
	})
	if got := bucketOf(t, tbl, r.ns, "u", res); render(got) != render(after) {
		t.Errorf("a refill from the images before the change wrote shard 0 (stats %+v):\nbefore %s\nafter  %s", st, render(after), render(got))
	}
	clone := shardItem(t, tbl, r.ns, "u", res, 1)
	if st.Clones != 1 || clone == nil {
		t.Fatalf("no clone (stats %+v)", st)
	}
	if cp, _ := num(clone, schema.BucketAttr("rpm", schema.LimitCapacity)); cp != 100_000 {
		t.Fatalf("the clone has cp %d: not the old image's", cp)
	}
	rc, _ := num(clone, schema.AttrRecheck)
	vu, _ := num(clone, schema.AttrVU)
	if rc != r.clk.Now().UnixMilli()+60_000 || vu > rc {
		t.Errorf("clone recheck %d, vu %d; want a minute on, vu no later", rc, vu)
	}
	// At its deadline, a minute on, an acquire drawn to shard 1 checks it
	// and brings it in line. The pair then holds at most its two shares of
	// the new capacity, 10 each; the clone's old limits would have given
	// it 50.
	r.clk.Advance(time.Minute)
	one, err := limiter.New(tbl.DB, tbl.Name, r.ns, limiter.Options{Clock: r.clk.Now, Rand: func(n int) int { return n - 1 }})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := one.Acquire(r.ctx, "u", res, limiter.Consume{"rpm": 0}); err != nil { // learns the count on shard 0
		t.Fatal(err)
	}
	admitted := 0
	for range 60 {
		if _, err := one.Acquire(r.ctx, "u", res, limiter.Consume{"rpm": 1}); err == nil {
			admitted++
		}
	}
	clone = shardItem(t, tbl, r.ns, "u", res, 1)
	if cp, _ := num(clone, schema.BucketAttr("rpm", schema.LimitCapacity)); cp != 20_000 || !hasNo(clone, schema.AttrRecheck) {
		t.Errorf("the clone after its deadline: cp %d, recheck %v; want 20000 and none", cp, clone[schema.AttrRecheck])
	}
	if admitted > 20 {
		t.Errorf("%d admitted over the pair, want at most its two shares of the new capacity, 20", admitted)
	}
}

// record is a maintenance record of shard of (entity, resource) from old
// to nw (old nil: an INSERT).
func record(t *testing.T, ns, entity, resource string, shard int, old, nw map[string]types.AttributeValue, at time.Time) maintenance.Record {
	t.Helper()
	rec := maintenance.Record{Seq: "1", ID: schema.BucketID{Namespace: ns, Entity: entity, Resource: resource, Shard: shard}, NewItem: nw, OldItem: old, At: at}
	rec.NewImage = imageOf(t, nw)
	if old != nil {
		rec.OldImage = imageOf(t, old)
	}
	return rec
}

// render is an item as text, attributes sorted.
func render(it map[string]types.AttributeValue) string {
	parts := make([]string, 0, len(it))
	for _, k := range slices.Sorted(maps.Keys(it)) {
		parts = append(parts, k+"="+ddbtest.Render(it[k]))
	}
	return strings.Join(parts, " ")
}

// TestRacingChangesSettleOnTheLast: two operators change the same
// resource's limits at once, again and again, while acquires run: every
// bucket ends with the limits the config ends with.
func TestRacingChangesSettleOnTheLast(t *testing.T) {
	tbl := ddbtest.NewTable(t)
	r := newReach(t, tbl, limiter.Options{})
	const res = "race"
	r.level("resource", "", res, 100)
	for _, e := range []string{"a", "b", "c"} {
		r.take(e, res, 1)
	}
	for round := range 5 {
		var wg sync.WaitGroup
		for i, n := range []int64{int64(10 + round), int64(50 + round)} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := r.ops.SetResourceLimits(r.ctx, r.ns, res, []limit.Limit{limit.PerMinute("rpm", n)}, "ops"); err != nil {
					t.Errorf("operator %d: %v", i, err)
				}
			}()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, e := range []string{"a", "b", "c"} {
				if _, err := r.svc.Acquire(r.ctx, e, res, limiter.Consume{"rpm": 1}); err != nil && !limiter.IsRateLimitError(err) {
					t.Errorf("acquire: %v", err)
				}
			}
		}()
		wg.Wait()
		cfg, err := r.ops.Store().GetResourceLimits(r.ctx, r.ns, res)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range []string{"a", "b", "c"} {
			if cp, _ := num(bucketOf(t, tbl, r.ns, e, res), schema.BucketAttr("rpm", schema.LimitCapacity)); cp != cfg[0].Params().Capacity {
				t.Errorf("round %d: %s's cp %d, config %d", round, e, cp, cfg[0].Params().Capacity)
			}
		}
		r.clk.Advance(time.Second)
	}
}
