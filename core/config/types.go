package config

import "github.com/zae-limiter/zae-limiter-go/core/limit"

// Level is a config level (docs/design.md §7), also the source of resolved limits.
type Level uint8

// Levels, highest precedence first. LevelNone is "no level": no limits
// anywhere, or no explicit access value.
const (
	LevelNone          Level = iota
	LevelEntity              // entity config for the resource: `#CONFIG#{resource}`
	LevelEntityDefault       // entity config for every resource: `#CONFIG#_default_`
	LevelResource            // resource config R6
	LevelSystem              // system config R7
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

// Access is the `disabled` attribute of a resource or entity config item
// (docs/design.md §2, ADR-125, ADR-151), and the mode an access walk resolves to.
type Access uint8

// Access values. AccessInherit (absent) is never a resolved mode: a walk
// that finds no explicit value resolves to AccessEnforce.
const (
	AccessInherit  Access = iota // attribute absent
	AccessEnforce                // BOOL false: explicit enforce (a carve-out)
	AccessDisabled               // BOOL true
	AccessBypass                 // S "bypass"
)

var accessNames = [...]string{"inherit", "enforce", "disabled", "bypass"}

// String returns "inherit", "enforce", "disabled" or "bypass".
func (a Access) String() string {
	if int(a) < len(accessNames) {
		return accessNames[a]
	}
	return "Access(?)"
}

// CascadePolicy is the `cascade` attribute of a resource or entity config
// item (ADR-146): unset, or an explicit true or false.
type CascadePolicy uint8

// Cascade policies.
const (
	CascadeUnset CascadePolicy = iota // attribute absent: inherit
	CascadeOn                         // BOOL true
	CascadeOff                        // BOOL false
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

// Config is the content of one config item that this package understands:
// the limit set and, depending on the level, the access, cascade and
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
