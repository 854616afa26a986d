package maintenance

import (
	"math"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/bucket"
	"github.com/zae-limiter/zae-limiter-go/core/bucketitem"
	"github.com/zae-limiter/zae-limiter-go/core/schedule"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
)

// opKind is what a planned write does.
type opKind uint8

const (
	opRefill opKind = iota + 1 // docs/design.md §6, rf-locked UpdateItem
	opDouble                   // docs/design.md §6, shard 0 UpdateItem
	opRaise                    // docs/design.md §6 Path 1, sibling UpdateItem
	opClone                    // docs/design.md §6 Path 2, PutItem
)

func (k opKind) String() string {
	switch k {
	case opRefill:
		return "refill"
	case opDouble:
		return "double"
	case opRaise:
		return "raise"
	case opClone:
		return "clone"
	}
	return "op(" + strconv.Itoa(int(k)) + ")"
}

// op is one planned write: exactly one of update and put is set. Every
// input is built for this op alone and sent once.
type op struct {
	kind   opKind
	id     schema.BucketID // the item written
	update *dynamodb.UpdateItemInput
	put    *dynamodb.PutItemInput
	// countAtMost, when set, makes exec read shard 0's shard_count first
	// (strongly consistent) and leave the write out when it is higher: a
	// quota grant off shard 0 sized at a count the pair has passed.
	countAtMost int64
}

// plan is the work for one batch, in execution order.
type plan struct {
	ops       []op
	quotas    []quotaPropagation // run after ops, in stream order
	abstained int                // buckets skipped under docs/design.md §9
	refused   int                // doublings or propagations refused at the cap
	corrupt   int                // records whose images do not decode
}

// image is one record's decoded images.
type image struct {
	rec      *Record
	new, old *bucketitem.Image // old is nil for an INSERT (or an undecodable old image)
}

// state is one bucket's aggregate over the batch (docs/design.md §6).
type state struct {
	id      schema.BucketID
	last    *bucketitem.Image // the last NewImage
	scheds  scheduled         // last's schedules, decoded
	demand  map[string]int64  // Σ (new.tc − old.tc) per limit, wcu included
	abstain bool              // some NewImage of the batch is one the aggregator does not maintain
	// quota reports a quota, calendar or session, on some NewImage of
	// the batch: its refill, resets and rolls are maintained, its
	// shard-count propagation left to the clients, which fund new quota
	// shards (docs/design.md §15).
	quota bool
}

// planBatch builds every write of a batch from its records alone (no I/O): the
// refills, then the doubling, then the propagation (docs/design.md §6 steps 3–5).
func (m *Maintainer) planBatch(records []Record, now int64) plan {
	var p plan
	imgs, buckets, byID := m.collect(records, &p)
	for _, s := range buckets {
		if s.abstain {
			p.abstained++
			m.log.Debug("maintenance: abstained (attributes it does not maintain yet)",
				"entity", s.id.Entity, "resource", s.id.Resource, "shard", s.id.Shard)
		}
	}
	for _, s := range buckets {
		if s.abstain {
			continue
		}
		if o, ok := m.refill(s, now); ok {
			p.ops = append(p.ops, o)
		}
	}
	for _, s := range buckets {
		if s.abstain || s.id.Shard != 0 {
			continue
		}
		if o, ok := m.double(s, &p); ok {
			p.ops = append(p.ops, o)
		}
	}
	for i := range imgs {
		m.propagate(&imgs[i], byID, &p, now)
	}
	return p
}

