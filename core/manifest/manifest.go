// Package manifest is the declarative limits manifest of one namespace
// (docs/design.md §12): its model, the two input forms that produce it
// (CloudFormation properties in PascalCase with every scalar a string, and
// the snake_case document of a YAML or JSON file or a CLI invocation), the
// validation that reports every problem at once with the path of the bad
// field, and the canonical hash recorded after an apply.
//
// A manifest declares targets: the namespace's system level, resources,
// and entities on a resource (or `_default_`, every resource). Each has
// its limits; a resource or an entity also its access (`disabled`: true,
// false for a carve-out, or bypass) and cascade policy, the system level
// its on_unavailable. Parse reads a file, FromProperties a CloudFormation
// resource's properties, and Properties writes them (a CDK app checks a
// manifest at synth time that way).
//
// A Manifest is plain data: it writes nothing. core/provision plans and
// applies it for an owner, through the same audited writes as the operator
// API of core/control.
package manifest

import (
	"sort"

	"github.com/zae-limiter/zae-limiter-go/core/config"
	"github.com/zae-limiter/zae-limiter-go/core/limit"
)

// DefaultNamespace is the namespace a CloudFormation resource manages when
// it names none.
const DefaultNamespace = "default"

// DefaultRefillPeriodSeconds is a limit's refill period when the manifest
// gives none; a quota's (a limit with a reset_schedule or a
// reset_after_seconds) is limit.QuotaRefillPeriod instead, inert since a
// quota does not drip.
const DefaultRefillPeriodSeconds = 60

// Manifest is the declared configuration of one namespace. Everything it
// names is managed: an apply creates or replaces it, and removes what an
// earlier manifest managed and this one no longer names. Nothing else in
// the namespace is touched.
type Manifest struct {
	// Namespace is the namespace's name (required).
	Namespace string
	// NamespaceID, when set, is the namespace's id and the name is not
	// resolved (CloudFormation `NamespaceId`).
	NamespaceID string
	// TableName, when set, is the table to apply to (CloudFormation
	// `TableName`); otherwise the provisioner's own.
	TableName string
	// System is the namespace's system level; nil when the manifest does
	// not manage it.
	System *System
	// Resources are the resource levels by resource name.
	Resources map[string]Level
	// Entities are the entity levels by entity id.
	Entities map[string]Entity
}

// System is the system level: limits every resource falls back to, and the
// action on an infrastructure failure.
type System struct {
	// OnUnavailable is "" when the manifest does not set it: the stored
	// value, if any, is left alone.
	OnUnavailable config.OnUnavailable
	// Limits are sorted by name; empty means the level has no limits.
	Limits []limit.Limit
}

// Level is a resource's config, or an entity's config on one resource (or
// `_default_`, every resource).
type Level struct {
	// Limits are sorted by name; empty means the level has no limits.
	Limits []limit.Limit
	// Disabled is config.AccessInherit when the manifest does not say.
	Disabled config.Access
	// Cascade is config.CascadeUnset when the manifest does not say.
	Cascade config.CascadePolicy
}

// Entity is what a manifest declares for one entity.
type Entity struct {
	// Resources are the entity's levels by resource name, `_default_` for
	// every resource.
	Resources map[string]Level
}

// Kind names the kind of a target: the level a manifest manages.
type Kind string

// The three kinds of target.
const (
	KindSystem   Kind = "system"
	KindResource Kind = "resource"
	KindEntity   Kind = "entity"
)

// Target is one thing a manifest can manage: the system level, a
// resource, or an entity on a resource (or `_default_`). An apply holds
// each target it writes for its owner (core/provision).
type Target struct {
	// Kind is the target's level.
	Kind Kind
	// Entity is the entity's id (KindEntity only).
	Entity string
	// Resource is the resource (KindResource), or the resource or
	// `_default_` the entity's level is for (KindEntity).
	Resource string
}

// String is the target as change lists show it: `system`, the resource
// name, or `{entity}/{resource}`.
func (t Target) String() string {
	switch t.Kind {
	case KindSystem:
		return "system"
	case KindResource:
		return t.Resource
	default:
		return t.Entity + "/" + t.Resource
	}
}

// Less orders targets as an apply writes them: system, then resources,
// then entities, each by name.
func (t Target) Less(o Target) bool {
	if t.Kind != o.Kind {
		return kindRank(t.Kind) < kindRank(o.Kind)
	}
	if t.Entity != o.Entity {
		return t.Entity < o.Entity
	}
	return t.Resource < o.Resource
}

func kindRank(k Kind) int {
	switch k {
	case KindSystem:
		return 0
	case KindResource:
		return 1
	default:
		return 2
	}
}

// Targets lists what m manages, in apply order.
func (m *Manifest) Targets() []Target {
	var ts []Target
	if m.System != nil {
		ts = append(ts, Target{Kind: KindSystem})
	}
	for r := range m.Resources {
		ts = append(ts, Target{Kind: KindResource, Resource: r})
	}
	for e, ent := range m.Entities {
		for r := range ent.Resources {
			ts = append(ts, Target{Kind: KindEntity, Entity: e, Resource: r})
		}
	}
	sort.Slice(ts, func(i, j int) bool { return ts[i].Less(ts[j]) })
	return ts
}

// Desired returns the config m declares for t, and whether m manages t.
// The system level's OnUnavailable is "" when not declared.
func (m *Manifest) Desired(t Target) (config.Config, bool) {
	switch t.Kind {
	case KindSystem:
		if m.System == nil {
			return config.Config{}, false
		}
		return config.Config{Limits: m.System.Limits, OnUnavailable: m.System.OnUnavailable}, true
	case KindResource:
		l, ok := m.Resources[t.Resource]
		return l.config(), ok
	default:
		l, ok := m.Entities[t.Entity].Resources[t.Resource]
		return l.config(), ok
	}
}

func (l Level) config() config.Config {
	return config.Config{Limits: l.Limits, Disabled: l.Disabled, Cascade: l.Cascade}
}

// ReadersNeeded is the reader version the manifest's features need
// (docs/design.md §2, the writer gate): the latest of
// config.SoftBypassVersion for a soft limit or a bypass,
// config.CascadePolicyVersion for a cascade policy and
// config.SessionQuotaVersion for a session quota; "" for none.
func (m *Manifest) ReadersNeeded() string {
	need := ""
	limits := func(ls []limit.Limit) { need = config.LaterVersion(need, config.ReadersFor(ls)) }
	level := func(l Level) {
		limits(l.Limits)
		if l.Disabled == config.AccessBypass {
			need = config.LaterVersion(need, config.SoftBypassVersion)
		}
		if l.Cascade != config.CascadeUnset {
			need = config.LaterVersion(need, config.CascadePolicyVersion)
		}
	}
	if m.System != nil {
		limits(m.System.Limits)
	}
	for _, l := range m.Resources {
		level(l)
	}
	for _, e := range m.Entities {
		for _, l := range e.Resources {
			level(l)
		}
	}
	return need
}

// Empty returns the manifest of namespace that manages nothing: applying it
// removes everything an earlier manifest managed (a CloudFormation Delete).
func Empty(namespace string) *Manifest { return &Manifest{Namespace: namespace} }
