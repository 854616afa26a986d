// Package shard is the model of one bucket shard between two writes
// (docs/design.md §8, "Limits reach the buckets in use"): its limits
// materialised at an instant with the parameters, schedules, grants and
// windows the shard itself stores; what a change of the configured limits
// makes of them (Reconfigure); whether a shard is in line with its config
// (InLine); the stamps rf, vu and ttl a write leaves; and the rf-locked
// update that carries it all (Pass.Update). It does no I/O: the operator's
// limits fan-out, reset and top-up (core/control) and the client's
// read-then-write path (core/limiter) ask it and send what it builds.
//
// A change of limits on a live shard (docs/design.md §8):
//
//   - the shard is first materialised at its own stored parameters up to
//     the change's instant, so that the old refill rate applies up to it
//     and no later;
//   - the new parameters apply from that instant: a lowered capacity
//     clamps the balance to the new ceiling (debt is kept), a raised one
//     grants nothing at once (the balance refills toward it at the new
//     rate), a calendar or session quota's changed allowance clamps in
//     the same way and is granted whole at the next reset or window;
//   - a limit the config no longer resolves is removed, its consumption
//     counter tc kept (it never moves backwards); a limit the config adds
//     is left to the first acquire that names it (its seed);
//   - the write moves rf to at least one millisecond past the stored one
//     (Pass.StampRF), so that every writer that pins rf (the client's slow
//     and refill passes, the aggregator's refill, reset and top-up) fails
//     rather than writes a state computed from the parameters it replaced
//     (docs/decisions.md P58).
package shard