// collect decodes the records and aggregates them per bucket, in order of
// first appearance. A record whose NewImage does not decode is skipped
// (counted corrupt); an undecodable OldImage is treated as absent.
func (m *Maintainer) collect(records []Record, p *plan) ([]image, []*state, map[schema.BucketID]*state) {
	imgs := make([]image, 0, len(records))
	byID := make(map[schema.BucketID]*state)
	var buckets []*state
	for i := range records {
		r := &records[i]
		nw := r.NewImage
		if nw == nil {
			raw, err := r.newItem()
			if err != nil || len(raw) == 0 {
				p.corrupt++
				m.log.Warn("maintenance: record without a new image skipped", "seq", r.Seq)
				continue
			}
			img, err := bucketitem.Decode(raw)
			if err != nil {
				p.corrupt++
				m.log.Warn("maintenance: undecodable new image skipped", "seq", r.Seq, "error", err.Error())
				continue
			}
			nw = &img
		}
		old := r.OldImage
		if old == nil && len(r.OldItem) > 0 {
			if img, err := bucketitem.Decode(r.OldItem); err == nil {
				old = &img
			}
		}
		if r.ID.Shard < 0 {
			p.corrupt++
			continue
		}
		imgs = append(imgs, image{rec: r, new: nw, old: old})
		s := byID[r.ID]
		if s == nil {
			s = &state{id: r.ID, demand: make(map[string]int64)}
			byID[r.ID] = s
			buckets = append(buckets, s)
		}
		s.last = nw
		var outside bool
		if s.scheds, outside = outsideSupported(nw); outside {
			s.abstain = true
		}
		s.quota = s.quota || len(s.scheds.resets) > 0 || s.scheds.sessions
		addDemand(s.demand, nw, old)
	}
	return imgs, buckets, byID
}

// outsideSupported reports an item the aggregator must not refill,
// double, raise or clone (docs/design.md §9, §14, §15): a present
// limit with ra = 0 and neither a reset schedule nor a session window (a
// quota that could never recover), a limit that drips and also resets or
// rolls (a limit does one), a session window on a limit that is not a
// quota, with a calendar reset beside it or with a length that is not
// positive, window attributes without a window length (ws, wa or wtc
// without rsa), window attributes on wcu or on a partial limit, a schedule
// that does not decode or names an unknown zone, or a schedule on wcu.
// Beyond it: a present limit (wcu included) whose parameters the
// arithmetic cannot use — a negative cp or ra, or rp <= 0 (absent
// included) — a corrupt or foreign item. The schedules of the rest are
// returned, decoded once, for the refill to use the parameters in force,
// apply reset edges and roll windows.
func outsideSupported(img *bucketitem.Image) (scheduled, bool) {
	bad := func(l *bucketitem.LimitImage) bool {
		return l.Present() && (l.Capacity < 0 || l.RefillAmount < 0 || l.RefillPeriod <= 0)
	}
	if bad(&img.WCU) || img.WCU.Fields&(bucketitem.FieldSchedule|bucketitem.FieldResetSchedule|bucketitem.WindowFields) != 0 ||
		(img.WCU.Present() && img.WCU.RefillAmount <= 0) {
		return scheduled{}, true
	}
	for i := range img.Partial {
		if img.Partial[i].Fields&bucketitem.WindowFields != 0 {
			return scheduled{}, true
		}
	}
	by, loc, err := img.ParamSchedules()
	if err != nil {
		return scheduled{}, true
	}
	// Every stored reset schedule must read, a partial limit's and the
	// item's included, whoever it applies to.
	texts := []string{img.ResetSched}
	for i := range img.Partial {
		texts = append(texts, img.Partial[i].ResetSchedule)
	}
	for _, t := range texts {
		if t == "" {
			continue
		}
		if _, err := schedule.DecodeResets(t); err != nil {
			return scheduled{}, true
		}
		if _, err := schedule.Zone(img.SchedTZ); err != nil {
			return scheduled{}, true
		}
	}
	sc := scheduled{by: by, loc: loc}
	for i := range img.Limits {
		l := &img.Limits[i]
		if bad(l) {
			return scheduled{}, true
		}
		_, r, rloc, err := img.Schedules(l.Name)
		session := l.HasWindow()
		switch {
		case err != nil, l.RefillAmount > 0 && len(r) > 0:
			return scheduled{}, true
		case session && (l.RefillAmount != 0 || len(r) > 0 || l.ResetAfter <= 0):
			return scheduled{}, true
		case !session && l.Fields&bucketitem.WindowFields != 0:
			return scheduled{}, true
		case !session && l.RefillAmount == 0 && len(r) == 0:
			return scheduled{}, true
		case len(r) > 0:
			if sc.resets == nil {
				sc.resets = make(map[string]schedule.Resets, 1)
			}
			sc.resets[l.Name], sc.loc = r, rloc
		}
		sc.sessions = sc.sessions || session
	}
	return sc, false
}

