package control

import (
	"context"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/bucketitem"
	"github.com/zae-limiter/zae-limiter-go/core/config"
	"github.com/zae-limiter/zae-limiter-go/core/internal/expr"
	"github.com/zae-limiter/zae-limiter-go/core/internal/schedsync"
	"github.com/zae-limiter/zae-limiter-go/core/limit"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
)

// The limit setters store a level's limits through the config store (soft
// limits after the version gate) and bring the buckets already created in
// line before they return (ADR-151 decision 4, docs/design.md §8):
//
//   - an entity-level change is a parameter sync of the entity's buckets in
//     scope: each bucket's limits, soft stamps and TTL follow what now
//     resolves for its own resource, limits no longer configured are
//     removed, and vu = 0 makes its next acquire a materialising pass;
//   - a resource- or system-level change fans out only when some limit's
//     soft-ness changed, and only to the buckets whose limits resolve from
//     that level (an entity override is left alone). Parameters themselves
//     reach those buckets through their TTL and the slow path.

// SetSystemLimits replaces the namespace's system limits, the limits of
// every entity and resource that no other level gives limits to, and, when
// opts sets it, its on_unavailable. A change of a limit's soft-ness
// reaches the buckets whose limits come from the system level before the
// call returns; new capacities and refill rates reach them through the
// acquires themselves (when a bucket's TTL passes or an acquire takes the
// slow path, docs/design.md §8).
func (c *Controls) SetSystemLimits(ctx context.Context, ns string, limits []limit.Limit, opts config.SystemOptions, principal string) (Progress, error) {
	defer c.changing()()
	old, _, err := c.store.GetSystemLimits(ctx, ns)
	if err != nil {
		return Progress{}, err
	}
	if err := c.writer.SetSystemLimits(ctx, ns, limits, opts); err != nil {
		return Progress{}, err
	}
	if err := c.auditLimits(ctx, ns, SystemTrail, "", "limits_set", config.LevelSystem, limits, principal); err != nil {
		return Progress{}, err
	}
	return c.syncSoft(ctx, ns, Scope{}, config.LevelSystem, old, limits)
}

// DeleteSystemLimits removes the namespace's system limits (its
// on_unavailable stays; see SetOnUnavailable) and records it; the soft
// stamps of the buckets whose limits resolved from the system level are
// brought in line, as for a change.
func (c *Controls) DeleteSystemLimits(ctx context.Context, ns, principal string) (Progress, error) {
	defer c.changing()()
	old, _, err := c.store.GetSystemLimits(ctx, ns)
	if err != nil {
		return Progress{}, err
	}
	if err := c.writer.DeleteSystemLimits(ctx, ns); err != nil {
		return Progress{}, err
	}
	if err := c.auditLimits(ctx, ns, SystemTrail, "", "limits_deleted", config.LevelSystem, nil, principal); err != nil {
		return Progress{}, err
	}
	return c.syncSoft(ctx, ns, Scope{}, config.LevelSystem, old, nil)
}

// SetOnUnavailable stores the namespace's on_unavailable, what an acquire
// does when DynamoDB cannot answer: config.OnUnavailableBlock or
// config.OnUnavailableAllow; "" removes it, and limiters fall back to
// their own option. The system limits are kept.
func (c *Controls) SetOnUnavailable(ctx context.Context, ns string, o config.OnUnavailable, principal string) error {
	defer c.changing()()
	if err := c.writer.SetOnUnavailable(ctx, ns, o); err != nil {
		return err
	}
	return c.recordAudit(ctx, ns, SystemTrail, "on_unavailable_set", principal, "", map[string]string{"on_unavailable": string(o)})
}

