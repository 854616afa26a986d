// Package usage reads usage: the snapshots the aggregator writes from the
// buckets' consumption counters (docs/design.md §6), and the live state of
// buckets. It only reads; an operator tool and a Go service use it alike
// (docs/design.md §16).
//
//   - [Reader.Snapshots] (and [Reader.SnapshotPage], [Reader.SnapshotsFrom]
//     to page and resume with a [PageToken]) lists the snapshots a
//     [Selection] selects: one entity's on a resource ([ForEntity], from
//     the entity's partition) or every entity's on a resource
//     ([ForResource], from the usage index GSI2), of one [Window] kind,
//     whose window starts in [From, To), optionally only some limits. Each
//     [Snapshot] holds the whole tokens per limit, the soft limits'
//     overdraw counts and total_events, as stored.
//   - [Reader.Summary] (and [Summarize]) sums a selection: per limit the
//     total and the average per window, the first and last window, the
//     counts of windows, snapshots and entities.
//   - [Reader.Bucket] reads an entity's bucket on a resource, sums its
//     limits over the shards and projects the balances to the reader's
//     clock with the bucket's own refill; [Reader.Top] ranks a resource's
//     entities by a limit's consumption counter.
//
// What each call reads and costs is in docs/costs.md ("Reading usage").
package usage
