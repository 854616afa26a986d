package config

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/internal/capability"
	"github.com/zae-limiter/zae-limiter-go/core/limit"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
)

// Writer writes config, entities and namespaces: the storage half of the
// operator writes. Operators do not use it: core/control is the one door
// for every such write (it audits each change and brings the buckets
// already stamped in line, docs/design.md §8), and core/provision applies
// manifests through the same writer and the same audit trail (§12). Both
// reach it through Store.Writer, whose capability only code under core/ can
// name. A Writer shares its Store's resolver, whose cache its writes evict.
//
// A Writer writes config only: no bucket is touched, and nothing is
// recorded in the audit trail.
type Writer struct{ s *Store }

// Writer returns the writer of s's table. The capability is
// capability.ConfigWrite{}, which only code under core/ can spell.
func (s *Store) Writer(capability.ConfigWrite) *Writer { return &Writer{s: s} }

// SetAccess stores the access setting of one config level
// (docs/design.md §7, §8): the resource (entity ""), the entity on a
// resource, or the entity for every resource (resource `_default_`).
// AccessInherit removes the setting, so the level defers to the next one
// of the walk; AccessEnforce stores false (a carve-out: it re-admits the
// entity to a disabled resource); AccessDisabled stores true; AccessBypass
// stores "bypass", once the table's readers understand it (the version
// gate at SoftBypassVersion), and raises client_min_version to it. The
// level's limits and other settings are kept; a level with no config yet
// gets one.
//
// There is no system-level setting: entity and resource both "" (or an
// unknown Access) is a *schema.ValidationError, and nothing is written.
// SetAccess writes config only; the buckets already stamped are re-stamped
// by the fan-out of core/control.
func (w *Writer) SetAccess(ctx context.Context, ns, entity, resource string, a Access) error {
	return w.s.setAccess(ctx, ns, entity, resource, a)
}

// SetCascade stores the cascade policy of a resource (entity "") or of an
// entity on a resource or for every resource (`_default_`):
// CascadeOn/CascadeOff override the entity's own default (Entity.Cascade),
// CascadeUnset removes the setting. The policy needs readers at
// CascadePolicyVersion (the gate before, client_min_version raised after).
// Buckets are re-stamped by the fan-out of core/control. There is no
// system-level policy (a validation error).
func (w *Writer) SetCascade(ctx context.Context, ns, entity, resource string, p CascadePolicy) error {
	return w.s.setCascade(ctx, ns, entity, resource, p)
}

// CreateEntityConfigs creates, in bulk, entity configs of namespace ns that
// do not exist yet: a declarative apply's many new entity levels. They go
// in transactions of up to 99 configs of one resource, together with that
// resource's count of entity configs (the registry of docs/design.md §2,
// R9), each created only if absent. Each is attribute for attribute what
// the setters write (docs/design.md §7). A transaction whose condition
// fails (a config appeared meanwhile) writes nothing, and its configs are
// returned: the caller writes those through the setters. A config with
// nothing to write is skipped. The inputs are validated before anything is
// written. The version gates of soft limits, session quotas, bypass and
// cascade policies are the caller's: RequireReaders before, Ratchet after.
func (w *Writer) CreateEntityConfigs(ctx context.Context, ns string, cs []NewEntityConfig) (left []NewEntityConfig, err error) {
	return w.s.createEntityConfigs(ctx, ns, cs)
}

// DeleteEntityConfigs deletes, in bulk, whole entity configs of namespace
// ns, given as the caller read them (strongly consistently): limits,
// access and cascade settings alike. They go in transactions of up to 99
// configs of one resource, together with that resource's count of entity
// configs (R9), each deleted only if present. A config that holds anything
// else (an attribute this version does not know, a schedule) is not
// deleted here, and neither is a batch whose condition failed (a config
// vanished meanwhile): their keys are returned, and the caller deletes
// them through the setters, which keep what they must.
func (w *Writer) DeleteEntityConfigs(ctx context.Context, ns string, items map[schema.Key]map[string]types.AttributeValue) (left []schema.Key, err error) {
	return w.s.deleteEntityConfigs(ctx, ns, items)
}

// CreateEntity records entity id in namespace ns (R4): its name, parent,
// cascade default and metadata from opts, its creation time and a fresh
// incarnation id (Entity.Pinc).
//
// A parent must exist: the entity's record and a check that the parent's
// is still there commit in one transaction, so a parent deleted
// concurrently cannot be missed between a read and the write. Before
// writing, the parent's ancestry is walked (strongly consistent reads, at
// most 32 hops) to refuse a cycle: an entity can be neither its own parent
// nor its own ancestor, which a dangling parent id of an earlier
// incarnation could otherwise create.
//
// Errors: invalid input is a *schema.ValidationError; an existing entity
// *EntityExistsError; a missing parent *EntityNotFoundError naming the
// parent.
func (w *Writer) CreateEntity(ctx context.Context, ns, id string, opts EntityOptions) (Entity, error) {
	return w.s.createEntity(ctx, ns, id, opts)
}

// DeleteEntity deletes entity id of namespace ns and everything it owns:
// its configs (each with its resource's count of entity configs, R9), its
// usage snapshots and reset and top-up records, its buckets, and last its
// own record. Deletes go in batches of 25, what a batch leaves unprocessed
// retried. Because the entity's record goes last, a failed call leaves the
// entity in place and can simply be repeated. Children are not touched:
// they keep a dangling parent id, as upstream.
//
// A missing entity is *EntityNotFoundError. The entity's cached config slots
// are evicted.
func (w *Writer) DeleteEntity(ctx context.Context, ns, id string) error {
	return w.s.deleteEntity(ctx, ns, id)
}

