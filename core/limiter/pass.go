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
	"github.com/zae-limiter/zae-limiter-go/core/internal/grant"
	"github.com/zae-limiter/zae-limiter-go/core/internal/schedsync"
	"github.com/zae-limiter/zae-limiter-go/core/internal/shard"
	"github.com/zae-limiter/zae-limiter-go/core/limit"
	"github.com/zae-limiter/zae-limiter-go/core/limiter/internal/bucketwrite"
	"github.com/zae-limiter/zae-limiter-go/core/schedule"
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
	inForce  bucket.Params // in force at now, with the shard's gc and tu after the pass
	boundary int64         // the schedules' next boundary, epoch ms; bucket.NeverFull for none
	share    bucket.Share  // of inForce
	resets   schedule.Resets
	loc      *time.Location
	present  bool  // on the item (discovery rule)
	stored   int64 // tk read, millitokens
	balance  int64 // materialised at now, before consumption; a new quota's grant
	// reset reports a quota whose reset edge this pass applies: its
	// balance is the share, its grant sized at the pass's shard count, its
	// top-up wiped (docs/design.md §15).
	reset     bool
	nextReset int64 // a quota's next reset edge, epoch ms; 0 for none
	// window is a session quota's window at this pass (docs/design.md
	// §15): the phase read, whether the pass opens or rolls it, the
	// window the balance reflects after it. Nil for other limits.
	window *bucket.WindowPass
	// join reports a session quota that a new or seeded shard (other than
	// 0) takes in shard 0's live window instead of opening one.
	join     bool
	consumed int64 // millitokens this request takes
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
	// raise reports an item whose shard_count lags the count this pass
	// read on shard 0: the write raises it (a quota's reset is sized at
	// the pair's count, docs/design.md §15).
	raise       bool
	countPinned bool // the write carries the shard-count pin
	// moves are the quota grants this pass takes off siblings (ADR-145),
	// committed in one transaction with its write.
	moves []move
	// countCheck conditions the write on shard 0's count not having passed
	// the pass's (a fresh quota grant on another shard, sized at it).
	countCheck bool
	// verified reports a pass whose config was read strongly consistent
	// after the shard (docs/decisions.md P58): its write may seed limits
	// and clears the shard's recheck stamp.
	verified bool
	// recheck is the recheck deadline a created shard carries, epoch ms
	// (docs/design.md §8): its limits come from a config read made before
	// it existed.
	recheck int64
	// One of put (create) or update (rf-locked write) is set by build.
	put    map[string]types.AttributeValue
	update *expr.Builder
}

// plan materialises every limit at now and applies the request to it: the
// parameters in force, a quota's pending reset edge, the drip. A quota
// the shard does not carry starts at a fresh share here; fund replaces
// that with the grant ADR-145 plans. judge decides each limit.
func (l *Limiter) plan(req *request, limits []limit.Limit, img *bucketitem.Image, shards, now int64) []planned {
	out := make([]planned, 0, len(limits))
	for _, lim := range limits {
		p := lim.Params()
		pl := planned{lim: lim, params: p}
		// Config limits passed limit.Validate: their schedules decode.
		s, r, loc, _ := lim.Schedules()
		pl.resets, pl.loc = r, loc
		tk, rf := int64(0), now
		if img != nil {
			if li := img.Limit(lim.Name); li != nil {
				pl.present, pl.stored, tk, rf = true, li.Tokens, li.Tokens, img.RF
				p.GrantShards, p.TopUp = li.GrantShards, li.TopUp
			}
		}
		m := schedule.Materialise(p, s, r, loc, tk, rf, shards, now)
		pl.inForce, pl.share, pl.boundary, pl.nextReset = m.InForce, m.Share, m.Boundary, m.NextReset
		pl.balance, pl.reset = m.Balance, m.Reset && pl.present
		if lim.IsSession() {
			pl.materialiseWindow(img, m.InForce, tk, rf, shards, now)
		} else if !pl.present {
			// A new limit starts at its share: a fresh grant for a quota,
			// sized at this pass's count (gc = S).
			pl.inForce.GrantShards, pl.inForce.TopUp = max(shards, 1), 0
			pl.share = bucket.Effective(pl.inForce, shards)
			pl.balance = pl.share.Target
		}
		for _, d := range req.declared {
			if d.Name == lim.Name {
				pl.declared, pl.amount = true, d.Amount
				pl.consumed, _ = bucket.ToMilli(d.Amount)
			}
		}
		pl.judge(now)
		out = append(out, pl)
	}
	return out
}

