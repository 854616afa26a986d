package limiter

// One pass of the read-then-write path for one entity: the state read and
// the config, every limit materialised and the request applied to it, the
// verdict when a hard limit is short, and the item or rf-locked update
// that carries the admission (docs/design.md §4, §5).

import (
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/bucket"
	"github.com/zae-limiter/zae-limiter-go/core/bucketitem"
	"github.com/zae-limiter/zae-limiter-go/core/config"
	"github.com/zae-limiter/zae-limiter-go/core/internal/expr"
	"github.com/zae-limiter/zae-limiter-go/core/limit"
	"github.com/zae-limiter/zae-limiter-go/core/limiter/internal/bucketwrite"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
)

// contentionRetry is the retry-after of a request the state showed covered
// but whose writes lost every race: other clients are spending the same
// tokens now, so the caller is asked back after a short, finite wait.
const contentionRetry = 100 * time.Millisecond

// contended is the verdict on a request whose writes lost their races, from
// the passes it read: every declared limit's status, each hard one marked
// exceeded — with its own retry-after when the state was short, and
// contentionRetry when the state covered it. Nil when no declared limit is
// hard (nothing to reject on).
func (l *Limiter) contended(passes ...*pass) *RateLimitExceeded {
	e := &RateLimitExceeded{}
	for _, p := range passes {
		if p == nil {
			continue
		}
		for _, pl := range p.plan {
			if !pl.declared {
				continue
			}
			st := pl.status
			if !pl.lim.Soft && !p.bypass && !st.Exceeded {
				st.Exceeded = true
				st.Retry = bucket.Retry{Short: true, WaitMs: contentionRetry.Milliseconds()}
			}
			e.Statuses = append(e.Statuses, limitStatus(p.req.entity, p.req.resource, bucketwrite.Declared{Name: pl.lim.Name, Amount: pl.amount}, pl.params, pl.lim.Soft, st))
		}
	}
	if len(e.Violations()) == 0 {
		return nil
	}
	return e
}

// planned is one limit of a slow pass: its config, the state read and the
// state to write.
type planned struct {
	lim      limit.Limit
	params   bucket.Params // as configured: what the item stores
	inForce  bucket.Params // what the limit's schedule has at now (params when unscheduled)
	boundary int64         // the schedule's next boundary, epoch ms; bucket.NeverFull for none
	share    bucket.Share  // of inForce
	present  bool          // on the item (discovery rule)
	stored   int64         // tk read, millitokens
	balance  int64         // materialised at now, before consumption
	consumed int64         // millitokens this request takes
	declared bool
	amount   int64 // tokens requested (declared only)
	status   bucket.Status
}

// pass is one entity's side of a slow pass: what was read and decided, and
// the write that carries it.
type pass struct {
	req      *request // entity is this pass's entity
	mark     uint64   // the rejection cache's mark before the read
	id       schema.BucketID
	plan     []planned
	img      *bucketitem.Image // nil: the shard is missing and is created
	owner    config.Entity
	cascade  bool // the entity cascades on this resource (its owner stamp)
	shards   int64
	ttl      int64
	bypass   bool
	deadline int64
	now      int64
	// One of put (create) or update (rf-locked write) is set by build.
	put    map[string]types.AttributeValue
	update *expr.Builder
}

// plan materialises every limit at now and applies the request to it.
func (l *Limiter) plan(req *request, limits []limit.Limit, img *bucketitem.Image, shards, now int64) []planned {
	out := make([]planned, 0, len(limits))
	for _, lim := range limits {
		p := lim.Params()
		pl := planned{lim: lim, params: p, inForce: p, boundary: bucket.NeverFull}
		if lim.Schedule != "" {
			// docs/design.md §14: the parameters in force at now; vu stops
			// the fast path at the next boundary.
			if s, loc, err := lim.ParamSchedule(); err == nil {
				at := time.UnixMilli(now)
				pl.inForce = s.Effective(p, at, loc)
				if t, ok := s.NextChange(at, loc); ok {
					pl.boundary = t.UnixMilli()
				}
			}
		}
		pl.share = bucket.Effective(pl.inForce, shards)
		if img != nil {
			if li := img.Limit(lim.Name); li != nil {
				pl.present, pl.stored = true, li.Tokens
				pl.balance, _ = bucket.Materialise(li.Tokens, img.RF, now, pl.share.Ceiling, pl.share.Rate, pl.share.Period)
			}
		}
		if !pl.present {
			pl.balance = pl.share.Target
		}
		for _, d := range req.declared {
			if d.Name == lim.Name {
				pl.declared, pl.amount = true, d.Amount
				pl.consumed, _ = bucket.ToMilli(d.Amount)
			}
		}
		pl.status = bucket.Status{Balance: pl.balance, Available: bucket.Available(pl.balance)}
		if pl.declared && !lim.Soft && !bucket.Covers(pl.balance, pl.amount) {
			pl.status.Exceeded = true
			pl.status.Retry = bucket.DripRetryAfter(pl.balance, pl.amount, pl.share.Ceiling, pl.share.Rate, pl.share.Period)
		}
		out = append(out, pl)
	}
	return out
}