// SetResourceLimits replaces a resource's limits: the limits of every
// entity on it that has none of its own. As for SetSystemLimits, a change
// of soft-ness reaches the buckets whose limits come from the resource
// before the call returns; new capacities and refill rates reach them
// through the acquires themselves.
func (c *Controls) SetResourceLimits(ctx context.Context, ns, resource string, limits []limit.Limit, principal string) (Progress, error) {
	defer c.changing()()
	old, err := c.resourceEffective(ctx, ns, resource)
	if err != nil {
		return Progress{}, err
	}
	if err := c.writer.SetResourceLimits(ctx, ns, resource, limits); err != nil {
		return Progress{}, err
	}
	if err := c.auditLimits(ctx, ns, auditEntity("", resource), resource, "limits_set", config.LevelResource, limits, principal); err != nil {
		return Progress{}, err
	}
	return c.syncSoft(ctx, ns, Scope{Resource: resource}, config.LevelResource, old, limits)
}

// SetEntityLimits replaces an entity's limits on a resource, or for every
// resource (resource `_default_`), and brings the entity's buckets in that
// scope to what now resolves before it returns (SyncEntity). The entity
// need not exist.
func (c *Controls) SetEntityLimits(ctx context.Context, ns, entity, resource string, limits []limit.Limit, principal string) (Progress, error) {
	defer c.changing()()
	if err := c.writer.SetEntityLimits(ctx, ns, entity, resource, limits); err != nil {
		return Progress{}, err
	}
	if err := c.auditLimits(ctx, ns, entity, resource, "limits_set", config.LevelEntity, limits, principal); err != nil {
		return Progress{}, err
	}
	return c.SyncEntity(ctx, ns, entity, resource)
}

// DeleteEntityLimits deletes an entity's limits on a resource (or its
// `_default_` ones, for every resource): its buckets fall back to the next
// level with limits, and are brought in line before it returns. Its
// access and cascade settings stay.
func (c *Controls) DeleteEntityLimits(ctx context.Context, ns, entity, resource, principal string) (Progress, error) {
	defer c.changing()()
	if err := c.writer.DeleteEntityLimits(ctx, ns, entity, resource); err != nil {
		return Progress{}, err
	}
	if err := c.auditLimits(ctx, ns, entity, resource, "limits_deleted", config.LevelEntity, nil, principal); err != nil {
		return Progress{}, err
	}
	return c.SyncEntity(ctx, ns, entity, resource)
}

// DeleteResourceLimits deletes a resource's limits: its entities fall back
// to the system limits, and the soft stamps of its buckets follow before
// the call returns. Its access and cascade settings stay.
func (c *Controls) DeleteResourceLimits(ctx context.Context, ns, resource, principal string) (Progress, error) {
	defer c.changing()()
	old, err := c.store.GetResourceLimits(ctx, ns, resource)
	if err != nil {
		return Progress{}, err
	}
	if err := c.writer.DeleteResourceLimits(ctx, ns, resource); err != nil {
		return Progress{}, err
	}
	if err := c.auditLimits(ctx, ns, auditEntity("", resource), resource, "limits_deleted", config.LevelResource, nil, principal); err != nil {
		return Progress{}, err
	}
	cur, _, err := c.store.GetSystemLimits(ctx, ns)
	if err != nil {
		return Progress{}, err
	}
	// The buckets now resolve from the system level.
	return c.syncSoft(ctx, ns, Scope{Resource: resource}, config.LevelSystem, old, cur)
}

// resourceEffective is what a resource's buckets resolved from before a
// resource-level change (entity overrides aside): the resource's limits,
// else the system's.
func (c *Controls) resourceEffective(ctx context.Context, ns, resource string) ([]limit.Limit, error) {
	old, err := c.store.GetResourceLimits(ctx, ns, resource)
	if err != nil || len(old) > 0 {
		return old, err
	}
	sys, _, err := c.store.GetSystemLimits(ctx, ns)
	return sys, err
}

// SyncSoft fans out the soft-ness of a resource- or system-level change
// from limits old to cur, when some limit's soft-ness differs: the soft
// stamps of the buckets of sc whose limits resolve from level are set or
// removed from config read uncached, bucket by bucket (docs/design.md §8). The
// limit setters call it after their write; a declarative apply calls it
// after all of its config writes.
func (c *Controls) SyncSoft(ctx context.Context, ns string, sc Scope, level config.Level, old, cur []limit.Limit) (Progress, error) {
	defer c.changing()()
	return c.syncSoft(ctx, ns, sc, level, old, cur)
}

