package provision

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/config"
	"github.com/zae-limiter/zae-limiter-go/core/limit"
	"github.com/zae-limiter/zae-limiter-go/core/manifest"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
)

// Action is what an apply does to a target.
type Action string

// The three actions.
const (
	ActionCreate Action = "create"
	ActionUpdate Action = "update"
	ActionDelete Action = "delete"
)

// Change is one planned change: a target that this apply starts managing
// (create), whose config differs from the manifest (update), or that it
// stops managing (delete).
type Change struct {
	Action Action
	Target manifest.Target
	// What lists what differs, e.g. `limits`, `disabled: inherit → bypass`.
	What []string

	cur, want config.Config
	// write is true when the config item must be written.
	write bool
	// limits, access, cascade, onUnavailable: which parts change.
	limits, access, cascade, onUnavailable bool
	// pending is a fan-out an earlier apply owes.
	pending bool
}

// String is the change as a plan prints it.
func (c Change) String() string {
	s := string(c.Action) + " " + string(c.Target.Kind) + " " + c.Target.String()
	if len(c.What) > 0 {
		s += " (" + strings.Join(c.What, ", ") + ")"
	}
	return s
}

// Plan is what an apply of a manifest to a namespace would do.
type Plan struct {
	Namespace string
	Manifest  *manifest.Manifest
	// Changes are in apply order: system, resources, entities, by name.
	Changes []Change
	// Unchanged counts managed targets whose config already matches.
	Unchanged int
	// Previous is the state record the plan was made against.
	Previous State
	// Hash is the manifest's hash.
	Hash string

	systemBefore []limit.Limit
	reconcile    []manifest.Target // pending fan-outs with no change
}

// Empty reports a plan with nothing to write: no change and the state
// record already describing the manifest.
func (pl *Plan) Empty() bool {
	return len(pl.Changes) == 0 && len(pl.reconcile) == 0 && pl.Previous.Found &&
		pl.Previous.AppliedHash == pl.Hash && sameManaged(pl.Previous, stateOf(pl.Manifest.Targets()))
}

// RefusedItemError reports a managed config item an apply must not
// rewrite: it carries the config merge attributes (docs/decisions.md, D15),
// whose meaning a replacement would silently change. Nothing was written.
type RefusedItemError struct {
	Target manifest.Target
	Err    error
}

// Error implements error.
func (e *RefusedItemError) Error() string {
	return fmt.Sprintf("provision: %s %s: %v", e.Target.Kind, e.Target, e.Err)
}

// Unwrap returns the reason.
func (e *RefusedItemError) Unwrap() error { return e.Err }

