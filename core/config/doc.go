// Package config reads the limiter's configuration from the table:
// namespaces (a name and the id minted for it), entities (an id, a parent
// and whether its acquires cascade to it), and the config of the four
// levels — an entity on a resource, an entity's default for every
// resource, a resource, and the namespace's system level. Each level holds
// limits; a resource or an entity also the access setting (disabled, a
// carve-out, bypass) and the cascade policy; the system level also
// on_unavailable. It resolves the limits of an entity on a resource, the
// first level with limits winning, with a cache (docs/design.md §7), walks
// the access and cascade settings uncached, and checks and stamps the
// table's version record (docs/design.md §2).
//
// Operators do not write through this package: core/control is the one
// door for every write of limits, access, cascade, entities and namespaces
// (docs/design.md §8), which records each change in the audit trail and
// brings the buckets already in use in line; core/provision applies
// manifests through the same writes. The storage half of those writes,
// [Writer], opens only with a capability that code outside core/ cannot
// name.
//
// # Pieces
//
//   - [Store]: reads of entities, namespaces and config against one table,
//     through the [DB] interface (*dynamodb.Client satisfies it), and the
//     version record: [Store.CheckVersion], [Store.StampVersion], the
//     writer gate [Store.RequireReaders].
//   - [Resolver]: cached limit resolution, the uncached access and cascade
//     walk [Resolver.ResolveAccess], and [Resolver.OnUnavailable].
//   - [Writer]: the storage half of the operator writes (above).
//   - The item codec, pure: [EncodeLimits], [EncodeConfigItem],
//     [DecodeConfigItem], [DecodeEntity], by the rules of docs/design.md §2.
//     A corrupt limit is skipped and reported as a [Problem]; a corrupt
//     hidden (`w_`) limit, or a name under both prefixes, makes the whole
//     item corrupt ([*CorruptConfigError]). Session quotas are encoded
//     under the hidden `w_` prefix (ADR-142) and decoded among the limits.
//     Schedules this version cannot read, limits breaking ADR-137 and the
//     ADR-143 merge fields make an item unsupported: decoding then returns
//     an [*UnsupportedConfigError] and callers fail closed
//     (docs/design.md §7) instead of enforcing part of it. The Writer
//     stores a soft limit or a session quota only past the version gate
//     (docs/decisions.md P55).
//
// The table's records are named R1 to R14 in docs/design.md §2; the codec
// and the Writer's docs use those names where they describe storage.
// Everything validates its inputs at the boundary (docs/design.md §2) and
// writes nothing on bad input; validation failures are
// *schema.ValidationError. Nothing here holds package-level mutable state;
// the clock and the entropy are injected with [WithClock] and
// [WithEntropy].
//
// Comments cite the Python project's decision records as ADR-n (ADR-151
// decision 4: a numbered decision of that record); docs/compatibility.md
// summarises each one.
package config
