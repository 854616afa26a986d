package shard

import (
	"slices"

	"github.com/zae-limiter/zae-limiter-go/core/bucket"
	"github.com/zae-limiter/zae-limiter-go/core/bucketitem"
	"github.com/zae-limiter/zae-limiter-go/core/internal/expr"
	"github.com/zae-limiter/zae-limiter-go/core/internal/schedsync"
	"github.com/zae-limiter/zae-limiter-go/core/limit"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
)

// Write says what a pass's write stamps besides its limits.
type Write struct {
	// ForcePass writes vu = 0, so that the next acquire of every shard
	// materialises (reset and top-up); otherwise vu is the pass's
	// ValidUntil.
	ForcePass bool
	// PinVU conditions the write on the vu read as well: a credit that
	// landed since (which sets vu) could otherwise leave a balance above a
	// ceiling the write lowers, for the fast path to spend.
	PinVU bool
	// Deadline is the soft stamps' deadline, epoch ms: the config read's
	// instant plus the writer's stamp TTL (docs/design.md §8).
	Deadline int64
	// SetBypass stamps bypass = Deadline; ClearBypass removes a bypass
	// stamp the shard carries.
	SetBypass, ClearBypass bool
	// SetTTL writes ttl = TTL, or removes it when TTL is 0 (TTL).
	SetTTL bool
	TTL    int64
	// ClearRecheck removes the recheck stamp: the pass's config was read
	// after the shard was.
	ClearRecheck bool
}

// StampRF is the rf the pass's write stamps: At, never before the start
// of a session window the balance reflects after the write, and at least
// one millisecond past the stored rf when the write changes the shard's
// limits (ChangesLimits), so that every writer that pins rf (the client's
// slow and refill passes, the aggregator's refill, reset and top-up)
// fails rather than writes a state computed from the limits it replaced
// (docs/decisions.md P58). The millisecond is refill the shard forgoes.
func (p *Pass) StampRF() int64 {
	rf := p.At
	if p.Img.HasRF && p.ChangesLimits() {
		rf = max(rf, bucket.AddSat(p.Img.RF, 1))
	}
	for i := range p.Limits {
		switch lp := &p.Limits[i]; {
		case lp.Dropped || lp.Window == nil:
		case lp.SetWA:
			rf = max(rf, lp.WA)
		case lp.Phase == bucket.WindowCurrent:
			rf = max(rf, lp.Window.Start)
		}
	}
	return rf
}

// ChangesLimits reports a pass whose write changes the shard's limits:
// a limit dropped, or one whose configured parameters, schedules, zone,
// window length or soft-ness differ from the stored ones.
func (p *Pass) ChangesLimits() bool {
	for i := range p.Limits {
		lp := &p.Limits[i]
		if lp.Dropped || (lp.Configured && !Matches(p.Img, lp.Stored, lp.Cfg)) {
			return true
		}
	}
	return false
}

// ValidUntil is the vu a write of the pass that stamps rf leaves
// (docs/design.md §4): the first instant at which a hard dripping limit
// reaches its ceiling from the balance the write leaves, a schedule
// boundary or reset edge, or a session window's end; the clock reading
// itself for a session quota with no live window (only a materialising
// pass opens one); bucket.NeverFull when nothing bounds it. Soft limits
// (configured soft, or stamped live at At when not reconfigured) never
// reject, so their capped refill admits nothing; wcu only steers doubling.
func (p *Pass) ValidUntil(rf int64) int64 {
	full := int64(bucket.NeverFull)
	for i := range p.Limits {
		lp := &p.Limits[i]
		if lp.Dropped {
			continue
		}
		full = min(full, lp.Pass.Boundary)
		if lp.Window != nil && lp.Phase != bucket.WindowCurrent && lp.Phase != bucket.WindowPending {
			full = min(full, p.Now)
		}
		soft := lp.Stored.Soft.Live(p.At)
		if lp.Configured {
			soft = lp.Cfg.Soft
		}
		if soft || lp.Pass.Share.Rate <= 0 {
			continue
		}
		full = min(full, lp.Pass.Share.FullAt(lp.Target, rf))
	}
	return full
}

