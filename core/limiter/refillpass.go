package limiter

import (
	"context"
	"errors"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/bucket"
	"github.com/zae-limiter/zae-limiter-go/core/bucketitem"
	"github.com/zae-limiter/zae-limiter-go/core/config"
	"github.com/zae-limiter/zae-limiter-go/core/internal/expr"
	"github.com/zae-limiter/zae-limiter-go/core/internal/shard"
	"github.com/zae-limiter/zae-limiter-go/core/limiter/internal/bucketwrite"
	"github.com/zae-limiter/zae-limiter-go/core/schedule"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
)

// A refill pass is an rf-locked write built from a bucket image this
// process already holds — the ALL_OLD image of a write that met a passed
// vu — with no read (docs/decisions.md P25, docs/design.md "Valid until").
// It materialises every limit on the item at now with the item's own
// parameters, applies the deltas, moves rf and stamps the new vu. Pinned to
// the image's rf and vu, it is exact whatever happened since the image: a
// lost pin means another writer moved the state, and the caller decides
// again from the image the failure returns.
//
// It never re-reads config: a vu of 0 (a parameter change) and anything
// else this pass does not settle — a stamp to renew, a missing limit, an
// expired ttl, a cascade, a parameter schedule, a session window to open
// or roll (the fan-out and the pair's other shards are the slow path's),
// a calendar quota's reset on a shard other than 0 (sized at shard 0's
// count, docs/design.md §15) — is left to the slow path. A calendar
// quota's reset on shard 0 is applied here, from the image's reset
// schedule, and a session quota inside a live window its balance
// reflects is clamped to its ceiling, its vu bounded by the window's end.

// refillable reports whether the enforce-shaped write that returned img
// (at clock reading now) can be settled by a refill pass for declared: a
// positive vu that has passed, and nothing else a slow path would fix.
func refillable(img *bucketitem.Image, declared []bucketwrite.Declared, now int64) bool {
	switch {
	case img == nil, !img.HasRF, !img.HasVU, img.VU <= 0, img.VU > now,
		img.HasDisabled, img.Bypass.Present, img.HasParamSchedule(),
		img.HasTTL && img.TTL <= bucket.FloorDiv(now, 1000), !img.WCU.Present():
		return false
	}
	for _, d := range declared {
		if img.Limit(d.Name) == nil {
			return false
		}
	}
	for i := range img.Limits {
		if img.Limits[i].Soft.Expired(now) {
			return false
		}
	}
	return true
}

// refillPlan is a refill pass decided from one image.
type refillPlan struct {
	in    *dynamodb.UpdateItemInput
	part  leasePart         // the declared limits after the write (admit)
	short []LimitStatus     // admit: the declared limits, when a hard one is short
	img   *bucketitem.Image // the image the pass was built from
	id    schema.BucketID
	// unsettled reports an image a refill pass cannot settle (in is nil):
	// a limit it cannot materialise from the image alone — a quota whose
	// reset schedule does not read, a drip beside a reset schedule, or a
	// reset due on a shard other than 0.
	unsettled bool
}

