package limiter

// Session windows on the read-then-write path (docs/design.md §15,
// ADR-139/140): a pass that opens a window on one shard fans its start
// out to the pair's other shards, so that each resets its own balance to
// the window in the next write it makes. The fan-out moves the start and
// never a balance.

import (
	"context"
	"errors"
	"sync"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/bucket"
	"github.com/zae-limiter/zae-limiter-go/core/internal/expr"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
)

// opened are the session quotas a written pass opened a window of (not
// joined, not bypassed): the ones whose start the pass fans out.
func (p *pass) opened() []*planned {
	if p.bypass || p.shards <= 1 {
		return nil
	}
	var out []*planned
	for i := range p.plan {
		if w := p.plan[i].window; w != nil && w.Open && !p.plan[i].join {
			out = append(out, &p.plan[i])
		}
	}
	return out
}

// windowFanOut is the write that hands a window opened at start, of
// length seconds, to sibling shard id for quota name: SET ws = start,
// rsa, wtc = tc (the snapshot the sibling's roll subtracts from) and
// vu = 0 (its fast path stops until a materialising pass rolls the
// window in), under
//
//	(attribute_exists(wa) OR rf < :ws) AND attribute_exists(cp) AND
//	(attribute_not_exists(ws) OR ws <= :ws − rsa×1000)
//
// — the sibling marks the window its balance reflects (wa), or, on an
// item from before wa, has not written since the window started; it
// carries the quota; and it holds no live window of its own (a window
// another opener fanned out, or opened there, is never replaced). No
// balance moves. This is the stored form Python clients of 0.15 and
// later write (docs/design.md §15).
func windowFanOut(table string, id schema.BucketID, name string, start, length int64) *dynamodb.UpdateItemInput {
	var b expr.Builder
	ws := schema.BucketAttr(name, schema.LimitWindowStart)
	b.Set(ws, schema.Num(start))
	b.Set(schema.BucketAttr(name, schema.LimitResetAfter), schema.Num(length/1000))
	b.SetFrom(schema.BucketAttr(name, schema.LimitWindowConsumed), schema.BucketAttr(name, schema.LimitConsumed), schema.Num(0))
	b.Set(schema.AttrVU, schema.Num(0))
	b.Cond("(attribute_exists(" + b.Name(schema.BucketAttr(name, schema.LimitWindowAnchor)) + ") OR " + b.Name(schema.AttrRF) + " < " + b.Value(schema.Num(start)) + ")")
	b.Cond("attribute_exists(" + b.Name(schema.BucketAttr(name, schema.LimitCapacity)) + ")")
	b.Cond("(attribute_not_exists(" + b.Name(ws) + ") OR " + b.Name(ws) + " <= " + b.Value(schema.Num(bucket.SubSat(start, length))) + ")")
	in := b.UpdateInput(table, id.Key())
	in.ReturnValues = types.ReturnValueNone
	return in
}

// fanOut sends the windows a written pass opened to every other shard of
// the pair below its count, in parallel: one write per sibling and
// quota. A write whose condition fails is the normal case of a sibling
// that holds a live window already or has none of the quota; other
// failures are logged. Neither undoes the admission: a sibling the start
// did not reach opens a window of its own at its next pass.
func (l *Limiter) fanOut(ctx context.Context, p *pass) {
	quotas := p.opened()
	if len(quotas) == 0 {
		return
	}
	var wg sync.WaitGroup
	for s := 0; s < int(min(p.shards, schema.MaxShardCount)); s++ {
		if s == p.id.Shard {
			continue
		}
		id := p.id
		id.Shard = s
		for _, pl := range quotas {
			in := windowFanOut(l.table, id, pl.lim.Name, pl.window.Start, pl.lim.ResetAfter.Milliseconds())
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := l.db.UpdateItem(ctx, in)
				var ccf *types.ConditionalCheckFailedException
				if err != nil && !errors.As(err, &ccf) {
					l.log.WarnContext(ctx, "session window fan-out failed", "resource", id.Resource, "shard", id.Shard, "limit", pl.lim.Name, "error", err)
				}
			}()
		}
	}
	wg.Wait()
}
