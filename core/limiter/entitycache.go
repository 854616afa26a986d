package limiter

import (
	"sync"

	"github.com/zae-limiter/zae-limiter-go/core/bucket"
)

// pairKey names an (entity, resource) pair within the limiter's namespace.
type pairKey struct{ entity, resource string }

// pairState is what the process has learned about a pair from images of its
// own writes (SPEC §5.5): the shard count, the cascade stamp and whether the
// pair is bypassed. Nothing here expires: the next image overrules it, and a
// stale entry can only cost an extra DynamoDB call, never a wrong admission.
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
	image      *bucket.Image
	imageShard int
}

// imageOf returns the cached image of shard, or nil.
func (st pairState) imageOf(shard int) *bucket.Image {
	if st.image != nil && st.imageShard == shard {
		return st.image
	}
	return nil
}

// pairCache is the entity, cascade and bypass caches of SPEC §5.5 in one map,
// safe for concurrent use.
type pairCache struct {
	mu    sync.Mutex
	pairs map[pairKey]pairState
}

func newPairCache() *pairCache { return &pairCache{pairs: make(map[pairKey]pairState)} }

// get returns the pair's state; an unknown pair has one shard.
func (c *pairCache) get(entity, resource string) pairState {
	c.mu.Lock()
	defer c.mu.Unlock()
	st, ok := c.pairs[pairKey{entity, resource}]
	if !ok || st.shardCount < 1 {
		st.shardCount = 1
	}
	return st
}

// update applies f to the pair's state under the lock.
func (c *pairCache) update(entity, resource string, f func(*pairState)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := pairKey{entity, resource}
	st := c.pairs[k]
	f(&st)
	c.pairs[k] = st
}

// learnShardCount raises the cached count; shard counts only grow.
func (c *pairCache) learnShardCount(entity, resource string, n int64) {
	c.update(entity, resource, func(st *pairState) {
		if n > st.shardCount {
			st.shardCount = n
		}
	})
}