// scheduled are the parameter and reset schedules of an image's limits and
// their zone (docs/design.md §14), decoded once per image by
// outsideSupported; the zero value means none.
type scheduled struct {
	by     map[string]schedule.Schedule
	resets map[string]schedule.Resets
	loc    *time.Location
	// sessions reports a session quota (rsa) on some limit of the image.
	sessions bool
}

// passes materialises every limit of img at now, in the order of
// img.Limits, at the image's shard count.
func (sc scheduled) passes(img *bucketitem.Image, now int64) []schedule.Pass {
	out := make([]schedule.Pass, len(img.Limits))
	for i := range img.Limits {
		out[i] = sc.materialise(img, &img.Limits[i], max(img.ShardCount, 1), now)
	}
	return out
}

// validUntil is the vu the refill stamps (docs/decisions.md P25): the
// first instant at which a hard dripping limit reaches its ceiling from
// the balance the refill leaves, as of the refill's rf, or the next
// schedule boundary or reset edge if that comes first (docs/design.md
// §14); bucket.NeverFull when nothing constrains it. passes are the
// limits of img materialised at now. The balances are those of the
// image: fast-path debits since it only lower the real ones, so the real
// instant is later and the stamp errs early (one extra materialising
// pass, never an over-credit).
//
// A live session window's end bounds it too (docs/design.md §15): past
// it, the next debit must go through the pass that opens a new window.
func validUntil(img *bucketitem.Image, passes []schedule.Pass, now int64) int64 {
	rf := stampRF(img, now)
	full := int64(bucket.NeverFull)
	for i := range img.Limits {
		ps := &passes[i]
		full = min(full, ps.Boundary)
		if end, ok := img.Limits[i].WindowEnd(); ok && end > now {
			full = min(full, end)
		}
		if img.Limits[i].Soft.Live(now) || ps.Share.Rate <= 0 {
			continue
		}
		full = min(full, ps.Share.FullAt(ps.Balance, rf))
	}
	return full
}

// awaitsAnchor reports a session window in force on img that has ended,
// or that was never opened (rsa without ws): its next boundary is at or
// before now, and only a client's pass opens the next window
// (docs/design.md §15). A refill then leaves vu as it is, neither stamped
// nor removed: the stored vu still sends the next debit to that pass.
func awaitsAnchor(img *bucketitem.Image, now int64) bool {
	for i := range img.Limits {
		if l := &img.Limits[i]; l.HasWindow() {
			switch l.Window().Phase(img.RF, now) {
			case bucket.WindowUnopened, bucket.WindowEnded, bucket.WindowDead:
				return true
			}
		}
	}
	return false
}

// stampRF is the rf a refill of img writes: never backwards, and never
// before the start of a session window in force (docs/design.md §15).
func stampRF(img *bucketitem.Image, now int64) int64 {
	rf := bucket.StampRF(img.RF, now)
	for i := range img.Limits {
		if l := &img.Limits[i]; l.HasWindow() {
			rf = bucket.WindowStampRF(l.Window(), rf, now)
		}
	}
	return rf
}

// materialise is one limit of img at now, as every writer reads it
// (schedule.Materialise): the parameters in force, a calendar quota's
// reset edge since rf applied at shards, the drip or the clamp.
func (sc scheduled) materialise(img *bucketitem.Image, l *bucketitem.LimitImage, shards, now int64) schedule.Pass {
	loc := sc.loc
	if loc == nil {
		loc = time.UTC
	}
	return schedule.Materialise(l.Params(), sc.by[l.Name], sc.resets[l.Name], loc, l.Tokens, img.RF, shards, now)
}

// addDemand adds one record's tc deltas (new − old, old = 0 when absent)
// per limit to d: every limit, partial one and wcu carrying tc in new.
func addDemand(d map[string]int64, nw, old *bucketitem.Image) {
	add := func(l *bucketitem.LimitImage) {
		if !l.Fields.Has(bucketitem.FieldConsumed) {
			return
		}
		var prev int64
		if old != nil {
			if o := old.Lookup(l.Name); o != nil && o.Fields.Has(bucketitem.FieldConsumed) {
				prev = o.Consumed
			}
		}
		d[l.Name] = bucket.AddSat(d[l.Name], bucket.SubSat(l.Consumed, prev))
	}
	if nw.WCU.Fields != 0 {
		add(&nw.WCU)
	}
	for i := range nw.Limits {
		add(&nw.Limits[i])
	}
	for i := range nw.Partial {
		add(&nw.Partial[i])
	}
}

