package control_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/control"
	"github.com/zae-limiter/zae-limiter-go/core/internal/capability"
	"github.com/zae-limiter/zae-limiter-go/core/limit"
	"github.com/zae-limiter/zae-limiter-go/core/limiter"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
)

// panicOnce is a DynamoDB client whose first BatchGetItem that reads a key
// of the partition pk panics: a panic on a fan-out worker cannot be caused
// for real.
type panicOnce struct {
	control.DB
	pk    string
	mu    sync.Mutex
	fired int
}

func (p *panicOnce) BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	for _, ka := range in.RequestItems {
		for _, k := range ka.Keys {
			if s, ok := k[schema.AttrPK].(*types.AttributeValueMemberS); ok && s.Value == p.pk {
				p.mu.Lock()
				first := p.fired == 0
				p.fired++
				p.mu.Unlock()
				if first {
					panic("injected")
				}
			}
		}
	}
	return p.DB.BatchGetItem(ctx, in, o...)
}

// A panic on a fan-out worker — here in the config walk that the stamps of
// an entity's four shards are derived from — is recovered on that worker
// (stampOneSafely) and counted as the failure of every bucket that needed
// the walk: none of them is stamped from a walk that was never read, nor
// counted as stamped. Nothing escapes the call, the setting is stored, and
// calling again finishes the job.
func TestPanicInAFanoutWorker(t *testing.T) {
	e := newEnv(t)
	if err := e.lim.Store().Writer(capability.ConfigWrite{}).SetResourceLimits(e.ctx, e.ns, "r", []limit.Limit{limit.PerMinute("rpm", 100)}); err != nil {
		t.Fatal(err)
	}
	e.acquire("a", "r")
	e.acquire("b", "r")
	e.bumpShards("b", "r", 4)
	lim4, err := limiter.New(e.tbl.DB, e.tbl.Name, e.ns, limiter.Options{Clock: e.clk.Now, Rand: rotate()})
	if err != nil {
		t.Fatal(err)
	}
	for range 8 {
		if _, err := lim4.Acquire(e.ctx, "b", "r", limiter.Consume{"rpm": 1}); err != nil {
			t.Fatal(err)
		}
	}
	for shard := range 4 {
		if e.bucket("b", "r", shard) == nil {
			t.Fatalf("b has no shard %d", shard)
		}
	}

	db := &panicOnce{DB: e.tbl.DB, pk: schema.EntityPK(e.ns, "b")}
	ctl := control.New(db, e.tbl.Name, control.Options{Clock: e.clk.Now, Caches: []control.Cache{e.lim}})
	_, err = ctl.SetAccess(e.ctx, e.ns, "", "r", dis, "")
	var inc *control.FanoutIncompleteError
	if !errors.As(err, &inc) || !strings.Contains(err.Error(), "panic") || strings.Contains(err.Error(), "goroutine ") {
		t.Fatalf("err %v, want an incomplete fan-out naming the panic (its stack goes to the log, not the error)", err)
	}
	if db.fired == 0 {
		t.Fatal("the panic was not injected")
	}
	if p := inc.Progress; p.Buckets != 5 || p.Stamped != 1 || p.Failed != 4 {
		t.Fatalf("progress %+v, want a stamped and b's 4 shards failed", p)
	}
	if _, ok := e.bucket("a", "r", 0)[schema.AttrDisabled]; !ok {
		t.Fatal("a's bucket is not stamped")
	}
	out, err := e.tbl.DB.GetItem(e.ctx, &dynamodb.GetItemInput{TableName: aws.String(e.tbl.Name),
		Key: schema.ResourceConfigKey(e.ns, "r").AttributeValues(), ConsistentRead: aws.Bool(true)})
	if d, ok := out.Item[schema.AttrDisabled].(*types.AttributeValueMemberBOOL); err != nil || !ok || !d.Value {
		t.Fatalf("the setting is not stored: %v %v", out.Item, err)
	}

	p, err := ctl.SetAccess(e.ctx, e.ns, "", "r", dis, "")
	if err != nil || p.Failed != 0 || p.Stamped != 5 {
		t.Fatalf("rerun: %+v, %v", p, err)
	}
	for shard := range 4 {
		if _, ok := e.bucket("b", "r", shard)[schema.AttrDisabled]; !ok {
			t.Errorf("shard %d of b is not stamped after the rerun", shard)
		}
	}
}
