package schedule

import "time"

// maxScanDays bounds every scan of the calendar: eight years and two days,
// the longest a date pattern can wait for its next day (29 February skips
// 2100 and 2200). A pattern that finds no edge in that span has none.
const maxScanDays = 8*366 + 2

// overlap is how far a scan starts beyond the wall clock of its instant:
// wall minutes of a repeated hour that come after now's wall clock happened
// before now (the clock was set back over them), and no zone sets its clock
// back by more than this.
const overlap = 3 * 60

// dayOf reports whether c matches some minute of the day of w.
func (c Cron) dayOf(w wallMinute) bool {
	_, m, d, wd, _ := w.civil()
	return c.dayMatchesIn(m, d, wd)
}

// risingBefore returns the latest wall minute w ≤ from at which c starts
// to match (w matches, w−1 does not), scanning back no further than
// maxScanDays.
func (c Cron) risingBefore(from wallMinute) (wallMinute, bool) {
	day := floorDiv(int64(from), minutesPerDay)
	last := int(int64(from) - day*minutesPerDay)
	for i := 0; i < maxScanDays; i, last = i+1, minutesPerDay-1 {
		start := wallMinute((day - int64(i)) * minutesPerDay)
		if !c.dayOf(start) {
			continue
		}
		prevDay := c.dayOf(start - 1)
		for mi := last; mi >= 0; mi-- {
			if !c.minuteOfDay(mi) {
				continue
			}
			var before bool
			if mi == 0 {
				before = prevDay && c.minuteOfDay(minutesPerDay-1)
			} else {
				before = c.minuteOfDay(mi - 1)
			}
			if !before {
				return start + wallMinute(mi), true
			}
		}
	}
	return 0, false
}

// changeAfter returns the earliest wall minute w > from at which c's match
// differs from the minute before; rising limits it to starts of matching.
func (c Cron) changeAfter(from wallMinute, rising bool) (wallMinute, bool) {
	prev := c.matches(from)
	day := floorDiv(int64(from), minutesPerDay)
	first := int(int64(from)-day*minutesPerDay) + 1
	for i := 0; i < maxScanDays; i, first = i+1, 0 {
		start := wallMinute((day + int64(i)) * minutesPerDay)
		if first >= minutesPerDay {
			continue
		}
		if !c.dayOf(start) {
			if prev && !rising {
				return start + wallMinute(first), true
			}
			prev = false
			continue
		}
		for mi := first; mi < minutesPerDay; mi++ {
			now := c.minuteOfDay(mi)
			if now != prev && (now || !rising) {
				return start + wallMinute(mi), true
			}
			prev = now
		}
	}
	return 0, false
}

// risesAt reports whether c starts to match at instant t: it matches t's
// wall minute and not the wall minute of the instant before. A minute the
// clock skips never matches, so a run that starts in a skipped hour starts
// when the clock jumps (if it still matches then), and one wholly inside
// it never starts.
func (c Cron) risesAt(t time.Time, loc *time.Location) bool {
	return c.Matches(t, loc) && !c.Matches(t.Add(-time.Second), loc)
}

// changesAt reports whether c's match differs at t and just before it.
func (c Cron) changesAt(t time.Time, loc *time.Location) bool {
	return c.Matches(t, loc) != c.Matches(t.Add(-time.Second), loc)
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// PrevEdge returns the latest reset edge of c at or before now in loc: an
// instant at which c starts to match (docs/design.md §14): the wall
// minute matches and the one the clock showed just before does not. A
// minute the clock skips never matches; a minute it repeats starts a run
// at its first occurrence only, so a reset fires once. ok is false when c
// has no edge within the scan bound: a pattern that never matches, or
// matches every minute, resets nothing.
func (c Cron) PrevEdge(now time.Time, loc *time.Location) (edge time.Time, ok bool) {
	from := wallOf(now, loc) + overlap
	for i := 0; i < 2*overlap+2; i++ { // at most a few edges sit past now
		w, ok := c.risingBefore(from)
		if !ok {
			return time.Time{}, false
		}
		if t := w.instant(loc); !t.After(now) && c.risesAt(t, loc) {
			return t, true
		}
		from = w - 1
	}
	return time.Time{}, false
}

// NextEdge returns the earliest reset edge of c after now in loc (see
// PrevEdge); a retry-after that waits for a reset names it.
func (c Cron) NextEdge(now time.Time, loc *time.Location) (time.Time, bool) {
	return c.nextChange(now, loc, true)
}

// NextChange returns the earliest instant after now at which c's match in
// loc changes, either way: the end of a parameter entry's run or the start
// of one. A clock change can move the wall clock across a run's edge, so
// the instant of a clock change where the match differs on its two sides
// counts too.
func (c Cron) NextChange(now time.Time, loc *time.Location) (time.Time, bool) {
	t, ok := c.nextChange(now, loc, false)
	if tr, found := c.transitionChange(now, t, ok, loc); found {
		return tr, true
	}
	return t, ok
}

func (c Cron) nextChange(now time.Time, loc *time.Location, rising bool) (time.Time, bool) {
	from := wallOf(now, loc) - 1
	for i := 0; i < 2*overlap+2; i++ {
		w, ok := c.changeAfter(from, rising)
		if !ok {
			return time.Time{}, false
		}
		first, last := w.occurrences(loc)
		switch {
		case rising:
			if first.After(now) && c.risesAt(first, loc) {
				return first, true
			}
		case first.After(now) && c.changesAt(first, loc):
			return first, true
		case last.After(now) && c.changesAt(last, loc):
			// A parameter entry changes at both occurrences of a minute
			// the clock is set back over; a reset fires at the first.
			return last, true
		}
		from = w
	}
	return time.Time{}, false
}

// transitionChange returns the first clock change of loc after now (and
// before limit, when limited) at which c's match differs on its two sides.
func (c Cron) transitionChange(now, limit time.Time, limited bool, loc *time.Location) (time.Time, bool) {
	end := now.Add(maxScanDays * 24 * time.Hour)
	if limited {
		end = limit
	}
	t := now
	for t.Before(end) {
		tr, ok := nextTransition(t, end, loc)
		if !ok {
			return time.Time{}, false
		}
		if c.Matches(tr.Add(-time.Second), loc) != c.Matches(tr, loc) {
			return tr, true
		}
		t = tr
	}
	return time.Time{}, false
}

// nextTransition returns the first instant in (after, end] at which loc's
// offset changes, to the second.
func nextTransition(after, end time.Time, loc *time.Location) (time.Time, bool) {
	_, off := after.In(loc).Zone()
	step := 24 * time.Hour
	for lo := after; lo.Before(end); lo = lo.Add(step) {
		hi := lo.Add(step)
		if hi.After(end) {
			hi = end
		}
		if _, o := hi.In(loc).Zone(); o == off {
			continue
		}
		for hi.Sub(lo) > time.Second {
			mid := lo.Add(hi.Sub(lo) / 2)
			if _, o := mid.In(loc).Zone(); o == off {
				lo = mid
			} else {
				hi = mid
			}
		}
		return hi.Truncate(time.Second), true
	}
	return time.Time{}, false
}
