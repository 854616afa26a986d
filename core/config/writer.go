package config

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/internal/capability"
	"github.com/zae-limiter/zae-limiter-go/core/limit"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
)

// Writer writes config items, entities and namespaces: the storage half of
// the operator writes. Operators do not use it: core/control is the one
// door for every such write (it audits each change and brings the buckets
// already stamped in line, docs/design.md §8), and core/provision applies
// manifests through the same writer and the same audit trail (§12). Both
// reach it through Store.Writer, whose capability only code under core/ can
// name. A Writer shares its Store's resolver, whose cache its writes evict.
type Writer struct{ s *Store }

// Writer returns the writer of s's table. The capability is
// capability.ConfigWrite{}, which only code under core/ can spell.
func (s *Store) Writer(capability.ConfigWrite) *Writer { return &Writer{s: s} }

// SetAccess stores the `disabled` setting of one config level
// (docs/design.md §7, §8): the resource (entity ""), the entity on a
// resource, or the entity for every resource (resource `_default_`).
// AccessInherit removes the setting, so the level defers to the next one
// of the walk; AccessEnforce stores false (a carve-out: it re-admits the
// entity to a disabled resource); AccessDisabled stores true; AccessBypass
// stores "bypass", after the version gate at SoftBypassVersion, and
// ratchets client_min_version. Limits and every other attribute of the
// item are kept; an item that does not exist yet is created.
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
// CascadeOn/CascadeOff override the entity's own META default, CascadeUnset
// removes the setting. The policy needs readers at CascadePolicyVersion
// (the gate, then the ratchet). Buckets are re-stamped by the fan-out of
// core/control. There is no system-level policy (a validation error).
func (w *Writer) SetCascade(ctx context.Context, ns, entity, resource string, p CascadePolicy) error {
	return w.s.setCascade(ctx, ns, entity, resource, p)
}

// CreateEntityConfigs creates entity config items in namespace ns that do
// not exist yet, in transactions of up to 99 items of one resource with
// that resource's registry update (R9 `ADD #r :n`), each put under
// attribute_not_exists(PK). Each item is attribute for attribute the one
// the setters write (docs/design.md §7). A transaction whose condition fails
// (an item appeared meanwhile) writes nothing, and its configs are
// returned: the caller writes those through the setters. A config with
// nothing to write is skipped. The inputs are validated before anything is
// written. The version gates of soft limits, bypass and cascade policies
// are the caller's: RequireReaders before, Ratchet after.
func (w *Writer) CreateEntityConfigs(ctx context.Context, ns string, cs []NewEntityConfig) (left []NewEntityConfig, err error) {
	return w.s.createEntityConfigs(ctx, ns, cs)
}

// DeleteEntityConfigs deletes whole the entity config items of namespace
// ns given as the caller read them (strongly consistently): limits, access
// and cascade settings alike, in transactions of up to 99 items of one
// resource with that resource's registry update (R9 `ADD #r :-n`), each
// delete under attribute_exists(PK). An item that holds anything else (an
// attribute this version does not know, a schedule) is not deleted here,
// and neither is a batch whose condition failed (an item vanished
// meanwhile): their keys are returned, and the caller deletes them through
// the setters, which keep what they must.
func (w *Writer) DeleteEntityConfigs(ctx context.Context, ns string, items map[schema.Key]map[string]types.AttributeValue) (left []schema.Key, err error) {
	return w.s.deleteEntityConfigs(ctx, ns, items)
}

// CreateEntity creates entity id in namespace ns (R4): `entity_id`, `name`,
// `parent_id` (S, or NULL for a root), `cascade`, `metadata`, `created_at`
// and a fresh ULID `pinc`, with GSI4 keys and, for a child, GSI1 keys.
//
// A parent must exist: the META put and a ConditionCheck on the parent's
// META commit in one TransactWriteItems, so a parent deleted concurrently
// cannot be missed between a read and the write. Before writing, the
// parent's ancestry is walked (strongly consistent GetItems, at most 32
// hops) to refuse a cycle: an entity can be neither its own parent nor its
// own ancestor, which a dangling parent_id of an earlier incarnation could
// otherwise create.
//
// Errors: invalid input is a *schema.ValidationError; an existing entity
// *EntityExistsError; a missing parent *EntityNotFoundError naming the
// parent.
func (w *Writer) CreateEntity(ctx context.Context, ns, id string, opts EntityOptions) (Entity, error) {
	return w.s.createEntity(ctx, ns, id, opts)
}

// DeleteEntity deletes entity id of namespace ns and everything it owns:
// its entity config items (each with its R9 registry decrement), every other
// item of its partition (usage snapshots, operation records), its buckets
// (found on GSI3 `{ns}/ENTITY#{id}` with SK prefix `BUCKET#`), and last its
// META. Deletes go in BatchWriteItem chunks of 25 with UnprocessedItems
// retried. Because META goes last, a failed call leaves the entity in place
// and can simply be repeated. Children are not touched: they keep a
// dangling parent_id, as upstream.
//
// A missing entity is *EntityNotFoundError. The entity's cached config slots
// are evicted.
func (w *Writer) DeleteEntity(ctx context.Context, ns, id string) error {
	return w.s.deleteEntity(ctx, ns, id)
}

