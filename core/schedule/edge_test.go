package schedule

import (
	"testing"
	"time"
)

func zone(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

func at(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

type edgeCase struct {
	cron, zone, now string
	want            string // RFC 3339, or "" for none
}

func checkEdges(t *testing.T, name string, f func(Cron, time.Time, *time.Location) (time.Time, bool), cases []edgeCase) {
	t.Helper()
	for _, tc := range cases {
		loc := zone(t, tc.zone)
		got, ok := f(MustParseCron(tc.cron), at(t, tc.now), loc)
		switch {
		case tc.want == "" && ok:
			t.Errorf("%s(%q, %s in %s) = %s, want none", name, tc.cron, tc.now, tc.zone, got.UTC().Format(time.RFC3339))
		case tc.want != "" && (!ok || !got.Equal(at(t, tc.want))):
			t.Errorf("%s(%q, %s in %s) = %s, %v; want %s", name, tc.cron, tc.now, tc.zone, got.UTC().Format(time.RFC3339), ok, tc.want)
		}
	}
}

func TestPrevEdge(t *testing.T) {
	checkEdges(t, "PrevEdge", Cron.PrevEdge, []edgeCase{
		// Monthly on the 1st, UTC: the edge at or before now.
		{"0 0 1 * *", "UTC", "2026-03-15T12:00:00Z", "2026-03-01T00:00:00Z"},
		{"0 0 1 * *", "UTC", "2026-03-01T00:00:00Z", "2026-03-01T00:00:00Z"},
		{"0 0 1 * *", "UTC", "2026-02-28T23:59:59Z", "2026-02-01T00:00:00Z"},
		{"0 0 1 1 *", "UTC", "2026-12-31T23:59:00Z", "2026-01-01T00:00:00Z"},
		// A whole matching day starts at its first minute.
		{"* * 1 * *", "UTC", "2026-03-01T17:45:00Z", "2026-03-01T00:00:00Z"},
		{"* 0 * * *", "UTC", "2026-03-05T00:45:00Z", "2026-03-05T00:00:00Z"},
		// Month ends: the 31st only in months that have one.
		{"0 0 31 * *", "UTC", "2026-05-15T00:00:00Z", "2026-03-31T00:00:00Z"},
		// Leap day: the last 29 February, across 2100 (not a leap year).
		{"0 0 29 2 *", "UTC", "2027-01-01T00:00:00Z", "2024-02-29T00:00:00Z"},
		{"0 0 29 2 *", "UTC", "2101-06-01T00:00:00Z", "2096-02-29T00:00:00Z"},
		{"0 0 29 2 *", "UTC", "2028-02-29T00:00:00Z", "2028-02-29T00:00:00Z"},
		// Never matching, or matching every minute: no edge, no reset.
		{"0 0 30 2 *", "UTC", "2026-06-01T00:00:00Z", ""},
		{"* * * * *", "UTC", "2026-06-01T00:00:00Z", ""},
		// Either day field (both restricted): the 1st or a Monday.
		// 2026-06-01 is a Monday; 2026-06-08 too.
		{"0 0 1 * 1", "UTC", "2026-06-10T00:00:00Z", "2026-06-08T00:00:00Z"},
		{"0 0 1 * 1", "UTC", "2026-07-01T12:00:00Z", "2026-07-01T00:00:00Z"},
		// Both day fields, one starting with *: both must match.
		{"0 0 */2 * 1", "UTC", "2026-06-10T00:00:00Z", "2026-06-01T00:00:00Z"},
		// New York midnight on the 1st, across the autumn change.
		{"0 0 1 * *", "America/New_York", "2026-12-01T04:59:00Z", "2026-11-01T04:00:00Z"},
		{"0 0 1 * *", "America/New_York", "2026-12-01T05:00:00Z", "2026-12-01T05:00:00Z"},
		// Daily in New York (upstream's examples): 09:00 EDT → 00:00 EDT
		// the same day; two edges a day.
		{"0 0 * * *", "America/New_York", "2026-09-15T13:00:00Z", "2026-09-15T04:00:00Z"},
		{"0 0 * * *", "America/New_York", "2026-09-15T04:00:00Z", "2026-09-15T04:00:00Z"},
		{"0 0,12 * * *", "America/New_York", "2026-09-15T19:00:00Z", "2026-09-15T16:00:00Z"},
		// Spring forward (2026-03-08, 02:00 EST → 03:00 EDT at 07:00Z):
		// 02:30 does not exist that day, so the last edge is the day
		// before's 02:30 EST.
		{"30 2 * * *", "America/New_York", "2026-03-08T12:00:00Z", "2026-03-07T07:30:00Z"},
		{"30 2 * * *", "America/New_York", "2026-03-09T12:00:00Z", "2026-03-09T06:30:00Z"},
		// A run that starts in the skipped hour starts when the clock jumps.
		{"* 2-3 * * *", "America/New_York", "2026-03-08T07:30:00Z", "2026-03-08T07:00:00Z"},
		// Fall back (2026-11-01, 02:00 EDT → 01:00 EST at 06:00Z): 01:30
		// happens twice and resets once, at its first occurrence.
		{"30 1 * * *", "America/New_York", "2026-11-01T06:45:00Z", "2026-11-01T05:30:00Z"},
		{"30 1 * * *", "America/New_York", "2026-11-01T05:29:00Z", "2026-10-31T05:30:00Z"},
		{"* 1 * * *", "America/New_York", "2026-11-01T06:30:00Z", "2026-11-01T05:00:00Z"},
	})
}

func TestNextEdge(t *testing.T) {
	checkEdges(t, "NextEdge", Cron.NextEdge, []edgeCase{
		// Upstream's examples, UTC, from 2026-09-15T12:00Z (a Tuesday).
		{"0 */6 * * *", "UTC", "2026-09-15T12:00:00Z", "2026-09-15T18:00:00Z"},
		{"0 0 * * *", "UTC", "2026-09-15T12:00:00Z", "2026-09-16T00:00:00Z"},
		{"0 0 * * 1", "UTC", "2026-09-15T12:00:00Z", "2026-09-21T00:00:00Z"},
		{"0 0 1 * *", "UTC", "2026-09-15T12:00:00Z", "2026-10-01T00:00:00Z"},
		{"0 0 1 1,4,7,10 *", "UTC", "2026-09-15T12:00:00Z", "2026-10-01T00:00:00Z"},
		{"0 0 1 1 *", "UTC", "2026-09-15T12:00:00Z", "2027-01-01T00:00:00Z"},
		// Strictly after now.
		{"0 0 1 * *", "UTC", "2026-10-01T00:00:00Z", "2026-11-01T00:00:00Z"},
		// Inside a run, the next edge waits for the run to end.
		{"* 0 * * *", "UTC", "2026-09-15T00:30:00Z", "2026-09-16T00:00:00Z"},
		// Leap day across 2100.
		{"0 0 29 2 *", "UTC", "2097-01-01T00:00:00Z", "2104-02-29T00:00:00Z"},
		{"0 0 30 2 *", "UTC", "2026-06-01T00:00:00Z", ""},
		// Month end in New York: midnight EST on 2026-12-01.
		{"0 0 1 * *", "America/New_York", "2026-11-15T00:00:00Z", "2026-12-01T05:00:00Z"},
		// Skipped 02:30: the next one is the day after.
		{"30 2 * * *", "America/New_York", "2026-03-08T00:00:00Z", "2026-03-09T06:30:00Z"},
		// Repeated 01:30: from between the two, the next day's.
		{"30 1 * * *", "America/New_York", "2026-11-01T05:45:00Z", "2026-11-02T06:30:00Z"},
		// Sunday in the Azores starts at 01:00, when the clock jumps
		// (2027-03-28, 00:00 → 01:00).
		{"* * * * 0", "Atlantic/Azores", "2027-03-24T06:23:00Z", "2027-03-28T01:00:00Z"},
	})
}

func TestNextChange(t *testing.T) {
	business := "* 9-17 * * MON-FRI"
	checkEdges(t, "NextChange", Cron.NextChange, []edgeCase{
		// Upstream's examples in New York (EDT, UTC−4) from a Tuesday.
		{business, "America/New_York", "2026-09-15T10:00:00Z", "2026-09-15T13:00:00Z"}, // 06:00 → 09:00
		{business, "America/New_York", "2026-09-15T18:00:00Z", "2026-09-15T22:00:00Z"}, // 14:00 → 18:00
		{business, "America/New_York", "2026-09-15T13:00:00Z", "2026-09-15T22:00:00Z"}, // 09:00 → 18:00
		{business, "America/New_York", "2026-09-12T22:30:00Z", "2026-09-14T13:00:00Z"}, // Sat 18:30 → Mon 09:00
		{"*/15 * * * *", "America/New_York", "2026-09-15T10:07:00Z", "2026-09-15T10:15:00Z"},
		{"* 9-17 * * *", "Asia/Kolkata", "2026-09-15T00:30:00Z", "2026-09-15T03:30:00Z"}, // 06:00 → 09:00 IST
		{"* * * * SAT,SUN", "America/New_York", "2026-09-18T14:00:00Z", "2026-09-19T04:00:00Z"},
		// Lord Howe moves its clock by 30 minutes (2026-10-04 02:00 → 02:30,
		// at 15:30Z): hour 2 starts existing at 02:30.
		{"* 2 * * *", "Australia/Lord_Howe", "2026-10-03T06:23:00Z", "2026-10-03T15:30:00Z"},
		// Fall back: a run of 01:00–01:29 starts again when the clock is
		// set back to 01:00 (06:00Z), and ends at the second 01:30.
		{"0-29 1 * * *", "America/New_York", "2026-11-01T05:40:00Z", "2026-11-01T06:00:00Z"},
		{"0-29 1 * * *", "America/New_York", "2026-11-01T06:00:00Z", "2026-11-01T06:30:00Z"},
		{"* * * * *", "UTC", "2026-06-01T00:00:00Z", ""},
	})
}

// Every edge found is one: matching at it, not just before it, and
// nothing is skipped between two consecutive edges found forwards.
func TestEdgesAgreeWithMatching(t *testing.T) {
	for _, tc := range []struct{ cron, zone string }{
		{"30 1 * * *", "America/New_York"},
		{"30 2 * * *", "America/New_York"},
		{"*/20 1-3 * * *", "America/New_York"},
		{"0 0 * * *", "Australia/Lord_Howe"},
		{"*/7 * * * 0", "Atlantic/Azores"},
		{"0 9-17 * * 1-5", "Europe/London"},
	} {
		loc := zone(t, tc.zone)
		c := MustParseCron(tc.cron)
		// Scan a week around each 2026 clock change minute by minute.
		for _, start := range []string{"2026-03-05T00:00:00Z", "2026-10-01T00:00:00Z", "2026-10-29T00:00:00Z"} {
			from := at(t, start)
			var want []time.Time
			for m := 0; m < 10*24*60; m++ {
				tt := from.Add(time.Duration(m) * time.Minute)
				if c.risesAt(tt, loc) && wallOf(tt, loc).instant(loc).Equal(tt) {
					want = append(want, tt)
				}
			}
			if len(want) == 0 {
				t.Fatalf("%q in %s: no edge in the ten days from %s", tc.cron, tc.zone, start)
			}
			now := from.Add(-time.Second)
			for i, w := range want {
				got, ok := c.NextEdge(now, loc)
				if !ok || !got.Equal(w) {
					t.Fatalf("%q in %s: edge %d from %s = %s, want %s", tc.cron, tc.zone, i, now.UTC(), got.UTC(), w.UTC())
				}
				if back, ok := c.PrevEdge(got, loc); !ok || !back.Equal(got) {
					t.Fatalf("%q in %s: PrevEdge(%s) = %s", tc.cron, tc.zone, got.UTC(), back.UTC())
				}
				now = got
			}
		}
	}
}

// FuzzEdges holds the scans to what they promise on any cron, zone and
// instant: a next edge is after now and starts a run there, and is its own
// previous edge; a previous edge is at or before now and starts a run; a
// next change is after now and changes the match there; no edge lies
// strictly between now and the next one.
func FuzzEdges(f *testing.F) {
	f.Add("30 1 * * *", uint8(0), int64(1_793_500_000))
	f.Add("* 2-3 * * *", uint8(0), int64(1_772_900_000))
	f.Add("0 0 29 2 *", uint8(1), int64(1_700_000_000))
	f.Add("*/7 * * * 0", uint8(2), int64(1_806_000_000))
	f.Add("0 9-17 * * 1-5", uint8(3), int64(1_790_000_000))
	zones := []string{"America/New_York", "UTC", "Atlantic/Azores", "Australia/Lord_Howe", "Asia/Kolkata", "America/Havana"}
	locs := make([]*time.Location, len(zones))
	for i, z := range zones {
		loc, err := time.LoadLocation(z)
		if err != nil {
			f.Fatal(err)
		}
		locs[i] = loc
	}
	f.Fuzz(func(t *testing.T, expr string, zi uint8, sec int64) {
		c, err := ParseCron(expr)
		if err != nil {
			return
		}
		loc := locs[int(zi)%len(locs)]
		// Instants from 1970 to 2100.
		now := time.Unix(sec%4_102_444_800, 0)
		if now.Before(time.Unix(0, 0)) {
			now = time.Unix(-sec%4_102_444_800, 0)
		}
		if e, ok := c.NextEdge(now, loc); ok {
			if !e.After(now) || !c.risesAt(e, loc) {
				t.Fatalf("%q in %s: NextEdge(%s) = %s does not start a run after now", expr, loc, now.UTC(), e.UTC())
			}
			if p, ok := c.PrevEdge(e, loc); !ok || !p.Equal(e) {
				t.Fatalf("%q in %s: PrevEdge(NextEdge %s) = %s, %v", expr, loc, e.UTC(), p.UTC(), ok)
			}
			if p, ok := c.PrevEdge(e.Add(-time.Second), loc); ok && p.After(now) {
				t.Fatalf("%q in %s: edge %s lies between now %s and the next edge %s", expr, loc, p.UTC(), now.UTC(), e.UTC())
			}
		}
		if p, ok := c.PrevEdge(now, loc); ok && (p.After(now) || !c.risesAt(p, loc)) {
			t.Fatalf("%q in %s: PrevEdge(%s) = %s does not start a run at or before now", expr, loc, now.UTC(), p.UTC())
		}
		if n, ok := c.NextChange(now, loc); ok && (!n.After(now) || !c.changesAt(n, loc)) {
			t.Fatalf("%q in %s: NextChange(%s) = %s changes nothing after now", expr, loc, now.UTC(), n.UTC())
		}
	})
}
