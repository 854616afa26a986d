// Package lru holds the bounded maps behind the limiter's pair cache and
// rejection cache (docs/design.md §7 and §10): a Part is a map kept in
// recency order that drops its least recent entry once it holds its
// maximum. A cache splits its keys over several Parts, each under a lock
// of the cache's own, so that concurrent callers on distinct keys rarely
// share one; PerPart and Hash size the parts and pick one.
package lru

import (
	"container/list"
	"hash/maphash"
	"time"
)

// Part is one part of a bounded cache. It is not safe for concurrent use:
// the cache holds the part's lock around every method. The zero value
// keeps nothing; Init sets its bound.
type Part[K comparable, V any] struct {
	max   int
	order list.List // of *Entry[K, V], most recent first
	byKey map[K]*list.Element
	// evicted counts the entries Put dropped to stay within max (Init
	// keeps it).
	evicted int64
}

// Entry is one key's value and when it was last written.
type Entry[K comparable, V any] struct {
	Key K
	Val V
	At  time.Time
	el  *list.Element
}

// Init empties the part and bounds it to max entries (≤ 0: none kept).
func (p *Part[K, V]) Init(max int) {
	p.max = max
	p.byKey = make(map[K]*list.Element)
	p.order.Init()
}

// Max is the part's bound.
func (p *Part[K, V]) Max() int { return p.max }

// Find returns k's entry, or nil.
func (p *Part[K, V]) Find(k K) *Entry[K, V] {
	el, ok := p.byKey[k]
	if !ok {
		return nil
	}
	return el.Value.(*Entry[K, V])
}

// Touch makes e the most recent entry.
func (p *Part[K, V]) Touch(e *Entry[K, V]) { p.order.MoveToFront(e.el) }

// Put stores v under k as the most recent entry, written at at, dropping
// the least recent entries beyond the bound, and returns the entry (nil
// for a part that keeps nothing).
func (p *Part[K, V]) Put(k K, v V, at time.Time) *Entry[K, V] {
	if p.max <= 0 {
		return nil
	}
	if e := p.Find(k); e != nil {
		e.Val, e.At = v, at
		p.order.MoveToFront(e.el)
		return e
	}
	e := &Entry[K, V]{Key: k, Val: v, At: at}
	e.el = p.order.PushFront(e)
	p.byKey[k] = e.el
	for p.order.Len() > p.max {
		p.Remove(p.order.Back().Value.(*Entry[K, V]))
		p.evicted++
	}
	return e
}

// Remove drops e.
func (p *Part[K, V]) Remove(e *Entry[K, V]) {
	delete(p.byKey, e.Key)
	p.order.Remove(e.el)
}

// Len is the number of entries held.
func (p *Part[K, V]) Len() int { return p.order.Len() }

// Evicted is the number of entries dropped to stay within the bound.
func (p *Part[K, V]) Evicted() int64 { return p.evicted }

// Each calls f with every entry, most recent first.
func (p *Part[K, V]) Each(f func(*Entry[K, V])) {
	for el := p.order.Front(); el != nil; el = el.Next() {
		f(el.Value.(*Entry[K, V]))
	}
}

// PerPart divides a total bound over n parts: at least 1 each when the
// total is positive; 0 keeps nothing.
func PerPart(total, n int) int {
	if total <= 0 {
		return 0
	}
	return max(1, (total+n-1)/n)
}

// Hash hashes a pair of strings (an entity and a resource) with seed, to
// pick the pair's part.
func Hash(seed maphash.Seed, a, b string) uint64 {
	var h maphash.Hash
	h.SetSeed(seed)
	h.WriteString(a)
	h.WriteByte(0)
	h.WriteString(b)
	return h.Sum64()
}