// syncSoft fans out the soft-ness of a resource- or system-level change
// when it changed.
func (c *Controls) syncSoft(ctx context.Context, ns string, sc Scope, level config.Level, old, cur []limit.Limit) (Progress, error) {
	if !softChanged(old, cur) {
		return Progress{}, nil
	}
	return c.stampSoft(ctx, ns, sc, level, old)
}

// StampSoft is SyncSoft without its change test: it re-stamps the soft
// stamps of the buckets of sc whose limits resolve from level (any level
// for config.LevelNone) whether or not a soft-ness changed, and removes the
// stamps of the limits in old that no longer resolve. It finishes a
// fan-out that stopped part way.
func (c *Controls) StampSoft(ctx context.Context, ns string, sc Scope, level config.Level, old []limit.Limit) (Progress, error) {
	defer c.changing()()
	return c.stampSoft(ctx, ns, sc, level, old)
}

// softChanged reports a limit whose soft-ness differs between two sets (a
// limit that is in one set only counts when it is soft there).
func softChanged(old, cur []limit.Limit) bool {
	soft := func(ls []limit.Limit, name string) bool { l, ok := limit.Find(ls, name); return ok && l.Soft }
	for _, l := range cur {
		if l.Soft != soft(old, l.Name) {
			return true
		}
	}
	for _, o := range old {
		if o.Soft != soft(cur, o.Name) {
			return true
		}
	}
	return false
}

// stampSoft sets or removes the soft stamp of every limit of the buckets
// of sc whose limits resolve from level (any level for LevelNone), from
// config read uncached bucket by bucket; the stamps of formerly configured
// limits (old) that no longer resolve are removed. Nothing else moves.
func (c *Controls) stampSoft(ctx context.Context, ns string, sc Scope, level config.Level, old []limit.Limit) (Progress, error) {
	walks := newWalkMemo(c.store.Resolver(), ns)
	return c.fanout(ctx, ns, sc, func(ctx context.Context, id schema.BucketID) (*dynamodb.UpdateItemInput, error) {
		w, err := walks.get(ctx, id.Entity, id.Resource)
		if err != nil {
			return nil, err
		}
		if level != config.LevelNone && w.Source != level {
			return nil, nil // an entity or resource override: not this change's
		}
		var b expr.Builder
		b.Cond("attribute_exists(" + b.Name(schema.AttrPK) + ")")
		deadline := schema.Num(w.ReadAt.Add(c.ttl).UnixMilli())
		for _, l := range w.Limits {
			if l.Soft {
				b.Set(schema.BucketAttr(l.Name, schema.LimitSoft), deadline)
			} else {
				b.Remove(schema.BucketAttr(l.Name, schema.LimitSoft))
			}
		}
		for _, o := range old {
			if _, ok := limit.Find(w.Limits, o.Name); !ok {
				b.Remove(schema.BucketAttr(o.Name, schema.LimitSoft))
			}
		}
		if b.Update() == "" {
			return nil, nil
		}
		in := b.UpdateInput(c.table, id.Key())
		in.ReturnValues = types.ReturnValueNone
		return in, nil
	})
}