// planRefill builds the refill pass of img on bucket id at now with the
// deltas (whole tokens; positive consumes). The write is pinned to the
// image's rf, vu and every limit's stored balance, so it applies exactly to
// the state it was computed from. With admit, a declared hard limit that
// the materialised balance cannot cover makes the plan short (no write);
// the write also requires the item to be enabled, unbypassed, unexpired
// and not cascading, as the fast path does. Without admit (a lease's
// adjust) the deltas apply whatever the balance.
//
// A shard that carries a recheck stamp keeps it, and vu never passes it,
// unless verified: the caller read config after the image and found the
// shard's limits in line, and the write removes the stamp (docs/design.md
// §8).
func (l *Limiter) planRefill(req *request, id schema.BucketID, img *bucketitem.Image, deltas []bucketwrite.Declared, admit, verified bool, now int64) refillPlan {
	plan := refillPlan{id: id, img: img, part: leasePart{entity: id.Entity, shard: id.Shard}}
	u := &expr.Builder{}
	u.Cond(u.Name(schema.AttrRF) + " = " + u.Value(schema.Num(img.RF)))
	u.Cond(u.Name(schema.AttrVU) + " = " + u.Value(schema.Num(img.VU)))
	rf := bucket.StampRF(img.RF, now)
	u.Set(schema.AttrRF, schema.Num(rf))
	full := int64(bucket.NeverFull)
	shards := max(img.ShardCount, 1)
	delta := func(name string) (bucketwrite.Declared, bool) {
		for _, d := range deltas {
			if d.Name == name {
				return d, true
			}
		}
		return bucketwrite.Declared{}, false
	}
	exceeded := false
	countPinned := false
	for i := range img.Limits {
		li := &img.Limits[i]
		p := li.Params()
		var (
			share             bucket.Share
			balance, credited int64
			resets            schedule.Resets
			loc               *time.Location
			windowEnd         int64 // a session quota's live window's end
		)
		if li.HasWindow() {
			w := li.Window()
			if w.Length <= 0 || li.GrantShards < 1 || !p.IsQuota() || w.Phase(img.RF, now) != bucket.WindowCurrent {
				return refillPlan{unsettled: true}
			}
			windowEnd, _ = w.End()
			share = bucket.Effective(p, shards)
			balance = min(li.Tokens, share.Ceiling)
			credited = balance - li.Tokens
			full = min(full, windowEnd)
		} else if li.ResetSchedule != "" || img.HasResetSched || p.IsQuota() {
			// A calendar quota (docs/design.md §15), from the image's
			// reset schedule.
			var err error
			if _, resets, loc, err = img.Schedules(li.Name); err != nil || (len(resets) > 0) != p.IsQuota() {
				return refillPlan{unsettled: true}
			}
			ps := schedule.Materialise(p, nil, resets, loc, li.Tokens, img.RF, shards, now)
			if ps.Reset && id.Shard != 0 {
				return refillPlan{unsettled: true}
			}
			share, balance, credited = ps.Share, ps.Balance, ps.Balance-li.Tokens
			full = min(full, ps.Boundary)
			if ps.Reset {
				u.Set(schema.BucketAttr(li.Name, schema.LimitGrantShards), schema.Num(shards))
				if li.Fields.Has(bucketitem.FieldTopUp) {
					u.Remove(schema.BucketAttr(li.Name, schema.LimitTopUp))
				}
				if !countPinned {
					countPinned = true
					sc := u.Name(schema.AttrShardCount)
					u.Cond("(attribute_not_exists(" + sc + ") OR " + sc + " <= " + u.Value(schema.Num(shards)) + ")")
				}
			}
		} else {
			share = bucket.Effective(p, shards)
			balance, credited = bucket.Materialise(li.Tokens, img.RF, now, share.Ceiling, share.Rate, share.Period)
		}
		soft := li.Soft.Live(now)
		d, declared := delta(li.Name)
		milli := d.Amount * bucket.MilliPerToken // validated to fit at admission
		tk := schema.BucketAttr(li.Name, schema.LimitTokens)
		// Pinned: the credit is computed from this balance (a debit by
		// another writer since the image would change what refill adds).
		u.Cond(u.Name(tk) + " = " + u.Value(schema.Num(li.Tokens)))
		if v := credited - milli; v != 0 {
			u.Add(tk, schema.Num(v))
		}
		if milli != 0 {
			u.Add(schema.BucketAttr(li.Name, schema.LimitConsumed), schema.Num(milli))
		}
		if !soft && share.Rate > 0 {
			full = min(full, share.FullAt(balance-milli, rf))
		}
		if !declared {
			continue
		}
		if admit {
			st := bucket.Status{Balance: balance, Available: bucket.Available(balance)}
			if !soft && !bucket.Covers(balance, d.Amount) {
				st.Exceeded, exceeded = true, true
				st.Retry = bucket.DripRetryAfter(balance, d.Amount, share.Ceiling, share.Rate, share.Period)
				if len(resets) > 0 {
					st.Retry = resets.RetryAfter(balance, d.Amount, share.Ceiling, time.UnixMilli(now), loc)
				}
				if windowEnd > 0 {
					st.Retry = bucket.QuotaRetryAfter(balance, d.Amount, windowEnd, now)
				}
			}
			plan.short = append(plan.short, limitStatus(req.entity, req.resource, d, p, soft, st))
		}
		plan.part.entries = append(plan.part.entries, leaseEntry{
			name: li.Name, initial: d.Amount, params: p, share: share, balance: balance - milli, soft: soft,
		})
	}
	if admit && exceeded {
		return plan
	}
	plan.short = nil
	// Deltas of limits the item does not carry (an adjust after a config
	// change): counted as the Adjust shape would.
	for _, d := range deltas {
		if img.Limit(d.Name) == nil && d.Amount != 0 {
			milli := d.Amount * bucket.MilliPerToken
			u.Add(schema.BucketAttr(d.Name, schema.LimitTokens), schema.Num(-milli))
			u.Add(schema.BucketAttr(d.Name, schema.LimitConsumed), schema.Num(milli))
		}
	}
	if w := &img.WCU; w.Present() {
		wt := schema.BucketAttr(schema.WCULimit, schema.LimitTokens)
		u.Cond(u.Name(wt) + " = " + u.Value(schema.Num(w.Tokens)))
		s := bucket.Undivided(w.Params())
		if _, credited := bucket.Materialise(w.Tokens, img.RF, now, s.Ceiling, s.Rate, s.Period); credited != 0 {
			u.Add(wt, schema.Num(credited))
		}
	}
	switch {
	case img.HasRecheck && verified:
		u.Remove(schema.AttrRecheck)
	case img.HasRecheck:
		full = min(full, img.Recheck)
	}
	if full != bucket.NeverFull {
		u.Set(schema.AttrVU, schema.Num(full))
	} else {
		u.Remove(schema.AttrVU)
	}
	if admit {
		u.Cond("attribute_not_exists(" + u.Name(schema.AttrDisabled) + ")")
		u.Cond("attribute_not_exists(" + u.Name(schema.AttrBypass) + ")")
		ttl := u.Name(schema.AttrTTL)
		u.Cond("(attribute_not_exists(" + ttl + ") OR " + ttl + " > " + u.Value(schema.Num(bucket.FloorDiv(now, 1000))) + ")")
		// The owner stamp the caller acts on (who else to debit).
		cascade := u.Name(schema.AttrCascade)
		if img.HasCascade {
			u.Cond(cascade + " = " + u.Value(&types.AttributeValueMemberBOOL{Value: img.Cascade}))
		} else {
			u.Cond("attribute_not_exists(" + cascade + ")")
		}
		parent := u.Name(schema.AttrParentID)
		if img.HasParent {
			u.Cond(parent + " = " + u.Value(schema.Str(img.ParentID)))
		} else {
			u.Cond("attribute_not_exists(" + parent + ")")
		}
	}
	plan.in = u.UpdateInput(l.table, id.Key())
	plan.in.ReturnValues = types.ReturnValueAllNew
	plan.in.ReturnValuesOnConditionCheckFailure = types.ReturnValuesOnConditionCheckFailureAllOld
	return plan
}

