// Package maintenance is the aggregator's best-effort bucket upkeep
// (docs/design.md §6): proactive refill under the rf lock, proactive
// doubling of shard 0, and shard-count propagation (Path 1 raises the
// siblings, Path 2 clones shard 0 into new shards, copying every stamp
// verbatim and never writing a later deadline). Every write is conditional;
// a lost race is skipped silently. Failures are logged and counted, never
// reported to the stream: each step is re-derivable from later records or
// done by clients.
//
// Phase 1 (docs/design.md §9): a bucket any of whose NewImages in the batch
// carries a schedule, a window, a grant (gc) or a top-up (tu) attribute, or
// a limit with a zero (or unusable) rate, is left alone — no refill,
// doubling, raise or clone from or onto it — and counted in
// Stats.Abstained. Its usage is still aggregated by the handler.
//
// Writes name attributes through positional aliases only (#rf, #t0, :d0, …;
// docs/design.md §2) and never name a stamp (bypass, b_{n}_soft), an owner
// attribute (cascade, parent_id, pgen), disabled, ttl or tu; only a Path 2
// clone carries them, with shard 0's values .
package maintenance

import (
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/bucketitem"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
)

// Record is one bucket stream record (INSERT or MODIFY of a `#STATE` item),
// already parsed by the aggregator. Records are given in stream order.
type Record struct {
	// Seq is the stream sequence number as delivered.
	Seq string
	// ID is the bucket the record is about.
	ID schema.BucketID
	// NewItem and OldItem are the images as SDK attribute values (OldItem is
	// nil for an INSERT, and may be nil whenever OldImage is set: it is read
	// only in its absence); NewImage and OldImage are the same decoded.
	NewItem, OldItem   map[string]types.AttributeValue
	NewImage, OldImage *bucketitem.Image
	// RawNew, when NewItem is nil, builds it on demand: only a Path 2 clone
	// copies the raw image (every attribute, known or not), so a caller that
	// holds the image in another form need not convert every record.
	RawNew func() (map[string]types.AttributeValue, error)
	// At is the record's ApproximateCreationDateTime (zero when absent).
	At time.Time
}

// newItem is r's NewItem, built by RawNew when it was not given (nil when
// neither gives one).
func (r *Record) newItem() (map[string]types.AttributeValue, error) {
	if len(r.NewItem) > 0 || r.RawNew == nil {
		return r.NewItem, nil
	}
	return r.RawNew()
}

// Stats counts what one Run did.
type Stats struct {
	Refills    int // refill writes that landed
	RefillRace int // refill writes skipped: the rf lock or vu pin moved
	Doublings  int // shard-0 doublings that landed
	Raises     int // Path 1 shard_count raises that landed
	Clones     int // Path 2 clones created
	Abstained  int // buckets skipped for phase-2 attributes (docs/design.md §9)
	Failures   int // writes that failed for any other reason (logged)

	// Superseded counts doubling, raise and clone writes whose condition
	// failed: another writer doubled, a higher count is already there, or
	// the client created the shard first.
	Superseded int
	// Refused counts doublings refused at schema.MaxShardCount and propagations
	// of a shard_count above it (logged as warnings).
	Refused int
	// Corrupt counts records skipped because an image does not decode.
	Corrupt int
	// Pending counts planned writes never started because ctx was done.
	Pending int
	// Deferred counts quota resets left to the clients: the shard's count
	// lagged the one shard 0 holds, so its grant would be sized wrong.
	Deferred int
}
