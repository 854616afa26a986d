package limiter

// The rejection cache (docs/design.md §10): the last bucket state this
// process saw per shard, and the local verdicts it grounds — a 429 with
// no call when every shard of the pair (or of its cascade parent) is known
// short, and a draw steered away from the shards known short. The states
// come first, then the judgement.

import (
	"hash/maphash"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zae-limiter/zae-limiter-go/core/bucket"
	"github.com/zae-limiter/zae-limiter-go/core/bucketitem"
	"github.com/zae-limiter/zae-limiter-go/core/limit"
	"github.com/zae-limiter/zae-limiter-go/core/limiter/internal/lru"
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
	// hits counts the lookups (trusted) that found a trusted state of the
	// pair; read by Limiter.Stats.
	hits atomic.Int64
	lru.Part[pairKey, *shardStates]
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
		c.parts[i].Init(lru.PerPart(size, rejectionParts))
	}
	return c
}

func (c *rejectionCache) part(entity, resource string) *rejectionPart {
	return &c.parts[lru.Hash(c.seed, entity, resource)%rejectionParts]
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
	if e := p.Find(pk); e != nil {
		st = e.Val
	} else {
		st = &shardStates{}
	}
	if len(st.slots) <= k.shard {
		st.slots = append(st.slots, make([]shardState, k.shard+1-len(st.slots))...)
	}
	st.slots[k.shard] = shardState{img: img, at: now}
	p.Put(pk, st, now)
}