// materialiseWindow is a session quota at this pass (docs/design.md §15,
// bucket.Window.Materialise): a live window applied is clamped to the
// quota's ceiling, one opened on another shard is rolled in, and an ended
// one (or none yet) is opened at now with a fresh share at the shard's
// count. inForce is the quota's parameters in force, with the stored gc
// and tu. A window opened here ends one configured length after now; a
// live one keeps the length it was opened with.
func (pl *planned) materialiseWindow(img *bucketitem.Image, inForce bucket.Params, tk, rf, shards, now int64) {
	length := pl.lim.ResetAfter.Milliseconds() // validated: whole seconds, positive
	w, consumed := bucket.Window{Length: length}, int64(0)
	if pl.present {
		li := img.Limit(pl.lim.Name)
		if stored := li.Window(); stored.Length > 0 {
			w = stored
		}
		consumed = li.Consumed
	}
	wp := w.Materialise(inForce, tk, consumed, rf, shards, now)
	if wp.Open {
		wp.End = bucket.AddSat(now, length)
	}
	if wp.Open || wp.Roll {
		inForce.GrantShards, inForce.TopUp = max(shards, 1), 0
	}
	pl.window = &wp
	pl.inForce, pl.share, pl.balance = inForce, wp.Share, wp.Balance
	pl.reset = pl.present && (wp.Open || wp.Roll)
	pl.boundary = min(pl.boundary, wp.End)
	pl.nextReset = wp.End
}