// SetSystemLimits replaces the limit set of namespace ns's system config
// (R7) and, when opts.OnUnavailable is set, its on_unavailable. Other
// attributes of an existing item (`audit_retention_days`, unknown ones) are
// kept. See SetEntityLimits for the write protocol.
func (w *Writer) SetSystemLimits(ctx context.Context, ns string, limits []limit.Limit, opts SystemOptions) error {
	return w.s.setSystemLimits(ctx, ns, limits, opts)
}

// SetResourceLimits replaces the limit set of resource's config (R6) and
// adds resource to the resource registry (R8 `resources`, in the same
// transaction). resource cannot be `_default_`. See SetEntityLimits for the
// write protocol.
func (w *Writer) SetResourceLimits(ctx context.Context, ns, resource string, limits []limit.Limit) error {
	return w.s.setResourceLimits(ctx, ns, resource, limits)
}

// SetEntityLimits replaces the limit set of entity's config for resource
// (R5; resource may be `_default_`, the entity's config for every resource).
// The entity need not exist.
//
// The write protocol of every setter (docs/design.md §7): the item is read strongly
// consistently first. A new item is put under attribute_not_exists(PK); for
// an entity config that put and the registry increment (R9 `ADD #r :1`)
// commit in one TransactWriteItems, so the counter counts items exactly.
// An existing item is updated in place under attribute_exists(PK): the new
// limit attributes are SET and every other limit attribute (`l_*`, `w_*`,
// whatever its field) and `sched_tz` is REMOVEd, so `disabled`, `cascade`,
// `on_unavailable` and attributes this version does not know survive
// untouched (an update cannot lose a sibling a concurrent writer sets
// between the read and the write). A condition failure re-reads and tries
// again, up to four times, then ErrConflict.
//
// The set must hold 1 to MaxLimitsPerLevel valid limits with distinct names
// (use the Delete methods to remove a level's limits). Nothing is written on
// invalid input (*schema.ValidationError). An existing item carrying the
// ADR-143 merge fields is refused with *UnsupportedConfigError (docs/design.md
// §7): replacing its limits would silently change what it merges. The
// resolver's cached slot for the item is evicted.
func (w *Writer) SetEntityLimits(ctx context.Context, ns, entity, resource string, limits []limit.Limit) error {
	return w.s.setEntityLimits(ctx, ns, entity, resource, limits)
}

// DeleteSystemLimits removes namespace ns's system limits. See
// DeleteEntityLimits.
func (w *Writer) DeleteSystemLimits(ctx context.Context, ns string) error {
	return w.s.deleteSystemLimits(ctx, ns)
}

// DeleteResourceLimits removes resource's limits and takes resource out of
// the resource registry (R8 DELETE, same transaction). See
// DeleteEntityLimits.
func (w *Writer) DeleteResourceLimits(ctx context.Context, ns, resource string) error {
	return w.s.deleteResourceLimits(ctx, ns, resource)
}

// DeleteEntityLimits removes entity's limits for resource (`_default_`
// allowed). Deleting limits that do not exist is a no-op.
//
// Every deleter removes the level's limit attributes (`l_*`, `w_*`,
// `sched_tz`, and the ADR-143 merge fields). When nothing else is left on the
// item but its identity (keys, config_version, entity_id, resource), the
// item is deleted under a condition that no `disabled`, `cascade`,
// `on_unavailable` or `audit_retention_days` appeared meanwhile; for an
// entity config the registry decrement (R9 `ADD #r :-1`) commits in the
// same transaction, and the counter is removed once it is ≤ 0. When
// siblings remain — say a resource-level `disabled` — the item stays
// with them (deleting limits must never lift a kill switch or a carve-out)
// and R9 still counts it. The resolver's cached slot is evicted.
func (w *Writer) DeleteEntityLimits(ctx context.Context, ns, entity, resource string) error {
	return w.s.deleteEntityLimits(ctx, ns, entity, resource)
}

// SetOnUnavailable stores namespace ns's on_unavailable on its system config
// (R7), keeping its limits and every other attribute; "" removes it. A
// system item that does not exist yet is created with the setting alone.
func (w *Writer) SetOnUnavailable(ctx context.Context, ns string, o OnUnavailable) error {
	return w.s.setOnUnavailable(ctx, ns, o)
}

// RegisterNamespace returns the id of namespace name, registering it when
// it is new: the forward (R1) and reverse (R2) records are written in one
// transaction, each under attribute_not_exists(PK) (docs/design.md §2). When another
// writer registered the name first, its id is returned.
func (w *Writer) RegisterNamespace(ctx context.Context, name string) (string, error) {
	return w.s.registerNamespace(ctx, name)
}
