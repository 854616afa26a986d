package cli

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/zae-limiter/zae-limiter-go/core/usage"
)

func TestParseSince(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"24h":     24 * time.Hour,
		"90m":     90 * time.Minute,
		"1h30m":   90 * time.Minute,
		"1s":      time.Second,
		"7d":      7 * 24 * time.Hour,
		"1d12h":   36 * time.Hour,
		"0d1h":    time.Hour,
		"007d":    7 * 24 * time.Hour,
		"106751d": 106751 * 24 * time.Hour,
		"1.5h":    90 * time.Minute,
	} {
		if got, err := parseLookback(in); err != nil || got != want {
			t.Errorf("parseLookback(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for in, reason := range map[string]string{
		"":           "not after now",
		"0":          "not after now",
		"0d":         "not after now",
		"0s":         "not after now",
		"-2h":        "signed",
		"1d-2h":      "signed",
		"+1h":        "signed",
		"-1d":        "not a number of days",
		"d":          "not a number of days",
		"7 d":        "not a number of days",
		"1.5d":       "not a number of days",
		"1000000d":   "not a number of days",
		"106752d":    "more than 106751 days",
		"3w":         "not a duration",
		"24":         "not a duration",
		"1d2d":       "not a duration",
		"1dh":        "not a duration",
		"yesterday":  "not a number of days", // its d comes first
		"106751d24h": "too long",
		"2562048h":   "not a duration", // past what a duration holds
	} {
		_, err := parseLookback(in)
		if err == nil || !strings.HasPrefix(err.Error(), reason) || !strings.HasSuffix(err.Error(), "pass a duration such as 24h, 90m, 7d or 1d12h") {
			t.Errorf("parseLookback(%q) = %v, want %q and the accepted form", in, err, reason)
		}
	}
}

// FuzzParseSince: whatever --since is given, the parser answers without a
// panic, and what it accepts is a positive duration that reads back the
// same in the days-and-duration form it documents.
func FuzzParseSince(f *testing.F) {
	for _, s := range []string{"24h", "7d", "1d12h", "-1h", "106751d", "1d2562047h", "0.5ms", "1d1d", "d", "\xffd", "9223372036854775807ns"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := parseLookback(s)
		if err != nil {
			if !strings.Contains(err.Error(), "pass a duration such as") {
				t.Fatalf("%q: error without the accepted form: %v", s, err)
			}
			return
		}
		if d <= 0 {
			t.Fatalf("%q accepted as %v", s, d)
		}
		days := d / (24 * time.Hour)
		text := fmt.Sprintf("%dd%s", days, d-days*24*time.Hour)
		back, err := parseLookback(text)
		if err != nil || back != d {
			t.Fatalf("%q = %v, written %q, read back %v (%v)", s, d, text, back, err)
		}
	})
}