// judge sets the limit's status: its balance, and for a declared hard
// limit the balance cannot cover, exceeded with a retry-after — the next
// reset edge for a calendar quota ("at midnight"), the drip otherwise.
func (pl *planned) judge(now int64) {
	pl.status = bucket.Status{Balance: pl.balance, Available: bucket.Available(pl.balance)}
	if !pl.declared || pl.lim.Soft || bucket.Covers(pl.balance, pl.amount) {
		return
	}
	pl.status.Exceeded = true
	if pl.window != nil {
		pl.status.Retry = pl.window.RetryAfter(pl.balance, pl.amount, now)
		return
	}
	if pl.lim.IsQuota() {
		pl.status.Retry = pl.resets.RetryAfter(pl.balance, pl.amount, pl.share.Ceiling, time.UnixMilli(now), pl.loc)
		return
	}
	pl.status.Retry = bucket.DripRetryAfter(pl.balance, pl.amount, pl.share.Ceiling, pl.share.Rate, pl.share.Period)
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
		stopFast := false
		for _, pl := range p.plan {
			if !pl.present {
				seed(u, pl, true)
				if pl.window != nil && !stopFast {
					// The seed opens no window: the fast path waits for
					// the enforced pass that does (ADR-151 decision 6).
					stopFast = true
					u.Set(schema.AttrVU, schema.Num(p.now))
				}
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
		rf := p.stampRF()
		if p.seeds() {
			// A seed adds a limit: like every write of parameters, it
			// moves rf, so that no writer that read the shard before it
			// writes a state computed without it (docs/decisions.md P58).
			rf = max(rf, bucket.AddSat(img.RF, 1))
		}
		u.Set(schema.AttrRF, schema.Num(rf))
		full := p.validUntil(rf)
		if img.HasRecheck && !p.verified {
			full = min(full, img.Recheck) // unchecked limits: vu never passes the deadline (§8)
		}
		switch {
		case full != bucket.NeverFull:
			u.Set(schema.AttrVU, schema.Num(full))
		case img.HasVU:
			u.Remove(schema.AttrVU)
		}
		for _, pl := range p.plan {
			if !pl.present {
				seed(u, pl, false)
				p.windowWrites(u, pl, nil)
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
			li := img.Limit(pl.lim.Name)
			if sp := li.Params(); sp.Capacity != pl.params.Capacity || sp.RefillAmount != pl.params.RefillAmount || sp.RefillPeriod != pl.params.RefillPeriod {
				setParams(u, pl)
			}
			p.grantWrites(u, pl, li)
			p.windowWrites(u, pl, li)
		}
		if p.raise {
			// The pair's count read on shard 0 (docs/design.md §15).
			u.Set(schema.AttrShardCount, schema.Num(p.shards))
			p.pinCount(u)
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
	if img.HasRecheck && p.verified {
		u.Remove(schema.AttrRecheck)
	}
	switch {
	case p.ttl > 0:
		u.Set(schema.AttrTTL, schema.Num(p.ttl))
	case img.HasTTL:
		u.Remove(schema.AttrTTL)
	}
}

// syncSchedules brings the item's schedules in line with the config read
// (docs/design.md §14): see schedsync.Write.
func (p *pass) syncSchedules(u *expr.Builder) {
	limits := make([]limit.Limit, len(p.plan))
	for i := range p.plan {
		limits[i] = p.plan[i].lim
	}
	schedsync.Write(u, p.img, limits)
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
	for _, pl := range p.plan {
		if pl.window != nil && !p.bypass {
			n.RF = max(n.RF, pl.window.Start) // never before the window joined
		}
	}
	// A new shard's limits come from a config read made before it existed:
	// a config read after it confirms them by the recheck deadline, which
	// vu never passes (docs/design.md §8).
	n.Recheck = p.recheck
	n.VU = min(p.validUntil(n.RF), p.recheck)
	for _, pl := range p.plan {
		l := bucketitem.NewLimit{Name: pl.lim.Name, Tokens: pl.balance, Consumed: pl.consumed, Params: pl.params,
			Schedule: pl.lim.Schedule, ResetSchedule: pl.lim.ResetSchedule}
		if !p.bypass {
			l.Tokens -= pl.consumed
		}
		if pl.lim.Soft {
			l.Soft = p.deadline
		}
		if pl.lim.IsQuota() {
			l.GrantShards = pl.inForce.GrantShards
		}
		if pl.window != nil {
			l.ResetAfter = pl.lim.ResetAfterSeconds()
			if !p.bypass {
				// Opened at now, or shard 0's joined (docs/design.md §15).
				l.WindowStart, l.WindowAnchor = pl.window.Start, pl.window.Start
			} else {
				// A bypassed pass opens no window (ADR-151 decision 6): the
				// next enforced pass does, so the fast path waits for it.
				n.VU = p.now
			}
		}
		if pl.lim.Schedule != "" || pl.lim.ResetSchedule != "" {
			n.Zone = pl.lim.Zone
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
// limits), conditioned on its absence, at the balance the pass planned.
func seed(u *expr.Builder, pl planned, bypass bool) {
	cp := schema.BucketAttr(pl.lim.Name, schema.LimitCapacity)
	u.Cond("attribute_not_exists(" + u.Name(cp) + ")")
	setParams(u, pl)
	if pl.lim.IsQuota() {
		// A grant sized at the pass's count (ADR-145), its start the move
		// or the fresh share the pass planned; no top-up yet.
		u.Set(schema.BucketAttr(pl.lim.Name, schema.LimitGrantShards), schema.Num(pl.inForce.GrantShards))
		u.Remove(schema.BucketAttr(pl.lim.Name, schema.LimitTopUp))
	}
	tk := pl.balance
	if !bypass {
		tk -= pl.consumed
	}
	u.Add(schema.BucketAttr(pl.lim.Name, schema.LimitTokens), schema.Num(tk))
	u.Add(schema.BucketAttr(pl.lim.Name, schema.LimitConsumed), schema.Num(pl.consumed))
}

// grantWrites are a present quota's grant writes (docs/design.md §15): a
// reset edge this pass applies sizes its grant at the pass's count and
// wipes the period's top-up, pinned on the item's count not having passed
// it; an item whose count the pass raises keeps the grant it was read at
// (R7 for one without gc), so that raising the count never resizes a
// grant.
func (p *pass) grantWrites(u *expr.Builder, pl planned, li *bucketitem.LimitImage) {
	if !pl.lim.IsQuota() {
		return
	}
	gc := schema.BucketAttr(pl.lim.Name, schema.LimitGrantShards)
	switch {
	case pl.reset:
		u.Set(gc, schema.Num(pl.inForce.GrantShards))
		if li.Fields.Has(bucketitem.FieldTopUp) {
			u.Remove(schema.BucketAttr(pl.lim.Name, schema.LimitTopUp))
		}
		p.pinCount(u)
	case p.raise:
		if g, legacy := grant.Of(li, p.img.ShardCount); legacy {
			u.SetIfNotExists(gc, schema.Num(g))
		}
	}
}

// stampRF is the rf an enforced write of this pass stamps: rf never moves
// backwards, nor before the start of a window a balance reflects after
// the write (bucket.WindowStampRF).
func (p *pass) stampRF() int64 {
	rf := bucket.StampRF(p.img.RF, p.now)
	for _, pl := range p.plan {
		if pl.window != nil {
			rf = max(rf, pl.window.Start)
		}
	}
	return rf
}

// windowWrites are a session quota's window writes on an enforced update
// (docs/design.md §15), li the limit as read (nil for a seed). The write
// is pinned to the window start read, so that a start another shard's
// opener fanned out since the read is never overwritten. Opening sets
// ws = wa = now; joining shard 0's window sets ws = wa = its start;
// rolling sets wa = ws; both drop the fan-out's tc snapshot. The window
// length is the config's when it differs from the stored one.
func (p *pass) windowWrites(u *expr.Builder, pl planned, li *bucketitem.LimitImage) {
	w := pl.window
	if w == nil {
		if li != nil {
			// No longer a session quota: its window goes with it.
			for _, a := range li.Attrs(bucketitem.WindowFields) {
				u.Remove(a)
			}
		}
		return
	}
	ws := schema.BucketAttr(pl.lim.Name, schema.LimitWindowStart)
	read := li
	if li == nil {
		// A seed: the window attributes another client's fan-out may have
		// left without the quota (a partial limit) are pinned and replaced.
		read = p.img.Lookup(pl.lim.Name)
	}
	if read != nil && read.Fields.Has(bucketitem.FieldWindowStart) {
		u.Cond(u.Name(ws) + " = " + u.Value(schema.Num(read.WindowStart)))
	} else {
		u.Cond("attribute_not_exists(" + u.Name(ws) + ")")
	}
	if rsa := pl.lim.ResetAfterSeconds(); read == nil || !read.Fields.Has(bucketitem.FieldResetAfter) || read.ResetAfter != rsa {
		u.Set(schema.BucketAttr(pl.lim.Name, schema.LimitResetAfter), schema.Num(rsa))
	}
	if li != nil && !w.Open && !w.Roll {
		return
	}
	if li == nil || w.Open {
		u.Set(ws, schema.Num(w.Start))
	}
	u.Set(schema.BucketAttr(pl.lim.Name, schema.LimitWindowAnchor), schema.Num(w.Start))
	if read != nil && read.Fields.Has(bucketitem.FieldWindowConsumed) {
		u.Remove(schema.BucketAttr(pl.lim.Name, schema.LimitWindowConsumed))
	}
}

// pinCount conditions the write on the item's shard count not having
// passed the pass's (docs/design.md §15 race guard), once per write.
func (p *pass) pinCount(u *expr.Builder) {
	if p.countPinned {
		return
	}
	p.countPinned = true
	sc := u.Name(schema.AttrShardCount)
	u.Cond("(attribute_not_exists(" + sc + ") OR " + sc + " <= " + u.Value(schema.Num(p.shards)) + ")")
}

func setParams(u *expr.Builder, pl planned) {
	u.Set(schema.BucketAttr(pl.lim.Name, schema.LimitCapacity), schema.Num(pl.params.Capacity))
	u.Set(schema.BucketAttr(pl.lim.Name, schema.LimitRefillAmount), schema.Num(pl.params.RefillAmount))
	u.Set(schema.BucketAttr(pl.lim.Name, schema.LimitRefillPeriod), schema.Num(pl.params.RefillPeriod))
}

// bucketTTL is the expiry of docs/design.md §2 (shard.TTL); per-call
// limits always expire.
func (l *Limiter) bucketTTL(limits []limit.Limit, source config.Level, override bool, now int64) int64 {
	return shard.TTL(limits, !override && source.EntityLevel(), l.ttlMultiplier, now)
}

// seeds reports a pass that adds a limit the shard does not carry.
func (p *pass) seeds() bool {
	for i := range p.plan {
		if !p.plan[i].present {
			return true
		}
	}
	return false
}

// stampFix is the write that brings a pass's bucket stamps in line with the
// config it read uncached, when they disagree: soft stamps set (with a
// fresh deadline) on soft limits whose stamp is missing or dead, removed
// from hard ones; a bypass stamp removed when the pair is not bypassed; a
// recheck stamp removed when the pass checked the limits.
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
	if p.img.HasRecheck && p.verified {
		b.Remove(schema.AttrRecheck) // its limits checked in line (docs/design.md §8)
	}
	if b.Update() == "" {
		return nil
	}
	b.Cond("attribute_exists(" + b.Name(schema.AttrPK) + ")")
	return &b
}