// delta is one limit's planned ADD.
type delta struct {
	attr string // b_{n}_tk
	d    int64
}

// refill plans the proactive refill of one bucket (docs/design.md §6, phase 1:
// dripping limits and wcu only) from its last image.
//
// Per limit the balance is materialised at now from the image's tk and rf
// (bucket.Materialise, ceiling C // S and rate R // S; wcu undivided). The
// bucket is written when some limit asks for it:
//   - a negative delta (a balance above a lowered ceiling) always does
//     ;
//   - a positive delta of a user limit does when the STORED balance is
//     below max(0, the batch's tc delta of that limit) (the demand proxy):
//     the fast path tests the stored tk, so that is when another burst like
//     this batch's would fail it and a refill saves the client a slow path
//     (docs/design.md §6 says the refilled balance; docs/decisions.md P17);
//   - a positive delta of wcu does when the stored b_wcu_tk, less the
//     batch's wcu tc delta, is below half of b_wcu_cp (see below).
//
// The write then ADDs every non-zero delta, not only those of the limits
// that asked: it moves rf, the instant up to which every limit on the item
// has been credited, so a limit whose credit were left out would lose it.
//
// wcu: the fast path conditions on the stored b_wcu_tk and only the rf
// writers (slow path, this) ever credit it, while wcu refills its whole
// capacity every second, so its refilled balance is nearly always full and
// the user-limit rule would never fire for it. Left alone, the stored
// balance falls by one token per fast-path write however slow the traffic,
// until doubling (< 20 %) or the client's WCU_EXHAUSTED (< 1 token) fires
// for a partition that was never hot. Keying wcu on the stored balance less
// the observed demand, with half the capacity as the margin, keeps it well
// above both thresholds at the cost of about one write per 500 fast-path
// writes on a shard, and never writes for a bucket whose wcu is above half.
func (m *Maintainer) refill(s *state, now int64) (op, bool) {
	img := s.last
	if !img.HasRF {
		m.log.Debug("maintenance: no rf on the image, no refill",
			"entity", s.id.Entity, "resource", s.id.Resource, "shard", s.id.Shard)
		return op{}, false
	}
	sc := max(img.ShardCount, 1)
	for i := range img.Limits {
		// A window the balance does not reflect yet, already over: the
		// client's next pass opens a new one. Rolling the dead window
		// would hand out two allowances inside one window's span
		// (docs/design.md §15).
		if l := &img.Limits[i]; l.HasWindow() && l.Window().Phase(img.RF, now) == bucket.WindowDead {
			m.log.Debug("maintenance: a session window ended before it was applied; left to the client",
				"entity", s.id.Entity, "resource", s.id.Resource, "shard", s.id.Shard, "limit", l.Name)
			return op{}, false
		}
	}
	deltas := make([]delta, 0, len(img.Limits)+1)
	var granted []*bucketitem.LimitImage
	write := false
	passes := s.scheds.passes(img, now)
	for i := range img.Limits {
		l, ps := &img.Limits[i], &passes[i]
		switch {
		case l.HasWindow() && l.Window().Phase(img.RF, now) == bucket.WindowPending:
			// A window a client opened and fanned out, live (docs/design.md
			// §15): the share at the image's count less what the shard
			// consumed since the opener's snapshot of its tc, granted like
			// a reset.
			ps.Balance = l.Window().Materialise(ps.InForce, l.Tokens, l.Consumed, img.RF, sc, now).Balance
			granted, write = append(granted, l), true
		case ps.Reset:
			// A calendar quota's reset edge (docs/design.md §15): always
			// written, its grant sized at the count, its top-up wiped.
			granted, write = append(granted, l), true
		}
		cr := ps.Balance - l.Tokens
		if cr == 0 {
			continue
		}
		deltas = append(deltas, delta{schema.BucketAttr(l.Name, schema.LimitTokens), cr})
		if cr < 0 || l.Tokens < max(0, s.demand[l.Name]) {
			write = true
		}
	}
	if w := &img.WCU; w.Present() {
		sh := bucket.Undivided(w.Params())
		_, cr := bucket.Materialise(w.Tokens, img.RF, now, sh.Ceiling, sh.Rate, sh.Period)
		if cr != 0 {
			deltas = append(deltas, delta{schema.BucketAttr(schema.WCULimit, schema.LimitTokens), cr})
			if cr < 0 || bucket.SubSat(w.Tokens, max(0, s.demand[schema.WCULimit])) < bucket.FloorDiv(w.Capacity, 2) {
				write = true
			}
		}
	}
	if !write {
		return op{}, false
	}
	vu := validUntil(img, passes, now)
	if img.HasRecheck {
		vu = min(vu, img.Recheck) // copied, never extended (docs/design.md §8)
	}
	if awaitsAnchor(img, now) {
		vu = keepVU
	}
	o := op{kind: opRefill, id: s.id, update: m.refillInput(s.id, img, now, deltas, granted, vu)}
	if len(granted) > 0 && s.id.Shard != 0 {
		// A grant off shard 0 is sized at the image's count only while
		// shard 0 holds no higher one (docs/design.md §15).
		o.countAtMost = sc
	}
	return o, true
}

