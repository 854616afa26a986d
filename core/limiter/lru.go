package limiter

import (
	"container/list"
	"hash/maphash"
	"time"
)

// lruPart is one independently locked part of a bounded cache: a map kept
// in recency order, the least recent evicted once it holds max entries.
// The caller holds the part's lock around every method (pairCache and
// rejectionCache embed it beside their own mutex).
type lruPart[K comparable, V any] struct {
	max   int
	order list.List // of *lruEntry[K, V], most recent first
	byKey map[K]*list.Element
	// evicted counts the entries put dropped to stay within max (init
	// keeps it).
	evicted int64
}

type lruEntry[K comparable, V any] struct {
	key K
	val V
	at  time.Time // when the value was last written
}

func (p *lruPart[K, V]) init(max int) {
	p.max = max
	p.byKey = make(map[K]*list.Element)
	p.order.Init()
}

// find returns k's entry, or nil.
func (p *lruPart[K, V]) find(k K) (*lruEntry[K, V], *list.Element) {
	el, ok := p.byKey[k]
	if !ok {
		return nil, nil
	}
	return el.Value.(*lruEntry[K, V]), el
}

// touch makes el the most recent.
func (p *lruPart[K, V]) touch(el *list.Element) { p.order.MoveToFront(el) }

// put stores v under k as the most recent entry, written at at, evicting
// the least recent entries beyond max. A part with max 0 keeps nothing.
func (p *lruPart[K, V]) put(k K, v V, at time.Time) *lruEntry[K, V] {
	if p.max <= 0 {
		return nil
	}
	if e, el := p.find(k); e != nil {
		e.val, e.at = v, at
		p.order.MoveToFront(el)
		return e
	}
	e := &lruEntry[K, V]{key: k, val: v, at: at}
	p.byKey[k] = p.order.PushFront(e)
	for p.order.Len() > p.max {
		p.remove(p.order.Back())
		p.evicted++
	}
	return e
}

func (p *lruPart[K, V]) remove(el *list.Element) {
	delete(p.byKey, el.Value.(*lruEntry[K, V]).key)
	p.order.Remove(el)
}

func (p *lruPart[K, V]) len() int { return p.order.Len() }

// perPart divides a total bound over n parts (at least 1 each when the
// total is positive; 0 keeps nothing).
func perPart(total, n int) int {
	if total <= 0 {
		return 0
	}
	return max(1, (total+n-1)/n)
}

// pairHash hashes an (entity, resource) pair: the pair cache and the
// rejection cache pick the pair's part with it.
func pairHash(seed maphash.Seed, entity, resource string) uint64 {
	var h maphash.Hash
	h.SetSeed(seed)
	h.WriteString(entity)
	h.WriteByte(0)
	h.WriteString(resource)
	return h.Sum64()
}
