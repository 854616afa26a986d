package provision

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/config"
	"github.com/zae-limiter/zae-limiter-go/core/control"
	"github.com/zae-limiter/zae-limiter-go/core/limit"
	"github.com/zae-limiter/zae-limiter-go/core/manifest"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
)

// Result is what an apply did.
type Result struct {
	// Namespace is the namespace's id.
	Namespace string
	// Changes are the plan's changes, in apply order.
	Changes []Change
	// Created, Updated and Deleted count the changes by action.
	Created, Updated, Deleted int
	// TakenOver counts the targets taken from other owners.
	TakenOver int
	// Errors are problems after the config was written (fan-outs, audit):
	// the config is in place, and the next apply finishes the owed work.
	Errors []string
	// AppliedHash is the manifest hash recorded in the owner record.
	AppliedHash string
	// StateWritten is false when the apply wrote nothing at all: the
	// manifest was already applied (or a Release had nothing to release).
	StateWritten bool
	// Skipped is true for a Release of an incarnation that does not hold
	// what its physical id names (docs/design.md §12): nothing changed.
	Skipped bool
}

// ConfigWriteError reports an apply that stopped at a config write. The
// writes before it stand; the owner's claims, recorded before the first
// write, cover every target it may have touched, so a rollback (the
// previous manifest applied again, or a Release) restores the namespace,
// and applying the same manifest again finishes the job.
type ConfigWriteError struct {
	// Target is the target whose write failed.
	Target manifest.Target
	// Err is the write's error.
	Err error
}

// Error implements error.
func (e *ConfigWriteError) Error() string {
	return fmt.Sprintf("provision: write %s %s: %v", e.Target.Kind, e.Target, e.Err)
}

// Unwrap returns the write's error.
func (e *ConfigWriteError) Unwrap() error { return e.Err }

// Apply plans and applies m to namespace ns for req.Owner, and returns once
// the buckets already in use are in line. Errors before any write (an
// *OwnershipError, a *RefusedItemError, the version gate refusing a
// feature the table's readers do not understand) leave the table as it
// was. Any later error leaves the intent recorded: a rollback or a retry
// converges (docs/design.md §12). Problems after the config is written are
// in Result.Errors, their fan-outs owed to the next apply.
func (p *Provisioner) Apply(ctx context.Context, ns string, m *manifest.Manifest, req Request) (*Result, error) {
	pl, err := p.Plan(ctx, ns, m, req)
	if err != nil {
		return nil, err
	}
	return p.ApplyPlan(ctx, pl)
}

// Release lets go of everything req.Owner holds in namespace ns (a
// CloudFormation Delete): each target goes back to the config it had
// before the owner took it (a target it created is deleted), a target it
// took from another owner goes back to that owner as it was, handovers
// from it are confirmed, and its owner record is deleted. A Release whose
// req.PhysicalID is not the incarnation the owner record names, from
// another stack than the record's (req.Owner.StackID), or of an owner with
// no record, changes nothing (Result.Skipped).
func (p *Provisioner) Release(ctx context.Context, ns string, req Request) (*Result, error) {
	pl, err := p.plan(ctx, ns, manifest.Empty(""), req, true)
	if err != nil {
		return nil, err
	}
	legacy := req.AdoptLegacy && pl.legacy.found
	if !legacy && (!pl.Previous.Found || (req.PhysicalID != "" && pl.Previous.PhysicalID != req.PhysicalID) || pl.Previous.stackMismatch(req.Owner)) {
		p.log.Info("provision: release of an incarnation that holds nothing here: nothing to do", "namespace", ns,
			"owner", req.Owner.Key(), "physical_id", req.PhysicalID, "recorded", pl.Previous.PhysicalID)
		return &Result{Namespace: ns, Skipped: true}, nil
	}
	return p.ApplyPlan(ctx, pl)
}