// keepVU, as refillInput's vu, leaves the stored vu as it is (awaitsAnchor).
const keepVU = -1

// refillInput builds
//
//	SET #rf = :rf, #vu = :vu ADD #t0 :d0, #t1 :d1, …   (REMOVE #vu when nothing drips)
//	Condition: #rf = :erf [AND #w{i} = :ws{i} …] AND attribute_not_exists(#vu)   (image without vu)
//	           #rf = :erf [AND #w{i} = :ws{i} …] AND #vu = :evu               (image with vu)
//	           … AND #sched = :esched                                         (item with a schedule)
//
// with rf_new = max(now, image rf, every window start in force)
// (docs/design.md §5, §15; never backwards) and vu the instant of
// validUntil, or neither SET nor REMOVE for keepVU. A session window in
// force whose wa differs from its ws gets wa = ws under a pin of that ws
// (#w{i} = :ws{i}); a rolled one (granted with a pending window) also
// loses its wtc.
func (m *Maintainer) refillInput(id schema.BucketID, img *bucketitem.Image, now int64, deltas []delta, granted []*bucketitem.LimitImage, vu int64) *dynamodb.UpdateItemInput {
	names := map[string]string{"#rf": schema.AttrRF, "#vu": schema.AttrVU}
	values := map[string]types.AttributeValue{
		":rf":  schema.Num(stampRF(img, now)),
		":erf": schema.Num(img.RF),
	}
	upd := make([]byte, 0, 48+16*len(deltas))
	upd = append(upd, "SET #rf = :rf"...)
	if vu != bucket.NeverFull && vu != keepVU {
		upd = append(upd, ", #vu = :vu"...)
		values[":vu"] = schema.Num(vu)
	}
	var removes, pins []string
	for i := range img.Limits {
		l := &img.Limits[i]
		if !l.HasWindow() || !l.Fields.Has(bucketitem.FieldWindowStart) ||
			(l.Fields.Has(bucketitem.FieldWindowAnchor) && l.WindowAnchor == l.WindowStart) {
			continue
		}
		a, w, v := "#a"+strconv.Itoa(i), "#w"+strconv.Itoa(i), ":ws"+strconv.Itoa(i)
		upd = append(upd, ", "+a+" = "+v...)
		names[a] = schema.BucketAttr(l.Name, schema.LimitWindowAnchor)
		names[w] = schema.BucketAttr(l.Name, schema.LimitWindowStart)
		values[v] = schema.Num(l.WindowStart)
		pins = append(pins, w+" = "+v)
		if l.WindowPending(img.RF) && l.Fields.Has(bucketitem.FieldWindowConsumed) {
			c := "#c" + strconv.Itoa(i)
			names[c] = schema.BucketAttr(l.Name, schema.LimitWindowConsumed)
			removes = append(removes, c)
		}
	}
	for i, l := range granted {
		n := "#g" + strconv.Itoa(i)
		upd = append(upd, ", "+n+" = :sc"...)
		names[n] = schema.BucketAttr(l.Name, schema.LimitGrantShards)
		values[":sc"] = schema.Num(max(img.ShardCount, 1))
		if l.Fields.Has(bucketitem.FieldTopUp) {
			u := "#u" + strconv.Itoa(i)
			names[u] = schema.BucketAttr(l.Name, schema.LimitTopUp)
			removes = append(removes, u)
		}
	}
	for i, d := range deltas {
		if i == 0 {
			upd = append(upd, " ADD "...)
		} else {
			upd = append(upd, ", "...)
		}
		n, v := "#t"+strconv.Itoa(i), ":d"+strconv.Itoa(i)
		upd = append(upd, n...)
		upd = append(upd, ' ')
		upd = append(upd, v...)
		names[n] = d.attr
		values[v] = schema.Num(d.d)
	}
	if vu == bucket.NeverFull && img.HasVU {
		removes = append(removes, "#vu")
	}
	for i, r := range removes {
		if i == 0 {
			upd = append(upd, " REMOVE "...)
		} else {
			upd = append(upd, ", "...)
		}
		upd = append(upd, r...)
	}
	cond := "#rf = :erf"
	for _, p := range pins {
		// The window whose start wa takes is still the one in force: a
		// client's newer window fanned out since is left to roll.
		cond += " AND " + p
	}
	if img.HasVU {
		cond += " AND #vu = :evu"
		values[":evu"] = schema.Num(img.VU)
	} else {
		cond += " AND attribute_not_exists(#vu)"
	}
	if img.HasSched {
		// The parameters and vu come from this schedule: pinned, so that a
		// schedule changed in between is not stamped with them.
		cond += " AND #sched = :esched"
		names["#sched"] = schema.AttrSched
		values[":esched"] = schema.Str(img.Sched)
	}
	if len(granted) > 0 {
		// A grant is never sized below a count the item has passed
		// (ADR-145 race guard).
		cond += " AND (attribute_not_exists(#sc) OR #sc <= :sc)"
		names["#sc"] = schema.AttrShardCount
	}
	return &dynamodb.UpdateItemInput{
		TableName:                 aws.String(m.table),
		Key:                       id.Key().AttributeValues(),
		UpdateExpression:          aws.String(string(upd)),
		ConditionExpression:       aws.String(cond),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: values,
	}
}

