package limiter_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/config"
	"github.com/zae-limiter/zae-limiter-go/core/internal/capability"
	"github.com/zae-limiter/zae-limiter-go/core/limit"
	"github.com/zae-limiter/zae-limiter-go/core/limiter"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
	"github.com/zae-limiter/zae-limiter-go/internal/clock"
	"github.com/zae-limiter/zae-limiter-go/internal/ddbtest"
)

// stampWatch is a limiter.DB that sees every write the limiter sends and
// every config read, on the limiter's clock: it records the instants of
// the reads of config items made for the current acquire, and every stamp
// deadline a write sets.
type stampWatch struct {
	limiter.DB
	clk *clock.Manual

	mu        sync.Mutex
	reads     []int64 // clock readings of config reads since the acquire began
	violation []string
	stamps    int
}

var setPair = regexp.MustCompile(`(#\w+) = (:\w+)`)

// begin starts a new acquire: earlier reads do not justify its writes.
func (w *stampWatch) begin() { w.mu.Lock(); w.reads = nil; w.mu.Unlock() }

func (w *stampWatch) readConfig(keys []map[string]types.AttributeValue) {
	for _, k := range keys {
		if sk, ok := k[schema.AttrSK].(*types.AttributeValueMemberS); ok && strings.HasPrefix(sk.Value, "#CONFIG") {
			w.mu.Lock()
			w.reads = append(w.reads, w.clk.Now().UnixMilli())
			w.mu.Unlock()
			return
		}
	}
}

// check judges one stamp deadline set by a write: it must come from a
// config read of this acquire, at most T after it.
func (w *stampWatch) check(what string, deadline int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stamps++
	for _, r := range w.reads {
		if deadline <= r+time.Minute.Milliseconds() {
			return
		}
	}
	w.violation = append(w.violation, fmt.Sprintf("%s = %d with config reads at %v", what, deadline, w.reads))
}

func isStamp(attr string) bool {
	if attr == schema.AttrBypass {
		return true
	}
	_, f, ok := schema.ParseBucketAttr(attr)
	return ok && f == schema.LimitSoft
}

func (w *stampWatch) update(expr string, names map[string]string, values map[string]types.AttributeValue) {
	set, _, _ := strings.Cut(expr, " ADD ")
	set, _, _ = strings.Cut(set, " REMOVE ")
	if !strings.HasPrefix(set, "SET ") {
		return
	}
	for _, m := range setPair.FindAllStringSubmatch(set, -1) {
		if attr := names[m[1]]; isStamp(attr) {
			if n, ok := values[m[2]].(*types.AttributeValueMemberN); ok {
				d, _ := strconv.ParseInt(n.Value, 10, 64)
				w.check(attr, d)
			}
		}
	}
}

func (w *stampWatch) put(item map[string]types.AttributeValue) {
	for attr, v := range item {
		if n, ok := v.(*types.AttributeValueMemberN); ok && isStamp(attr) {
			d, _ := strconv.ParseInt(n.Value, 10, 64)
			w.check(attr, d)
		}
	}
}

func (w *stampWatch) BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	for _, ka := range in.RequestItems {
		w.readConfig(ka.Keys)
	}
	return w.DB.BatchGetItem(ctx, in, o...)
}

func (w *stampWatch) GetItem(ctx context.Context, in *dynamodb.GetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	w.readConfig([]map[string]types.AttributeValue{in.Key})
	return w.DB.GetItem(ctx, in, o...)
}

func (w *stampWatch) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	w.update(*in.UpdateExpression, in.ExpressionAttributeNames, in.ExpressionAttributeValues)
	return w.DB.UpdateItem(ctx, in, o...)
}

func (w *stampWatch) PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	w.put(in.Item)
	return w.DB.PutItem(ctx, in, o...)
}