// ApplyPlan applies a plan made by Plan (docs/design.md §12 gives the order).
// A manifest whose features need newer readers than the table's (a soft
// limit, a bypass, a cascade policy, a session quota: ReadersNeeded) is
// refused by the version gate before anything is written, and
// client_min_version is raised to them before the first write.
func (p *Provisioner) ApplyPlan(ctx context.Context, pl *Plan) (*Result, error) {
	res := &Result{Namespace: pl.Namespace, Changes: pl.Changes, AppliedHash: pl.Hash, TakenOver: len(pl.TakenOver)}
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
	ns, m := pl.Namespace, pl.Manifest

	// 1. The version gate and its ratchet, before any write and whether
	// or not anything changes: a resent request whose first pass stored
	// the config but failed to raise client_min_version finishes the raise
	// here (docs/design.md §12).
	if need := m.ReadersNeeded(); need != "" {
		if err := p.store.Gate(ctx, need); err != nil {
			return nil, fmt.Errorf("provision: %w", err)
		}
	}
	if pl.Empty() {
		return res, nil
	}
	var writes []Change
	for _, c := range pl.Changes {
		if c.write {
			writes = append(writes, c)
		}
	}

	// 2. The intent: the owner record (applying), then a claim on every
	// target this apply may touch that the owner does not hold yet.
	if err := p.recordIntent(ctx, pl); err != nil {
		return nil, err
	}

	// 3. Config writes: system, resources, entities; within a kind the
	// creates and updates, then the deletes.
	// Entity configs created on keys that had no item go in batches
	// (config.CreateEntityConfigs: the setters' items, 99 a transaction);
	// any a concurrent writer beat to it are written one by one below.
	fresh, err := p.createEntities(ctx, pl, writes)
	if err != nil {
		return nil, err
	}
	// Entity configs released whole are deleted in batches too, last as
	// every kind's deletes are (config.DeleteEntityConfigs); what the batch
	// hands back goes through the setters.
	gone := map[schema.Key]map[string]types.AttributeValue{}
	for _, c := range writes {
		if k := targetKey(ns, c.Target); c.Target.Kind == manifest.KindEntity && c.Action == ActionDelete && !c.restore && pl.items[k] != nil {
			gone[k] = pl.items[k]
		}
	}
	var late []Change
	for _, c := range writeOrder(writes) {
		if _, ok := gone[targetKey(ns, c.Target)]; ok {
			late = append(late, c)
			continue
		}
		if fresh[c.Target] {
			continue
		}
		if err := p.writeTarget(ctx, ns, c); err != nil {
			return nil, &ConfigWriteError{Target: c.Target, Err: err}
		}
	}
	if len(late) > 0 {
		left, err := p.writer.DeleteEntityConfigs(ctx, ns, gone)
		if err != nil {
			return nil, &ConfigWriteError{Target: late[0].Target, Err: err}
		}
		retry := map[schema.Key]bool{}
		for _, k := range left {
			retry[k] = true
		}
		for _, c := range late {
			if !retry[targetKey(ns, c.Target)] {
				continue
			}
			if err := p.writeTarget(ctx, ns, c); err != nil {
				return nil, &ConfigWriteError{Target: c.Target, Err: err}
			}
		}
	}
	// One audit event per written target, Workers at once.
	var mu sync.Mutex
	err = p.each(ctx, writes, func(ctx context.Context, c Change) {
		if err := p.audit(ctx, ns, c, pl.Request.Principal); err != nil {
			mu.Lock()
			defer mu.Unlock()
			res.Errors = append(res.Errors, fmt.Sprintf("audit %s %s: %v", c.Target.Kind, c.Target, err))
		}
	})
	if err != nil {
		return nil, err
	}

	// 4. Fan-outs. A target whose work fails stays owed.
	failed := map[manifest.Target]bool{}
	fail := func(what string, t manifest.Target, err error) {
		mu.Lock()
		defer mu.Unlock()
		failed[t] = true
		res.Errors = append(res.Errors, fmt.Sprintf("%s %s %s: %v", what, t.Kind, t, err))
	}
	for _, phase := range p.postCommit(pl) {
		err := p.each(ctx, phase.changes, func(ctx context.Context, c Change) {
			if err := phase.run(ctx, c); err != nil {
				fail(phase.name, c.Target, err)
			}
		})
		if err != nil {
			return nil, err
		}
	}

	// 5. The commit, last.
	if err := p.commit(ctx, pl, failed); err != nil {
		return nil, err
	}
	res.StateWritten = true
	p.log.Info("provision: applied", "namespace", ns, "owner", pl.Request.Owner.Key(), "created", res.Created,
		"updated", res.Updated, "deleted", res.Deleted, "taken_over", res.TakenOver, "errors", len(res.Errors), "hash", pl.Hash)
	return res, nil
}

