package limiter

import (
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
