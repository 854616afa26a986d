// Package limiter is a distributed rate limiter on one DynamoDB table: token
// buckets per (entity, resource) pair, with limits such as requests and
// tokens per minute, shared by every process that uses the table.
//
// # Opening
//
// Open checks the table's version record and returns a Limiter for one
// namespace; New does the same without the check. A Limiter is safe for
// concurrent use and is meant to live as long as the process: it caches
// configuration (Options.ConfigCacheTTL) and what it learned about each pair
// (Options.PairCacheSize, Options.PairCacheTTL).
//
// # Limits
//
// Limits live in the table, at four levels, and the first level that has
// limits for a pair wins: the entity on the resource, the entity's default
// for every resource, the resource, the system (see Limiter.Store and the
// config package). WithLimits overrides them for one call.
//
// # Acquiring
//
// Acquire takes amounts of one or more limits at once and returns a Lease,
// or one of the typed errors below. The common case is one conditional
// UpdateItem (no read). A Lease is already written; when the real
// consumption is known later (the tokens an LLM call used), Lease.Adjust
// corrects it and Lease.Commit writes the correction; Lease.Rollback gives
// the admission back.
//
// The errors say what to answer the caller:
//
//   - *RateLimitExceeded (429): a limit is short; RetryAfterHeader is the
//     Retry-After value and the value marshals to the JSON body.
//   - *ResourceDisabled (403): an operator disabled the pair.
//   - a validation error (400, IsValidationError): bad input; nothing was
//     written.
//   - *RateLimiterUnavailable (503): DynamoDB failed (throttles, 5xx,
//     timeouts) and on_unavailable says block; with allow, Acquire
//     returns a no-op lease (Lease.Degraded) instead.
//
// Contention is never an outage: a hot key gets an admission or a 429.
//
// # Metrics and traces
//
// Options.MeterProvider and Options.TracerProvider (the global
// OpenTelemetry providers when unset) receive counts of acquisitions by
// result, acquire durations by the path that answered, the DynamoDB calls
// and their write units, lease settles and changes, and the rejection
// cache's counters, and a span per Acquire, Commit, Rollback and lease
// change with each DynamoDB call as a child. Unused, they cost no
// allocation. The attribute keys are the Attr constants.
//
// # Guarantees
//
// A bucket never admits more than a token bucket of its capacity would,
// whatever the idle periods, bursts, shards and processes; each admitted
// amount is counted exactly once in the usage snapshots the aggregator
// builds. The design is in docs/design.md; the DynamoDB calls and units of
// every path are in docs/costs.md.
//
// Comments cite the Python project's decision records as ADR-n (ADR-151
// decision 4: a numbered decision of that record); docs/compatibility.md
// summarises each one.
package limiter