// Update is the pass's rf-locked write (docs/design.md §8): conditioned on
// the rf and shard_count read (and vu, with w.PinVU; shard_count ≤ S where
// it writes a grant), it moves rf to StampRF, stamps vu, adds each limit's
// balance change (ADD, never SET), writes grants, top-ups and window
// starts the pass changed, the configured parameters, schedules, window
// lengths and soft stamps where they differ, removes dropped limits (tc
// kept), credits wcu's refill, raises shard_count to S, and the stamps w
// asks for. A write conditioned on rf fails on a shard that is gone.
func (p *Pass) Update(w Write) *expr.Builder {
	img := p.Img
	b := &expr.Builder{}
	rfName := b.Name(schema.AttrRF)
	if img.HasRF {
		b.Cond(rfName + " = " + b.Value(schema.Num(img.RF)))
	} else {
		b.Cond("attribute_exists(" + b.Name(schema.AttrPK) + ")")
		b.Cond("attribute_not_exists(" + rfName + ")")
	}
	sc := b.Name(schema.AttrShardCount)
	if img.HasShardCount {
		b.Cond(sc + " = " + b.Value(schema.Num(img.ShardCount)))
	} else {
		b.Cond("attribute_not_exists(" + sc + ")")
	}
	if slices.ContainsFunc(p.Limits, func(lp Limit) bool { return lp.WriteGC && !lp.Dropped }) {
		b.Cond("(attribute_not_exists(" + sc + ") OR " + sc + " <= " + b.Value(schema.Num(p.S)) + ")")
	}
	if w.PinVU {
		vu := b.Name(schema.AttrVU)
		if img.HasVU {
			b.Cond(vu + " = " + b.Value(schema.Num(img.VU)))
		} else {
			b.Cond("attribute_not_exists(" + vu + ")")
		}
	}
	if !img.HasShardCount || img.ShardCount < p.S {
		b.Set(schema.AttrShardCount, schema.Num(p.S))
	}
	rf := p.StampRF()
	b.Set(schema.AttrRF, schema.Num(rf))
	switch full := p.ValidUntil(rf); {
	case w.ForcePass:
		b.Set(schema.AttrVU, schema.Num(0))
	case full != bucket.NeverFull:
		b.Set(schema.AttrVU, schema.Num(full))
	case img.HasVU:
		b.Remove(schema.AttrVU)
	}
	var scheduled []limit.Limit
	for i := range p.Limits {
		lp := &p.Limits[i]
		if lp.Dropped {
			drop(b, lp.Stored)
			continue
		}
		p.limitWrites(b, lp, w)
		if lp.Configured {
			scheduled = append(scheduled, lp.Cfg)
		}
	}
	if p.reconfigured {
		// Schedules and zone follow the limits they belong to (§14).
		schedsync.Write(b, img, scheduled)
	}
	if wcu := &img.WCU; wcu.Present() {
		s := bucket.Undivided(wcu.Params())
		if _, credited := bucket.Materialise(wcu.Tokens, img.RF, p.At, s.Ceiling, s.Rate, s.Period); credited != 0 {
			b.Add(schema.BucketAttr(schema.WCULimit, schema.LimitTokens), schema.Num(credited))
		}
	}
	switch {
	case w.SetBypass:
		b.Set(schema.AttrBypass, schema.Num(w.Deadline))
	case w.ClearBypass && img.Bypass.Present:
		b.Remove(schema.AttrBypass)
	}
	switch {
	case w.SetTTL && w.TTL > 0:
		b.Set(schema.AttrTTL, schema.Num(w.TTL))
	case w.SetTTL && img.HasTTL:
		b.Remove(schema.AttrTTL)
	}
	if w.ClearRecheck && img.HasRecheck {
		b.Remove(schema.AttrRecheck)
	}
	return b
}

