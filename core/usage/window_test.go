package usage_test

import (
	"errors"
	"testing"
	"time"

	"github.com/zae-limiter/zae-limiter-go/core/aggregator"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
	"github.com/zae-limiter/zae-limiter-go/core/usage"
)

// TestParseWindow: exactly the three names the aggregator stores; anything
// else is an *UnknownWindowError naming (a cut of) the input.
func TestParseWindow(t *testing.T) {
	for _, w := range usage.Windows() {
		got, err := usage.ParseWindow(string(w))
		if err != nil || got != w {
			t.Errorf("ParseWindow(%q) = %q, %v", w, got, err)
		}
		// The aggregator's names are the same text.
		if _, err := usage.ParseWindow(string(aggregator.Window(w))); err != nil {
			t.Error(err)
		}
	}
	for _, s := range []string{"", "Hourly", "hour", " daily", "monthly\n", "weekly", string(make([]byte, 200))} {
		_, err := usage.ParseWindow(s)
		var uw *usage.UnknownWindowError
		if !errors.As(err, &uw) {
			t.Errorf("ParseWindow(%q) = %v, want an *UnknownWindowError", s, err)
			continue
		}
		if uw.Text != schema.TruncateValue(s) {
			t.Errorf("ParseWindow(%q) names %q", s, uw.Text)
		}
	}
}

// TestWindowStarts: a window's start and the next one's, in UTC, across
// an hour, a day, a month, a year and 29 February; and the aggregator files
// an instant under the same start (aggregator.WindowKey).
func TestWindowStarts(t *testing.T) {
	paris := time.FixedZone("CET", 3600)
	for _, c := range []struct {
		w           usage.Window
		at          time.Time
		start, next string
	}{
		{usage.Hourly, time.Date(2026, 1, 31, 23, 59, 59, 999, time.UTC), "2026-01-31T23:00:00Z", "2026-02-01T00:00:00Z"},
		{usage.Hourly, time.Date(2026, 2, 1, 0, 30, 0, 0, paris), "2026-01-31T23:00:00Z", "2026-02-01T00:00:00Z"},
		{usage.Daily, time.Date(2028, 2, 28, 12, 0, 0, 0, time.UTC), "2028-02-28T00:00:00Z", "2028-02-29T00:00:00Z"},
		{usage.Daily, time.Date(2028, 2, 29, 0, 0, 0, 0, time.UTC), "2028-02-29T00:00:00Z", "2028-03-01T00:00:00Z"},
		{usage.Monthly, time.Date(2028, 2, 29, 23, 0, 0, 0, time.UTC), "2028-02-01T00:00:00Z", "2028-03-01T00:00:00Z"},
		{usage.Monthly, time.Date(2026, 12, 31, 23, 59, 0, 0, time.UTC), "2026-12-01T00:00:00Z", "2027-01-01T00:00:00Z"},
		{usage.Monthly, time.Date(2026, 1, 31, 0, 0, 0, 0, time.UTC), "2026-01-01T00:00:00Z", "2026-02-01T00:00:00Z"},
	} {
		start, next := c.w.Start(c.at), c.w.Next(c.at)
		if got := start.Format(time.RFC3339); got != c.start {
			t.Errorf("%s.Start(%v) = %s, want %s", c.w, c.at, got, c.start)
		}
		if got := next.Format(time.RFC3339); got != c.next {
			t.Errorf("%s.Next(%v) = %s, want %s", c.w, c.at, got, c.next)
		}
		if got := aggregator.WindowKey(aggregator.Window(c.w), c.at); got != c.start {
			t.Errorf("the aggregator files %v under %s, the reader under %s", c.at, got, c.start)
		}
	}
	if !usage.Window("weekly").Start(time.Now()).IsZero() || !usage.Window("").Next(time.Now()).IsZero() {
		t.Error("an unknown window has a start")
	}
}

// TestSelectionValidate: each kind of bad selection is its typed error,
// from Validate and from a read alike.
func TestSelectionValidate(t *testing.T) {
	from, to := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)
	var (
		uw *usage.UnknownWindowError
		re *usage.RangeError
		ve *schema.ValidationError
		ne *schema.InvalidNameError
	)
	for _, c := range []struct {
		name   string
		sel    usage.Selection
		target any
	}{
		{"unknown window", usage.ForEntity("alice", "gpt-4", "weekly", from, to), &uw},
		{"empty window", usage.ForResource("gpt-4", "", from, to), &uw},
		{"from after to", usage.ForEntity("alice", "gpt-4", usage.Hourly, to, from), &re},
		{"empty range", usage.ForEntity("alice", "gpt-4", usage.Hourly, from, from), &re},
		{"zero to", usage.ForResource("gpt-4", usage.Daily, from, time.Time{}), &re},
		{"past year 9999", usage.ForResource("gpt-4", usage.Daily, from, time.Date(10000, 1, 1, 0, 0, 1, 0, time.UTC)), &re},
		{"bad entity", usage.ForEntity("al#ice", "gpt-4", usage.Hourly, from, to), &ve},
		{"bad resource", usage.ForResource("gpt#4", usage.Hourly, from, to), &ne},
		{"default resource", usage.ForResource(schema.DefaultResource, usage.Hourly, from, to), &ne},
		{"reserved limit name", usage.ForResource("gpt-4", usage.Hourly, from, to).WithLimits("tpm", "total_events"), &ne},
		{"limit name with #", usage.ForResource("gpt-4", usage.Hourly, from, to).WithLimits("tpm#od"), &ne},
	} {
		err := c.sel.Validate()
		if err == nil || !errors.As(err, c.target) {
			t.Errorf("%s: Validate() = %v, want a %T", c.name, err, c.target)
		}
	}
	// The widest range there is, zero From included, is valid.
	if err := usage.ForResource("gpt-4", usage.Monthly, time.Time{}, time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)).Validate(); err != nil {
		t.Error(err)
	}
}

// TestSelectionIsAValue: WithLimits copies, sorts and deduplicates; the
// receiver and the caller's slice never change.
func TestSelectionIsAValue(t *testing.T) {
	from, to := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)
	base := usage.ForEntity("alice", "gpt-4", usage.Daily, from, to)
	names := []string{"tpm", "rpm", "tpm"}
	sel := base.WithLimits(names...)
	names[0] = "changed"
	if got := sel.Limits(); len(got) != 2 || got[0] != "rpm" || got[1] != "tpm" {
		t.Fatalf("Limits() = %v, want [rpm tpm]", got)
	}
	sel.Limits()[0] = "changed"
	if sel.Limits()[0] != "rpm" {
		t.Fatal("Limits() exposes the selection's storage")
	}
	if base.Limits() != nil || sel.WithLimits().Limits() != nil {
		t.Fatal("no names must mean every limit")
	}
	if sel.Entity() != "alice" || sel.Resource() != "gpt-4" || sel.Window() != usage.Daily || !sel.From().Equal(from) || !sel.To().Equal(to) || sel.ByResource() {
		t.Fatalf("accessors: %+v", sel)
	}
	if !usage.ForResource("gpt-4", usage.Daily, from, to).ByResource() {
		t.Fatal("a resource selection")
	}
}
