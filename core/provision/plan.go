package provision

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/config"
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
	// Action is what the apply does to the target.
	Action Action
	// Target is the target changed.
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
	// restore: the target goes back to the config it had before this
	// owner took it (want is that config; rawPrior the item, when it does
	// not decode), and its claim to the owner it was taken from.
	restore  bool
	rawPrior map[string]types.AttributeValue
}

// String is the change as a plan prints it.
func (c Change) String() string {
	s := string(c.Action) + " " + string(c.Target.Kind) + " " + c.Target.String()
	if len(c.What) > 0 {
		s += " (" + strings.Join(c.What, ", ") + ")"
	}
	return s
}

// Before is the target's config as the plan read it: the zero Config when
// the target has no config item (or an item that does not decode, whose
// access and cascade settings are kept).
func (c Change) Before() config.Config { return c.cur }

// After is the config the apply leaves on the target: the manifest's for a
// create or an update; for a delete, the config the target had before this
// owner took it, or the zero Config when the item is removed.
func (c Change) After() config.Config { return c.want }

// Plan is what an apply of a manifest to a namespace would do.
type Plan struct {
	// Namespace is the namespace's id.
	Namespace string
	// Manifest is the manifest planned.
	Manifest *manifest.Manifest
	// Request is who applies it, and how.
	Request Request
	// Changes are in apply order: system, resources, entities, by name.
	Changes []Change
	// Unchanged counts held targets whose config already matches.
	Unchanged int
	// Previous is what the owner held when the plan was made.
	Previous State
	// Hash is the manifest's hash.
	Hash string
	// TakenOver are the targets this apply takes from other owners (a
	// resource of the same stack, or one TakeOverFrom names).
	TakenOver []Conflict

	reconcile []manifest.Target // owed fan-outs with no change
	claims    map[manifest.Target]claim
	items     map[schema.Key]map[string]types.AttributeValue
	legacy    legacyState
	release   bool
}

// Empty reports a plan with nothing to write: no change, no owed work, no
// claim to take, and the owner record already describing the manifest.
func (pl *Plan) Empty() bool {
	if len(pl.Changes) > 0 || len(pl.reconcile) > 0 || len(pl.TakenOver) > 0 || pl.release {
		return false
	}
	prev := pl.Previous
	if !prev.Found || prev.Applying || prev.AppliedHash != pl.Hash || prev.MovingTo != "" || prev.PhysicalID != pl.Request.PhysicalID {
		return false
	}
	if !slices.Equal(prev.AllowTakeOverBy, pl.Request.allowTakeOverKeys()) {
		return false // the owner record's consent changes
	}
	if pl.legacy.found && pl.Request.AdoptLegacy {
		return false
	}
	me := pl.Request.Owner.Key()
	for _, t := range pl.Manifest.Targets() {
		c, ok := pl.claims[t]
		if !ok || c.owner != me || !c.stored {
			return false
		}
	}
	return true
}

// RefusedItemError reports a target whose stored config an apply must not
// rewrite: it carries the config merge attributes of upstream's ADR-143
// (docs/compatibility.md; refused, docs/decisions.md P12), whose meaning a
// replacement would silently change. Nothing was written.
type RefusedItemError struct {
	// Target is the target refused.
	Target manifest.Target
	// Err is the reason (a *config.UnsupportedConfigError).
	Err error
}

// Error implements error.
func (e *RefusedItemError) Error() string {
	return fmt.Sprintf("provision: %s %s: %v", e.Target.Kind, e.Target, e.Err)
}

// Unwrap returns the reason.
func (e *RefusedItemError) Unwrap() error { return e.Err }

// Plan computes the changes applying m to namespace ns for req.Owner would
// make, reading the owner's record, the namespace's claims, an earlier
// provisioner's state record and every target's config strongly
// consistently. It writes nothing. A target another owner holds is an
// *OwnershipError unless req may take it over.
func (p *Provisioner) Plan(ctx context.Context, ns string, m *manifest.Manifest, req Request) (*Plan, error) {
	if m == nil {
		return nil, errNoManifest
	}
	return p.plan(ctx, ns, m, req, false)
}