// recordIntent writes the owner record as applying and claims every target
// of the manifest the owner does not hold yet (docs/design.md §12): from
// then on the owner's claims cover everything the apply may write, so a
// failure at any later point is undone by a rollback.
func (p *Provisioner) recordIntent(ctx context.Context, pl *Plan) error {
	ns, req, me := pl.Namespace, pl.Request, pl.Request.Owner.Key()
	prev := pl.Previous
	if err := p.putOwner(ctx, p.ownerItem(ns, req, statusApplying, pl.Hash, prev.Committed(), prev.LastApplied, prev.MovingTo, prev.TakeOverGranted)); err != nil {
		return err
	}
	var ws []claimWrite
	for _, t := range pl.Manifest.Targets() {
		c, held := pl.claims[t]
		prior := pl.items[targetKey(ns, t)]
		switch {
		case !held:
			// Nobody held it: an item already there is adopted, its
			// prior image kept for the release.
			ws = append(ws, putClaim(ns, t, me, "", false, prior, nil))
		case c.owner == me && !c.stored:
			ws = append(ws, putClaim(ns, t, me, "", false, nil, nil)) // adopted from R10
		case c.owner != me:
			ws = append(ws, putClaim(ns, t, me, c.owner, true, prior, c.prior))
		}
	}
	// Targets of an adopted R10 that the manifest no longer names.
	for t, c := range pl.claims {
		if _, named := pl.Manifest.Desired(t); c.owner == me && !c.stored && !named {
			ws = append(ws, putClaim(ns, t, me, "", false, nil, nil))
		}
	}
	err := p.writeClaims(ctx, ws, true)
	var race *claimRaceError
	if errors.As(err, &race) {
		claims, rerr := p.readClaims(ctx, ns)
		if rerr != nil {
			return err
		}
		oe := &OwnershipError{Namespace: ns}
		for _, t := range race.targets {
			owner := claims[t].owner
			oe.Conflicts = append(oe.Conflicts, Conflict{Target: t, Owner: owner, Holder: describeOwner(owner, "")})
		}
		return oe
	}
	return err
}

// commit records what the apply achieved: claims of released targets are
// deleted (or given back to the owner they were taken from), owed fan-outs
// marked, a Release confirms the handovers from its owner, an adopted R10
// is deleted, and the owner record says applied (or, for a Release, is
// deleted).
func (p *Provisioner) commit(ctx context.Context, pl *Plan, failed map[manifest.Target]bool) error {
	ns, me := pl.Namespace, pl.Request.Owner.Key()
	owed := &types.AttributeValueMemberBOOL{Value: true}
	var ws []claimWrite
	for _, c := range pl.Changes {
		if c.Action != ActionDelete {
			continue
		}
		cl := pl.claims[c.Target]
		switch {
		case failed[c.Target]:
			ws = append(ws, updateClaim(ns, c.Target, attrOwner, me, map[string]types.AttributeValue{attrFanoutOwed: owed}))
		case cl.from != "":
			// Back to the giver, with the giver's own prior image.
			set := map[string]types.AttributeValue{attrOwner: schema.Str(cl.from)}
			remove := []string{attrFrom, attrFromPrior, attrFanoutOwed}
			if cl.fromPrior != nil {
				set[attrPrior] = &types.AttributeValueMemberM{Value: cl.fromPrior}
			} else {
				remove = append(remove, attrPrior)
			}
			ws = append(ws, updateClaim(ns, c.Target, attrOwner, me, set, remove...))
		default:
			ws = append(ws, deleteClaim(ns, c.Target, me))
		}
	}
	for _, t := range pl.Manifest.Targets() {
		cl := pl.claims[t]
		held := cl.owner == me && cl.stored
		switch {
		case failed[t] && !(held && cl.pending):
			ws = append(ws, updateClaim(ns, t, attrOwner, me, map[string]types.AttributeValue{attrFanoutOwed: owed}))
		case !failed[t] && held && cl.pending:
			ws = append(ws, updateClaim(ns, t, attrOwner, me, nil, attrFanoutOwed))
		}
	}
	if pl.release {
		for t, cl := range pl.claims {
			if cl.from != me {
				continue
			}
			// The taker keeps the target, and with it what the target
			// was before this owner held it.
			if cl.fromPrior != nil {
				ws = append(ws, updateClaim(ns, t, attrFrom, me, map[string]types.AttributeValue{
					attrPrior: &types.AttributeValueMemberM{Value: cl.fromPrior}}, attrFrom, attrFromPrior))
			} else {
				ws = append(ws, updateClaim(ns, t, attrFrom, me, nil, attrFrom, attrPrior))
			}
		}
	}
	if err := p.writeClaims(ctx, ws, false); err != nil {
		return err
	}
	if pl.legacy.found && pl.Request.AdoptLegacy {
		if _, err := p.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{
			TableName: aws.String(p.table), Key: schema.ProvisionerStateKey(ns).AttributeValues(),
		}); err != nil {
			return fmt.Errorf("provision: delete the legacy state record: %w", err)
		}
	}
	if pl.release {
		if _, err := p.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{
			TableName: aws.String(p.table), Key: schema.ProvisionerOwnerKey(ns, me).AttributeValues(),
		}); err != nil {
			return fmt.Errorf("provision: delete the owner record: %w", err)
		}
		return nil
	}
	return p.putOwner(ctx, p.ownerItem(ns, pl.Request, statusApplied, pl.Hash, "", p.nowString(), "", pl.Previous.TakeOverGranted))
}