// violations builds the rejection of a pass (and its parent's) when a
// declared hard limit is short. A bypassed side never rejects.
func (l *Limiter) violations(passes ...*pass) *RateLimitExceeded {
	short := false
	for _, p := range passes {
		if p == nil || p.bypass {
			continue
		}
		for _, pl := range p.plan {
			short = short || pl.status.Exceeded
		}
	}
	if !short {
		return nil
	}
	e := &RateLimitExceeded{}
	for _, p := range passes {
		if p == nil {
			continue
		}
		for _, pl := range p.plan {
			if pl.declared {
				st := pl.status
				st.Exceeded = st.Exceeded && !p.bypass
				e.Statuses = append(e.Statuses, limitStatus(p.req.entity, p.req.resource, bucketwrite.Declared{Name: pl.lim.Name, Amount: pl.amount}, pl.params, pl.lim.Soft, st))
			}
		}
	}
	return e
}

// build sets the pass's write: the full item of a create, or the rf-locked
// update (docs/design.md §3, §5). A bypassed pass funds a create without
// debiting it, and on an existing shard only adds tc and renews the stamp
// (ADR-151 decision 6).
func (p *pass) build() {
	if p.img == nil {
		p.put = p.createItem()
		return
	}
	u := &expr.Builder{}
	p.update = u
	img := p.img
	if p.bypass {
		u.Cond("attribute_exists(" + u.Name(schema.AttrPK) + ")")
		u.Set(schema.AttrBypass, schema.Num(p.deadline))
		for _, pl := range p.plan {
			if !pl.present {
				seed(u, pl, true)
			} else if pl.consumed != 0 {
				u.Add(schema.BucketAttr(pl.lim.Name, schema.LimitConsumed), schema.Num(pl.consumed))
			}
		}
	} else {
		// The rf lock, and the vu pin: a credit sets vu without moving rf
		// (docs/decisions.md P25).
		u.Cond(u.Name(schema.AttrRF) + " = " + u.Value(schema.Num(img.RF)))
		vu := u.Name(schema.AttrVU)
		if img.HasVU {
			u.Cond(vu + " = " + u.Value(schema.Num(img.VU)))
		} else {
			u.Cond("attribute_not_exists(" + vu + ")")
		}
		rf := bucket.StampRF(img.RF, p.now)
		u.Set(schema.AttrRF, schema.Num(rf))
		switch full := p.validUntil(rf); {
		case full != bucket.NeverFull:
			u.Set(schema.AttrVU, schema.Num(full))
		case img.HasVU:
			u.Remove(schema.AttrVU)
		}
		for _, pl := range p.plan {
			if !pl.present {
				seed(u, pl, false)
				continue
			}
			credited := pl.balance - pl.stored
			tk := schema.BucketAttr(pl.lim.Name, schema.LimitTokens)
			if d := credited - pl.consumed; d != 0 {
				u.Add(tk, schema.Num(d))
			}
			if pl.consumed != 0 {
				u.Add(schema.BucketAttr(pl.lim.Name, schema.LimitConsumed), schema.Num(pl.consumed))
			}
			if floor := pl.consumed - credited; floor > 0 && !pl.lim.Soft {
				u.Cond(u.Name(tk) + " >= " + u.Value(schema.Num(floor)))
			}
			if li := img.Limit(pl.lim.Name); li != nil && li.Params() != pl.params {
				setParams(u, pl)
			}
		}
		if img.WCU.Present() {
			s := bucket.Undivided(bucket.WCUParams())
			if _, credited := bucket.Materialise(img.WCU.Tokens, img.RF, p.now, s.Ceiling, s.Rate, s.Period); credited != 0 {
				u.Add(schema.BucketAttr(schema.WCULimit, schema.LimitTokens), schema.Num(credited))
			}
		}
		if img.Bypass.Present {
			u.Remove(schema.AttrBypass)
		}
	}
	// Soft stamps follow the fresh config read (docs/design.md §8).
	for _, pl := range p.plan {
		attr := schema.BucketAttr(pl.lim.Name, schema.LimitSoft)
		li := img.Limit(pl.lim.Name)
		switch {
		case pl.lim.Soft:
			u.Set(attr, schema.Num(p.deadline))
		case li != nil && li.Soft.Present:
			u.Remove(attr)
		}
	}
	p.syncSchedules(u)
	// Owner stamp, pinned to the parent generation read (ADR-150).
	pgen := u.Name(schema.AttrPGen)
	u.Cond("(attribute_not_exists(" + pgen + ") OR " + pgen + " <= " + u.Value(schema.Num(p.owner.PGen)) + ")")
	u.Set(schema.AttrPGen, schema.Num(p.owner.PGen))
	u.Set(schema.AttrCascade, &types.AttributeValueMemberBOOL{Value: p.cascade})
	if p.owner.ParentID != "" {
		u.Set(schema.AttrParentID, schema.Str(p.owner.ParentID))
	} else if img.HasParent {
		u.Remove(schema.AttrParentID)
	}
	if img.HasDisabled {
		u.Remove(schema.AttrDisabled)
	}
	switch {
	case p.ttl > 0:
		u.Set(schema.AttrTTL, schema.Num(p.ttl))
	case img.HasTTL:
		u.Remove(schema.AttrTTL)
	}
}

