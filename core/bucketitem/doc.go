// Package bucketitem is the storage seam of the bucket record (docs/design.md
// §2): the one place a stored bucket item becomes typed state and a new
// shard's state becomes an item.
//
//   - [Image] (with [Decode], [Image.Decode] and [DecodeItem]) is a bucket
//     item decoded: identity, refill stamp, shard count, owner and
//     operator stamps, and each limit's attributes ([LimitImage]). The fast
//     and slow paths, failure classification, the rejection cache, the
//     aggregator and the operator controls all decode through it, from SDK
//     attribute values or straight from a stream record's.
//   - [New] is a shard that does not exist yet; [New.Item] is the full item
//     the slow path creates (docs/design.md §5, Create).
//   - [Clone] turns shard 0's image into the item of a new shard, as the
//     aggregator's doubling writes it (docs/design.md §6, Path 2).
//
// The arithmetic on the decoded state is package bucket's; the update
// expressions that change an existing shard are built by the path that owns
// them (the limiter's writes, the aggregator's maintenance, the controls'
// reset and top-up).
package bucketitem