// limitWrites are one kept limit's writes.
func (p *Pass) limitWrites(b *expr.Builder, lp *Limit, w Write) {
	li := lp.Stored
	name := li.Name
	if d := lp.Target - li.Tokens; d != 0 {
		b.Add(schema.BucketAttr(name, schema.LimitTokens), schema.Num(d))
	}
	p.windowWrites(b, lp)
	gc, tu := schema.BucketAttr(name, schema.LimitGrantShards), schema.BucketAttr(name, schema.LimitTopUp)
	switch {
	case lp.RemoveGrant:
		if li.Fields.Has(bucketitem.FieldGrantShards) {
			b.Remove(gc)
		}
		if li.Fields.Has(bucketitem.FieldTopUp) {
			b.Remove(tu)
		}
	default:
		if lp.WriteGC {
			// The rf and shard_count pins stand for the if_not_exists of
			// docs/design.md §12: no gc is written without moving one.
			b.Set(gc, schema.Num(lp.GC))
		}
		switch {
		case lp.WipeTU && lp.TopUp > 0:
			b.Set(tu, schema.Num(lp.TopUp)) // the old period's tu gone, this one's added
		case lp.WipeTU && li.Fields.Has(bucketitem.FieldTopUp):
			b.Remove(tu)
		case lp.TopUp > 0:
			b.Add(tu, schema.Num(lp.TopUp))
		}
	}
	if !lp.Configured {
		return
	}
	if p := lp.Params; li.Capacity != p.Capacity || li.RefillAmount != p.RefillAmount || li.RefillPeriod != p.RefillPeriod {
		b.Set(schema.BucketAttr(name, schema.LimitCapacity), schema.Num(p.Capacity))
		b.Set(schema.BucketAttr(name, schema.LimitRefillAmount), schema.Num(p.RefillAmount))
		b.Set(schema.BucketAttr(name, schema.LimitRefillPeriod), schema.Num(p.RefillPeriod))
	}
	switch {
	case lp.Cfg.Soft:
		b.Set(schema.BucketAttr(name, schema.LimitSoft), schema.Num(w.Deadline))
	case li.Soft.Present:
		b.Remove(schema.BucketAttr(name, schema.LimitSoft))
	}
}

// windowWrites are a session quota's window writes (docs/design.md §15):
// the start and applied start the pass set, the fan-out's snapshot dropped
// with them, and the configured window length where the shard stores
// another; a limit that is no longer a session quota loses them all.
func (p *Pass) windowWrites(b *expr.Builder, lp *Limit) {
	li := lp.Stored
	name := li.Name
	if lp.RemoveWindow {
		for _, a := range li.Attrs(bucketitem.WindowFields) {
			b.Remove(a)
		}
		return
	}
	if lp.SetWS {
		b.Set(schema.BucketAttr(name, schema.LimitWindowStart), schema.Num(lp.WS))
	}
	if lp.SetWA {
		b.Set(schema.BucketAttr(name, schema.LimitWindowAnchor), schema.Num(lp.WA))
		if li.Fields.Has(bucketitem.FieldWindowConsumed) {
			b.Remove(schema.BucketAttr(name, schema.LimitWindowConsumed))
		}
	}
	if rsa := lp.Cfg.ResetAfterSeconds(); lp.Configured && rsa > 0 && (!li.Fields.Has(bucketitem.FieldResetAfter) || li.ResetAfter != rsa) {
		b.Set(schema.BucketAttr(name, schema.LimitResetAfter), schema.Num(rsa))
	}
}

// drop removes every attribute of a limit the config no longer resolves,
// but its consumption counter: tc never moves backwards, and a limit set
// again later adds to it (docs/design.md §2).
func drop(b *expr.Builder, li *bucketitem.LimitImage) {
	for _, a := range li.Attrs(^bucketitem.FieldConsumed) {
		b.Remove(a)
	}
}
