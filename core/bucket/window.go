package bucket

// Window is a session quota's window on one bucket shard (docs/design.md
// §15, ADR-139/140): what a limit's stored ws, wa, wtc and rsa say. A
// limit is windowed when it carries rsa; Start and the rest are meaningful
// only when their Has flag is set.
type Window struct {
	// Length is the window's length, ms (rsa × 1000); positive.
	Length int64
	// Start is ws, epoch ms: the start of the window last opened.
	Start    int64
	HasStart bool
	// Applied is wa, epoch ms: the start of the window the shard's balance
	// reflects. Without it, the balance reflects every window whose start
	// is at or before the item's rf.
	Applied    int64
	HasApplied bool
	// Snapshot is wtc, millitokens: the shard's tc when the opener fanned
	// its window out to it.
	Snapshot    int64
	HasSnapshot bool
}

// WindowPhase is where a shard stands with its window at an instant.
type WindowPhase int

// The phases of a window (docs/design.md §15).
const (
	// WindowUnopened: rsa without ws; no window was ever opened here. The
	// next persisted materialising pass of a client opens one.
	WindowUnopened WindowPhase = iota
	// WindowCurrent: the window is live and the balance reflects it.
	WindowCurrent
	// WindowPending: the window is live and the balance does not reflect
	// it yet (a client opened it on another shard and fanned it out): the
	// next materialising pass rolls the balance to RollTarget.
	WindowPending
	// WindowEnded: the window the balance reflects has ended. The next
	// persisted materialising pass of a client opens a new one.
	WindowEnded
	// WindowDead: the window ended before the balance reflected it.
	// Rolling it now would hand out its allowance after its end, beside
	// the next window's: a client opens a new one instead, and the
	// aggregator leaves the item to it.
	WindowDead
)

// String names the phase.
func (p WindowPhase) String() string {
	switch p {
	case WindowUnopened:
		return "unopened"
	case WindowCurrent:
		return "current"
	case WindowPending:
		return "pending"
	case WindowEnded:
		return "ended"
	case WindowDead:
		return "dead"
	}
	return "unknown"
}

// End is the end of the window last opened, Start + Length, epoch ms
// (saturating); ok is false when none was opened.
func (w Window) End() (end int64, ok bool) {
	if !w.HasStart {
		return 0, false
	}
	return AddSat(w.Start, w.Length), true
}

// Reflected reports whether the shard's balance reflects the window last
// opened: wa is its start, or, without wa, its start is at or before rf.
// A shard without a window reflects none.
func (w Window) Reflected(rf int64) bool {
	switch {
	case !w.HasStart:
		return false
	case w.HasApplied:
		return w.Start <= w.Applied
	}
	return w.Start <= rf
}

// Phase is where the shard stands at now, its item's rf being rf.
func (w Window) Phase(rf, now int64) WindowPhase {
	end, ok := w.End()
	switch {
	case !ok:
		return WindowUnopened
	case end > now && w.Reflected(rf):
		return WindowCurrent
	case end > now:
		return WindowPending
	case w.Reflected(rf):
		return WindowEnded
	}
	return WindowDead
}

// RollTarget is the balance a pending window rolls a shard to: share (the
// limit's C_eff // S at the shard's count) less what the shard consumed
// since the opener took the Snapshot of its tc (consumed, the shard's tc
// now), never less than nothing consumed: a shard never rolls above its
// share. Without a snapshot it is the share.
//
// Worked: share 500,000, tc 260,000, wtc 200,000 → 440,000; tc 100,000
// under wtc 200,000 (a release since) → 500,000.
func (w Window) RollTarget(share, consumed int64) int64 {
	if !w.HasSnapshot {
		return share
	}
	return SubSat(share, max(0, SubSat(consumed, w.Snapshot)))
}

// WindowStampRF is the rf a write that leaves the shard reflecting its
// window stamps: rf never moves backwards, and never before the start of
// the window the balance now reflects (ADR-139/140): rf = max(now, stored
// rf, ws).
func WindowStampRF(w Window, storedRF, now int64) int64 {
	rf := StampRF(storedRF, now)
	if w.HasStart {
		rf = max(rf, w.Start)
	}
	return rf
}

// WindowPass is a session quota on one shard at a client's materialising
// pass (docs/design.md §15): what the pass does to the window and the
// balance it leaves before the request's consumption. Only a pass that is
// persisted applies it: a rejection writes nothing, so it neither opens
// nor rolls a window.
type WindowPass struct {
	// Phase is where the shard stood before the pass.
	Phase WindowPhase
	// Open reports a pass that opens a new window at now: none was ever
	// opened, or the last one has ended (applied or not). The writer sets
	// ws = wa = now and fans the start out to the sibling shards.
	Open bool
	// Roll reports a pass that applies a live window opened elsewhere
	// (WindowPending): wa = ws.
	Roll bool
	// Start and End are the window the balance reflects after the pass,
	// epoch ms.
	Start, End int64
	// Balance is the balance after the pass, before consumption: the
	// share at the shard's count when opening, RollTarget when rolling,
	// the stored balance clamped to the quota's ceiling otherwise.
	Balance int64
	// Share is the limit's per-shard parameters after the pass: a grant
	// that opens or rolls is sized at the shard's count, its top-up gone.
	Share Share
}

// Materialise is the shard's session quota at a client's pass at now
// (docs/design.md §15): p the parameters in force (capacity after any
// schedule, the shard's stored gc and tu), tk and consumed the stored
// balance and tc, rf the item's, shards the shard's count. An opened or
// rolled window re-grants the quota at shards (gc = S, tu removed), as a
// calendar reset does.
//
// Worked, a 5-hour window of 1,000 tokens at 2 shards (share 500,000):
//   - current: tk 700,000 with gc 2 and tu 50,000 clamps to 550,000;
//   - pending (opened elsewhere 10 minutes ago, wtc 200,000, tc 260,000):
//     rolls to 440,000, the window the opener's;
//   - ended, dead or never opened: opens at now with 500,000, ending 5
//     hours later.
func (w Window) Materialise(p Params, tk, consumed, rf, shards, now int64) WindowPass {
	out := WindowPass{Phase: w.Phase(rf, now)}
	regrant := p
	regrant.GrantShards, regrant.TopUp = max(shards, 1), 0
	switch out.Phase {
	case WindowCurrent:
		out.Start, out.End = w.Start, AddSat(w.Start, w.Length)
		out.Share = Effective(p, shards)
		out.Balance = min(tk, out.Share.Ceiling)
	case WindowPending:
		out.Roll = true
		out.Start, out.End = w.Start, AddSat(w.Start, w.Length)
		out.Share = Effective(regrant, shards)
		out.Balance = w.RollTarget(out.Share.Target, consumed)
	default: // unopened, ended, dead
		out.Open = true
		out.Start, out.End = now, AddSat(now, w.Length)
		out.Share = Effective(regrant, shards)
		out.Balance = out.Share.Target
	}
	return out
}

// RetryAfter is the retry hint of a session quota whose pass left balance
// and whose request is amount whole tokens: the window's end, when the
// next use opens a new window with a full share; never when the request is
// above the share itself, which no window restores.
func (wp WindowPass) RetryAfter(balance, amount, now int64) Retry {
	if Covers(balance, amount) {
		return Retry{}
	}
	if requested, ok := ToMilli(amount); !ok || requested > wp.Share.Target {
		return Retry{Short: true, Never: true}
	}
	return QuotaRetryAfter(balance, amount, wp.End, now)
}
