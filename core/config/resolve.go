package config

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/zae-limiter/zae-limiter-go/core/limit"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
)

// Resolved is the outcome of limit resolution (docs/design.md §7).
type Resolved struct {
	// Limits is the limit set of the first level, in slot order, that has
	// any limit; sorted by name. Never empty when the error is nil.
	Limits []limit.Limit
	// Source is that level: LevelEntity, LevelEntityDefault, LevelResource
	// or LevelSystem.
	Source Level
	// OnUnavailable always comes from the system config item, whatever
	// level supplied the limits; "" when it sets none (see PickOnUnavailable).
	OnUnavailable OnUnavailable
}

// Resolver answers which limits apply to an entity on a resource: the
// limits of the first of the four levels (entity on the resource, entity
// default, resource, system) that has any, each level's config cached in a
// slot (docs/design.md §7). It also walks the access and cascade settings
// uncached (ResolveAccess). It is safe for concurrent use: the cache sits
// behind a mutex, and a fill that races an invalidation is dropped (it
// only costs a later call).
//
// The cache is per Resolver and keyed by the config's key, so one Resolver
// serves any number of namespaces. Entries live for the cache TTL by the
// injected clock; a config found absent is cached too. Each Store evicts
// the slots its own config writes touch; other writers' changes show when
// the entries expire, or after Invalidate.
type Resolver struct {
	db    ReadDB
	table string
	o     options

	mu       sync.Mutex
	gen      uint64 // bumped by every eviction; fills from an older generation are dropped
	entries  map[schema.Key]cacheEntry
	sweepAt  int
	lastSeen map[string]OnUnavailable // namespace → last system on_unavailable read
}

// cacheEntry is one cached slot; val is never modified after creation.
type cacheEntry struct {
	val     *slotValue
	expires time.Time
}

// slotValue is what one config item says: absent (found false), decoded, or
// unsupported (err).
type slotValue struct {
	found bool
	dec   Decoded
	err   error // *UnsupportedConfigError
}

// slot is a config item consulted by a resolution.
type slot struct {
	level Level
	key   schema.Key
}

const minSweep = 1024

// NewResolver returns a Resolver reading table through db. Options that do
// not concern resolution (entropy) are ignored.
func NewResolver(db ReadDB, table string, opts ...Option) *Resolver {
	return newResolver(db, table, buildOptions(opts))
}

func newResolver(db ReadDB, table string, o options) *Resolver {
	return &Resolver{
		db: db, table: table, o: o,
		entries:  make(map[schema.Key]cacheEntry),
		sweepAt:  minSweep,
		lastSeen: make(map[string]OnUnavailable),
	}
}

// Resolve returns the limits that apply to entity on resource (docs/design.md §7).
//
// The slots are entity(resource), entity(`_default_`), resource and system;
// when resource is `_default_` the entity(`_default_`) slot is consulted once
// and the resource slot is skipped (no resource config can be named
// `_default_`). Slots missing from the cache are read in one BatchGetItem
// (eventually consistent, chunks of 100, UnprocessedKeys retried with
// backoff); if that fails, each unsettled slot is read with GetItem. Every
// read result, absent items included, is cached for the TTL.
//
// The first slot with a non-empty limit set wins. If a slot that would be
// consulted before a winner is found is unsupported (DecodeConfigItem), the
// *UnsupportedConfigError is returned: fail closed. No limits anywhere is a
// *schema.ValidationError with Field "limits". Invalid arguments are
// validation errors; read failures are wrapped DynamoDB errors.
func (r *Resolver) Resolve(ctx context.Context, ns, entity, resource string) (Resolved, error) {
	if err := validatePair(ns, entity, resource); err != nil {
		return Resolved{}, err
	}
	slots := limitSlots(ns, entity, resource)
	vals, err := r.lookup(ctx, slots)
	if err != nil {
		return Resolved{}, fmt.Errorf("resolve limits of %s on %s: %w", entity, resource, err)
	}
	var res Resolved
	if sys := vals[len(vals)-1]; sys.found {
		res.OnUnavailable = sys.dec.OnUnavailable
	}
	for i, s := range slots {
		v := vals[i]
		if v.err != nil {
			return Resolved{}, fmt.Errorf("resolve limits of %s on %s: %w", entity, resource, v.err)
		}
		if len(v.dec.Limits) > 0 {
			res.Limits = slices.Clone(v.dec.Limits)
			res.Source = s.level
			return res, nil
		}
	}
	return Resolved{}, schema.NewValidationError(schema.FieldLimits, entity+"/"+resource,
		"no limits configured at entity, entity default, resource or system level")
}

