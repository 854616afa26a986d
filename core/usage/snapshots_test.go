package usage_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/limit"
	"github.com/zae-limiter/zae-limiter-go/core/limiter"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
	"github.com/zae-limiter/zae-limiter-go/core/usage"
)

// render is a snapshot as one comparable line:
// "alice hourly 2026-01-31T23:00:00Z rpm=3 tpm=170/od1 events=6".
func render(s usage.Snapshot) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s %s", s.Entity, s.Window, s.WindowStart.Format(time.RFC3339))
	for _, l := range s.Limits {
		fmt.Fprintf(&b, " %s=%d", l.Name, l.Tokens)
		if l.HasOverdraws {
			fmt.Fprintf(&b, "/od%d", l.Overdraws)
		}
	}
	fmt.Fprintf(&b, " events=%d", s.TotalEvents)
	return b.String()
}

// collect reads every snapshot of sel through the iterator.
func collect(t *testing.T, r *usage.Reader, sel usage.Selection) []string {
	t.Helper()
	var out []string
	for s, err := range r.Snapshots(t.Context(), sel) {
		if err != nil {
			t.Fatalf("snapshots of %v: %v", sel, err)
		}
		if s.Resource != sel.Resource() {
			t.Fatalf("snapshot of resource %q in a selection of %q", s.Resource, sel.Resource())
		}
		out = append(out, render(s))
	}
	return out
}