// wcuLow reports tk < 0.2 × cp without overflow (cp > 0).
func wcuLow(tk, cp int64) bool {
	if tk < 0 {
		return true
	}
	if tk > math.MaxInt64/5 {
		return false
	}
	return 5*tk < cp
}

// double plans the proactive doubling of shard 0 from its last image
// (docs/design.md §6): when b_wcu_tk < 0.2 × b_wcu_cp, SET shard_count = 2S under
// shard_count = S (an item without shard_count reads as S = 1). Refused at
// S >= schema.MaxShardCount, and never above it: a count that is not a power of
// two (another writer's) goes to schema.MaxShardCount at most.
func (m *Maintainer) double(s *state, p *plan) (op, bool) {
	img := s.last
	w := &img.WCU
	if !w.Present() || w.Capacity <= 0 || !wcuLow(w.Tokens, w.Capacity) {
		return op{}, false
	}
	old := max(img.ShardCount, 1)
	if old >= schema.MaxShardCount {
		p.refused++
		m.log.Warn("maintenance: shard 0 is hot but shard_count is at the cap; doubling refused",
			"shard_count", old, "cap", schema.MaxShardCount)
		return op{}, false
	}
	nw := min(2*old, schema.MaxShardCount)
	names := map[string]string{"#sc": schema.AttrShardCount}
	values := map[string]types.AttributeValue{":new": schema.Num(nw), ":old": schema.Num(old)}
	cond := "#sc = :old"
	if old == 1 {
		names["#pk"] = schema.AttrPK
		cond = "attribute_exists(#pk) AND (attribute_not_exists(#sc) OR #sc = :old)"
	}
	return op{kind: opDouble, id: s.id, update: &dynamodb.UpdateItemInput{
		TableName:                 aws.String(m.table),
		Key:                       s.id.Key().AttributeValues(),
		UpdateExpression:          aws.String("SET #sc = :new"),
		ConditionExpression:       aws.String(cond),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: values,
	}}, true
}