// limitSlots is the slot list of docs/design.md §7.
func limitSlots(ns, entity, resource string) []slot {
	slots := make([]slot, 0, 4)
	slots = append(slots, slot{LevelEntity, schema.EntityConfigKey(ns, entity, resource)})
	if resource != schema.DefaultResource {
		slots = append(slots,
			slot{LevelEntityDefault, schema.EntityConfigKey(ns, entity, schema.DefaultResource)},
			slot{LevelResource, schema.ResourceConfigKey(ns, resource)})
	} else {
		slots[0].level = LevelEntityDefault
	}
	return append(slots, slot{LevelSystem, schema.SystemConfigKey(ns)})
}

// validatePair validates the arguments of a resolution.
func validatePair(ns, entity, resource string) error {
	if err := validateNamespace(ns); err != nil {
		return err
	}
	if err := schema.ValidateEntityID(entity); err != nil {
		return err
	}
	return schema.ValidateConfigScope(resource)
}

// lookup returns the value of every slot, from the cache where fresh and
// otherwise from one read of all the misses, filling the cache.
func (r *Resolver) lookup(ctx context.Context, slots []slot) ([]*slotValue, error) {
	now := r.o.now()
	vals := make([]*slotValue, len(slots))
	var miss []schema.Key
	missIdx := make(map[schema.Key][]int, len(slots))

	r.mu.Lock()
	gen := r.gen
	for i, s := range slots {
		if r.o.cacheTTL > 0 {
			if e, ok := r.entries[s.key]; ok && now.Before(e.expires) {
				vals[i] = e.val
				continue
			}
		}
		if _, dup := missIdx[s.key]; !dup {
			miss = append(miss, s.key)
		}
		missIdx[s.key] = append(missIdx[s.key], i)
	}
	r.mu.Unlock()
	if len(miss) == 0 {
		return vals, nil
	}

	found, known, err := readItems(ctx, r.db, r.table, miss, false, &r.o)
	fresh := make(map[schema.Key]*slotValue, len(known))
	for _, k := range miss {
		if !known[k] {
			continue
		}
		v := r.decodeSlot(slots[missIdx[k][0]].level, k, found[k])
		fresh[k] = v
		for _, i := range missIdx[k] {
			vals[i] = v
		}
	}
	r.store(gen, now, fresh)
	if err != nil {
		return nil, err
	}
	return vals, nil
}

// decodeSlot decodes one read result and reports its problems.
func (r *Resolver) decodeSlot(level Level, k schema.Key, it item) *slotValue {
	if it == nil {
		return &slotValue{}
	}
	dec, err := DecodeConfigItem(level, it)
	r.report(k, dec.Problems, err)
	return &slotValue{found: true, dec: dec, err: err}
}

// report logs the problems of a freshly read item.
func (r *Resolver) report(k schema.Key, problems []Problem, err error) {
	for _, p := range problems {
		r.o.logger.Warn("config: skipped part of a config item", "pk", k.PK, "sk", k.SK,
			"attribute", p.Attribute, "reason", p.Reason)
	}
	if err != nil {
		r.o.logger.Error("config: unsupported config item; resolutions through it fail closed",
			"pk", k.PK, "sk", k.SK, "error", err)
	}
}

// store caches fresh slot values read at now, unless an eviction happened
// since generation gen, and remembers system on_unavailable values.
func (r *Resolver) store(gen uint64, now time.Time, fresh map[schema.Key]*slotValue) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for k, v := range fresh {
		if ns, err := schema.ParseSystemPK(k.PK); err == nil && k.SK == schema.SKConfig {
			r.lastSeen[ns] = v.dec.OnUnavailable
		}
	}
	if r.o.cacheTTL <= 0 || gen != r.gen {
		return
	}
	expires := now.Add(r.o.cacheTTL)
	for k, v := range fresh {
		r.entries[k] = cacheEntry{val: v, expires: expires}
	}
	if len(r.entries) >= r.sweepAt {
		for k, e := range r.entries {
			if !now.Before(e.expires) {
				delete(r.entries, k)
			}
		}
		r.sweepAt = max(2*len(r.entries), minSweep)
	}
}

// Invalidate clears the whole cache (docs/design.md §7 InvalidateConfigCache).
func (r *Resolver) Invalidate() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.gen++
	clear(r.entries)
}

// EvictEntity drops every cached slot of entity in namespace ns: its
// configs for every resource and `_default_`.
func (r *Resolver) EvictEntity(ns, entity string) {
	pk := schema.EntityPK(ns, entity)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.gen++
	for k := range r.entries {
		if k.PK == pk {
			delete(r.entries, k)
		}
	}
}

// evictKey drops one cached slot.
func (r *Resolver) evictKey(k schema.Key) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.gen++
	delete(r.entries, k)
}

// CacheLen returns the number of cached slots, fresh or expired.
func (r *Resolver) CacheLen() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.entries)
}
