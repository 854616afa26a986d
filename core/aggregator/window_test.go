package aggregator

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/zae-limiter/zae-limiter-go/core/schema"
)

// TestSnapshotKey pins the window key rule at every calendar boundary: the
// plain key for the coarsest window starting at that instant, a suffix for
// each finer configured one, whatever the set of windows.
func TestSnapshotKey(t *testing.T) {
	H, D, M := Hourly, Daily, Monthly
	all := []Window{H, D, M}
	utc := func(y int, m time.Month, d, h, min int) time.Time { return time.Date(y, m, d, h, min, 0, 0, time.UTC) }
	tests := []struct {
		name    string
		at      time.Time
		windows []Window
		want    map[Window]string
	}{
		{"mid-day", utc(2026, 11, 17, 14, 30), all, map[Window]string{
			H: "2026-11-17T14:00:00Z", D: "2026-11-17T00:00:00Z", M: "2026-11-01T00:00:00Z"}},
		{"hour 00", utc(2026, 11, 17, 0, 0), all, map[Window]string{
			H: "2026-11-17T00:00:00Z#hourly", D: "2026-11-17T00:00:00Z", M: "2026-11-01T00:00:00Z"}},
		{"hour 00, daily off", utc(2026, 11, 17, 0, 59), []Window{H, M}, map[Window]string{
			H: "2026-11-17T00:00:00Z", M: "2026-11-01T00:00:00Z"}},
		{"hour 23", utc(2026, 11, 17, 23, 59), all, map[Window]string{
			H: "2026-11-17T23:00:00Z", D: "2026-11-17T00:00:00Z", M: "2026-11-01T00:00:00Z"}},
		{"the 1st at 00:xx", utc(2026, 12, 1, 0, 10), all, map[Window]string{
			H: "2026-12-01T00:00:00Z#hourly", D: "2026-12-01T00:00:00Z#daily", M: "2026-12-01T00:00:00Z"}},
		{"the 1st at 00:xx, default windows", utc(2026, 12, 1, 0, 10), []Window{H, D}, map[Window]string{
			H: "2026-12-01T00:00:00Z#hourly", D: "2026-12-01T00:00:00Z"}},
		{"the 1st at 00:xx, daily off", utc(2026, 12, 1, 0, 10), []Window{H, M}, map[Window]string{
			H: "2026-12-01T00:00:00Z#hourly", M: "2026-12-01T00:00:00Z"}},
		{"the 1st at 00:xx, hourly off", utc(2026, 12, 1, 0, 10), []Window{D, M}, map[Window]string{
			D: "2026-12-01T00:00:00Z#daily", M: "2026-12-01T00:00:00Z"}},
		{"the 1st at 00:xx, hourly only", utc(2026, 12, 1, 0, 10), []Window{H}, map[Window]string{
			H: "2026-12-01T00:00:00Z"}},
		{"the 1st at 01:00", utc(2026, 12, 1, 1, 0), all, map[Window]string{
			H: "2026-12-01T01:00:00Z", D: "2026-12-01T00:00:00Z#daily", M: "2026-12-01T00:00:00Z"}},
		{"last day of a month", utc(2026, 11, 30, 23, 59), all, map[Window]string{
			H: "2026-11-30T23:00:00Z", D: "2026-11-30T00:00:00Z", M: "2026-11-01T00:00:00Z"}},
		{"28 February 2028", utc(2028, 2, 28, 0, 5), all, map[Window]string{
			H: "2028-02-28T00:00:00Z#hourly", D: "2028-02-28T00:00:00Z", M: "2028-02-01T00:00:00Z"}},
		{"29 February 2028", utc(2028, 2, 29, 23, 59), all, map[Window]string{
			H: "2028-02-29T23:00:00Z", D: "2028-02-29T00:00:00Z", M: "2028-02-01T00:00:00Z"}},
		{"1 March 2028", utc(2028, 3, 1, 0, 0), all, map[Window]string{
			H: "2028-03-01T00:00:00Z#hourly", D: "2028-03-01T00:00:00Z#daily", M: "2028-03-01T00:00:00Z"}},
		{"31 December", utc(2026, 12, 31, 23, 59), all, map[Window]string{
			H: "2026-12-31T23:00:00Z", D: "2026-12-31T00:00:00Z", M: "2026-12-01T00:00:00Z"}},
		{"1 January", utc(2027, 1, 1, 0, 0), all, map[Window]string{
			H: "2027-01-01T00:00:00Z#hourly", D: "2027-01-01T00:00:00Z#daily", M: "2027-01-01T00:00:00Z"}},
		{"an offset zone is read in UTC", time.Date(2026, 11, 30, 19, 30, 0, 0, time.FixedZone("X", -5*3600)), all, map[Window]string{
			H: "2026-12-01T00:00:00Z#hourly", D: "2026-12-01T00:00:00Z#daily", M: "2026-12-01T00:00:00Z"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, w := range tt.windows {
				if got := SnapshotKey(w, tt.at, tt.windows); got != tt.want[w] {
					t.Errorf("%s: %q, want %q", w, got, tt.want[w])
				}
				if got, want := SnapshotKey(w, tt.at, tt.windows), WindowKey(w, tt.at); !strings.HasPrefix(got, want) {
					t.Errorf("%s: key %q does not start with its window_start %q", w, got, want)
				}
			}
		})
	}
	if got := SnapshotKey("weekly", time.Unix(0, 0), []Window{H}); got != "" {
		t.Fatalf("unknown window: %q", got)
	}
}

