package control

import (
	"context"
	"slices"
	"strings"

	"github.com/zae-limiter/zae-limiter-go/core/config"
	"github.com/zae-limiter/zae-limiter-go/core/limit"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
)

// The limit setters store a level's limits through the config store (soft
// limits after the version gate), record the change, and bring the buckets
// already in use in line before they return (SyncLimits, docs/design.md
// §8): every bucket whose limits resolve through the level changed — an
// entity's on the resource, an entity's for every resource, a resource's,
// the whole namespace's for the system level — takes the limits that now
// resolve for it, from the change's instant on. A deleted level counts as
// a change: its buckets fall back to the next level with limits.

// SetSystemLimits replaces the namespace's system limits, the limits of
// every entity and resource that no other level gives limits to, and, when
// opts sets it, its on_unavailable. Every bucket of the namespace whose
// limits come from the system level is brought to the new limits before
// the call returns.
func (c *Controls) SetSystemLimits(ctx context.Context, ns string, limits []limit.Limit, opts config.SystemOptions, principal string) (Progress, error) {
	defer c.changing()()
	if err := c.writer.SetSystemLimits(ctx, ns, limits, opts); err != nil {
		return Progress{}, err
	}
	if err := c.auditLimits(ctx, ns, SystemTrail, "", "limits_set", config.LevelSystem, limits, principal); err != nil {
		return Progress{}, err
	}
	return c.syncLimits(ctx, ns, Scope{})
}

// DeleteSystemLimits removes the namespace's system limits (its
// on_unavailable stays; see SetOnUnavailable) and records it; the buckets
// whose limits came from the system level lose them before the call
// returns.
func (c *Controls) DeleteSystemLimits(ctx context.Context, ns, principal string) (Progress, error) {
	defer c.changing()()
	if err := c.writer.DeleteSystemLimits(ctx, ns); err != nil {
		return Progress{}, err
	}
	if err := c.auditLimits(ctx, ns, SystemTrail, "", "limits_deleted", config.LevelSystem, nil, principal); err != nil {
		return Progress{}, err
	}
	return c.syncLimits(ctx, ns, Scope{})
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
// entity on it that has none of its own. Every bucket of the resource whose
// limits come from the resource level is brought to the new limits before
// the call returns; an entity's own limits are left alone.
func (c *Controls) SetResourceLimits(ctx context.Context, ns, resource string, limits []limit.Limit, principal string) (Progress, error) {
	defer c.changing()()
	if err := c.writer.SetResourceLimits(ctx, ns, resource, limits); err != nil {
		return Progress{}, err
	}
	if err := c.auditLimits(ctx, ns, auditEntity("", resource), resource, "limits_set", config.LevelResource, limits, principal); err != nil {
		return Progress{}, err
	}
	return c.syncLimits(ctx, ns, Scope{Resource: resource})
}

// SetEntityLimits replaces an entity's limits on a resource, or for every
// resource (resource `_default_`), and brings the entity's buckets in that
// scope to what now resolves before it returns. The limits replace, not
// merge: the first level with limits is the whole answer (docs/design.md
// §7), so a limit the resource or the system gives and limits lacks no
// longer applies to the entity (ReplacedLimits says which). The entity
// need not exist.
func (c *Controls) SetEntityLimits(ctx context.Context, ns, entity, resource string, limits []limit.Limit, principal string) (Progress, error) {
	defer c.changing()()
	if err := c.writer.SetEntityLimits(ctx, ns, entity, resource, limits); err != nil {
		return Progress{}, err
	}
	if err := c.auditLimits(ctx, ns, entity, resource, "limits_set", config.LevelEntity, limits, principal); err != nil {
		return Progress{}, err
	}
	return c.syncLimits(ctx, ns, Scope{Entity: entity, Resource: resource})
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
	return c.syncLimits(ctx, ns, Scope{Entity: entity, Resource: resource})
}

// DeleteResourceLimits deletes a resource's limits: its entities fall back
// to the system limits, and its buckets follow before the call returns.
// Its access and cascade settings stay.
func (c *Controls) DeleteResourceLimits(ctx context.Context, ns, resource, principal string) (Progress, error) {
	defer c.changing()()
	if err := c.writer.DeleteResourceLimits(ctx, ns, resource); err != nil {
		return Progress{}, err
	}
	if err := c.auditLimits(ctx, ns, auditEntity("", resource), resource, "limits_deleted", config.LevelResource, nil, principal); err != nil {
		return Progress{}, err
	}
	return c.syncLimits(ctx, ns, Scope{Resource: resource})
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

// Replaced is a limit set an entity-level set of limits takes the place of
// for the entity (docs/design.md §7: the first level with limits is the
// whole answer, so an entity's own limits replace, never add to, the
// levels below them).
type Replaced struct {
	// Resource is the resource the replaced limits apply on; "" for the
	// system level's, which apply on every resource without limits of its
	// own.
	Resource string
	// Level is the level they come from: config.LevelEntityDefault,
	// config.LevelResource or config.LevelSystem.
	Level config.Level
	// Limits are the names that level gives that the new set lacks: they
	// no longer apply to the entity there, and an acquire that names one
	// is refused (limiter.LimitNotConfiguredError).
	Limits []string
}

// ReplacedLimits says what SetEntityLimits(ns, entity, resource, limits)
// would take away from the entity: for a resource, the names the level
// below (the entity's `_default_`, the resource, the system) gives that
// limits lacks; for `_default_`, the same for each resource with limits of
// its own the entity has no config on, and for the system level. Nothing
// is written; an operator's tool shows it before or after the set.
func (c *Controls) ReplacedLimits(ctx context.Context, ns, entity, resource string, limits []limit.Limit) ([]Replaced, error) {
	lacks := func(below []limit.Limit) []string {
		var out []string
		for _, l := range below {
			if _, ok := limit.Find(limits, l.Name); !ok {
				out = append(out, l.Name)
			}
		}
		return out
	}
	var out []Replaced
	add := func(res string, level config.Level, below []limit.Limit) {
		if names := lacks(below); len(names) > 0 {
			out = append(out, Replaced{Resource: res, Level: level, Limits: names})
		}
	}
	system, _, err := c.store.GetSystemLimits(ctx, ns)
	if err != nil {
		return nil, err
	}
	if resource != schema.DefaultResource {
		if own, err := c.store.GetEntityLimits(ctx, ns, entity, schema.DefaultResource); err != nil {
			return nil, err
		} else if len(own) > 0 {
			add(resource, config.LevelEntityDefault, own)
			return out, nil
		}
		if res, err := c.store.GetResourceLimits(ctx, ns, resource); err != nil {
			return nil, err
		} else if len(res) > 0 {
			add(resource, config.LevelResource, res)
			return out, nil
		}
		add(resource, config.LevelSystem, system)
		return out, nil
	}
	own, err := c.store.EntityConfigs(ctx, ns, entity)
	if err != nil {
		return nil, err
	}
	resources, err := c.store.ListResources(ctx, ns)
	if err != nil {
		return nil, err
	}
	for _, r := range resources {
		if !r.OwnConfig || slices.ContainsFunc(own, func(ec config.EntityConfig) bool { return ec.Resource == r.Name && len(ec.Limits) > 0 }) {
			continue
		}
		res, err := c.store.GetResourceLimits(ctx, ns, r.Name)
		if err != nil {
			return nil, err
		}
		add(r.Name, config.LevelResource, res)
	}
	add("", config.LevelSystem, system)
	return out, nil
}