// syncSchedules brings the item's schedules in line with the config read
// (docs/design.md §14): each limit's b_{n}_sched set or removed, sched_tz
// the zone of the scheduled limits, and an item-level sched or rsched
// another writer left removed, since every limit this pass writes says
// its own.
func (p *pass) syncSchedules(u *expr.Builder) {
	img := p.img
	zone, scheduled := "", false
	for _, pl := range p.plan {
		attr := schema.BucketAttr(pl.lim.Name, schema.LimitSchedule)
		li := img.Lookup(pl.lim.Name)
		has := li != nil && li.Fields.Has(bucketitem.FieldSchedule)
		switch {
		case pl.lim.Schedule != "":
			zone, scheduled = pl.lim.Zone, true
			if !has || li.Schedule != pl.lim.Schedule {
				u.Set(attr, schema.Str(pl.lim.Schedule))
			}
		case has:
			u.Remove(attr)
		}
	}
	switch {
	case scheduled && zone != "" && img.SchedTZ != zone:
		u.Set(schema.AttrSchedTZ, schema.Str(zone))
	case (!scheduled || zone == "") && img.HasSchedTZ:
		u.Remove(schema.AttrSchedTZ)
	}
	if img.HasSched {
		u.Remove(schema.AttrSched)
	}
}

// validUntil is the vu a write of this pass that moves rf to rf stamps
// (docs/decisions.md P25): the first instant at which a hard dripping limit
// reaches its ceiling from the balance the write leaves, or
// bucket.NeverFull when no limit constrains it. Soft limits never reject,
// so their capped refill admits nothing; wcu only steers doubling.
func (p *pass) validUntil(rf int64) int64 {
	full := int64(bucket.NeverFull)
	for _, pl := range p.plan {
		full = min(full, pl.boundary)
		if pl.lim.Soft || pl.share.Rate <= 0 {
			continue
		}
		left := pl.balance // the target share for a limit not on the item yet
		if !p.bypass {
			left -= pl.consumed
		}
		full = min(full, pl.share.FullAt(left, rf))
	}
	return full
}

