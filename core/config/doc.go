// Package config is the configuration side of the table: entities (R4), the
// limit config items of the four levels (R5 entity per resource, R5
// entity `_default_`, R6 resource, R7 system) with their registries (R8, R9),
// limit resolution with its per-slot cache (docs/design.md §7), the uncached access
// and cascade walk (docs/design.md §7), the `on_unavailable` precedence (docs/design.md §7) and
// the version record (R3, docs/design.md §2).
//
// # Pieces
//
//   - Codecs, pure: [EncodeLimits], [EncodeConfigItem], [DecodeConfigItem],
//     [DecodeEntity]. Decoding follows docs/design.md §2: a limit exists iff
//     `l_{n}_cp` and the other numeric fields are present; a corrupt limit
//     is skipped and reported as a [Problem]. Attributes of features this
//     version does not implement (hidden `w_` session limits, schedules,
//     `reset_after`, quotas, and the ADR-143 merge fields) make the item
//     unsupported: decoding returns an [*UnsupportedConfigError] and callers
//     fail closed (docs/design.md §7) instead of enforcing a partial set.
//   - [Store]: entity, namespace and config reads against one table,
//     through the [DB] interface (*dynamodb.Client satisfies it).
//   - [Writer]: the writes of config items, entities and namespaces. It
//     opens only with a capability that code outside core/ cannot name:
//     operators write through core/control, the one door, which audits each
//     change and brings stamped buckets in line (docs/design.md §8).
//   - [Resolver]: cached limit resolution (one BatchGetItem for all misses,
//     GetItem fallback), [Resolver.ResolveAccess] (uncached walk) and
//     [Resolver.OnUnavailable].
//   - Versions: [Store.CheckVersion], [Store.WriteVersion].
//
// Everything validates its inputs at the boundary (docs/design.md §2) and writes
// nothing on bad input; validation failures are *schema.ValidationError.
// Nothing here holds package-level mutable state; clocks and entropy are
// injected with [Option]s.
//
// Comments cite the Python project's decision records as ADR-n (ADR-151
// decision 4: a numbered decision of that record); docs/compatibility.md
// summarises each one.
package config