func equalLines(t *testing.T, what string, got, want []string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Errorf("%s:\ngot\n  %s\nwant\n  %s", what, strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

// The traffic of the snapshot tests crosses an hour, a day and a month
// boundary: 2026-01-31 23:30 to 2026-02-01 01:30 UTC. tpm is soft with a
// capacity of 100 a minute, so a second acquire of 80 at one instant
// overdraws it, and twenty minutes refill it whole.
var (
	t1 = utc(2026, 1, 31, 23, 30)
	t2 = utc(2026, 1, 31, 23, 50)
	t3 = utc(2026, 2, 1, 0, 10)
	t4 = utc(2026, 2, 1, 0, 40)
	t5 = utc(2026, 2, 1, 1, 30)
)

func tpm(entity string, n int64) acquire {
	return acquire{entity, "gpt-4", limiter.Consume{"rpm": 1, "tpm": n}}
}

// trafficWorld makes the traffic above on a fresh table.
func trafficWorld(t *testing.T, opts ...schema.TableOption) *world {
	t.Helper()
	w := testWorld(t, t1.Add(-time.Hour), "gpt-4",
		[]limit.Limit{limit.PerMinute("rpm", 1000), limit.PerMinute("tpm", 100).AsSoft()}, opts...)
	w.at(t1, tpm("alice", 80), tpm("alice", 80), tpm("bob", 30)) // alice's second overdraws: 20 − 80
	w.at(t2, tpm("alice", 10), tpm("bob", 30))
	w.at(t3, tpm("alice", 50), tpm("bob", 120)) // bob overdraws: 100 − 120
	w.at(t4, tpm("alice", 5))
	w.at(t5, tpm("alice", 7), tpm("bob", 9))
	return w
}

// What the aggregator must have written for that traffic, by window: every
// acquire adds 1 rpm and n tpm, and two events (one per limit).
var (
	aliceHourly = []string{
		"alice hourly 2026-01-31T23:00:00Z rpm=3 tpm=170/od1 events=6",
		"alice hourly 2026-02-01T00:00:00Z rpm=2 tpm=55 events=4",
		"alice hourly 2026-02-01T01:00:00Z rpm=1 tpm=7 events=2",
	}
	bobHourly = []string{
		"bob hourly 2026-01-31T23:00:00Z rpm=2 tpm=60 events=4",
		"bob hourly 2026-02-01T00:00:00Z rpm=1 tpm=120/od1 events=2",
		"bob hourly 2026-02-01T01:00:00Z rpm=1 tpm=9 events=2",
	}
	aliceDaily = []string{
		"alice daily 2026-01-31T00:00:00Z rpm=3 tpm=170/od1 events=6",
		"alice daily 2026-02-01T00:00:00Z rpm=3 tpm=62 events=6",
	}
	bobDaily = []string{
		"bob daily 2026-01-31T00:00:00Z rpm=2 tpm=60 events=4",
		"bob daily 2026-02-01T00:00:00Z rpm=2 tpm=129/od1 events=4",
	}
	aliceMonthly = []string{
		"alice monthly 2026-01-01T00:00:00Z rpm=3 tpm=170/od1 events=6",
		"alice monthly 2026-02-01T00:00:00Z rpm=3 tpm=62 events=6",
	}
	bobMonthly = []string{
		"bob monthly 2026-01-01T00:00:00Z rpm=2 tpm=60 events=4",
		"bob monthly 2026-02-01T00:00:00Z rpm=2 tpm=129/od1 events=4",
	}
)

// interleave merges per-entity lists by window start (the resource
// selection's order: start, then entity).
func interleave(lists ...[]string) []string {
	var out []string
	for i := 0; ; i++ {
		n := len(out)
		for _, l := range lists {
			if i < len(l) {
				out = append(out, l[i])
			}
		}
		if len(out) == n {
			return out
		}
	}
}

// TestSnapshotsFromRealAcquires reads back what the aggregator wrote from
// real acquires through the table's stream, across an hour, a day and a
// month boundary (where the window keys collide and the finer window's is
// suffixed, docs/decisions.md P22): by entity and by resource, by window
// kind, range and limit names, with pages of every size. On a KEYS_ONLY
// usage index (the default) and on one that projects ALL, as a table shared
// with Python clients has.
func TestSnapshotsFromRealAcquires(t *testing.T) {
	for _, proj := range []types.ProjectionType{types.ProjectionTypeKeysOnly, types.ProjectionTypeAll} {
		t.Run(string(proj), func(t *testing.T) {
			w := trafficWorld(t, schema.WithGSI2Projection(proj))
			day := func(d int) time.Time { return utc(2026, 1, 31, 0, 0).AddDate(0, 0, d) }
			cases := []struct {
				name string
				sel  usage.Selection
				want []string
			}{
				{"alice hourly", usage.ForEntity("alice", "gpt-4", usage.Hourly, t1.Add(-time.Hour), t5.Add(time.Hour)), aliceHourly},
				{"alice daily", usage.ForEntity("alice", "gpt-4", usage.Daily, day(0), day(2)), aliceDaily},
				{"alice monthly", usage.ForEntity("alice", "gpt-4", usage.Monthly, utc(2026, 1, 1, 0, 0), utc(2026, 3, 1, 0, 0)), aliceMonthly},
				{"bob hourly", usage.ForEntity("bob", "gpt-4", usage.Hourly, day(0), day(2)), bobHourly},
				{"resource hourly", usage.ForResource("gpt-4", usage.Hourly, day(0), day(2)), interleave(aliceHourly, bobHourly)},
				{"resource daily", usage.ForResource("gpt-4", usage.Daily, day(-30), day(30)), interleave(aliceDaily, bobDaily)},
				{"resource monthly", usage.ForResource("gpt-4", usage.Monthly, utc(2025, 1, 1, 0, 0), utc(2027, 1, 1, 0, 0)), interleave(aliceMonthly, bobMonthly)},
				// The range selects window starts in [from, to).
				{"the hour at midnight alone", usage.ForEntity("alice", "gpt-4", usage.Hourly, utc(2026, 2, 1, 0, 0), utc(2026, 2, 1, 1, 0)), aliceHourly[1:2]},
				{"to is exclusive", usage.ForResource("gpt-4", usage.Hourly, t1, t5.Truncate(time.Hour)), []string{aliceHourly[1], bobHourly[1]}},
				{"a day starting after from", usage.ForEntity("alice", "gpt-4", usage.Daily, t1, day(7)), aliceDaily[1:]},
				{"the month starting on the 1st, from mid-January", usage.ForResource("gpt-4", usage.Monthly, day(-15), day(2)), []string{aliceMonthly[1], bobMonthly[1]}},
				{"no window starts in the range", usage.ForEntity("alice", "gpt-4", usage.Daily, t1, t2), nil},
				{"a range before the traffic", usage.ForResource("gpt-4", usage.Hourly, day(-2), day(-1)), nil},
				// Limit names.
				{"tpm only", usage.ForEntity("bob", "gpt-4", usage.Daily, day(0), day(2)).WithLimits("tpm"), []string{
					"bob daily 2026-01-31T00:00:00Z tpm=60 events=4",
					"bob daily 2026-02-01T00:00:00Z tpm=129/od1 events=4",
				}},
				{"rpm and an unknown limit, resource", usage.ForResource("gpt-4", usage.Monthly, day(-30), day(30)).WithLimits("rpm", "nosuch", "rpm"), []string{
					"alice monthly 2026-01-01T00:00:00Z rpm=3 events=6",
					"bob monthly 2026-01-01T00:00:00Z rpm=2 events=4",
					"alice monthly 2026-02-01T00:00:00Z rpm=3 events=6",
					"bob monthly 2026-02-01T00:00:00Z rpm=2 events=4",
				}},
				{"an unknown limit only", usage.ForResource("gpt-4", usage.Hourly, day(0), day(2)).WithLimits("nosuch"), nil},
				{"another resource", usage.ForResource("gpt-3", usage.Hourly, day(0), day(2)), nil},
				{"another entity", usage.ForEntity("carol", "gpt-4", usage.Hourly, day(0), day(2)), nil},
			}
			for _, size := range []int{1, 2, 3, usage.DefaultPageSize} {
				r := w.reader(usage.Options{PageSize: size})
				for _, c := range cases {
					equalLines(t, fmt.Sprintf("%s, pages of %d", c.name, size), collect(t, r, c.sel), c.want)
				}
			}
		})
	}
}

// TestSnapshotPages pages by hand: every page but the last hands out a
// token, the pages together are the whole selection, a token resumes in a
// new reader, and a token of another selection or garbage is a
// *PageTokenError.
func TestSnapshotPages(t *testing.T) {
	w := trafficWorld(t)
	ctx := t.Context()
	r := w.reader(usage.Options{PageSize: 2})
	for _, sel := range []usage.Selection{
		usage.ForResource("gpt-4", usage.Hourly, t1.Add(-time.Hour), t5.Add(time.Hour)),
		usage.ForEntity("alice", "gpt-4", usage.Hourly, t1.Add(-time.Hour), t5.Add(time.Hour)),
	} {
		var got []string
		var tok usage.PageToken
		pages := 0
		for {
			p, err := r.SnapshotPage(ctx, sel, tok)
			if err != nil {
				t.Fatalf("page %d: %v", pages, err)
			}
			pages++
			if p.Read > 2 {
				t.Fatalf("page %d read %d items, more than the page size", pages, p.Read)
			}
			for _, s := range p.Snapshots {
				got = append(got, render(s))
			}
			if p.Next == "" {
				break
			}
			// Resuming from a token in a reader of its own gives the rest.
			var rest []string
			for s, err := range w.reader(usage.Options{}).SnapshotsFrom(ctx, sel, p.Next) {
				if err != nil {
					t.Fatal(err)
				}
				rest = append(rest, render(s))
			}
			all := collect(t, r, sel)
			equalLines(t, "resumed after page "+fmt.Sprint(pages), rest, all[len(got):])
			tok = p.Next
		}
		want := interleave(aliceHourly, bobHourly)
		if !sel.ByResource() {
			want = aliceHourly
		}
		equalLines(t, "pages of 2", got, want)
		if pages < 2 {
			t.Fatalf("%d pages of 2 items: the selection was not paged", pages)
		}
	}

	byEntity := usage.ForEntity("alice", "gpt-4", usage.Hourly, t1.Add(-time.Hour), t5.Add(time.Hour))
	p, err := r.SnapshotPage(ctx, byEntity, "")
	if err != nil || p.Next == "" {
		t.Fatalf("first page: %v, next %q", err, p.Next)
	}
	for name, c := range map[string]struct {
		sel usage.Selection
		tok usage.PageToken
	}{
		"an entity's token for the resource": {usage.ForResource("gpt-4", usage.Hourly, t1.Add(-time.Hour), t5.Add(time.Hour)), p.Next},
		"another entity's":                   {usage.ForEntity("bob", "gpt-4", usage.Hourly, t1.Add(-time.Hour), t5.Add(time.Hour)), p.Next},
		"outside a later range":              {usage.ForEntity("alice", "gpt-4", usage.Hourly, t5, t5.Add(time.Hour)), p.Next},
		"a token for an empty range":         {usage.ForEntity("alice", "gpt-4", usage.Daily, t1, t2), p.Next},
		"garbage":                            {byEntity, "not a token"},
		"base64 of garbage":                  {byEntity, "e30"}, // {}
	} {
		_, err := r.SnapshotPage(ctx, c.sel, c.tok)
		var pte *usage.PageTokenError
		if !errors.As(err, &pte) {
			t.Errorf("%s: %v, want a *PageTokenError", name, err)
		}
		for _, err := range r.SnapshotsFrom(ctx, c.sel, c.tok) {
			if !errors.As(err, &pte) {
				t.Errorf("%s, iterator: %v, want a *PageTokenError", name, err)
			}
		}
	}
}

// TestSummaryOfRealSnapshots sums the traffic's snapshots by entity and by
// resource.
func TestSummaryOfRealSnapshots(t *testing.T) {
	w := trafficWorld(t)
	r := w.reader(usage.Options{PageSize: 2})
	from, to := utc(2026, 1, 31, 0, 0), utc(2026, 2, 2, 0, 0)
	for _, c := range []struct {
		sel  usage.Selection
		want string
	}{
		// alice: rpm 3+2+1 over 3 hours, tpm 170+55+7 = 232, one overdraw.
		{usage.ForEntity("alice", "gpt-4", usage.Hourly, from, to),
			"windows 3 snapshots 3 entities 1 2026-01-31T23:00:00Z..2026-02-01T01:00:00Z events 12 | rpm 6 od 0 in 3 avg 2.000 | tpm 232 od 1 in 3 avg 77.333"},
		// Both: tpm 232 + 189 = 421 over 3 hours, 6 snapshots.
		{usage.ForResource("gpt-4", usage.Hourly, from, to),
			"windows 3 snapshots 6 entities 2 2026-01-31T23:00:00Z..2026-02-01T01:00:00Z events 20 | rpm 10 od 0 in 3 avg 3.333 | tpm 421 od 2 in 3 avg 140.333"},
		{usage.ForResource("gpt-4", usage.Daily, from, to).WithLimits("tpm"),
			"windows 2 snapshots 4 entities 2 2026-01-31T00:00:00Z..2026-02-01T00:00:00Z events 20 | tpm 421 od 2 in 2 avg 210.500"},
		{usage.ForResource("gpt-4", usage.Daily, from, to).WithLimits("nosuch"),
			"windows 0 snapshots 0 entities 0 0001-01-01T00:00:00Z..0001-01-01T00:00:00Z events 0"},
	} {
		s, err := r.Summary(t.Context(), c.sel)
		if err != nil {
			t.Fatal(err)
		}
		if got := renderSummary(s); got != c.want {
			t.Errorf("summary of %s %s:\ngot  %s\nwant %s", c.sel.Entity(), c.sel.Window(), got, c.want)
		}
	}
}

func renderSummary(s usage.Summary) string {
	var b strings.Builder
	fmt.Fprintf(&b, "windows %d snapshots %d entities %d %s..%s events %d", s.Windows, s.Snapshots, s.Entities,
		s.First.Format(time.RFC3339), s.Last.Format(time.RFC3339), s.TotalEvents)
	for _, l := range s.Limits {
		fmt.Fprintf(&b, " | %s %d od %d in %d avg %.3f", l.Name, l.Total, l.Overdraws, l.Windows, l.PerWindow)
	}
	return b.String()
}
