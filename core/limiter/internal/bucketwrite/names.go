package bucketwrite

import (
	"encoding/binary"
	"maps"
	"sync"
	"sync/atomic"

	"github.com/zae-limiter/zae-limiter-go/core/schema"
)

// maxNameSets bounds the names maps one shape keeps: a shape is written
// with few sets of limit names (a service declares its rpm and tpm), so
// the bound only matters for callers that invent names per request, whose
// maps are then built per call.
const maxNameSets = 64

// nameCache holds a shape's ExpressionAttributeNames maps, one per
// sequence of limit names, built once and shared by every request of that
// shape and those names. A shared map is never written after it is
// published: the requests that carry it must not modify it (Writes says
// so), and the SDK only reads it.
type nameCache struct {
	mu   sync.Mutex                                   // serialises inserts
	sets atomic.Pointer[map[string]map[string]string] // copy-on-write; lookups take no lock
}

// namesFor returns the names map of this shape for the limit names at
// gives, from the cache when it holds them.
func (s *exprSet) namesFor(at limitAt) map[string]string {
	if s.limits == 0 {
		return s.fixedNames()
	}
	var stack [256]byte
	key := stack[:0]
	for i := range s.limits {
		name, _ := at(i)
		key = binary.AppendUvarint(key, uint64(len(name)))
		key = append(key, name...)
	}
	if m := s.named.sets.Load(); m != nil {
		if names, ok := (*m)[string(key)]; ok {
			return names
		}
	}
	names := s.buildNames(at)
	s.named.mu.Lock()
	defer s.named.mu.Unlock()
	old := s.named.sets.Load()
	if old != nil {
		if shared, ok := (*old)[string(key)]; ok {
			return shared
		}
		if len(*old) >= maxNameSets {
			return names
		}
	}
	m := make(map[string]map[string]string, 1)
	if old != nil {
		m = maps.Clone(*old)
	}
	m[string(key)] = names
	s.named.sets.Store(&m)
	return names
}

// fixedNames is the names map of a shape that names no limit (a
// doubling): the same for every call, built once.
func (s *exprSet) fixedNames() map[string]string {
	s.fixed.Do(func() { s.fixedMap = s.buildNames(nil) })
	return s.fixedMap
}

// buildNames builds a fresh names map of this shape for the limit names
// at gives.
func (s *exprSet) buildNames(at limitAt) map[string]string {
	names := make(map[string]string, len(s.names))
	for _, r := range s.names {
		if r.limit < 0 {
			names[r.alias] = r.attr
			continue
		}
		name, _ := at(r.limit)
		names[r.alias] = schema.BucketAttr(name, r.field)
	}
	return names
}