func (w *stampWatch) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, o ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	for _, it := range in.TransactItems {
		switch {
		case it.Update != nil:
			w.update(*it.Update.UpdateExpression, it.Update.ExpressionAttributeNames, it.Update.ExpressionAttributeValues)
		case it.Put != nil:
			w.put(it.Put.Item)
		}
	}
	return w.DB.TransactWriteItems(ctx, in, o...)
}

// TestNoDeadlineFromCachedConfig (ADR-151 decision 8): over random
// traffic — acquires of soft and bypassed pairs, cascades, leases that
// adjust and roll back, config flipping between soft, hard, bypass and
// enforced behind the limiter's cached config, and time jumping past
// deadlines — every write the limiter sends that sets a stamp deadline
// sets it at most T after a config read made for that very acquire: no
// write built from cached config sets or moves a deadline.
func TestNoDeadlineFromCachedConfig(t *testing.T) {
	tbl := ddbtest.NewTable(t)
	ctx := context.Background()
	clk := clock.NewManual(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))
	store := config.NewStore(tbl.DB, tbl.Name, config.WithClock(clk.Now))
	nsID, _, err := store.Writer(capability.ConfigWrite{}).RegisterNamespace(ctx, "deadlines")
	if err != nil {
		t.Fatal(err)
	}
	watch := &stampWatch{DB: tbl.DB, clk: clk}
	rng := rand.New(rand.NewPCG(29, 2))
	lim, err := limiter.New(watch, tbl.Name, nsID, limiter.Options{Clock: clk.Now, Rand: func(n int) int { return rng.IntN(n) }})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Writer(capability.ConfigWrite{}).CreateEntity(ctx, nsID, "org", config.EntityOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Writer(capability.ConfigWrite{}).CreateEntity(ctx, nsID, "child", config.EntityOptions{ParentID: "org", Cascade: true}); err != nil {
		t.Fatal(err)
	}
	limits := func(soft bool) []limit.Limit {
		tpm := limit.PerMinute("tpm", 500)
		if soft {
			tpm = tpm.AsSoft()
		}
		return []limit.Limit{limit.PerMinute("rpm", 50), tpm}
	}
	if err := store.Writer(capability.ConfigWrite{}).SetResourceLimits(ctx, nsID, "r", limits(true)); err != nil {
		t.Fatal(err)
	}
	entities := []string{"a", "b", "child", "org"}
	for step := range 600 {
		switch r := rng.IntN(100); {
		case r < 6: // config changes behind the limiter's cache
			if err := store.Writer(capability.ConfigWrite{}).SetResourceLimits(ctx, nsID, "r", limits(rng.IntN(2) == 0)); err != nil {
				t.Fatal(err)
			}
		case r < 12:
			access := []config.Access{config.AccessBypass, config.AccessInherit, config.AccessEnforce}[rng.IntN(3)]
			if err := store.Writer(capability.ConfigWrite{}).SetAccess(ctx, nsID, entities[rng.IntN(len(entities))], "r", access); err != nil {
				t.Fatal(err)
			}
		case r < 30:
			clk.Advance(time.Duration(rng.IntN(90_000)) * time.Millisecond)
		default:
			watch.begin()
			lease, err := lim.Acquire(ctx, entities[rng.IntN(len(entities))], "r", limiter.Consume{"rpm": 1, "tpm": int64(rng.IntN(120))})
			if err != nil {
				if !limiter.IsRateLimitError(err) {
					t.Fatalf("step %d: %v", step, err)
				}
				continue
			}
			switch rng.IntN(3) {
			case 0:
				_ = lease.Adjust("tpm", int64(rng.IntN(200))-100)
				_ = lease.Commit(ctx)
			case 1:
				_ = lease.Rollback(ctx)
			}
		}
	}
	if watch.stamps < 20 {
		t.Fatalf("only %d stamp writes: the walk must exercise them", watch.stamps)
	}
	if len(watch.violation) > 0 {
		t.Fatalf("%d stamp deadlines not justified by a fresh config read, e.g. %s", len(watch.violation), watch.violation[0])
	}
}
