package config

import "github.com/zae-limiter/zae-limiter-go/core/limit"

// Level is a config level (docs/design.md §7), also the level resolved
// limits or an access setting came from.
type Level uint8

// Levels, highest precedence first. LevelNone is "no level": no limits
// anywhere, or no explicit access value.
const (
	LevelNone          Level = iota
	LevelEntity              // the entity's config for the resource
	LevelEntityDefault       // the entity's config for every resource (`_default_`)
	LevelResource            // the resource's config
	LevelSystem              // the namespace's system config
)

var levelNames = [...]string{"none", "entity", "entity_default", "resource", "system"}

// String returns the name docs/design.md §7 uses for the level as a source:
// "entity", "entity_default", "resource", "system", or "none".
func (l Level) String() string {
	if int(l) < len(levelNames) {
		return levelNames[l]
	}
	return "Level(?)"
}

// EntityLevel reports the entity's own levels (LevelEntity,
// LevelEntityDefault): limits resolved from them keep their bucket
// without an expiry (docs/design.md §2).
func (l Level) EntityLevel() bool { return l == LevelEntity || l == LevelEntityDefault }

// Access is who may use a resource: the `disabled` setting of a
// resource's or an entity's config (docs/design.md §2, ADR-125, ADR-151),
// and the mode an access walk resolves to. The walk takes the first
// explicit setting on the way entity on the resource → entity default →
// resource, so an entity's AccessEnforce carves it out of a disabled
// resource.
type Access uint8

// Access values. AccessInherit (not set) is never a resolved mode: a walk
// that finds no explicit value resolves to AccessEnforce.
const (
	AccessInherit  Access = iota // not set here: the next level decides (stored: absent)
	AccessEnforce                // the limits apply; on an entity, a carve-out (stored: false)
	AccessDisabled               // acquires are refused with 403 (stored: true)
	AccessBypass                 // admitted and counted, no balance debited (stored: "bypass")
)

var accessNames = [...]string{"inherit", "enforce", "disabled", "bypass"}

// String returns "inherit", "enforce", "disabled" or "bypass".
func (a Access) String() string {
	if int(a) < len(accessNames) {
		return accessNames[a]
	}
	return "Access(?)"
}

// CascadePolicy is whether an entity's acquires on a resource also debit
// its parent's bucket: the `cascade` setting of a resource's or an
// entity's config (ADR-146), which overrides the entity's own default
// (Entity.Cascade).
type CascadePolicy uint8

// Cascade policies.
const (
	CascadeUnset CascadePolicy = iota // not set here: the next level, else the entity's default
	CascadeOn                         // cascade to the parent
	CascadeOff                        // do not cascade
)

var cascadeNames = [...]string{"unset", "true", "false"}

// String returns "unset", "true" or "false".
func (c CascadePolicy) String() string {
	if int(c) < len(cascadeNames) {
		return cascadeNames[c]
	}
	return "CascadePolicy(?)"
}

// OnUnavailable is what an acquire does on an infrastructure error
// (docs/design.md §7): "allow" (a no-op lease) or "block" (RateLimiterUnavailable).
// The empty value means "not set here".
type OnUnavailable string

// The two actions.
const (
	OnUnavailableAllow OnUnavailable = "allow"
	OnUnavailableBlock OnUnavailable = "block"
)

// Valid reports whether o is "allow" or "block".
func (o OnUnavailable) Valid() bool { return o == OnUnavailableAllow || o == OnUnavailableBlock }

// Config is the config of one level, as far as this version understands
// it: the limit set and, depending on the level, the access, cascade and
// on_unavailable settings.
type Config struct {
	// Limits is the level's limit set, sorted by name. Empty means the
	// level supplies no limits.
	Limits []limit.Limit
	// Disabled is the access setting; resource and entity levels only.
	Disabled Access
	// Cascade is the cascade policy; resource and entity levels only.
	Cascade CascadePolicy
	// OnUnavailable is the system level's action; system level only.
	OnUnavailable OnUnavailable
}
