package provision

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/zae-limiter/zae-limiter-go/core/config"
	"github.com/zae-limiter/zae-limiter-go/core/control"
	"github.com/zae-limiter/zae-limiter-go/core/limit"
	"github.com/zae-limiter/zae-limiter-go/core/manifest"
)

// Result is what an apply did.
type Result struct {
	Namespace string
	// Changes are the plan's changes, in apply order.
	Changes []Change
	// Created, Updated and Deleted count the changes by action.
	Created, Updated, Deleted int
	// Errors are problems after the config was written (fan-outs, audit):
	// the config is in place, and the next apply finishes the owed work.
	Errors []string
	// AppliedHash is the manifest hash recorded in the state record.
	AppliedHash string
	// StateWritten is false when the apply wrote nothing at all: the
	// manifest was already applied.
	StateWritten bool
}

// ConfigWriteError reports an apply that stopped at a config write. The
// writes before it stand; the state record now also manages every target
// of the manifest (so that applying the previous manifest removes what this
// one created) and owes their fan-outs. Applying again finishes the job.
type ConfigWriteError struct {
	Target manifest.Target
	Err    error
}

// Error implements error.
func (e *ConfigWriteError) Error() string {
	return fmt.Sprintf("provision: write %s %s: %v", e.Target.Kind, e.Target, e.Err)
}

// Unwrap returns the write's error.
func (e *ConfigWriteError) Unwrap() error { return e.Err }

// Apply plans and applies m to namespace ns; principal is recorded in the
// audit trail. Errors before any write (a refused item, the version gate)
// and a failed config or state write are returned; problems after the
// config is written are in Result.Errors.
func (p *Provisioner) Apply(ctx context.Context, ns string, m *manifest.Manifest, principal string) (*Result, error) {
	if m == nil {
		return nil, errNoManifest
	}
	pl, err := p.Plan(ctx, ns, m)
	if err != nil {
		return nil, err
	}
	return p.ApplyPlan(ctx, pl, principal)
}

// ApplyPlan applies a plan made by Plan (docs/design.md §12 gives the order).
func (p *Provisioner) ApplyPlan(ctx context.Context, pl *Plan, principal string) (*Result, error) {
	res := &Result{Namespace: pl.Namespace, Changes: pl.Changes, AppliedHash: pl.Hash}
	for _, c := range pl.Changes {
		switch c.Action {
		case ActionCreate:
			res.Created++
		case ActionUpdate:
			res.Updated++
		case ActionDelete:
			res.Deleted++
		}
	}
	if pl.Empty() {
		return res, nil
	}
	ns, m := pl.Namespace, pl.Manifest
	var writes []Change
	for _, c := range pl.Changes {
		if c.write {
			writes = append(writes, c)
		}
	}

	// 1. The version gate, before any write.
	need := m.ReadersNeeded()
	if len(writes) > 0 && need != "" {
		if err := p.store.RequireReaders(ctx, need); err != nil {
			return nil, fmt.Errorf("provision: %w", err)
		}
	}

	// 2. Config writes: system, resources, entities; within a kind the
	// creates and updates, then the deletes.
	owed := map[manifest.Target]bool{}
	for _, t := range pl.reconcile {
		owed[t] = true
	}
	for _, c := range pl.Changes {
		if c.pending {
			owed[c.Target] = true
		}
	}
	for _, c := range writeOrder(writes) {
		owed[c.Target] = true
		if err := p.writeTarget(ctx, ns, c); err != nil {
			p.recordFailure(ctx, pl, owed)
			return nil, &ConfigWriteError{Target: c.Target, Err: err}
		}
	}
	if len(writes) > 0 && need != "" {
		if err := p.store.Ratchet(ctx, need); err != nil {
			res.Errors = append(res.Errors, "ratchet client_min_version: "+err.Error())
		}
	}
	for _, c := range writes {
		if err := p.audit(ctx, ns, c, principal); err != nil {
			res.Errors = append(res.Errors, fmt.Sprintf("audit %s %s: %v", c.Target.Kind, c.Target, err))
		}
	}

	// 3–6. Fan-outs. A target whose work fails stays owed.
	failed := map[manifest.Target]bool{}
	var mu sync.Mutex
	fail := func(what string, t manifest.Target, err error) {
		mu.Lock()
		defer mu.Unlock()
		failed[t] = true
		res.Errors = append(res.Errors, fmt.Sprintf("%s %s %s: %v", what, t.Kind, t, err))
	}
	work := p.postCommit(pl)
	for _, phase := range work {
		p.each(ctx, phase.changes, func(ctx context.Context, c Change) {
			if err := phase.run(ctx, c); err != nil {
				fail(phase.name, c.Target, err)
			}
		})
	}

	// 7. The state record, last.
	st := stateOf(m.Targets())
	st.AppliedHash = pl.Hash
	for t := range failed {
		st.Pending = append(st.Pending, t)
	}
	if err := p.writeState(ctx, ns, st); err != nil {
		return nil, err
	}
	res.StateWritten = true
	p.log.Info("provision: applied", "namespace", ns, "created", res.Created, "updated", res.Updated,
		"deleted", res.Deleted, "errors", len(res.Errors), "hash", pl.Hash)
	return res, nil
}

