package shard

import (
	"fmt"

	"github.com/zae-limiter/zae-limiter-go/core/bucket"
	"github.com/zae-limiter/zae-limiter-go/core/limit"
	"github.com/zae-limiter/zae-limiter-go/core/schedule"
)

// Reconfigure brings the pass to the limits a config read resolved for
// the pair, from the pass's instant on (docs/design.md §8): each limit the
// shard carries that the config resolves takes the configured parameters,
// schedules, zone, window length and soft-ness; its balance, materialised
// at the stored parameters up to At, is clamped to the new ceiling (a
// raised ceiling grants nothing at once; debt is kept); a calendar quota
// that was a dripping limit gets a grant sized at S, a quota that drips
// from now on loses its grant and top-up, a limit that stops being a
// session quota loses its window. With drop, a limit the config no longer
// resolves is dropped (the write removes it, tc kept); without, it keeps
// its stored parameters (a reset or top-up, which changes balances, not
// limit sets). A limit the config adds and the shard lacks is left to the
// first acquire that names it (the slow path seeds it).
//
// Worked, rpm 100 a minute lowered to 20 a minute on a shard that stored
// 90 tokens at rf, 6 s before At: materialised at the old rate, 90 + 10 =
// 100 tokens; clamped to 20. Raised instead to 200 a minute: 100 tokens,
// refilling from At at 200 a minute toward 200.
func (p *Pass) Reconfigure(limits []limit.Limit, drop bool) error {
	for i := range p.Limits {
		lp := &p.Limits[i]
		cfg, ok := limit.Find(limits, lp.Stored.Name)
		if !ok {
			lp.Dropped = drop
			continue
		}
		if err := p.reconfigure(lp, cfg); err != nil {
			return err
		}
	}
	p.reconfigured = true
	return nil
}

// reconfigure is one limit of Reconfigure.
func (p *Pass) reconfigure(lp *Limit, cfg limit.Limit) error {
	sched, resets, loc, err := cfg.Schedules()
	if err != nil {
		return fmt.Errorf("limit %s: %w", cfg.Name, err)
	}
	lp.Cfg, lp.Configured = cfg, true
	params := cfg.Params()
	quota := params.IsQuota()
	switch {
	case quota && !lp.Quota:
		// A dripping limit becomes a quota: its allowance is granted at S
		// from now on, its balance clamped to it.
		lp.GC, lp.WriteGC, lp.WipeTU = p.S, true, true
	case !quota && lp.Quota:
		lp.GC, lp.WriteGC, lp.WipeTU, lp.RemoveGrant = 0, false, false, true
	}
	if lp.Window != nil && !cfg.IsSession() {
		lp.Window, lp.RemoveWindow, lp.SetWS, lp.SetWA = nil, true, false, false
	}
	in := params
	if quota {
		in.GrantShards = max(lp.GC, 1)
		if !lp.WipeTU {
			in.TopUp = lp.Stored.TopUp
		}
	}
	// Rebased at At: no time has passed since the balance above, so the
	// new parameters add nothing and only clamp (and a reset edge due at
	// At itself was applied above, at the stored schedule).
	q := schedule.Materialise(in, sched, resets, loc, lp.Target, p.At, p.S, p.At)
	if cfg.IsSession() {
		q.Boundary = min(q.Boundary, p.windowBoundary(lp, cfg))
	}
	lp.Params = bucket.Params{Capacity: params.Capacity, RefillAmount: params.RefillAmount, RefillPeriod: params.RefillPeriod}
	lp.Quota = quota
	lp.Pass = q
	lp.Target = q.Balance
	return nil
}

// windowBoundary is the instant a session quota's write leaves the fast
// path to the slow one: its window's end at the configured length when
// the window is live at At, else the clock reading (no live window: the
// next use opens one, which only a materialising pass does).
func (p *Pass) windowBoundary(lp *Limit, cfg limit.Limit) int64 {
	if lp.Window == nil {
		return p.Now
	}
	w := *lp.Window
	w.Length = cfg.ResetAfter.Milliseconds()
	if lp.SetWA {
		w.Applied, w.HasApplied = lp.WA, true
	}
	if end, ok := w.End(); ok && end > p.At && (lp.Phase == bucket.WindowCurrent || lp.Phase == bucket.WindowPending) {
		return end
	}
	return p.Now
}