func (p *Provisioner) plan(ctx context.Context, ns string, m *manifest.Manifest, req Request, release bool) (*Plan, error) {
	if err := schema.ValidateNamespaceID(ns); err != nil {
		return nil, err
	}
	if err := req.validate(); err != nil {
		return nil, err
	}
	me := req.Owner.Key()
	prev, err := p.readOwner(ctx, ns, me)
	if err != nil {
		return nil, err
	}
	if !release && prev.stackMismatch(req.Owner) {
		return nil, &StackMismatchError{Namespace: ns, Owner: req.Owner, Recorded: prev.StackID}
	}
	claims, err := p.readClaims(ctx, ns)
	if err != nil {
		return nil, err
	}
	legacy, err := p.readLegacy(ctx, ns)
	if err != nil {
		return nil, err
	}
	// An earlier provisioner's targets that no claim holds are held by the
	// legacy owner, or by this one when it adopts them.
	legacyPending := map[manifest.Target]bool{}
	for _, t := range legacy.pending {
		legacyPending[t] = true
	}
	for _, t := range legacy.targets {
		if _, held := claims[t]; held {
			continue
		}
		if req.AdoptLegacy {
			claims[t] = claim{owner: me, pending: legacyPending[t]}
		} else {
			claims[t] = claim{owner: LegacyOwnerKey}
		}
	}
	pl := &Plan{Namespace: ns, Manifest: m, Request: req, Hash: m.Hash(), claims: claims, legacy: legacy, release: release}

	// What the owner holds, and what the manifest names that others hold.
	var conflicts []Conflict
	wanted := m.Targets()
	inManifest := map[manifest.Target]bool{}
	holders := map[string]State{}
	for _, t := range wanted {
		inManifest[t] = true
		c, held := claims[t]
		if !held || c.owner == me {
			continue
		}
		holder, read := holders[c.owner]
		if !read && c.owner != LegacyOwnerKey {
			if holder, err = p.readOwner(ctx, ns, c.owner); err != nil {
				return nil, err
			}
			holders[c.owner] = holder
		}
		if ok, why := req.mayTakeOver(c.owner, holder); ok {
			pl.TakenOver = append(pl.TakenOver, Conflict{Target: t, Owner: c.owner, Holder: describeOwner(c.owner, holder.StackID)})
		} else {
			conflicts = append(conflicts, Conflict{Target: t, Owner: c.owner, Holder: describeOwner(c.owner, holder.StackID), Why: why})
		}
	}
	if len(conflicts) > 0 {
		return nil, &OwnershipError{Namespace: ns, Conflicts: conflicts}
	}
	all := slices.Clone(wanted)
	for t, c := range claims {
		if c.owner != me {
			continue
		}
		prev.Targets = append(prev.Targets, t)
		if c.pending {
			prev.Pending = append(prev.Pending, t)
		}
		if !inManifest[t] {
			all = append(all, t)
		}
	}
	sortTargets(prev.Targets)
	sortTargets(prev.Pending)
	sortTargets(all)
	pl.Previous = prev

	keys := make([]schema.Key, 0, len(all)+1)
	keys = append(keys, schema.SystemConfigKey(ns))
	for _, t := range all {
		keys = append(keys, targetKey(ns, t))
	}
	items, err := p.store.ReadItems(ctx, dedupKeys(keys))
	if err != nil {
		return nil, fmt.Errorf("provision: read config: %w", err)
	}
	pl.items = items

	for _, t := range all {
		item := items[targetKey(ns, t)]
		cur, derr := decode(levelOf(t), item)
		if derr != nil && hasMergeAttrs(item) {
			return nil, &RefusedItemError{Target: t, Err: derr}
		}
		cl := claims[t]
		held := cl.owner == me
		// An apply that did not commit owes every fan-out of what it held
		// and named: its retry may find a target's config already as it
		// wants it, written by the pass that did not fan it out. A release
		// does not: a target it leaves as it is now was not changed by the
		// pass that failed (what that pass wrote differs from what the
		// release restores, and is written and fanned out again), so its
		// work grows with what the failed pass wrote, not with the
		// manifest (docs/design.md §12).
		owed := (held && cl.pending) || (!release && prev.Applying && (held || inManifest[t]))
		want, inM := m.Desired(t)
		c := Change{Target: t, cur: cur, pending: owed}
		switch {
		case inM:
			c.want = want
			diffConfig(&c, derr != nil)
			switch {
			case !held:
				c.Action = ActionCreate
			case c.write:
				c.Action = ActionUpdate
			}
		case held:
			c.Action = ActionDelete
			if cl.from != "" || cl.prior != nil {
				// Back to what it was before this owner took it: the
				// owner releases only what it wrote (docs/decisions.md
				// P40).
				c.restore = true
				if cl.prior != nil {
					prior, perr := decode(levelOf(t), cl.prior)
					if perr != nil {
						c.rawPrior = cl.prior
					}
					c.want = prior
				}
			}
			diffConfig(&c, derr != nil)
			// An item left behind by a delete that was cut half-way (its
			// settings gone, its identity and registry entry not) is
			// deleted too.
			if c.rawPrior != nil || (!c.restore && item != nil) {
				c.write = true
			}
		}
		c.What = describeChange(c)
		switch {
		case c.Action != "":
			pl.Changes = append(pl.Changes, c)
		case c.pending:
			pl.reconcile = append(pl.reconcile, t)
			pl.Unchanged++
		default:
			pl.Unchanged++
		}
	}
	return pl, nil
}

// diffConfig sets which parts of c's config change from cur to want. An
// unsupported current item (unsupported) is rewritten whole.
func diffConfig(c *Change, unsupported bool) {
	cur, want := c.cur, c.want
	c.limits = unsupported || !slices.Equal(cur.Limits, want.Limits)
	c.access = cur.Disabled != want.Disabled
	c.cascade = cur.Cascade != want.Cascade
	// The owner of the system target owns its on_unavailable as it owns
	// access and cascade: a manifest without one clears it, and a release
	// takes it back to the prior image (none: cleared).
	c.onUnavailable = cur.OnUnavailable != want.OnUnavailable
	c.write = c.limits || c.access || c.cascade || c.onUnavailable
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
		w = append(w, "on_unavailable: "+orUnset(string(c.cur.OnUnavailable))+" → "+orUnset(string(c.want.OnUnavailable)))
	}
	if c.restore {
		w = append(w, "restored as it was before this owner took it")
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
