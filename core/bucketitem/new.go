package bucketitem

import (
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/bucket"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
)

// New is a shard that does not exist yet, as the slow path creates it
// (docs/design.md §5, Create), or an operator's top-up of a missing bucket
// (§8): everything its first item carries. A zero TTL, Bypass, VU or
// ParentID, and a false Disabled, is left off the item.
type New struct {
	// ID names the shard: namespace, entity, resource and shard number.
	ID schema.BucketID
	// RF is the creation instant, epoch ms: the item's refill stamp.
	RF int64
	// ShardCount is the pair's shard count as the creator read it.
	ShardCount int64
	// Cascade, PGen and ParentID are the owner stamp (docs/design.md §7).
	Cascade  bool
	PGen     int64
	ParentID string
	// TTL is the item's expiry, epoch seconds.
	TTL int64
	// Bypass is the bypass stamp's deadline, epoch ms (docs/design.md §8).
	Bypass int64
	// VU is the valid-until instant, epoch ms (docs/decisions.md P25).
	VU int64
	// Recheck is the deadline, epoch ms, by which a config read checks the
	// limits the shard is created with (docs/design.md §8): a create's
	// limits come from a config read made before the item existed, which
	// a limit change and its fan-out can pass in between.
	Recheck int64
	// Disabled stamps the shard disabled (docs/design.md §8): the config
	// read that justified the creation disables the pair. The client never
	// creates a disabled pair's shard; an operator's top-up may.
	Disabled bool
	// Limits are the user limits the shard starts with; `wcu` is added at
	// full by Item.
	Limits []NewLimit
	// Zone is the item's sched_tz, the zone its limits' schedules read
	// (docs/design.md §14); "" for UTC or none.
	Zone string
}

// NewLimit is one limit of a new shard.
type NewLimit struct {
	// Name is the limit name, {n} of b_{n}_*.
	Name string
	// Tokens is the starting balance, millitokens: the shard's share less
	// what the creating request consumed.
	Tokens int64
	// Consumed is the starting consumption counter, millitokens.
	Consumed int64
	// Params are the stored (undivided) parameters; only capacity, refill
	// amount and refill period are written (a quota's grant and top-up are
	// GrantShards and TopUp below).
	Params bucket.Params
	// Soft is the soft stamp's deadline, epoch ms; zero for a hard limit.
	Soft int64
	// Schedule is the limit's parameter schedule in its stored form
	// (b_{n}_sched); "" for none.
	Schedule string
	// ResetSchedule is a calendar quota's reset schedule in its stored
	// form (b_{n}_rsched); "" for a limit that drips.
	ResetSchedule string
	// GrantShards is a quota's grant count (b_{n}_gc, ADR-145): the shard
	// count its allowance was sized at; zero leaves it off.
	GrantShards int64
	// TopUp is a quota's top-up this period (b_{n}_tu, ADR-149),
	// millitokens; zero leaves it off.
	TopUp int64
	// WindowStart, ResetAfter, WindowAnchor and WindowConsumed are a
	// session quota's window (ADR-139, ADR-140; docs/design.md §2): its
	// start b_{n}_ws and the start its balance reflects b_{n}_wa (epoch
	// ms), its length b_{n}_rsa (seconds), the fan-out's snapshot of tc
	// b_{n}_wtc (millitokens). Zero leaves each off.
	WindowStart    int64
	ResetAfter     int64
	WindowAnchor   int64
	WindowConsumed int64
}

// Item encodes n as the full bucket item a conditional PutItem creates:
// the key attributes of every index, identity, refill stamp, shard count,
// owner stamp, the optional stamps, each limit's tk, tc, cp, ra and rp (and
// soft stamp, schedules, grant, top-up and session window when set), and
// the reserved `wcu` limit at full.
func (n *New) Item() map[string]types.AttributeValue {
	id := n.ID
	item := schema.BucketItemKeys(id.Namespace, id.Entity, id.Resource, id.Shard).Item()
	item[schema.AttrEntityID] = schema.Str(id.Entity)
	item[schema.AttrResource] = schema.Str(id.Resource)
	item[schema.AttrRF] = schema.Num(n.RF)
	item[schema.AttrShardCount] = schema.Num(n.ShardCount)
	item[schema.AttrCascade] = &types.AttributeValueMemberBOOL{Value: n.Cascade}
	item[schema.AttrPGen] = schema.Num(n.PGen)
	if n.ParentID != "" {
		item[schema.AttrParentID] = schema.Str(n.ParentID)
	}
	if n.TTL > 0 {
		item[schema.AttrTTL] = schema.Num(n.TTL)
	}
	if n.Bypass != 0 {
		item[schema.AttrBypass] = schema.Num(n.Bypass)
	}
	if n.VU != 0 {
		item[schema.AttrVU] = schema.Num(n.VU)
	}
	if n.Recheck != 0 {
		item[schema.AttrRecheck] = schema.Num(n.Recheck)
	}
	if n.Disabled {
		item[schema.AttrDisabled] = &types.AttributeValueMemberBOOL{Value: true}
	}
	for _, l := range n.Limits {
		putLimit(item, l.Name, l.Tokens, l.Consumed, l.Params)
		if l.Soft != 0 {
			item[schema.BucketAttr(l.Name, schema.LimitSoft)] = schema.Num(l.Soft)
		}
		if l.Schedule != "" {
			item[schema.BucketAttr(l.Name, schema.LimitSchedule)] = schema.Str(l.Schedule)
		}
		if l.ResetSchedule != "" {
			item[schema.BucketAttr(l.Name, schema.LimitResetSchedule)] = schema.Str(l.ResetSchedule)
		}
		if l.GrantShards != 0 {
			item[schema.BucketAttr(l.Name, schema.LimitGrantShards)] = schema.Num(l.GrantShards)
		}
		if l.TopUp != 0 {
			item[schema.BucketAttr(l.Name, schema.LimitTopUp)] = schema.Num(l.TopUp)
		}
		for _, w := range [...]struct {
			f schema.LimitField
			v int64
		}{
			{schema.LimitWindowStart, l.WindowStart}, {schema.LimitResetAfter, l.ResetAfter},
			{schema.LimitWindowAnchor, l.WindowAnchor}, {schema.LimitWindowConsumed, l.WindowConsumed},
		} {
			if w.v != 0 {
				item[schema.BucketAttr(l.Name, w.f)] = schema.Num(w.v)
			}
		}
	}
	if n.Zone != "" {
		item[schema.AttrSchedTZ] = schema.Str(n.Zone)
	}
	w := bucket.WCUParams()
	putLimit(item, schema.WCULimit, w.Capacity, 0, w)
	return item
}

func putLimit(item map[string]types.AttributeValue, name string, tk, tc int64, p bucket.Params) {
	item[schema.BucketAttr(name, schema.LimitTokens)] = schema.Num(tk)
	item[schema.BucketAttr(name, schema.LimitConsumed)] = schema.Num(tc)
	item[schema.BucketAttr(name, schema.LimitCapacity)] = schema.Num(p.Capacity)
	item[schema.BucketAttr(name, schema.LimitRefillAmount)] = schema.Num(p.RefillAmount)
	item[schema.BucketAttr(name, schema.LimitRefillPeriod)] = schema.Num(p.RefillPeriod)
}