// SetSystemLimits replaces the limit set of namespace ns's system config
// (R7) and, when opts.OnUnavailable is set, its on_unavailable. Its other
// settings (`audit_retention_days`, ones this version does not know) are
// kept. See SetEntityLimits for the write protocol.
func (w *Writer) SetSystemLimits(ctx context.Context, ns string, limits []limit.Limit, opts SystemOptions) error {
	return w.s.setSystemLimits(ctx, ns, limits, opts)
}

// SetResourceLimits replaces the limit set of resource's config (R6) and
// adds resource to the namespace's list of resources with limits (R8), in
// the same transaction. resource cannot be `_default_`. See
// SetEntityLimits for the write protocol.
func (w *Writer) SetResourceLimits(ctx context.Context, ns, resource string, limits []limit.Limit) error {
	return w.s.setResourceLimits(ctx, ns, resource, limits)
}

// SetEntityLimits replaces the limit set of entity's config for resource
// (R5; resource may be `_default_`, the entity's config for every resource).
// The entity need not exist.
//
// The write protocol of every setter (docs/design.md §7): the config is
// read strongly consistently first. A new config is created only if still
// absent; for an entity config, the creation and the increment of its
// resource's count of entity configs (R9) commit in one transaction, so
// the count is exact. An existing config is updated in place, only if
// still present: the new limits are set and every other limit removed —
// those under the hidden prefix too — while `disabled`, `cascade`, `on_unavailable` and settings
// this version does not know survive untouched (an update cannot lose a
// setting a concurrent writer stores between the read and the write). A
// condition failure re-reads and tries again, up to four times, then
// ErrConflict.
//
// The set must hold 1 to MaxLimitsPerLevel valid limits with distinct names
// (use the Delete methods to remove a level's limits). Nothing is written on
// invalid input (*schema.ValidationError). A set holding a soft limit or a
// session quota passes the version gate first (RequireReaders at
// ReadersFor's version; a *VersionMismatchError writes nothing), and
// client_min_version is raised to that version after the write (Ratchet).
// An existing item carrying the
// ADR-143 merge fields is refused with *UnsupportedConfigError (docs/design.md
// §7): replacing its limits would silently change what it merges. The
// resolver's cached copy of the config is evicted.
func (w *Writer) SetEntityLimits(ctx context.Context, ns, entity, resource string, limits []limit.Limit) error {
	return w.s.setEntityLimits(ctx, ns, entity, resource, limits)
}

// DeleteSystemLimits removes namespace ns's system limits. See
// DeleteEntityLimits.
func (w *Writer) DeleteSystemLimits(ctx context.Context, ns string) error {
	return w.s.deleteSystemLimits(ctx, ns)
}

// DeleteResourceLimits removes resource's limits and takes resource off
// the namespace's list of resources with limits (R8), in the same
// transaction. See DeleteEntityLimits.
func (w *Writer) DeleteResourceLimits(ctx context.Context, ns, resource string) error {
	return w.s.deleteResourceLimits(ctx, ns, resource)
}

// DeleteEntityLimits removes entity's limits for resource (`_default_`
// allowed). Deleting limits that do not exist is a no-op.
//
// Every deleter removes the level's limits, those of features this version
// does not implement included (session limits, schedules, the ADR-143
// merge fields). When the config holds no other setting, it is deleted,
// on condition that no `disabled`, `cascade`, `on_unavailable` or
// `audit_retention_days` appeared meanwhile; for an entity config the
// decrement of its resource's count of entity configs (R9) commits in the
// same transaction, and the count is removed once it is ≤ 0. When other
// settings remain — say a resource-level `disabled` — the config stays
// with them (deleting limits must never lift a kill switch or a carve-out)
// and is still counted. The resolver's cached copy is evicted.
func (w *Writer) DeleteEntityLimits(ctx context.Context, ns, entity, resource string) error {
	return w.s.deleteEntityLimits(ctx, ns, entity, resource)
}

// SetOnUnavailable stores namespace ns's on_unavailable on its system config
// (R7), keeping its limits and every other setting; "" removes it. A
// system config that does not exist yet is created with the setting alone.
func (w *Writer) SetOnUnavailable(ctx context.Context, ns string, o OnUnavailable) error {
	return w.s.setOnUnavailable(ctx, ns, o)
}

// RegisterNamespace returns the id of namespace name, registering it when
// it is new with an id minted from the Store's entropy: the name → id and
// id → name records (R1, R2) are written in one transaction, each only if
// absent (docs/design.md §2). When another writer registered the name
// first, its id is returned. created says whether this call registered it.
func (w *Writer) RegisterNamespace(ctx context.Context, name string) (id string, created bool, err error) {
	return w.s.registerNamespace(ctx, name)
}

// DeleteNamespace deletes the live namespace name and returns its id: its
// forward record (R1) is removed, so the name no longer resolves and may be
// registered again, and its reverse record (R2) is marked deleted with the
// time (`deleted_at`), in one transaction, each conditioned on the
// namespace still being live (docs/design.md §2). Nothing else is touched:
// its config, entities, buckets and audit trail stay in the table, and
// RecoverNamespace brings the namespace back as it was. An unregistered
// name is *NamespaceNotFoundError.
func (w *Writer) DeleteNamespace(ctx context.Context, name string) (id string, err error) {
	return w.s.deleteNamespace(ctx, name)
}

// RecoverNamespace brings back the deleted namespace whose id is id and
// returns its name: its forward record is written again (only if the name
// is free) and its reverse record marked active, in one transaction.
// An unknown id is *NamespaceNotFoundError, a namespace that is not
// deleted *NamespaceStateError, and a name registered again meanwhile
// *NamespaceNameTakenError.
func (w *Writer) RecoverNamespace(ctx context.Context, id string) (name string, err error) {
	return w.s.recoverNamespace(ctx, id)
}
