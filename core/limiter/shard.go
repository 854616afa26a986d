package limiter

// Shards (docs/design.md §5, "Shards"): the uniform draw over the shards
// not yet tried, and the doubling of the shard count when wcu runs out under
// real write pressure.

import (
	"context"
	"errors"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/bucket"
	"github.com/zae-limiter/zae-limiter-go/core/bucketitem"
	"github.com/zae-limiter/zae-limiter-go/core/limiter/internal/bucketwrite"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
)

// shardSet records the shards one acquire has tried (at most schema.MaxShardCount).
type shardSet uint64

func (s *shardSet) add(i int)     { *s |= 1 << uint(i) }
func (s shardSet) has(i int) bool { return s&(1<<uint(i)) != 0 }
func (s shardSet) count(n int64) int64 { // tried shards below n
	var c int64
	for i := int64(0); i < n && i < 64; i++ {
		if s.has(int(i)) {
			c++
		}
	}
	return c
}

// drawShard is SelectShard (docs/design.md §5): a uniform draw over [0, count)
// minus the shards already tried, recorded in tried. ok is false when every
// shard has been tried.
func (l *Limiter) drawShard(count int64, tried *shardSet) (shard int, ok bool) {
	count = min(max(count, 1), schema.MaxShardCount)
	free := count - tried.count(count)
	if free <= 0 {
		return 0, false
	}
	k := l.intn(int(free))
	for i := 0; i < int(count); i++ {
		if tried.has(i) {
			continue
		}
		if k == 0 {
			tried.add(i)
			return i, true
		}
		k--
	}
	return 0, false
}

// maxShardRetries is how many extra shards a rejected request probes
// (docs/design.md §5).
const maxShardRetries = 2

// wcuPressure reports a shard whose wcu stays short even after the refill
// it has earned since rf: real write pressure, which doubling relieves.
func wcuPressure(img *bucketitem.Image, now int64) bool {
	if img == nil || !img.WCU.Present() {
		return false
	}
	s := bucket.Undivided(img.WCU.Params())
	balance, _ := bucket.Materialise(img.WCU.Tokens, img.RF, now, s.Ceiling, s.Rate, s.Period)
	return !bucket.Covers(balance, bucket.WCUDebit/bucket.MilliPerToken)
}

// double asks shard 0 to double the pair's shard count (docs/design.md §5).
func (l *Limiter) double(ctx context.Context, req *request, img *bucketitem.Image) {
	old := max(img.ShardCount, 1)
	in, err := l.writes.Double(l.ns, req.entity, req.resource, old)
	var capErr *bucketwrite.ShardCapError
	if errors.As(err, &capErr) {
		l.log.WarnContext(ctx, "wcu exhausted at the shard cap; not doubling", "resource", req.resource, "shard_count", old)
		return
	}
	if err != nil {
		l.log.WarnContext(ctx, "cannot build doubling write", "error", err)
		return
	}
	if _, err := l.db.UpdateItem(ctx, in); err != nil {
		var ccf *types.ConditionalCheckFailedException
		if errors.As(err, &ccf) {
			// Another writer doubled first: adopt its count.
			if cur, derr := bucketitem.Decode(ccf.Item); derr == nil && cur.HasShardCount {
				l.pairs.learnShardCount(req.entity, req.resource, cur.ShardCount)
			}
			return
		}
		l.log.WarnContext(ctx, "doubling write failed", "resource", req.resource, "error", err)
		return
	}
	l.pairs.learnShardCount(req.entity, req.resource, min(2*old, schema.MaxShardCount))
}
