package config

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/zae-limiter/zae-limiter-go/core/limit"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
)

// AccessOptions tune ResolveAccess.
type AccessOptions struct {
	// Consistent asks for strongly consistent reads (fan-outs, reset and
	// top-up); the slow path reads eventually consistently.
	Consistent bool
	// IncludeSystem adds the system config item to the same read, so that
	// limits that resolve from the system level (and their soft flags) are
	// fresh too (docs/design.md §7).
	IncludeSystem bool
}

// Walk is the outcome of the uncached access walk (docs/design.md §7).
type Walk struct {
	// Mode is the first explicit `disabled` value in walk order —
	// AccessDisabled, AccessEnforce or AccessBypass — or AccessEnforce when
	// no level sets one. Never AccessInherit.
	Mode Access
	// Level is the level that decided Mode (LevelEntity, LevelEntityDefault,
	// LevelResource) or LevelNone.
	Level Level
	// Cascade is the first explicit `cascade` in walk order, or
	// CascadeUnset; CascadeLevel is the level that set it.
	Cascade      CascadePolicy
	CascadeLevel Level
	// Limits is the limit set recomputed from the configs just read (soft
	// flags included), by the rule of docs/design.md §7; Source is its level.
	// Without IncludeSystem, Limits is empty and Source LevelNone when only
	// the system level has limits.
	Limits []limit.Limit
	Source Level
	// OnUnavailable is the system config's value; read only with
	// IncludeSystem.
	OnUnavailable OnUnavailable
	// ReadAt is the clock reading taken when the read was issued; stamp
	// deadlines derive from it (docs/design.md §8).
	ReadAt time.Time
}

// ResolveAccess walks entity(resource) → entity(`_default_`) → resource
// without the cache, in one BatchGetItem (GetItem fallback), and returns the
// access mode, cascade policy and fresh limits (docs/design.md §7). Access and
// cascade never come from the system level. When resource is `_default_`
// only the entity(`_default_`) item is walked.
//
// An unsupported item that the limit resolution reaches before a winner
// makes the call fail closed with the *UnsupportedConfigError; the access
// and cascade settings of unsupported items are still honoured otherwise.
func (r *Resolver) ResolveAccess(ctx context.Context, ns, entity, resource string, opts AccessOptions) (Walk, error) {
	if err := validatePair(ns, entity, resource); err != nil {
		return Walk{}, err
	}
	slots := accessSlots(ns, entity, resource, opts)
	keys := make([]schema.Key, len(slots))
	for i, s := range slots {
		keys[i] = s.key
	}
	readAt := r.o.now()
	found, _, err := readItems(ctx, r.db, r.table, keys, opts.Consistent, &r.o)
	if err != nil {
		return Walk{}, fmt.Errorf("resolve access of %s on %s: %w", entity, resource, err)
	}
	return r.walk(ns, entity, resource, slots, found, readAt, r.decodeSlot)
}

// Pair is an (entity, resource) pair.
type Pair struct{ Entity, Resource string }

// ResolveAccessAll is ResolveAccess for many pairs of one namespace at
// once: every config item they walk read in BatchGetItem calls of up to
// 100 keys, each item once however many pairs walk it (the resource's and
// the system's config, above all), at one ReadAt. A pair's own failure (an
// invalid pair, an unsupported item its limits reach) is in errs; err is a
// failed read, which fails them all.
func (r *Resolver) ResolveAccessAll(ctx context.Context, ns string, pairs []Pair, opts AccessOptions) (walks map[Pair]Walk, errs map[Pair]error, err error) {
	walks, errs = make(map[Pair]Walk, len(pairs)), map[Pair]error{}
	var keys []schema.Key
	slotsOf := make(map[Pair][]slot, len(pairs))
	for _, p := range pairs {
		if err := validatePair(ns, p.Entity, p.Resource); err != nil {
			errs[p] = err
			continue
		}
		slots := accessSlots(ns, p.Entity, p.Resource, opts)
		slotsOf[p] = slots
		for _, s := range slots {
			keys = append(keys, s.key)
		}
	}
	readAt := r.o.now()
	found, _, err := readItems(ctx, r.db, r.table, keys, opts.Consistent, &r.o)
	if err != nil {
		return nil, nil, fmt.Errorf("resolve access of %d pairs: %w", len(pairs), err)
	}
	// Each item decoded (and its problems reported) once.
	decoded := map[schema.Key]*slotValue{}
	decode := func(level Level, k schema.Key, it item) *slotValue {
		v, ok := decoded[k]
		if !ok {
			v = r.decodeSlot(level, k, it)
			decoded[k] = v
		}
		return v
	}
	for p, slots := range slotsOf {
		w, err := r.walk(ns, p.Entity, p.Resource, slots, found, readAt, decode)
		if err != nil {
			errs[p] = err
			continue
		}
		walks[p] = w
	}
	return walks, errs, nil
}

