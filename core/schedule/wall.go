package schedule

import "time"

// A wall minute is a minute of the wall clock in a time zone, counted from
// 1970-01-01 00:00 wall time: day*1440 + minute of day. Cron matches wall
// minutes; [instant] maps one to the instant it happens (docs/design.md
// §14, "Wall clock and instants").
type wallMinute int64

const minutesPerDay = 24 * 60

// wallOf is the wall minute of t in loc (seconds dropped).
func wallOf(t time.Time, loc *time.Location) wallMinute {
	y, m, d := t.In(loc).Date()
	h, mi, _ := t.In(loc).Clock()
	return wallMinute(daysFromCivil(y, m, d)*minutesPerDay + int64(h*60+mi))
}

// civil returns the date, weekday and minute of day of w.
func (w wallMinute) civil() (y int, m time.Month, d int, wd int, minute int) {
	day := int64(w) / minutesPerDay
	minute = int(int64(w) % minutesPerDay)
	if minute < 0 {
		day--
		minute += minutesPerDay
	}
	y, m, d = civilFromDays(day)
	wd = int((day%7 + 11) % 7) // 1970-01-01 was a Thursday (4)
	return y, m, d, wd, minute
}

// matches reports whether c matches wall minute w.
func (c Cron) matches(w wallMinute) bool {
	_, m, d, wd, minute := w.civil()
	return c.dayMatchesIn(m, d, wd) && c.minuteOfDay(minute)
}

func (c Cron) dayMatchesIn(m time.Month, d, wd int) bool {
	return c.month&(1<<uint(m)) != 0 && c.dayMatches(d, wd)
}

func (c Cron) minuteOfDay(minute int) bool {
	return c.hour&(1<<uint(minute/60)) != 0 && c.minute&(1<<uint(minute%60)) != 0
}

// Matches reports whether the wall-clock minute of t in loc is one c
// matches: a parameter entry is in force while it does.
func (c Cron) Matches(t time.Time, loc *time.Location) bool {
	return c.matches(wallOf(t, loc))
}

// instant is the instant wall minute w happens in loc: its first
// occurrence when the clock is set back over it, and the instant the clock
// jumps past it when it is skipped (a spring-forward gap), so that every
// wall minute maps to one instant and later minutes to later instants.
func (w wallMinute) instant(loc *time.Location) time.Time {
	first, _ := w.occurrences(loc)
	return first
}

// occurrences are the first and last instants wall minute w happens in
// loc: the same instant but for a minute the clock is set back over; for a
// skipped minute both are the instant the clock jumps past it.
func (w wallMinute) occurrences(loc *time.Location) (first, last time.Time) {
	wallSec := int64(w) * 60 // the wall clock read as if it were UTC
	// The offsets in force around it: transitions are days apart.
	_, before := time.Unix(wallSec-26*3600, 0).In(loc).Zone()
	_, after := time.Unix(wallSec+26*3600, 0).In(loc).Zone()
	for _, off := range [...]int{before, after} {
		t := time.Unix(wallSec-int64(off), 0)
		if wallOf(t, loc) != w {
			continue
		}
		if first.IsZero() || t.Before(first) {
			first = t
		}
		if last.IsZero() || t.After(last) {
			last = t
		}
	}
	if !first.IsZero() {
		return first, last
	}
	// Skipped: the first instant whose wall clock is past w, found between
	// the two readings (the earlier one shows a wall clock before w).
	lo := time.Unix(wallSec-int64(max(before, after)), 0)
	hi := time.Unix(wallSec-int64(min(before, after)), 0)
	for hi.Sub(lo) > time.Second {
		mid := lo.Add(hi.Sub(lo) / 2).Truncate(time.Second)
		if wallOf(mid, loc) >= w {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi, hi
}

// daysFromCivil is the number of days from 1970-01-01 to y-m-d in the
// proleptic Gregorian calendar (Howard Hinnant's algorithm).
func daysFromCivil(y int, m time.Month, d int) int64 {
	yy := int64(y)
	if m <= 2 {
		yy--
	}
	era := yy / 400
	if yy < 0 && yy%400 != 0 {
		era--
	}
	yoe := yy - era*400
	mp := (int64(m) + 9) % 12
	doy := (153*mp+2)/5 + int64(d) - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return era*146097 + doe - 719468
}

// civilFromDays is the inverse of daysFromCivil.
func civilFromDays(z int64) (int, time.Month, int) {
	z += 719468
	era := z / 146097
	if z < 0 && z%146097 != 0 {
		era--
	}
	doe := z - era*146097
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	y := yoe + era*400
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	d := doy - (153*mp+2)/5 + 1
	m := mp + 3
	if m > 12 {
		m -= 12
	}
	if m <= 2 {
		y++
	}
	return int(y), time.Month(m), int(d)
}