// SyncEntity is the entity parameter sync: every bucket of the entity in
// scope (resource `_default_`: all of its buckets) is brought to the limits
// that now resolve for the bucket's own resource: the capacity and refill
// of the limits it carries, their soft stamps (a deadline StampTTL after
// the read), their schedules and reset schedules with the item's zone, and
// the limits no longer configured removed. A bucket is kept
// while its limits come from the entity, and expires when idle again once
// they come from the resource or the system. Its validity deadline is
// cleared (docs/design.md §4), so that its next acquire brings the
// balances in line: a balance above a lowered capacity trimmed, a new
// limit started full. The balances and consumption counters of the limits
// still configured are untouched. SetEntityLimits and DeleteEntityLimits
// call it; it also finishes a sync that stopped part way.
func (c *Controls) SyncEntity(ctx context.Context, ns, entity, resource string) (Progress, error) {
	defer c.changing()()
	walks := newWalkMemo(c.store.Resolver(), ns)
	return c.fanout(ctx, ns, Scope{Entity: entity, Resource: resource}, func(ctx context.Context, id schema.BucketID) (*dynamodb.UpdateItemInput, error) {
		out, err := c.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(c.table), Key: id.Key().AttributeValues(), ConsistentRead: aws.Bool(true)})
		if err != nil {
			return nil, err
		}
		if len(out.Item) == 0 {
			return nil, nil // gone: nothing to sync
		}
		img, err := bucketitem.Decode(out.Item)
		if err != nil {
			return nil, err
		}
		w, err := walks.get(ctx, id.Entity, id.Resource)
		if err != nil {
			return nil, err
		}
		var b expr.Builder
		b.Cond("attribute_exists(" + b.Name(schema.AttrPK) + ")")
		deadline := schema.Num(w.ReadAt.Add(c.ttl).UnixMilli())
		for _, l := range w.Limits {
			li := img.Limit(l.Name)
			if li == nil {
				continue // not on the bucket: its next slow pass seeds it
			}
			if p := l.Params(); li.Params() != p {
				b.Set(schema.BucketAttr(l.Name, schema.LimitCapacity), schema.Num(p.Capacity))
				b.Set(schema.BucketAttr(l.Name, schema.LimitRefillAmount), schema.Num(p.RefillAmount))
				b.Set(schema.BucketAttr(l.Name, schema.LimitRefillPeriod), schema.Num(p.RefillPeriod))
			}
			switch {
			case l.Soft:
				b.Set(schema.BucketAttr(l.Name, schema.LimitSoft), deadline)
			case li.Soft.Present:
				b.Remove(schema.BucketAttr(l.Name, schema.LimitSoft))
			}
		}
		for _, set := range [][]bucketitem.LimitImage{img.Limits, img.Partial} {
			for i := range set {
				if _, ok := limit.Find(w.Limits, set[i].Name); ok {
					continue
				}
				for attr := range out.Item {
					if n, _, ok := schema.ParseBucketAttr(attr); ok && n == set[i].Name {
						b.Remove(attr)
					}
				}
			}
		}
		// Schedules and reset schedules follow the limits they belong to
		// (docs/design.md §14, §15), so that no writer reading the item —
		// the aggregator's refill above all — applies the old ones.
		var present []limit.Limit
		for _, l := range w.Limits {
			if img.Limit(l.Name) != nil {
				present = append(present, l)
			}
		}
		schedsync.Write(&b, &img, present)
		b.Set(schema.AttrVU, schema.Num(0))
		entityLevel := w.Source == config.LevelEntity || w.Source == config.LevelEntityDefault
		switch {
		case entityLevel && img.HasTTL:
			b.Remove(schema.AttrTTL)
		case !entityLevel && !img.HasTTL && c.ttlMult > 0:
			// Back to resource or system limits: the bucket expires when
			// idle again, as the limiter writes it (docs/design.md §2).
			var horizon int64
			for _, l := range w.Limits {
				horizon = max(horizon, l.RecoverySeconds(w.ReadAt))
			}
			b.Set(schema.AttrTTL, schema.Num(w.ReadAt.Unix()+horizon*c.ttlMult))
		}
		in := b.UpdateInput(c.table, id.Key())
		in.ReturnValues = types.ReturnValueNone
		return in, nil
	})
}

// auditLimits records a limits change.
func (c *Controls) auditLimits(ctx context.Context, ns, entity, resource, action string, level config.Level, limits []limit.Limit, principal string) error {
	parts := make([]string, 0, len(limits))
	for _, l := range limits {
		parts = append(parts, l.String())
	}
	if level == config.LevelEntity && resource == schema.DefaultResource {
		level = config.LevelEntityDefault
	}
	return c.recordAudit(ctx, ns, entity, action, principal, resource, map[string]string{
		"level": level.String(), "limits": strings.Join(parts, ", "),
	})
}
