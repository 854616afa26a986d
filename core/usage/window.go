package usage

import (
	"strconv"
	"time"

	"github.com/zae-limiter/zae-limiter-go/core/schema"
)

// Window is the kind of a snapshot window: an hour, a day or a calendar
// month, in UTC (docs/design.md §6). Its value is the text the aggregator
// stores in a snapshot's `window` attribute and reads from SNAPSHOT_WINDOWS.
type Window string

// The snapshot windows.
const (
	Hourly  Window = "hourly"
	Daily   Window = "daily"
	Monthly Window = "monthly"
)

// Windows lists the snapshot windows, finest first.
func Windows() []Window { return []Window{Hourly, Daily, Monthly} }

// UnknownWindowError reports a window name that is not hourly, daily or
// monthly.
type UnknownWindowError struct {
	// Text is the name given, cut to schema.MaxErrorValueLen characters.
	Text string
}

// Error implements error.
func (e *UnknownWindowError) Error() string {
	return "usage: unknown window " + strconv.Quote(e.Text) + " (want hourly, daily or monthly)"
}

// ParseWindow reads a window name: exactly "hourly", "daily" or "monthly",
// as the aggregator stores and configures them. Anything else is an
// *UnknownWindowError.
func ParseWindow(s string) (Window, error) {
	switch w := Window(s); w {
	case Hourly, Daily, Monthly:
		return w, nil
	}
	return "", &UnknownWindowError{Text: schema.TruncateValue(s)}
}

// String returns the window's name.
func (w Window) String() string { return string(w) }

// known reports whether w is one of the three windows.
func (w Window) known() bool { return w == Hourly || w == Daily || w == Monthly }

// Start returns the start of the window of kind w that contains t: the UTC
// start of its hour, day or month, as the aggregator files a record
// (docs/design.md §6). An unknown window gives the zero time.
func (w Window) Start(t time.Time) time.Time {
	t = t.UTC()
	y, m, d := t.Date()
	switch w {
	case Hourly:
		return time.Date(y, m, d, t.Hour(), 0, 0, 0, time.UTC)
	case Daily:
		return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
	case Monthly:
		return time.Date(y, m, 1, 0, 0, 0, 0, time.UTC)
	}
	return time.Time{}
}

// Next returns the start of the window that follows the one containing t.
// An unknown window gives the zero time.
func (w Window) Next(t time.Time) time.Time {
	s := w.Start(t)
	switch w {
	case Hourly:
		return s.Add(time.Hour)
	case Daily:
		return s.AddDate(0, 0, 1)
	case Monthly:
		return s.AddDate(0, 1, 0)
	}
	return time.Time{}
}

// firstFrom returns the start of the first window of kind w that starts at
// or after t.
func (w Window) firstFrom(t time.Time) time.Time {
	if s := w.Start(t); s.Equal(t) {
		return s
	}
	return w.Next(t)
}

// lastBefore returns the start of the last window of kind w that starts
// before t.
func (w Window) lastBefore(t time.Time) time.Time {
	return w.Start(t.Add(-time.Nanosecond))
}

// suffix is what a window's stored key carries after its start where a
// coarser window starts at the same instant (docs/decisions.md P22): the
// hour starting at midnight and the day starting on the 1st. A monthly
// key is never suffixed.
func (w Window) suffix() string {
	switch w {
	case Hourly, Daily:
		return "#" + string(w)
	}
	return ""
}

// startLayout is the stored form of a window start, `window_start` and the
// first part of every window key: fixed width, so that text order is time
// order (docs/design.md §6).
const startLayout = "2006-01-02T15:04:05Z"

// formatStart returns t in the stored form of a window start.
func formatStart(t time.Time) string { return t.UTC().Format(startLayout) }

// parseStart reads a stored window start; it must be in exactly the
// stored form (time.Parse accepts some variants that would not round-trip).
func parseStart(s string) (time.Time, bool) {
	t, err := time.Parse(startLayout, s)
	if err != nil || formatStart(t) != s {
		return time.Time{}, false
	}
	return t, true
}
