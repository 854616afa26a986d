package shard

import (
	"fmt"
	"time"

	"github.com/zae-limiter/zae-limiter-go/core/bucket"
	"github.com/zae-limiter/zae-limiter-go/core/bucketitem"
	"github.com/zae-limiter/zae-limiter-go/core/internal/grant"
	"github.com/zae-limiter/zae-limiter-go/core/limit"
	"github.com/zae-limiter/zae-limiter-go/core/schedule"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
)

// Pass is one shard at one instant: every limit it carries materialised
// with the parameters, schedules, grant and window the shard stores
// (Materialise), then, when a config read is applied, brought to the
// configured limits (Reconfigure), and changed by an operation's deltas.
// Update builds the write that leaves it.
type Pass struct {
	// ID names the shard.
	ID schema.BucketID
	// Img is the shard as read.
	Img *bucketitem.Image
	// S is the pair's shard count the pass sizes grants at: the largest
	// count known (shard 0's), never below the shard's own.
	S int64
	// Now is the writer's clock reading, epoch ms; At is the pass's
	// instant, Now never before the stored rf.
	Now, At int64
	// Limits are the shard's limits, in the image's order (by name).
	Limits []Limit
	// reconfigured reports a pass that Reconfigure brought to config.
	reconfigured bool
}

// Limit is one limit of a shard in a pass.
type Limit struct {
	// Stored is the limit as the shard carries it.
	Stored *bucketitem.LimitImage
	// Cfg is the limit as configured, when Configured.
	Cfg limit.Limit
	// Configured reports a limit the config read resolves for the pair
	// (Reconfigure); the write then stores Cfg's parameters, schedules and
	// soft-ness.
	Configured bool
	// Dropped reports a limit the config read no longer resolves, which the
	// write removes (every attribute of it but tc).
	Dropped bool
	// Params are the parameters the write leaves (cp, ra, rp; undivided):
	// the stored ones, Cfg's once reconfigured.
	Params bucket.Params
	// Pass is the limit at the pass's instant: its parameters in force,
	// share, balance and next boundary, at the stored parameters and, once
	// reconfigured, at the configured ones from At on.
	Pass schedule.Pass
	// Target is the balance the write leaves, millitokens.
	Target int64
	// Quota reports a limit that does not drip (a calendar or session
	// quota) at the parameters the write leaves.
	Quota bool
	// GC is a quota's grant count after the write; WriteGC writes it.
	GC      int64
	WriteGC bool
	// WipeTU removes the period's top-up (a reset edge, a new grant);
	// TopUp is the top-up the write adds, millitokens.
	WipeTU bool
	TopUp  int64
	// RemoveGrant removes gc and tu (a quota that drips from now on).
	RemoveGrant bool
	// Window is a session quota's window as stored (its Length the
	// configured one when the shard stores none), nil for other limits;
	// Phase is where it stands at At. SetWS and SetWA are the window start
	// and the start the balance reflects that the write stores (ws, wa),
	// when set; the write then drops the fan-out's snapshot wtc too.
	Window       *bucket.Window
	Phase        bucket.WindowPhase
	SetWS, SetWA bool
	WS, WA       int64
	// RemoveWindow removes the window attributes (no longer a session quota).
	RemoveWindow bool
}

// Materialise is shard id, read as img, at now: every limit it carries
// materialised at At = max(now, rf) with its own stored parameters,
// schedules and zone, its grant and top-up, and S, the pair's count
// (at least the shard's own): a dripping limit refilled, a calendar
// quota's pending reset edge applied (its share at S, gc = S, tu wiped), a
// quota without gc read as granted per grant.Of (ADR-145 R7) and that grant
// frozen into gc when the shard's count is raised to S, a session quota's
// live window rolled in or clamped (an operation is not a use: a window
// that has ended, or none, is left for the next use to open). A stored
// schedule that does not decode, or a zone that does not load, is its
// typed error (*schedule.EncodingError, *schedule.ZoneError), wrapped with
// the shard and the limit.
func Materialise(id schema.BucketID, img *bucketitem.Image, S, now int64) (Pass, error) {
	S = max(S, img.ShardCount, 1)
	at := now
	if img.HasRF {
		at = max(now, img.RF)
	}
	p := Pass{ID: id, Img: img, S: S, Now: now, At: at, Limits: make([]Limit, 0, len(img.Limits))}
	for i := range img.Limits {
		li := &img.Limits[i]
		sched, resets, loc, err := img.Schedules(li.Name)
		if err != nil {
			return Pass{}, fmt.Errorf("shard %d of %s on %s, limit %s: %w", id.Shard, id.Entity, id.Resource, li.Name, err)
		}
		lp := Limit{Stored: li, Params: bucket.Params{Capacity: li.Capacity, RefillAmount: li.RefillAmount, RefillPeriod: li.RefillPeriod}}
		lp.materialise(img, sched, resets, loc, S, at)
		p.Limits = append(p.Limits, lp)
	}
	return p, nil
}

