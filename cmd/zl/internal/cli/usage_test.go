package cli

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/zae-limiter/zae-limiter-go/core/usage"
)

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
