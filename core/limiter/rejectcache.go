package limiter

import (
	"hash/maphash"
	"sync"
	"time"

	"github.com/zae-limiter/zae-limiter-go/core/bucketitem"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
)

// rejectionParts is the number of independently locked parts of the
// rejection cache; all shards of one pair live in one entry of one part,
// so a lookup hashes once and takes one read lock.
const rejectionParts = 32

// shardKey names one bucket shard of the limiter's namespace.
type shardKey struct {
	entity, resource string
	shard            int
}

// rejectionCache is the last bucket state seen per shard (docs/design.md
// §10): filled from the images DynamoDB returns to this process, trusted
// for at most ttl, bounded in pairs (least recently stored evicted). It
// only ever grounds a rejection, never an admission. Safe for concurrent
// use.
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
	lruPart[pairKey, *shardStates]
}

// shardStates are one pair's states by shard (nil: none held).
type shardStates struct {
	slots []shardState
}

type shardState struct {
	img *bucketitem.Image // never modified once stored
	at  time.Time
}

// newRejectionCache returns a cache of at most size pairs trusted for ttl,
// or nil (no cache) when either is ≤ 0.
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
// its part since mark.
func (c *rejectionCache) store(k shardKey, img *bucketitem.Image, mark uint64) {
	if c == nil || img == nil || k.shard < 0 || k.shard >= schema.MaxShardCount {
		return
	}
	p := c.part(k.entity, k.resource)
	now := c.now()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.epoch != mark {
		return
	}
	pk := pairKey{k.entity, k.resource}
	var st *shardStates
	if e, _ := p.find(pk); e != nil {
		st = e.val
	} else {
		st = &shardStates{}
	}
	if len(st.slots) <= k.shard {
		st.slots = append(st.slots, make([]shardState, k.shard+1-len(st.slots))...)
	}
	st.slots[k.shard] = shardState{img: img, at: now}
	p.put(pk, st, now)
}

// trusted copies into dst[s] the state of each shard s < count of the pair
// stored less than ttl ago (nil for the others).
func (c *rejectionCache) trusted(entity, resource string, count int, dst *[schema.MaxShardCount]*bucketitem.Image) {
	*dst = [schema.MaxShardCount]*bucketitem.Image{}
	now := c.now()
	p := c.part(entity, resource)
	p.mu.RLock()
	defer p.mu.RUnlock()
	e, _ := p.find(pairKey{entity, resource})
	if e == nil {
		return
	}
	for s, slot := range e.val.slots[:min(count, len(e.val.slots))] {
		if slot.img != nil && now.Sub(slot.at) < c.ttl {
			dst[s] = slot.img
		}
	}
}

// forget drops the shard's state: this process is crediting it.
func (c *rejectionCache) forget(k shardKey) {
	if c == nil {
		return
	}
	p := c.part(k.entity, k.resource)
	p.mu.Lock()
	defer p.mu.Unlock()
	if e, _ := p.find(pairKey{k.entity, k.resource}); e != nil && k.shard >= 0 && k.shard < len(e.val.slots) {
		e.val.slots[k.shard] = shardState{}
	}
	p.epoch++
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

// len is the number of shard states held (stale ones included until
// evicted).
func (c *rejectionCache) len() int {
	if c == nil {
		return 0
	}
	n := 0
	for i := range c.parts {
		p := &c.parts[i]
		p.mu.RLock()
		for _, el := range p.byKey {
			for _, s := range el.Value.(*lruEntry[pairKey, *shardStates]).val.slots {
				if s.img != nil {
					n++
				}
			}
		}
		p.mu.RUnlock()
	}
	return n
}

// remember stores a state DynamoDB returned for id, unless something was
// forgotten since mark.
func (c *rejectionCache) remember(id schema.BucketID, img *bucketitem.Image, mark uint64) {
	c.store(shardKey{id.Entity, id.Resource, id.Shard}, img, mark)
}