// Plan computes the changes applying m to namespace ns would make, reading
// the state record and every target's config item strongly consistently. It
// writes nothing.
func (p *Provisioner) Plan(ctx context.Context, ns string, m *manifest.Manifest) (*Plan, error) {
	if err := schema.ValidateNamespaceID(ns); err != nil {
		return nil, err
	}
	prev, err := p.ReadState(ctx, ns)
	if err != nil {
		return nil, err
	}
	pl := &Plan{Namespace: ns, Manifest: m, Previous: prev, Hash: m.Hash()}

	managed := map[manifest.Target]bool{}
	for _, t := range prev.Targets() {
		managed[t] = true
	}
	pending := map[manifest.Target]bool{}
	for _, t := range prev.Pending {
		pending[t] = true
	}
	wanted := m.Targets()
	all := slices.Clone(wanted)
	inManifest := map[manifest.Target]bool{}
	for _, t := range wanted {
		inManifest[t] = true
	}
	for _, t := range prev.Targets() {
		if !inManifest[t] {
			all = append(all, t)
		}
	}
	for _, t := range prev.Pending {
		if !inManifest[t] && !managed[t] {
			all = append(all, t)
		}
	}
	sortTargets(all)

	keys := make([]schema.Key, 0, len(all)+1)
	keys = append(keys, schema.SystemConfigKey(ns))
	for _, t := range all {
		keys = append(keys, targetKey(ns, t))
	}
	items, err := p.store.ReadItems(ctx, dedupKeys(keys))
	if err != nil {
		return nil, fmt.Errorf("provision: read config: %w", err)
	}
	sys, err := decode(config.LevelSystem, items[schema.SystemConfigKey(ns)])
	if err == nil {
		pl.systemBefore = sys.Limits
	}

	for _, t := range all {
		cur, derr := decode(levelOf(t), items[targetKey(ns, t)])
		if derr != nil && hasMergeAttrs(items[targetKey(ns, t)]) {
			return nil, &RefusedItemError{Target: t, Err: derr}
		}
		unsupported := derr != nil
		want, inM := m.Desired(t)
		c := Change{Target: t, cur: cur, want: want, pending: pending[t]}
		if inM {
			c.limits = unsupported || !slices.Equal(cur.Limits, want.Limits)
			c.access = cur.Disabled != want.Disabled
			c.cascade = cur.Cascade != want.Cascade
			c.onUnavailable = want.OnUnavailable != "" && cur.OnUnavailable != want.OnUnavailable
			c.write = c.limits || c.access || c.cascade || c.onUnavailable
			switch {
			case !managed[t]:
				c.Action = ActionCreate
			case c.write:
				c.Action = ActionUpdate
			}
		} else if managed[t] {
			c.Action = ActionDelete
			c.want = config.Config{}
			c.limits = unsupported || len(cur.Limits) > 0
			c.access = cur.Disabled != config.AccessInherit
			c.cascade = cur.Cascade != config.CascadeUnset
			c.write = c.limits || c.access || c.cascade
		}
		c.What = describeChange(c)
		switch {
		case c.Action != "":
			pl.Changes = append(pl.Changes, c)
		case c.pending:
			pl.reconcile = append(pl.reconcile, t)
			if inM {
				pl.Unchanged++
			}
		case inM:
			pl.Unchanged++
		}
	}
	return pl, nil
}

// decode decodes a config item (nil: absent). An unsupported item decodes
// to its access and cascade settings with the error.
func decode(level config.Level, it map[string]types.AttributeValue) (config.Config, error) {
	if it == nil {
		return config.Config{}, nil
	}
	d, err := config.DecodeConfigItem(level, it)
	return d.Config, err
}

func hasMergeAttrs(it map[string]types.AttributeValue) bool {
	for a := range it {
		if a == config.AttrInheritLimits || a == config.AttrExcludeLimits || a == config.AttrPatchLimits ||
			strings.HasPrefix(a, config.PatchAttrPrefix) {
			return true
		}
	}
	return false
}

func levelOf(t manifest.Target) config.Level {
	switch {
	case t.Kind == manifest.KindSystem:
		return config.LevelSystem
	case t.Kind == manifest.KindResource:
		return config.LevelResource
	case t.Resource == schema.DefaultResource:
		return config.LevelEntityDefault
	default:
		return config.LevelEntity
	}
}

func targetKey(ns string, t manifest.Target) schema.Key {
	switch t.Kind {
	case manifest.KindSystem:
		return schema.SystemConfigKey(ns)
	case manifest.KindResource:
		return schema.ResourceConfigKey(ns, t.Resource)
	default:
		return schema.EntityConfigKey(ns, t.Entity, t.Resource)
	}
}

func dedupKeys(keys []schema.Key) []schema.Key {
	seen := make(map[schema.Key]bool, len(keys))
	out := keys[:0]
	for _, k := range keys {
		if !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	return out
}

func describeChange(c Change) []string {
	var w []string
	if c.limits {
		w = append(w, "limits")
	}
	if c.access {
		w = append(w, "disabled: "+c.cur.Disabled.String()+" → "+c.want.Disabled.String())
	}
	if c.cascade {
		w = append(w, "cascade: "+c.cur.Cascade.String()+" → "+c.want.Cascade.String())
	}
	if c.onUnavailable {
		w = append(w, "on_unavailable: "+orUnset(string(c.cur.OnUnavailable))+" → "+string(c.want.OnUnavailable))
	}
	if c.pending {
		w = append(w, "owed fan-out")
	}
	return w
}

func orUnset(s string) string {
	if s == "" {
		return "unset"
	}
	return s
}

// errNoManifest guards Apply against a nil manifest.
var errNoManifest = errors.New("provision: no manifest")
