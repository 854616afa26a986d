// Package config is the configuration side of the table: entities (R4), the
// limit config items of the four levels (R5 entity per resource, R5
// entity `_default_`, R6 resource, R7 system) with their registries (R8, R9),
// limit resolution with its per-slot cache (SPEC §5.1), the uncached access
// and cascade walk (§5.3, §5.4), the `on_unavailable` precedence (§5.2) and
// the version record (R3, §13).
//
// # Pieces
//
//   - Codecs, pure: [EncodeLimits], [EncodeConfigItem], [DecodeConfigItem],
//     [DecodeEntity]. Decoding follows SPEC §1.5: a limit exists iff
//     `l_{n}_cp` and the other numeric fields are present; a corrupt limit
//     is skipped and reported as a [Problem]. Attributes of features this
//     version does not implement (hidden `w_` session limits, schedules,
//     `reset_after`, quotas, and the ADR-143 merge fields) make the item
//     unsupported: decoding returns an [*UnsupportedConfigError] and callers
//     fail closed (DECISIONS D15) instead of enforcing a partial set.
//   - [Store]: entity and config writes and reads against one table,
//     through the [DB] interface (*dynamodb.Client satisfies it).
//   - [Resolver]: cached limit resolution (one BatchGetItem for all misses,
//     GetItem fallback), [Resolver.ResolveAccess] (uncached walk) and
//     [Resolver.OnUnavailable].
//   - Versions: [Store.CheckVersion], [Store.WriteVersion].
//
// Everything validates its inputs at the boundary (SPEC §18) and writes
// nothing on bad input; validation failures are *schema.ValidationError.
// Nothing here holds package-level mutable state; clocks and entropy are
// injected with [Option]s.
package config
