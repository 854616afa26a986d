package bucketitem

import (
	"maps"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/bucket"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
)

// Clone returns shard 0's image src (decoded as img) as the item of
// shard dst.Shard (docs/design.md §6 Path 2, phase 1): the key attributes of the
// target shard (PK, SK and the GSI2/3/4 keys, as a client create writes
// them), shard_count = newSC, wcu tk = cp, every present limit
// tk = cp // newSC, every b_{n}_tc = 0 (partial limits included: the clone's
// INSERT record must not read as consumption) and every b_{n}_wtc = 0 with
// it (a session window's snapshot of that tc), every b_{n}_tu removed, vu
// at most rf (see below); every other attribute — rf, vu otherwise, ttl, cascade, parent_id, pgen, disabled, bypass,
// every b_{n}_soft, cp, ra, rp and whatever this package does not know — is
// shard 0's value, verbatim (the same AttributeValue). src is not
// modified.
func Clone(src map[string]types.AttributeValue, img *Image, dst schema.BucketID, newSC int64) map[string]types.AttributeValue {
	out := maps.Clone(src)
	for k := range out {
		_, f, ok := schema.ParseBucketAttr(k)
		switch {
		case !ok:
		case f == schema.LimitConsumed, f == schema.LimitWindowConsumed:
			out[k] = schema.Num(0)
		case f == schema.LimitTopUp:
			delete(out, k)
		}
	}
	schema.BucketItemKeys(dst.Namespace, dst.Entity, dst.Resource, dst.Shard).AddTo(out)
	out[schema.AttrShardCount] = schema.Num(newSC)
	if img.WCU.Present() {
		out[schema.BucketAttr(schema.WCULimit, schema.LimitTokens)] = schema.Num(img.WCU.Capacity)
	}
	drips := false
	for i := range img.Limits {
		l := &img.Limits[i]
		out[schema.BucketAttr(l.Name, schema.LimitTokens)] = schema.Num(bucket.FloorDiv(l.Capacity, newSC))
		drips = drips || (l.RefillAmount > 0 && !l.Soft.Present)
	}
	// A clone starts at its share's ceiling, so its own full-at instant is
	// its rf: vu = min(shard 0's vu, rf), and its first debit goes through
	// one materialising pass (docs/decisions.md P25).
	if drips && img.HasRF && (!img.HasVU || img.VU > img.RF) {
		out[schema.AttrVU] = schema.Num(img.RF)
	}
	return out
}

// RecheckAfter is how long a shard created from another shard's limits or
// from a config read made before it existed may run on them before a
// config read confirms them (docs/design.md §8): the default stamp TTL.
const RecheckAfter = 60_000 // ms

// MarkRecheck marks item, a shard about to be created, as carrying limits
// no config read has confirmed since it existed: recheck = deadline, and vu
// lowered to the deadline where it is later or absent, so that the fast
// path stops there and the next pass reads config (docs/design.md §8).
func MarkRecheck(item map[string]types.AttributeValue, deadline int64) {
	item[schema.AttrRecheck] = schema.Num(deadline)
	if v, ok := item[schema.AttrVU].(*types.AttributeValueMemberN); ok && v != nil {
		if vu, err := strconv.ParseInt(v.Value, 10, 64); err == nil && vu <= deadline {
			return
		}
	}
	item[schema.AttrVU] = schema.Num(deadline)
}