// materialise is one limit at its stored parameters (Materialise).
func (lp *Limit) materialise(img *bucketitem.Image, sched schedule.Schedule, resets schedule.Resets, loc *time.Location, S, at int64) {
	li := lp.Stored
	lp.Quota = lp.Params.IsQuota()
	in := lp.Params
	in.GrantShards, in.TopUp = li.GrantShards, li.TopUp
	lp.Pass = schedule.Materialise(in, sched, resets, loc, li.Tokens, img.RF, S, at)
	switch {
	case !lp.Quota:
	case lp.Pass.Reset:
		lp.GC, lp.WriteGC, lp.WipeTU = lp.Pass.InForce.GrantShards, true, true
	case li.GrantShards < 1:
		in.GrantShards, _ = grant.Of(li, img.ShardCount)
		lp.Pass = schedule.Materialise(in, sched, resets, loc, li.Tokens, img.RF, S, at)
		lp.GC, lp.WriteGC = in.GrantShards, img.ShardCount < S
	default:
		lp.GC = li.GrantShards
	}
	lp.Target = lp.Pass.Balance
	if li.HasWindow() {
		lp.materialiseWindow(img, li.Window(), S, at)
	}
}

// materialiseWindow is a session quota's part of the limit's pass
// (docs/design.md §15): a window opened on another shard and still live is
// rolled in (wa = ws, the roll target at S, gc = S, tu wiped), a live
// window applied is clamped to the quota's ceiling, and a shard with no
// live window is left as it is.
func (lp *Limit) materialiseWindow(img *bucketitem.Image, w bucket.Window, S, at int64) {
	li := lp.Stored
	lp.Window = &w
	in := lp.Pass.InForce // the schedule's parameters, the stored gc and tu
	in.GrantShards, in.TopUp = li.GrantShards, li.TopUp
	if in.GrantShards < 1 {
		in.GrantShards, _ = grant.Of(li, img.ShardCount)
	}
	wp := w.Materialise(in, li.Tokens, li.Consumed, img.RF, S, at)
	lp.Phase = wp.Phase
	lp.Pass.Share = wp.Share
	switch wp.Phase {
	case bucket.WindowCurrent:
		lp.Target = wp.Balance
		lp.GC = in.GrantShards
		lp.Pass.Boundary = min(lp.Pass.Boundary, wp.End)
	case bucket.WindowPending:
		lp.Target = wp.Balance
		lp.GC, lp.WriteGC, lp.WipeTU = max(S, 1), true, true
		lp.SetWA, lp.WA = true, w.Start
		lp.Pass.Boundary = min(lp.Pass.Boundary, wp.End)
		in.GrantShards, in.TopUp = max(S, 1), 0
	default:
		lp.Target = li.Tokens
		lp.GC = in.GrantShards
		lp.Pass.Share = bucket.Effective(in, S)
	}
	lp.Pass.InForce = in
	lp.Pass.Balance = lp.Target
}

// EndWindow is a session quota's reset (ADR-149): its window is marked
// ended at the writer's clock reading and applied (ws = wa = Now −
// length), so that the next use opens a new one with a full share.
func (p *Pass) EndWindow(lp *Limit) {
	start := bucket.SubSat(p.Now, lp.Window.Length)
	lp.SetWS, lp.SetWA, lp.WS, lp.WA = true, true, start, start
	lp.Phase = bucket.WindowEnded
}

// OpenWindow is a session quota's top-up with no live window on the
// shard (ADR-149): a window opens at the writer's clock reading, with the
// share at S (gc = S, tu wiped), which the top-up's portion then adds to.
func (p *Pass) OpenWindow(lp *Limit) {
	lp.SetWS, lp.SetWA, lp.WS, lp.WA = true, true, p.Now, p.Now
	lp.Phase = bucket.WindowCurrent
	lp.Target = lp.Pass.Share.Target
	lp.GC, lp.WriteGC, lp.WipeTU = max(p.S, 1), true, true
}

// Find returns the pass of the limit named name, nil when the shard does
// not carry it.
func (p *Pass) Find(name string) *Limit {
	for i := range p.Limits {
		if p.Limits[i].Stored.Name == name {
			return &p.Limits[i]
		}
	}
	return nil
}