// recordFailure writes the state record after a failed config write: it
// manages the previous targets and the manifest's, keeps the previous hash,
// and owes every fan-out not yet run.
func (p *Provisioner) recordFailure(ctx context.Context, pl *Plan, owed map[manifest.Target]bool) {
	ts := append(pl.Previous.Targets(), pl.Manifest.Targets()...)
	st := stateOf(ts)
	st.AppliedHash = pl.Previous.AppliedHash
	for t := range owed {
		st.Pending = append(st.Pending, t)
	}
	if err := p.writeState(ctx, pl.Namespace, st); err != nil {
		p.log.Error("provision: state record after a failed write", "namespace", pl.Namespace, "error", err)
	}
}

// writeOrder orders config writes: system first, then resources, then
// entities, each kind's creates and updates before its deletes.
func writeOrder(cs []Change) []Change {
	out := make([]Change, 0, len(cs))
	for _, k := range []manifest.Kind{manifest.KindSystem, manifest.KindResource, manifest.KindEntity} {
		for _, del := range []bool{false, true} {
			for _, c := range cs {
				if c.Target.Kind == k && (c.Action == ActionDelete) == del {
					out = append(out, c)
				}
			}
		}
	}
	return out
}

// writeTarget writes one target's config through the core setters, so the
// item has the shape every writer gives it (docs/design.md §7).
func (p *Provisioner) writeTarget(ctx context.Context, ns string, c Change) error {
	t, s := c.Target, p.store
	entity := t.Entity // "" for a resource
	setLimits := func() error {
		if len(c.want.Limits) == 0 {
			return p.deleteLimits(ctx, ns, t)
		}
		switch t.Kind {
		case manifest.KindSystem:
			return s.SetSystemLimits(ctx, ns, c.want.Limits, config.SystemOptions{})
		case manifest.KindResource:
			return s.SetResourceLimits(ctx, ns, t.Resource, c.want.Limits)
		default:
			return s.SetEntityLimits(ctx, ns, t.Entity, t.Resource, c.want.Limits)
		}
	}
	if c.Action != ActionDelete && c.limits {
		if err := setLimits(); err != nil {
			return err
		}
	}
	if c.access {
		if err := s.SetAccess(ctx, ns, entity, t.Resource, c.want.Disabled); err != nil {
			return err
		}
	}
	if c.cascade {
		if err := s.SetCascade(ctx, ns, entity, t.Resource, c.want.Cascade); err != nil {
			return err
		}
	}
	if c.onUnavailable {
		if err := s.SetOnUnavailable(ctx, ns, c.want.OnUnavailable); err != nil {
			return err
		}
	}
	if c.Action == ActionDelete || emptyConfig(c.want) {
		// Last, so that an item left with nothing but its identity is
		// deleted with its registry entry.
		return p.deleteLimits(ctx, ns, t)
	}
	return nil
}

func emptyConfig(c config.Config) bool {
	return len(c.Limits) == 0 && c.Disabled == config.AccessInherit && c.Cascade == config.CascadeUnset && c.OnUnavailable == ""
}

func (p *Provisioner) deleteLimits(ctx context.Context, ns string, t manifest.Target) error {
	switch t.Kind {
	case manifest.KindSystem:
		return p.store.DeleteSystemLimits(ctx, ns)
	case manifest.KindResource:
		return p.store.DeleteResourceLimits(ctx, ns, t.Resource)
	default:
		return p.store.DeleteEntityLimits(ctx, ns, t.Entity, t.Resource)
	}
}

