package limiter

import (
	"hash/maphash"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/bucketitem"
	"github.com/zae-limiter/zae-limiter-go/core/limiter/internal/lru"
)

// pairKey names an (entity, resource) pair within the limiter's namespace.
type pairKey struct{ entity, resource string }

// pairState is what the process has learned about a pair from images of its
// own writes (docs/design.md §5): the shard count, the cascade stamp,
// whether the pair is bypassed, and the last image of a shard. Any of it may
// be stale or forgotten: the next image overrules it, and a stale or missing
// entry can only cost an extra DynamoDB call, never a wrong admission (every
// write conditions on the state it assumes).
type pairState struct {
	shardCount int64
	// cascadeKnown is set once an image carried a cascade stamp with
	// parent_id or pgen (a stamp with neither teaches nothing).
	cascadeKnown bool
	cascade      bool
	parentID     string
	bypassed     bool
	// image is the last image seen of shard imageShard (docs/decisions.md
	// P25: a refill pass built from it needs no read). Never modified.
	image      *bucketitem.Image
	imageShard int
}

// pairCacheShards is the number of independently locked parts of the pair
// cache, so that concurrent acquires on distinct pairs rarely share a lock.
const pairCacheShards = 32

// pairCache is what the process knows of each pair, bounded in size (least
// recently used evicted) and age (an entry older than ttl is forgotten),
// split into pairCacheShards parts under their own locks. Safe for
// concurrent use.
type pairCache struct {
	seed   maphash.Seed
	now    func() time.Time
	ttl    time.Duration // ≤ 0: no age bound
	shards [pairCacheShards]pairShard
}

// pairShard is one least-recently-used part of the cache.
type pairShard struct {
	mu sync.Mutex
	lru.Part[pairKey, pairState]
}

// newPairCache returns a cache of at most size pairs (≤ 0: none kept) that
// forgets a pair ttl after it was last taught (≤ 0: never).
func newPairCache(size int, ttl time.Duration, now func() time.Time) *pairCache {
	c := &pairCache{seed: maphash.MakeSeed(), now: now, ttl: ttl}
	for i := range c.shards {
		c.shards[i].Init(lru.PerPart(size, pairCacheShards))
	}
	return c
}

func (c *pairCache) shard(k pairKey) *pairShard {
	return &c.shards[lru.Hash(c.seed, k.entity, k.resource)%pairCacheShards]
}

// live reports whether an entry learned at learned is within the age bound.
func (c *pairCache) live(learned time.Time) bool { return c.liveAt(learned, c.now()) }

// liveAt is live with the clock read at at.
func (c *pairCache) liveAt(learned, at time.Time) bool {
	return c.ttl <= 0 || at.Sub(learned) < c.ttl
}

// get returns the pair's state; an unknown (or forgotten) pair has one
// shard.
func (c *pairCache) get(entity, resource string) pairState {
	k := pairKey{entity, resource}
	s := c.shard(k)
	s.mu.Lock()
	var st pairState
	if e := s.Find(k); e != nil {
		if c.live(e.At) {
			st = e.Val
			s.Touch(e)
		} else {
			s.Remove(e)
		}
	}
	s.mu.Unlock()
	if st.shardCount < 1 {
		st.shardCount = 1
	}
	return st
}

// update applies f to the pair's state under its shard's lock and
// remembers it, evicting the least recently used pair when the shard is
// full.
func (c *pairCache) update(entity, resource string, f func(*pairState)) {
	k := pairKey{entity, resource}
	s := c.shard(k)
	s.mu.Lock()
	defer s.mu.Unlock()
	at := c.now()
	st := c.currentAt(s, k, at)
	f(&st)
	s.Put(k, st, at)
}

// learnImage updates the pair's state from an image of shard
// (docs/design.md §7) and keeps the image for refill passes. It is update
// with pairState.learnImage, called directly: the fast path's own update,
// with no state escaping to the heap through a function value.
func (c *pairCache) learnImage(entity, resource string, shard int, img *bucketitem.Image, now int64) {
	k := pairKey{entity, resource}
	s := c.shard(k)
	s.mu.Lock()
	defer s.mu.Unlock()
	at := c.now()
	st := c.currentAt(s, k, at)
	st.learnImage(shard, img, now)
	s.Put(k, st, at)
}

// currentAt is k's state in s if it is live at at (the zero state when
// there is none); the caller holds s.mu and reads the clock once for this
// and the put that follows.
func (c *pairCache) currentAt(s *pairShard, k pairKey, at time.Time) pairState {
	if e := s.Find(k); e != nil && c.liveAt(e.At, at) {
		return e.Val
	}
	return pairState{}
}

// learnImage updates st from an image of shard taken at now
// (docs/design.md §7), and keeps the image for refill passes.
func (st *pairState) learnImage(shard int, img *bucketitem.Image, now int64) {
	st.image, st.imageShard = img, shard
	if img.HasShardCount && img.ShardCount > st.shardCount {
		st.shardCount = img.ShardCount
	}
	if img.HasParent || img.HasPGen {
		st.cascadeKnown, st.cascade, st.parentID = true, img.HasCascade && img.Cascade, img.ParentID
	}
	st.bypassed = img.Bypass.Live(now)
}

// len is the number of pairs held (expired ones included until touched).
func (c *pairCache) len() int {
	n := 0
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		n += s.Len()
		s.mu.Unlock()
	}
	return n
}

// learnShardCount raises the cached count; shard counts only grow.
func (c *pairCache) learnShardCount(entity, resource string, n int64) {
	c.update(entity, resource, func(st *pairState) {
		if n > st.shardCount {
			st.shardCount = n
		}
	})
}

// learnItem decodes the ALL_NEW item of a write this process made to shard
// of (entity, resource) and learns it; an empty or corrupt item teaches
// nothing.
func (c *pairCache) learnItem(entity, resource string, shard int, item map[string]types.AttributeValue, now int64) {
	if len(item) == 0 {
		return
	}
	if img, err := bucketitem.Decode(item); err == nil {
		c.learnImage(entity, resource, shard, &img, now)
	}
}