// createItem is the full item of a new shard (docs/design.md §5, Create).
func (p *pass) createItem() map[string]types.AttributeValue {
	n := bucketitem.New{
		ID: p.id, RF: p.now, ShardCount: p.shards,
		Cascade: p.cascade, PGen: p.owner.PGen, ParentID: p.owner.ParentID,
		TTL:    p.ttl,
		Limits: make([]bucketitem.NewLimit, 0, len(p.plan)),
	}
	if p.bypass {
		n.Bypass = p.deadline
	}
	if full := p.validUntil(p.now); full != bucket.NeverFull {
		n.VU = full
	}
	for _, pl := range p.plan {
		l := bucketitem.NewLimit{Name: pl.lim.Name, Tokens: pl.share.Target, Consumed: pl.consumed, Params: pl.params}
		if !p.bypass {
			l.Tokens -= pl.consumed
		}
		if pl.lim.Soft {
			l.Soft = p.deadline
		}
		if pl.lim.Schedule != "" {
			l.Schedule, n.Zone = pl.lim.Schedule, pl.lim.Zone
		}
		n.Limits = append(n.Limits, l)
	}
	return n.Item()
}

// part is the lease part of a written pass.
func (p *pass) part() leasePart {
	lp := leasePart{entity: p.id.Entity, shard: p.id.Shard, bypassed: p.bypass}
	for _, pl := range p.plan {
		if !pl.declared {
			continue
		}
		balance := pl.balance
		if !p.bypass {
			balance -= pl.consumed
		}
		lp.entries = append(lp.entries, leaseEntry{
			name: pl.lim.Name, initial: pl.amount, params: pl.params, share: pl.share, balance: balance, soft: pl.lim.Soft,
		})
	}
	return lp
}

// seed adds a limit missing on the item (docs/design.md §5: seeds for resolved
// limits), conditioned on its absence.
func seed(u *expr.Builder, pl planned, bypass bool) {
	cp := schema.BucketAttr(pl.lim.Name, schema.LimitCapacity)
	u.Cond("attribute_not_exists(" + u.Name(cp) + ")")
	setParams(u, pl)
	tk := pl.share.Target
	if !bypass {
		tk -= pl.consumed
	}
	u.Add(schema.BucketAttr(pl.lim.Name, schema.LimitTokens), schema.Num(tk))
	u.Add(schema.BucketAttr(pl.lim.Name, schema.LimitConsumed), schema.Num(pl.consumed))
}

func setParams(u *expr.Builder, pl planned) {
	u.Set(schema.BucketAttr(pl.lim.Name, schema.LimitCapacity), schema.Num(pl.params.Capacity))
	u.Set(schema.BucketAttr(pl.lim.Name, schema.LimitRefillAmount), schema.Num(pl.params.RefillAmount))
	u.Set(schema.BucketAttr(pl.lim.Name, schema.LimitRefillPeriod), schema.Num(pl.params.RefillPeriod))
}

// bucketTTL is docs/design.md §2: no TTL for entity-configured limits; otherwise
// now + the longest recovery time × the multiplier, in epoch seconds.
// Zero means no TTL.
func (l *Limiter) bucketTTL(limits []limit.Limit, source config.Level, override bool, now int64) int64 {
	if l.ttlMultiplier == 0 || (!override && (source == config.LevelEntity || source == config.LevelEntityDefault)) {
		return 0
	}
	var horizon int64 // seconds
	for _, lim := range limits {
		horizon = max(horizon, lim.RecoverySeconds(time.UnixMilli(now)))
	}
	return now/1000 + horizon*l.ttlMultiplier
}

// stampFix is the write that brings a pass's bucket stamps in line with the
// config it read uncached, when they disagree: soft stamps set (with a
// fresh deadline) on soft limits whose stamp is missing or dead, removed
// from hard ones; a bypass stamp removed when the pair is not bypassed.
// Nil when nothing disagrees, or when there is no bucket.
func (p *pass) stampFix() *expr.Builder {
	if p == nil || p.img == nil {
		return nil
	}
	var b expr.Builder
	for _, pl := range p.plan {
		li := p.img.Limit(pl.lim.Name)
		if li == nil {
			continue
		}
		attr := schema.BucketAttr(pl.lim.Name, schema.LimitSoft)
		switch {
		case pl.lim.Soft && !li.Soft.Live(p.now):
			b.Set(attr, schema.Num(p.deadline))
		case !pl.lim.Soft && li.Soft.Present:
			b.Remove(attr)
		}
	}
	if p.img.Bypass.Present && !p.bypass {
		b.Remove(schema.AttrBypass)
	}
	if b.Update() == "" {
		return nil
	}
	b.Cond("attribute_exists(" + b.Name(schema.AttrPK) + ")")
	return &b
}