// audit records one change in the audit trail.
func (p *Provisioner) audit(ctx context.Context, ns string, c Change, principal string) error {
	ev := control.AuditEvent{Action: "limits_set", Principal: principal, Resource: c.Target.Resource,
		Details: map[string]string{"source": "provisioner", "change": string(c.Action), "what": strings.Join(c.What, "; "),
			"level": levelOf(c.Target).String(), "limits": limitsText(c.want.Limits)}}
	if c.Action == ActionDelete {
		ev.Action = "limits_deleted"
	}
	switch c.Target.Kind {
	case manifest.KindSystem:
		ev.EntityID, ev.Resource = "$SYSTEM", ""
	case manifest.KindResource:
		ev.EntityID = "$RESOURCE:" + c.Target.Resource
	default:
		ev.EntityID = c.Target.Entity
	}
	return p.controls.Record(ctx, ns, ev)
}

func limitsText(ls []limit.Limit) string {
	parts := make([]string, len(ls))
	for i, l := range ls {
		parts[i] = l.String()
	}
	return strings.Join(parts, ", ")
}

// phase is one step of the post-commit work: the changes it concerns, in
// an order where every change can run at once.
type phase struct {
	name    string
	changes []Change
	run     func(context.Context, Change) error
}

// postCommit lays out steps 3–6 of docs/design.md §12: access stamps
// (resources, then entities), cascade stamps (resources, then entities),
// entity parameter sync, the soft fan-outs of resources and the system.
func (p *Provisioner) postCommit(pl *Plan) []phase {
	ns := pl.Namespace
	var changes []Change
	changes = append(changes, pl.Changes...)
	for _, t := range pl.reconcile {
		want, _ := pl.Manifest.Desired(t)
		changes = append(changes, Change{Target: t, want: want, cur: want, pending: true})
	}
	pick := func(kind manifest.Kind, f func(Change) bool) []Change {
		var out []Change
		for _, c := range changes {
			if c.Target.Kind == kind && (f(c) || c.pending) {
				out = append(out, c)
			}
		}
		return out
	}
	scope := func(t manifest.Target) control.Scope {
		return control.Scope{Entity: t.Entity, Resource: t.Resource}
	}
	access := func(ctx context.Context, c Change) error {
		_, err := p.controls.StampAccess(ctx, ns, scope(c.Target))
		return err
	}
	cascade := func(ctx context.Context, c Change) error {
		_, err := p.controls.StampCascade(ctx, ns, scope(c.Target))
		return err
	}
	sync := func(ctx context.Context, c Change) error {
		_, err := p.controls.SyncEntity(ctx, ns, c.Target.Entity, c.Target.Resource)
		return err
	}
	systemAfter := pl.systemBefore
	if pl.Manifest.System != nil {
		systemAfter = pl.Manifest.System.Limits
	} else if pl.Previous.ManagedSystem {
		systemAfter = nil
	}
	effective := func(own, system []limit.Limit) ([]limit.Limit, config.Level) {
		if len(own) > 0 {
			return own, config.LevelResource
		}
		return system, config.LevelSystem
	}
	soft := func(ctx context.Context, c Change) error {
		var (
			sc       control.Scope
			old, cur []limit.Limit
			level    config.Level
		)
		if c.Target.Kind == manifest.KindSystem {
			old, cur, level = pl.systemBefore, systemAfter, config.LevelSystem
		} else {
			sc = scope(c.Target)
			old, _ = effective(c.cur.Limits, pl.systemBefore)
			cur, level = effective(c.want.Limits, systemAfter)
		}
		var err error
		if c.pending {
			_, err = p.controls.StampSoft(ctx, ns, sc, level, old)
		} else {
			_, err = p.controls.SyncSoft(ctx, ns, sc, level, old, cur)
		}
		return err
	}
	isAccess := func(c Change) bool { return c.access }
	isCascade := func(c Change) bool { return c.cascade }
	isLimits := func(c Change) bool { return c.limits }
	return []phase{
		{"access fan-out", pick(manifest.KindResource, isAccess), access},
		{"access fan-out", pick(manifest.KindEntity, isAccess), access},
		{"cascade fan-out", pick(manifest.KindResource, isCascade), cascade},
		{"cascade fan-out", pick(manifest.KindEntity, isCascade), cascade},
		{"parameter sync", pick(manifest.KindEntity, isLimits), sync},
		{"soft fan-out", append(pick(manifest.KindResource, isLimits), pick(manifest.KindSystem, isLimits)...), soft},
	}
}

// each runs f over cs with at most p.workers at once.
func (p *Provisioner) each(ctx context.Context, cs []Change, f func(context.Context, Change)) {
	sem := make(chan struct{}, p.workers)
	var wg sync.WaitGroup
	for _, c := range cs {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			f(ctx, c)
		}()
	}
	wg.Wait()
}
