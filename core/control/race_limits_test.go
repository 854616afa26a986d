package control_test

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/aggregator/maintenance"
	"github.com/zae-limiter/zae-limiter-go/core/bucketitem"
	"github.com/zae-limiter/zae-limiter-go/core/limit"
	"github.com/zae-limiter/zae-limiter-go/core/limiter"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
	"github.com/zae-limiter/zae-limiter-go/internal/ddbtest"
)

// TestLimitChangeUnderConcurrentLoad: a lowering that races with acquires
// from two processes (fast path, and a process on the read-then-write
// path), a doubling of the pair and the aggregator's refills: once the
// operator's call has returned, the acquires that start after it admit no
// more than the new capacity, whatever raced with the change. The clock
// stands still, so no refill adds to it.
func TestLimitChangeUnderConcurrentLoad(t *testing.T) {
	tbl := ddbtest.NewTable(t)
	for round := range 3 {
		r := newReach(t, tbl, limiter.Options{})
		const res = "hot"
		r.level("resource", "", res, 1000)
		slow, err := limiter.New(tbl.DB, tbl.Name, r.ns, limiter.Options{Clock: r.clk.Now, DisableSpeculativeWrites: true})
		if err != nil {
			t.Fatal(err)
		}
		fast, err := limiter.New(tbl.DB, tbl.Name, r.ns, limiter.Options{Clock: r.clk.Now})
		if err != nil {
			t.Fatal(err)
		}
		if got := r.take("u", res, 1); got != 1 {
			t.Fatal("first acquire")
		}
		m := maintenance.New(tbl.DB, tbl.Name, maintenance.Options{Clock: r.clk.Now})
		var (
			changed atomic.Bool  // the operator's call has returned
			after   atomic.Int64 // admitted by acquires that started after it
			calls   atomic.Int64 // acquires done, to pace the race by
			stop    atomic.Bool
			wg      sync.WaitGroup
		)
		load := func(lim *limiter.Limiter) {
			defer wg.Done()
			for !stop.Load() {
				started := changed.Load()
				_, err := lim.Acquire(r.ctx, "u", res, limiter.Consume{"rpm": 1})
				calls.Add(1)
				switch {
				case err == nil && started:
					after.Add(1)
				case err != nil && !limiter.IsRateLimitError(err):
					t.Errorf("acquire: %v", err)
					stop.Store(true)
					return
				}
			}
		}
		// waitFor lets the load run until it has made n more acquires.
		waitFor := func(n int64) {
			for target := calls.Load() + n; calls.Load() < target && !stop.Load(); {
				runtime.Gosched()
			}
		}
		for range 4 {
			wg.Add(2)
			go load(fast)
			go load(slow)
		}
		// The aggregator refills from what the stream showed, racing too.
		wg.Add(1)
		go func() {
			defer wg.Done()
			read := func() (map[string]types.AttributeValue, *bucketitem.Image, bool) {
				out, err := tbl.DB.GetItem(r.ctx, &dynamodb.GetItemInput{TableName: aws.String(tbl.Name),
					Key: schema.BucketKey(r.ns, "u", res, 0).AttributeValues(), ConsistentRead: aws.Bool(true)})
				if err != nil {
					t.Errorf("aggregator read: %v", err)
					return nil, nil, false
				}
				img, err := bucketitem.Decode(out.Item)
				if err != nil {
					t.Errorf("aggregator decode: %v", err)
					return nil, nil, false
				}
				return out.Item, &img, true
			}
			prev, prevImg, ok := read()
			for ok && !stop.Load() {
				cur, curImg, ok2 := read()
				if !ok2 {
					return
				}
				id := schema.BucketID{Namespace: r.ns, Entity: "u", Resource: res}
				m.Run(r.ctx, []maintenance.Record{{Seq: "1", ID: id, OldItem: prev, OldImage: prevImg, NewItem: cur, NewImage: curImg, At: r.clk.Now()}})
				prev, prevImg = cur, curImg
			}
		}()
		// A doubling of the pair, mid-race.
		if round > 0 {
			if _, err := tbl.DB.UpdateItem(r.ctx, &dynamodb.UpdateItemInput{
				TableName: aws.String(tbl.Name), Key: schema.BucketKey(r.ns, "u", res, 0).AttributeValues(),
				UpdateExpression: aws.String("SET shard_count = :s"), ExpressionAttributeValues: map[string]types.AttributeValue{":s": schema.Num(2)},
			}); err != nil {
				t.Fatal(err)
			}
		}
		waitFor(100)
		if _, err := r.ops.SetResourceLimits(r.ctx, r.ns, res, []limit.Limit{limit.PerMinute("rpm", 30)}, "ops"); err != nil {
			t.Fatal(err)
		}
		changed.Store(true)
		waitFor(300)
		stop.Store(true)
		wg.Wait()
		if n := after.Load(); n > 30 {
			t.Errorf("round %d: %d admitted after rpm 1000 → 30 returned, want at most 30", round, n)
		}
		for shard := range 2 {
			it := shardItem(t, tbl, r.ns, "u", res, shard)
			if it == nil {
				continue
			}
			if cp, _ := num(it, schema.BucketAttr("rpm", schema.LimitCapacity)); cp != 30_000 {
				t.Errorf("round %d: shard %d cp %d, want 30000", round, shard, cp)
			}
		}
	}
}