// TestPlanWindowsAtBoundaries: records at each boundary instant, with every
// combination of windows, are planned into one item per (window, start),
// each with exactly the counts of its own records, and no two windows
// share an item.
func TestPlanWindowsAtBoundaries(t *testing.T) {
	utc := func(y int, m time.Month, d, h, min int) time.Time { return time.Date(y, m, d, h, min, 0, 0, time.UTC) }
	instants := []time.Time{
		utc(2026, 11, 30, 23, 59), utc(2026, 12, 1, 0, 0), utc(2026, 12, 1, 0, 59), utc(2026, 12, 1, 1, 0),
		utc(2026, 12, 1, 23, 30), utc(2026, 12, 2, 0, 15), utc(2028, 2, 28, 23, 0), utc(2028, 2, 29, 0, 0),
		utc(2028, 2, 29, 23, 59), utc(2028, 3, 1, 0, 0), utc(2026, 12, 31, 23, 59), utc(2027, 1, 1, 0, 0),
	}
	sets := [][]Window{{Hourly}, {Daily}, {Monthly}, {Hourly, Daily}, {Hourly, Monthly}, {Daily, Monthly}, {Hourly, Daily, Monthly}}
	for _, windows := range sets {
		t.Run(fmt.Sprint(windows), func(t *testing.T) {
			var recs []*bucketRecord
			for i, at := range instants {
				p, err := schema.PadSequenceNumber(fmt.Sprint(100 + i))
				if err != nil {
					t.Fatal(err)
				}
				recs = append(recs, &bucketRecord{
					seq: fmt.Sprint(100 + i), padded: p, instant: at,
					id:      schema.BucketID{Namespace: "nS0000001", Entity: "e", Resource: "r", Shard: 0},
					contrib: []limitDelta{{name: "rpm", tokens: int64(1) << i}},
				})
			}
			keys, byKey := plan(recs, windows)
			// The oracle: each record's bit, under each window's start.
			want := map[string]int64{}
			for i, at := range instants {
				for _, w := range windows {
					want[string(w)+" "+WindowKey(w, at)] += int64(1) << i
				}
			}
			got := map[string]int64{}
			for _, k := range keys {
				var owner string
				for _, r := range byKey[k] {
					id := string(r.window) + " " + r.start
					if owner != "" && owner != id {
						t.Fatalf("item %s holds %s and %s", k.sk, owner, id)
					}
					owner = id
					if want := schema.UsageKey("nS0000001", "e", "r", SnapshotKey(r.window, r.first().instant, windows)); want.SK != k.sk {
						t.Fatalf("run of %s at %s", id, k.sk)
					}
					for _, c := range r.counters {
						got[id] += c.n
					}
				}
			}
			if len(got) != len(want) {
				t.Fatalf("%d items, want %d: %v", len(got), len(want), got)
			}
			for id, n := range want {
				if got[id] != n {
					t.Errorf("%s = %b, want %b", id, got[id], n)
				}
			}
		})
	}
}