// propagate plans Path 1 and Path 2 of docs/design.md §6 for one record of shard 0
// whose NewImage shard_count exceeds its OldImage's. Nothing is planned for
// an INSERT (no old count), for a bucket that abstains, or for a count above
// schema.MaxShardCount (refused: clients create shards lazily, and the loop stays
// bounded whatever a corrupt item says).
func (m *Maintainer) propagate(im *image, byID map[schema.BucketID]*state, p *plan, now int64) {
	id := im.rec.ID
	if id.Shard != 0 || im.old == nil {
		return
	}
	s := byID[id]
	if s == nil || s.abstain {
		return
	}
	oldSC, newSC := max(im.old.ShardCount, 1), max(im.new.ShardCount, 1)
	if newSC <= oldSC {
		return
	}
	if newSC > schema.MaxShardCount {
		p.refused++
		m.log.Warn("maintenance: shard_count above the cap not propagated",
			"shard_count", newSC, "cap", schema.MaxShardCount)
		return
	}
	if s.quota {
		// A quota pair's propagation reads its siblings first (quota.go).
		if raw, err := im.rec.newItem(); err == nil && len(raw) > 0 {
			// An item with a session quota is never raised or cloned here:
			// a new shard joins the pair's window from shard 0, read
			// strongly consistently by the client that creates it
			// (docs/design.md §15).
			if sc, outside := outsideSupported(im.new); !outside && len(sc.resets) > 0 && !sc.sessions {
				qp := quotaPropagation{id: id, raw: raw, img: im.new, old: oldSC, new: newSC, scheds: sc, abstaining: map[int]bool{}}
				for sh := 1; sh < int(newSC); sh++ {
					other := id
					other.Shard = sh
					if o := byID[other]; o != nil && o.abstain {
						qp.abstaining[sh] = true
					}
				}
				p.quotas = append(p.quotas, qp)
			}
		}
		return
	}
	// Path 1: raise the existing siblings.
	for sh := 1; sh < int(oldSC); sh++ {
		sib := id
		sib.Shard = sh
		if s := byID[sib]; s != nil && s.abstain {
			continue
		}
		p.ops = append(p.ops, op{kind: opRaise, id: sib, update: &dynamodb.UpdateItemInput{
			TableName:                 aws.String(m.table),
			Key:                       sib.Key().AttributeValues(),
			UpdateExpression:          aws.String("SET #sc = :new"),
			ConditionExpression:       aws.String("attribute_exists(#pk) AND (attribute_not_exists(#sc) OR #sc < :new)"),
			ExpressionAttributeNames:  map[string]string{"#pk": schema.AttrPK, "#sc": schema.AttrShardCount},
			ExpressionAttributeValues: map[string]types.AttributeValue{":new": schema.Num(newSC)},
		}})
	}
	// Path 2: clone shard 0's NewImage into the new shards.
	raw, err := im.rec.newItem()
	if err != nil || len(raw) == 0 {
		m.log.Warn("maintenance: no raw new image, Path 2 clones skipped")
		return
	}
	for sh := int(oldSC); sh < int(newSC); sh++ {
		dst := id
		dst.Shard = sh
		if s := byID[dst]; s != nil && s.abstain {
			continue
		}
		// A clone's limits are shard 0's as the record shows them, which a
		// limit change may have passed since: a config read confirms them
		// by the recheck deadline (docs/design.md §8).
		item := bucketitem.Clone(raw, im.new, dst, newSC)
		bucketitem.MarkRecheck(item, now+bucketitem.RecheckAfter)
		p.ops = append(p.ops, op{kind: opClone, id: dst, put: &dynamodb.PutItemInput{
			TableName:                aws.String(m.table),
			Item:                     item,
			ConditionExpression:      aws.String("attribute_not_exists(#pk)"),
			ExpressionAttributeNames: map[string]string{"#pk": schema.AttrPK},
		}})
	}
}
