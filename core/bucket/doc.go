// Package bucket is the token-bucket arithmetic of docs/design.md §3: plain functions
// of state, no I/O, no clock, no package-level mutable state.
//
// Units follow the bucket item (docs/design.md §2): balances, capacities, refill
// amounts and top-ups are int64 millitokens (tokens × [MilliPerToken]);
// refill periods and instants are milliseconds. Request amounts are whole
// tokens.
//
// The reference is the Python zae-limiter arithmetic on unbounded integers.
// Every function here agrees with it on every int64 input it documents
// (products are formed in 128 bits with math/bits; `//` is [FloorDiv]),
// except where a doc comment names a deliberate difference.
//
// The pieces, in the order a pass uses them:
//
//   - [Effective] / [Undivided]: per-shard ceiling, drip rate and period
//     from the stored (undivided) [Params] (docs/design.md §3).
//   - [Materialise]: the balance at now, clamped to the ceiling (docs/design.md §3).
//     Writers stamp rf with [StampRF], never the drift-compensated rf' that
//     [Refill] returns.
//   - [Covers], [Available], [DripRetryAfter], [QuotaRetryAfter], [Check]:
//     the consume check and retry hint (docs/design.md §3).
//   - [WouldRefillSatisfy]: the fast-rejection test on a failed write's old
//     image (docs/design.md §3).
//
// Comments cite the Python project's decision records as ADR-n (ADR-151
// decision 4: a numbered decision of that record); docs/compatibility.md
// summarises each one.
package bucket
