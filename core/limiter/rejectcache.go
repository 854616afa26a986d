package limiter

import (
	"hash/maphash"
	"sync"
	"time"

	"github.com/zae-limiter/zae-limiter-go/core/bucket"
)

// Rejection cache bounds (Options.RejectionCacheTTL, Options.RejectionCacheSize).
const (
	// DefaultRejectionCacheTTL is how long a bucket state seen in a
	// DynamoDB response may ground a local rejection.
	DefaultRejectionCacheTTL = time.Second
	// DefaultRejectionCacheSize is how many bucket shards the rejection
	// cache holds by default.
	DefaultRejectionCacheSize = 10_000
)

// rejectionParts is the number of independently locked parts of the
// rejection cache; all shards of one pair live in the same part, so a
// lookup takes one lock.
const rejectionParts = 32

// shardKey names one bucket shard of the limiter's namespace.
type shardKey struct {
	entity, resource string
	shard            int
}

// rejectionCache is the last bucket state seen per shard (docs/design.md
// §10): filled from the images DynamoDB returns to this process, trusted
// for at most ttl, bounded in size (least recently stored evicted). It only
// ever grounds a rejection, never an admission. Safe for concurrent use.
type rejectionCache struct {
	seed  maphash.Seed
	now   func() time.Time
	ttl   time.Duration
	parts [rejectionParts]rejectionPart
}

type rejectionPart struct {
	mu sync.RWMutex
	// epoch moves on every forget and clear: a response whose mark is
	// older may predate a credit and is not stored.
	epoch uint64
	lruPart[shardKey, *bucket.Image]
}

// newRejectionCache returns a cache of at most size shards trusted for
// ttl, or nil (no cache) when either is ≤ 0.
func newRejectionCache(size int, ttl time.Duration, now func() time.Time) *rejectionCache {
	if size <= 0 || ttl <= 0 {
		return nil
	}
	c := &rejectionCache{seed: maphash.MakeSeed(), now: now, ttl: ttl}
	for i := range c.parts {
		c.parts[i].init(perPart(size, rejectionParts))
	}
	return c
}

func (c *rejectionCache) part(entity, resource string) *rejectionPart {
	return &c.parts[pairHash(c.seed, entity, resource)%rejectionParts]
}

// mark is taken before a DynamoDB call whose returned image may be stored.
func (c *rejectionCache) mark(entity, resource string) uint64 {
	if c == nil {
		return 0
	}
	p := c.part(entity, resource)
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.epoch
}

// store keeps img as the shard's state unless something was forgotten in
// its part since mark. img is never modified afterwards.
func (c *rejectionCache) store(k shardKey, img *bucket.Image, mark uint64) {
	if c == nil || img == nil {
		return
	}
	p := c.part(k.entity, k.resource)
	p.mu.Lock()
	if p.epoch == mark {
		p.put(k, img, c.now())
	}
	p.mu.Unlock()
}

// lookup returns the shard's state when it was stored less than ttl ago.
func (c *rejectionCache) lookup(k shardKey) *bucket.Image {
	p := c.part(k.entity, k.resource)
	p.mu.RLock()
	defer p.mu.RUnlock()
	e, _ := p.find(k)
	if e == nil || c.now().Sub(e.at) >= c.ttl {
		return nil
	}
	return e.val
}

// forget drops the shard's state: this process is crediting it.
func (c *rejectionCache) forget(k shardKey) {
	if c == nil {
		return
	}
	p := c.part(k.entity, k.resource)
	p.mu.Lock()
	if _, el := p.find(k); el != nil {
		p.remove(el)
	}
	p.epoch++
	p.mu.Unlock()
}

// clear drops everything: an operator write in this process.
func (c *rejectionCache) clear() {
	if c == nil {
		return
	}
	for i := range c.parts {
		p := &c.parts[i]
		p.mu.Lock()
		p.init(p.max)
		p.epoch++
		p.mu.Unlock()
	}
}

// len is the number of shards held (stale ones included until evicted).
func (c *rejectionCache) len() int {
	if c == nil {
		return 0
	}
	n := 0
	for i := range c.parts {
		p := &c.parts[i]
		p.mu.RLock()
		n += p.lruPart.len()
		p.mu.RUnlock()
	}
	return n
}