// trusted copies into dst[s] the state of each shard s < count of the pair
// stored less than ttl ago (nil for the others).
func (c *rejectionCache) trusted(entity, resource string, count int, dst *[schema.MaxShardCount]*bucketitem.Image) {
	*dst = [schema.MaxShardCount]*bucketitem.Image{}
	now := c.now()
	p := c.part(entity, resource)
	p.mu.RLock()
	defer p.mu.RUnlock()
	e := p.Find(pairKey{entity, resource})
	if e == nil {
		return
	}
	hit := false
	for s, slot := range e.Val.slots[:min(count, len(e.Val.slots))] {
		if slot.img != nil && now.Sub(slot.at) < c.ttl {
			dst[s], hit = slot.img, true
		}
	}
	if hit {
		p.hits.Add(1)
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
	if e := p.Find(pairKey{k.entity, k.resource}); e != nil && k.shard >= 0 && k.shard < len(e.Val.slots) {
		e.Val.slots[k.shard] = shardState{}
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
		p.Init(p.Max())
		p.epoch++
		p.mu.Unlock()
	}
}

// rejectionCacheStats are the rejection cache's counters (Limiter.Stats).
type rejectionCacheStats struct {
	entries         int   // shard states held (stale ones included until evicted)
	hits, evictions int64 // lookups that found a trusted state; pairs evicted
}

// stats reads the cache's counters, part by part.
func (c *rejectionCache) stats() rejectionCacheStats {
	var st rejectionCacheStats
	if c == nil {
		return st
	}
	for i := range c.parts {
		p := &c.parts[i]
		p.mu.RLock()
		p.Each(func(e *lru.Entry[pairKey, *shardStates]) {
			for _, s := range e.Val.slots {
				if s.img != nil {
					st.entries++
				}
			}
		})
		st.evictions += p.Evicted()
		p.mu.RUnlock()
		st.hits += p.hits.Load()
	}
	return st
}

// remember stores a state DynamoDB returned for id, unless something was
// forgotten since mark.
func (c *rejectionCache) remember(id schema.BucketID, img *bucketitem.Image, mark uint64) {
	c.store(shardKey{id.Entity, id.Resource, id.Shard}, img, mark)
}

// maxLocalLimits is how many declared limits a local rejection judges
// without allocating; a request naming more is never rejected locally.
const maxLocalLimits = 16

// pairJudgement is the rejection cache's view of one pair's shards
// (docs/design.md §10).
type pairJudgement struct {
	count int      // shards considered
	short shardSet // shards known short
	// shortAll: every shard considered is known short.
	shortAll bool
	never    bool   // some trusted state forbids a local rejection
	trusted  bool   // at least one shard had a trusted state
	parent   string // the cascade parent a trusted state names
	// best is the short shard whose shortfall clears soonest.
	best      int
	bestImg   *bucketitem.Image
	bestWait  int64
	bestNever bool
}

func (j pairJudgement) allShort() bool {
	return !j.never && j.count > 0 && j.shortAll
}

// steer is the set of shards the uniform draw skips: the known-short ones,
// unless that is all of them (then the draw is not steered).
func (j pairJudgement) steer() shardSet {
	if j.never || j.shortAll {
		return 0
	}
	return j.short
}

// judgePair judges every shard in [0, count) of (entity, req.resource)
// against req's declared amounts, from the cached states alone.
func (l *Limiter) judgePair(req *request, entity string, count int64, now int64) pairJudgement {
	j := pairJudgement{count: int(min(max(count, 1), schema.MaxShardCount))}
	var states [schema.MaxShardCount]*bucketitem.Image
	l.rejects.trusted(entity, req.resource, j.count, &states)
	for s, img := range states[:j.count] {
		if img == nil || !trustedAt(img, now) {
			continue // unknown: it may have room
		}
		j.trusted = true
		if img.Cascades() {
			j.parent = img.ParentID
		}
		short, never, wait, waitNever := l.judgeShard(req, img, now)
		if never {
			j.never = true
			return j
		}
		if !short {
			continue
		}
		j.short.add(s)
		if j.bestImg == nil || longerWait(j.bestWait, j.bestNever, wait, waitNever) {
			j.best, j.bestImg, j.bestWait, j.bestNever = s, img, wait, waitNever
		}
	}
	j.shortAll = j.short.count(int64(j.count)) == int64(j.count)
	return j
}

// trustedAt reports a cached state still valid at now: the item not
// expired (its age is the cache's business), and, once its vu has passed,
// an item whose balances only the refill arithmetic moves.
//
// Past vu, no debit lands without moving rf (the fast path, the Retry
// shape and a lease's extra debit all carry the vu guard), so the state's
// lazy refill to now is what the next materialisation would find, or more
// if some other write debited since: a rejection decided from it stays
// sound (docs/design.md §10, decisions P41). A credit sets vu to its
// instant, so without this every retry of a key exhausted after a settled
// lease would pay a round trip. An item with phase-2 attributes (a
// schedule boundary or a reset edge can add tokens the lazy refill does
// not see) keeps the vu barrier.
func trustedAt(img *bucketitem.Image, now int64) bool {
	if img.HasTTL && img.TTL <= now/1000 {
		return false
	}
	return !(img.HasVU && img.VU <= now && img.Phase2())
}

// longerWait reports whether (aw, an) is a longer wait than (bw, bn).
func longerWait(aw int64, an bool, bw int64, bn bool) bool {
	if an != bn {
		return an
	}
	return aw > bw
}

// judgeShard reports whether a trusted state is known short for req (some
// declared hard limit cannot cover its amount after refill to now), or
// forbids any local rejection of the pair (never). wait is how long until
// every short limit of the shard is covered (waitNever: refill never
// covers one).
func (l *Limiter) judgeShard(req *request, img *bucketitem.Image, now int64) (short, never bool, wait int64, waitNever bool) {
	if img.HasDisabled {
		return false, true, 0, false // ResourceDisabled stays the server's answer
	}
	if img.Bypass.Present || img.HasParamSchedule() || len(req.declared) > maxLocalLimits {
		return false, false, 0, false
	}
	if req.override != nil {
		for _, d := range req.declared {
			if li := img.Limit(d.Name); li != nil && overrideDiffers(req.override, d.Name, li) {
				return false, true, 0, false
			}
		}
	}
	var lbuf [maxLocalLimits]bucket.ImageLimit
	var sbuf [maxLocalLimits]bucket.Status
	_, statuses, satisfy, ok := project(req, img, now, &lbuf, &sbuf)
	if !ok || satisfy {
		return false, false, 0, false // a missing limit: the slow path seeds it
	}
	for _, s := range statuses {
		if s.Exceeded {
			waitNever = waitNever || s.Retry.Never
			wait = max(wait, s.Retry.WaitMs)
		}
	}
	return true, false, wait, waitNever
}

// project builds req's declared limits from img — any soft stamp, live or
// expired, keeps a limit out of the verdict (docs/design.md §10) — and
// projects them to now with the refill arithmetic. ok is false when the
// item lacks a declared limit. len(req.declared) ≤ maxLocalLimits.
func project(req *request, img *bucketitem.Image, now int64, lbuf *[maxLocalLimits]bucket.ImageLimit, sbuf *[maxLocalLimits]bucket.Status) (limits []bucket.ImageLimit, statuses []bucket.Status, satisfy, ok bool) {
	limits = lbuf[:0]
	for _, d := range req.declared {
		li := img.Limit(d.Name)
		if li == nil || !li.Present() {
			return nil, nil, false, false
		}
		limits = append(limits, img.JudgeLimit(li, d.Amount, li.Soft.Present, now))
	}
	satisfy, statuses = bucket.WouldRefillSatisfy(sbuf[:0], limits, img.RF, max(img.ShardCount, 1), now)
	return limits, statuses, satisfy, true
}

// overrideDiffers reports a WithLimits override whose parameters for name
// differ from the bucket's.
func overrideDiffers(override []limit.Limit, name string, li *bucketitem.LimitImage) bool {
	ol, ok := limit.Find(override, name)
	if !ok {
		return true
	}
	p, q := ol.Params(), li.Params()
	return p.Capacity != q.Capacity || p.RefillAmount != q.RefillAmount || p.RefillPeriod != q.RefillPeriod
}

// rejectLocally applies the rejection cache (docs/design.md §10) before any
// DynamoDB call: a *RateLimitExceeded built from the projected state when
// every shard that could admit is known short, else the shards the draw
// should skip; and the cache's mark for the pair, taken first, for the
// write that follows (a conservative mark: anything forgotten since it
// keeps the write's image out of the cache).
func (l *Limiter) rejectLocally(req *request, st pairState, now int64) (rejected *RateLimitExceeded, steer shardSet, mark uint64) {
	mark = l.rejects.mark(req.entity, req.resource)
	if l.rejects == nil || l.degraded.Load() {
		return nil, 0, mark
	}
	child := l.judgePair(req, req.entity, st.shardCount, now)
	if child.never {
		return nil, 0, mark
	}
	if child.parent != "" {
		// The child's own trusted state says it cascades: the parent's
		// shards are judged the same way, and the child may be rejected
		// on its own only while a trusted parent state shows the parent
		// is not disabled.
		par := l.judgePair(req, child.parent, l.pairs.get(child.parent, req.resource).shardCount, now)
		if par.allShort() {
			if e := l.localRejection(req, child.parent, par, now); e != nil {
				return e, 0, mark
			}
		}
		if par.never || !par.trusted {
			return nil, child.steer(), mark
		}
	}
	if child.allShort() {
		if e := l.localRejection(req, req.entity, child, now); e != nil {
			return e, 0, mark
		}
	}
	return nil, child.steer(), mark
}

// parentSteer is the set of a cascade parent's shards the parent write's
// draw skips.
func (l *Limiter) parentSteer(req *request, parent string, count int64) shardSet {
	if l.rejects == nil || l.degraded.Load() {
		return 0
	}
	return l.judgePair(req, parent, count, l.nowMs()).steer()
}

// localRejection builds the error of a local rejection from the best short
// shard of entity's judgement.
func (l *Limiter) localRejection(req *request, entity string, j pairJudgement, now int64) *RateLimitExceeded {
	var lbuf [maxLocalLimits]bucket.ImageLimit
	var sbuf [maxLocalLimits]bucket.Status
	limits, statuses, _, ok := project(req, j.bestImg, now, &lbuf, &sbuf)
	if !ok {
		return nil
	}
	e := newLocalRejection(len(req.declared))
	for i, d := range req.declared {
		e.Statuses[i] = limitStatus(entity, req.resource, d, limits[i].Params, limits[i].Soft, statuses[i])
	}
	l.stats.localRejections.Add(1)
	return e
}

// localRejectionSmall is a local rejection of up to 4 limits in one
// allocation: the error and its statuses together.
type localRejectionSmall struct {
	e   RateLimitExceeded
	buf [4]LimitStatus
}

func newLocalRejection(n int) *RateLimitExceeded {
	if n <= len(localRejectionSmall{}.buf) {
		x := &localRejectionSmall{}
		x.e = RateLimitExceeded{Local: true, Statuses: x.buf[:n]}
		return &x.e
	}
	return &RateLimitExceeded{Local: true, Statuses: make([]LimitStatus, n)}
}