// accessSlots are the config items an access walk reads.
func accessSlots(ns, entity, resource string, opts AccessOptions) []slot {
	slots := limitSlots(ns, entity, resource)
	if !opts.IncludeSystem {
		slots = slots[:len(slots)-1]
	}
	return slots
}

// walk is the access walk of (entity, resource) over the items found for
// its slots, read at readAt.
func (r *Resolver) walk(ns, entity, resource string, slots []slot, found map[schema.Key]item, readAt time.Time,
	decode func(Level, schema.Key, item) *slotValue) (Walk, error) {
	w := Walk{Mode: AccessEnforce, ReadAt: readAt}
	modeSet, limitsSet := false, false
	for _, s := range slots {
		it := found[s.key]
		if it == nil {
			continue
		}
		v := decode(s.level, s.key, it)
		if s.level == LevelSystem {
			w.OnUnavailable = v.dec.OnUnavailable
			r.mu.Lock()
			r.lastSeen[ns] = v.dec.OnUnavailable
			r.mu.Unlock()
		} else {
			if !modeSet && v.dec.Disabled != AccessInherit {
				w.Mode, w.Level, modeSet = v.dec.Disabled, s.level, true
			}
			if w.Cascade == CascadeUnset && v.dec.Cascade != CascadeUnset {
				w.Cascade, w.CascadeLevel = v.dec.Cascade, s.level
			}
		}
		if limitsSet {
			continue
		}
		if v.err != nil {
			return Walk{}, fmt.Errorf("resolve access of %s on %s: %w", entity, resource, v.err)
		}
		if len(v.dec.Limits) > 0 {
			w.Limits, w.Source, limitsSet = slices.Clone(v.dec.Limits), s.level, true
		}
	}
	return w, nil
}

// EffectiveCascade reports whether entity e cascades to its parent on a
// resource whose walk found policy (docs/design.md §7): never without a parent;
// otherwise the explicit policy when set, else the entity's own default
// (Entity.Cascade).
func EffectiveCascade(e Entity, policy CascadePolicy) bool {
	if e.ParentID == "" {
		return false
	}
	switch policy {
	case CascadeOn:
		return true
	case CascadeOff:
		return false
	}
	return e.Cascade
}

// PickOnUnavailable applies the precedence of docs/design.md §7: the per-call
// value, else the system config's, else the last value this process saw,
// else block. Values other than allow and block count as unset.
func PickOnUnavailable(perCall, system, lastSeen OnUnavailable) OnUnavailable {
	for _, o := range [...]OnUnavailable{perCall, system, lastSeen} {
		if o.Valid() {
			return o
		}
	}
	return OnUnavailableBlock
}

// ValidateOnUnavailable checks a caller-supplied on_unavailable: "" (unset),
// allow or block. Failures are *schema.ValidationError.
func ValidateOnUnavailable(o OnUnavailable) error {
	if o == "" || o.Valid() {
		return nil
	}
	return schema.NewValidationError(schema.FieldOnUnavailable, string(o), "must be allow or block")
}

// LastOnUnavailable returns the system on_unavailable of namespace ns as last
// read by this resolver ("" when never read, or when the item sets none).
func (r *Resolver) LastOnUnavailable(ns string) OnUnavailable {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lastSeen[ns]
}

// OnUnavailable returns the action for an infrastructure failure in
// namespace ns (docs/design.md §7): perCall when valid; else the system config
// through the cache; if that read fails, the last value read; else block.
// A successful read of a system config without the attribute yields block:
// "last seen" covers failed reads only.
func (r *Resolver) OnUnavailable(ctx context.Context, ns string, perCall OnUnavailable) OnUnavailable {
	if perCall.Valid() {
		return perCall
	}
	return r.OnUnavailableOr(ctx, ns, OnUnavailableBlock)
}

// OnUnavailableOr is OnUnavailable with no per-call value and fallback in
// place of block: what the system config says (through the cache), else
// the last value read when that read fails, else fallback (a client's own
// default).
func (r *Resolver) OnUnavailableOr(ctx context.Context, ns string, fallback OnUnavailable) OnUnavailable {
	if validateNamespace(ns) != nil {
		return PickOnUnavailable("", "", fallback)
	}
	vals, err := r.lookup(ctx, []slot{{LevelSystem, schema.SystemConfigKey(ns)}})
	if err != nil {
		return PickOnUnavailable("", r.LastOnUnavailable(ns), fallback)
	}
	return PickOnUnavailable("", vals[0].dec.OnUnavailable, fallback)
}