// sendRefill sends a planned refill pass. It returns the image the item
// has after the write (ALL_NEW), or, on a lost pin, the image the failure
// carries (nil when the item is gone) and lost.
func (l *Limiter) sendRefill(ctx context.Context, plan refillPlan) (img *bucketitem.Image, lost bool, err error) {
	id := plan.id
	mark := l.rejects.mark(id.Entity, id.Resource)
	out, err := l.db.UpdateItem(ctx, plan.in)
	item := map[string]types.AttributeValue(nil)
	if err == nil {
		item = out.Attributes
	} else {
		var ccf *types.ConditionalCheckFailedException
		if !errors.As(err, &ccf) {
			return nil, false, &dbError{op: "refill pass", err: err}
		}
		item, lost = ccf.Item, true
	}
	if len(item) == 0 {
		return nil, lost, nil
	}
	dec, err := bucketitem.Decode(item)
	if err != nil {
		return nil, lost, err
	}
	l.rejects.remember(id, &dec, mark)
	return &dec, lost, nil
}

// next is what the acquire loop does after refill passes that did not
// settle the request.
type next uint8

const (
	nextSpeculate     next = iota + 1 // the state has a live vu: the fast path
	nextReadThenWrite                 // something only the read-then-write path settles
)

// refillAcquire admits req on bucket id, whose image img (held in the pair
// cache, or returned by a failed enforce write) shows a passed vu, with
// refill passes and no read. It returns a lease, or a *RateLimitExceeded
// decided on the materialised state, or what to do next when the state
// moved to one a refill pass does not settle.
//
// A cascading child's admission goes on to its parent (cascade set: the
// parent's write of the cold path, with every outcome of docs/design.md §5);
// without cascade, the caller is the cascade and wants this shard alone.
//
// A rejection is decided only on a fresh image (returned by DynamoDB for
// this request): a held image may predate another process's credit, so a
// shortfall on it sends the request to the fast path instead.
func (l *Limiter) refillAcquire(ctx context.Context, req *request, id schema.BucketID, img *bucketitem.Image, fresh, cascade bool) (*Lease, next, error) {
	req.path = pathRefillPass
	var checked *config.Walk // the config read, strongly consistent, once an image carried a recheck stamp
	for range maxPasses {
		now := l.nowMs()
		if img != nil && img.HasVU && img.VU > now {
			return nil, nextSpeculate, nil
		}
		if !refillable(img, req.declared, now) {
			return nil, nextReadThenWrite, nil
		}
		if img.HasRecheck && img.Recheck <= now {
			// A shard created from a config read made before it existed,
			// its recheck deadline come: its limits are checked against
			// config read now (docs/design.md §8), and the slow path brings
			// them in line if they differ. Before the deadline, the pass
			// keeps the stamp and vu stops at it.
			if checked == nil {
				w, err := l.resolver.ResolveAccess(ctx, l.ns, req.entity, req.resource, config.AccessOptions{Consistent: true, IncludeSystem: true})
				if err != nil {
					return nil, 0, err
				}
				checked = &w
			}
			if d := shard.Compare(img, checked.Limits, checked.Source.EntityLevel(), l.ttlMultiplier); len(d.Changed)+len(d.Extra) > 0 || checked.Mode != config.AccessEnforce {
				return nil, nextReadThenWrite, nil
			}
		}
		plan := l.planRefill(req, id, img, req.declared, true, checked != nil && img.Recheck <= now, now)
		if plan.unsettled {
			return nil, nextReadThenWrite, nil
		}
		if plan.in == nil {
			if !fresh {
				return nil, nextSpeculate, nil
			}
			if checked != nil && img.Recheck <= now {
				l.clearRecheck(ctx, id, img, now)
			}
			return nil, 0, &RateLimitExceeded{Statuses: plan.short}
		}
		cur, lost, err := l.sendRefill(ctx, plan)
		if err != nil {
			return nil, 0, err
		}
		if cur != nil {
			l.pairs.learnImage(req.entity, req.resource, id.Shard, cur, now)
		}
		if !lost {
			if cascade && cur.Cascades() {
				c := speculation{req: req, id: id, shape: bucketwrite.ShapeEnforce, now: now, ok: true, img: cur}
				lease, err := l.cascadeAdmitted(ctx, req, c, speculation{})
				return lease, 0, err
			}
			return &Lease{lim: l, resource: req.resource, parts: []leasePart{plan.part}}, 0, nil
		}
		img, fresh = cur, true
	}
	return nil, nextReadThenWrite, nil
}

// clearRecheck is the write a refused acquire leaves after it checked a
// shard's limits against config and found them in line (docs/design.md
// §8): a zero-consumption refill pass that removes the recheck stamp and
// stamps vu from the shard's own limits, so that the requests after it are
// decided from the image (the rejection cache) instead of checking again.
// A lost pin or a failure is left to the next pass.
func (l *Limiter) clearRecheck(ctx context.Context, id schema.BucketID, img *bucketitem.Image, now int64) {
	plan := l.planRefill(nil, id, img, nil, false, true, now)
	if plan.unsettled || plan.in == nil {
		return
	}
	cur, _, err := l.sendRefill(ctx, plan)
	if err != nil {
		l.log.DebugContext(ctx, "recheck stamp not cleared", "resource", id.Resource, "shard", id.Shard, "error", err)
		return
	}
	if cur != nil {
		l.pairs.learnImage(id.Entity, id.Resource, id.Shard, cur, now)
	}
}