// TestSelectionFlags: how the flags become a selection at an instant, and
// that every mistake is a usage error naming the accepted form.
func TestSelectionFlags(t *testing.T) {
	now := time.Date(2028, 2, 29, 23, 59, 0, 0, time.UTC)
	cmd := &cobra.Command{Use: "list"}
	ok := func(f selectionFlags) usage.Selection {
		t.Helper()
		sel, err := f.selection(cmd, now)
		if err != nil {
			t.Fatalf("%+v: %v", f, err)
		}
		return sel
	}
	// The default: windows from the one that held 24 h ago, to now.
	sel := ok(selectionFlags{resource: "gpt-4", window: "hourly"})
	if !sel.ByResource() || !sel.From().Equal(time.Date(2028, 2, 28, 23, 0, 0, 0, time.UTC)) || !sel.To().Equal(now) {
		t.Errorf("default: %v from %v to %v", sel.ByResource(), sel.From(), sel.To())
	}
	// --since floors to its window: a monthly 7d reaches back into
	// February's start.
	sel = ok(selectionFlags{entity: "alice", resource: "gpt-4", window: "monthly", since: "7d", limits: []string{"tpm", "rpm"}})
	if sel.ByResource() || sel.Entity() != "alice" || !sel.From().Equal(time.Date(2028, 2, 1, 0, 0, 0, 0, time.UTC)) || strings.Join(sel.Limits(), ",") != "rpm,tpm" {
		t.Errorf("monthly since 7d: %v %v %v", sel.Entity(), sel.From(), sel.Limits())
	}
	// --from/--to as given, in UTC; --to defaults to now.
	sel = ok(selectionFlags{resource: "gpt-4", window: "daily", from: "2028-02-01T09:30:00+01:00"})
	if !sel.From().Equal(time.Date(2028, 2, 1, 8, 30, 0, 0, time.UTC)) || sel.From().Location() != time.UTC || !sel.To().Equal(now) {
		t.Errorf("from: %v to %v", sel.From(), sel.To())
	}
	for _, c := range []struct {
		f    selectionFlags
		want string
	}{
		{selectionFlags{entity: "alice", window: "hourly"}, "list needs --resource: --entity E --resource R for one entity, or --resource R for every entity of R"},
		{selectionFlags{resource: "r", window: "weekly"}, `--window "weekly" is not a window kind: pass hourly, daily or monthly`},
		{selectionFlags{resource: "r", window: "hourly", since: "1w"}, `--since "1w": not a duration`},
		{selectionFlags{resource: "r", window: "hourly", since: "1h", to: "2028-02-01T00:00:00Z"}, "--since counts back from now"},
		{selectionFlags{resource: "r", window: "hourly", to: "2028-02-01T00:00:00Z"}, "--to needs --from"},
		{selectionFlags{resource: "r", window: "hourly", from: "2028-02-01"}, `--from "2028-02-01" is not an RFC 3339 time`},
		{selectionFlags{resource: "r", window: "hourly", from: "2028-02-01T00:00:00Z", to: "soon"}, `--to "soon" is not an RFC 3339 time`},
		{selectionFlags{resource: "r", window: "hourly", from: "2028-03-01T00:00:00Z"}, "--from 2028-03-01T00:00:00Z is not before --to 2028-02-29T23:59:00Z"},
		{selectionFlags{resource: "r", window: "hourly", from: "0000-06-01T00:00:00Z"}, "year"},
		{selectionFlags{resource: "r#1", window: "hourly"}, "resource"},
		{selectionFlags{entity: "a#b", resource: "r", window: "hourly"}, "entity"},
		{selectionFlags{resource: "r", window: "hourly", limits: []string{"t#m"}}, "limit"},
	} {
		_, err := c.f.selection(cmd, now)
		var ue *UsageError
		if !errors.As(err, &ue) || !isUsage(err) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want a usage error with %q", c.f, err, c.want)
		}
	}
}

// TestChartWindows: every window start in the range, with or without a
// snapshot, and a bound on how many.
func TestChartWindows(t *testing.T) {
	from := time.Date(2028, 2, 28, 22, 30, 0, 0, time.UTC)
	sel := usage.ForEntity("alice", "gpt-4", usage.Hourly, from, from.Add(3*time.Hour))
	starts, err := chartWindows(sel)
	if err != nil || len(starts) != 3 || !starts[0].Equal(time.Date(2028, 2, 28, 23, 0, 0, 0, time.UTC)) || !starts[2].Equal(time.Date(2028, 2, 29, 1, 0, 0, 0, time.UTC)) {
		t.Errorf("hourly from 22:30 for 3 h: %v %v", starts, err)
	}
	sel = usage.ForResource("gpt-4", usage.Monthly, time.Date(2028, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2028, 3, 1, 0, 0, 0, 1, time.UTC))
	if starts, err := chartWindows(sel); err != nil || len(starts) != 3 {
		t.Errorf("monthly: %v %v", starts, err)
	}
	sel = usage.ForResource("gpt-4", usage.Hourly, time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2028, 1, 1, 0, 0, 0, 0, time.UTC))
	if _, err := chartWindows(sel); !isUsage(err) || !strings.Contains(err.Error(), "pass a coarser --window") {
		t.Errorf("8 years of hours: %v", err)
	}
	if got := windowLabel(usage.Daily, time.Date(2028, 2, 29, 0, 0, 0, 0, time.UTC)); got != "2028-02-29" {
		t.Errorf("daily label %q", got)
	}
}