// createEntities writes, in batches, the entity configs the plan creates on
// keys that had no item, and returns those it wrote.
func (p *Provisioner) createEntities(ctx context.Context, pl *Plan, writes []Change) (map[manifest.Target]bool, error) {
	var cs []config.NewEntityConfig
	for _, c := range writes {
		t := c.Target
		if t.Kind != manifest.KindEntity || c.Action != ActionCreate || pl.items[targetKey(pl.Namespace, t)] != nil {
			continue
		}
		cs = append(cs, config.NewEntityConfig{Entity: t.Entity, Resource: t.Resource, Limits: c.want.Limits,
			Access: c.want.Disabled, Cascade: c.want.Cascade})
	}
	if len(cs) == 0 {
		return nil, nil
	}
	left, err := p.writer.CreateEntityConfigs(ctx, pl.Namespace, cs)
	if err != nil {
		t := manifest.Target{Kind: manifest.KindEntity, Entity: cs[0].Entity, Resource: cs[0].Resource}
		return nil, &ConfigWriteError{Target: t, Err: err}
	}
	fresh := make(map[manifest.Target]bool, len(cs))
	for _, c := range cs {
		fresh[manifest.Target{Kind: manifest.KindEntity, Entity: c.Entity, Resource: c.Resource}] = true
	}
	for _, c := range left {
		delete(fresh, manifest.Target{Kind: manifest.KindEntity, Entity: c.Entity, Resource: c.Resource})
	}
	return fresh, nil
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

// writeTarget writes one target's config through the config writer, so the
// item has the shape every writer gives it (docs/design.md §7).
func (p *Provisioner) writeTarget(ctx context.Context, ns string, c Change) error {
	t, s := c.Target, p.writer
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
	if c.rawPrior != nil {
		// A prior item this code cannot decode goes back byte for byte.
		_, err := p.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(p.table), Item: c.rawPrior})
		return err
	}
	deleting := c.Action == ActionDelete && !c.restore
	if !deleting && c.limits {
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
	if deleting || emptyConfig(c.want) {
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
		return p.writer.DeleteSystemLimits(ctx, ns)
	case manifest.KindResource:
		return p.writer.DeleteResourceLimits(ctx, ns, t.Resource)
	default:
		return p.writer.DeleteEntityLimits(ctx, ns, t.Entity, t.Resource)
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
		ev.EntityID, ev.Resource = control.SystemTrail, ""
	case manifest.KindResource:
		ev.EntityID = control.ResourceTrail(c.Target.Resource)
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

// postCommit lays out steps 3–5 of docs/design.md §12: access stamps
// (resources, then entities), cascade stamps (resources, then entities),
// and the limits sync of every level whose limits changed
// (control.SyncLimits).
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
	limits := func(ctx context.Context, c Change) error {
		_, err := p.controls.SyncLimits(ctx, ns, scope(c.Target))
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
		{"limits sync", limitSyncs(pick(manifest.KindSystem, isLimits), pick(manifest.KindResource, isLimits), pick(manifest.KindEntity, isLimits)), limits},
	}
}

// limitSyncs are the limits syncs an apply runs after its commit: the
// whole namespace's alone when the system level changed (it covers every
// bucket), else each changed resource's and entity's.
func limitSyncs(system, resources, entities []Change) []Change {
	if len(system) > 0 {
		return system[:1]
	}
	return append(resources, entities...)
}

// each runs f over cs with at most p.workers at once. A panic in f is
// recovered on its goroutine, logged with its stack, and returned, after
// every f has finished, as a *PanicError: no panic escapes a request
// (docs/design.md §12). The apply then stops before its commit, so the
// owner record still says applying and every fan-out of the owner's
// targets stays owed: nothing the apply wrote is lost track of.
func (p *Provisioner) each(ctx context.Context, cs []Change, f func(context.Context, Change)) error {
	sem := make(chan struct{}, p.workers)
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		panicked error
	)
	for _, c := range cs {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() {
				if v := recover(); v != nil {
					stack := debug.Stack()
					p.log.Error("provision: a worker panicked; the apply stops before its commit", "target", c.Target.String(),
						"panic", fmt.Sprint(v), "stack", string(stack))
					mu.Lock()
					if panicked == nil {
						panicked = &PanicError{Value: v, Stack: stack}
					}
					mu.Unlock()
				}
				<-sem
				wg.Done()
			}()
			f(ctx, c)
		}()
	}
	wg.Wait()
	return panicked
}

// PanicError is a panic recovered on a goroutine an apply started. The
// apply stops before its commit: the owner record still says applying, and
// a retry or a rollback converges as after any other failure.
type PanicError struct {
	// Value is what the goroutine panicked with.
	Value any
	// Stack is the goroutine's stack at the panic, for the log.
	Stack []byte
}

// Error implements error.
func (e *PanicError) Error() string { return fmt.Sprintf("provision: panic: %v", e.Value) }
