package maintenance

import (
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/zae-limiter/zae-limiter-go/core/schema"
)

// scheduledFixture is a fixture whose clock reads at.
func scheduledFixture(t *testing.T, at time.Time) *fixture {
	t.Helper()
	f := newFixture(t)
	f.m = New(f.rec, f.tbl.Name, Options{Clock: func() time.Time { return at }})
	return f
}

// business is the Python client's stored form of "half the rate during
// business hours in New York": * 9-17 * * MON-FRI at scale 0.5.
var business = []any{"sched", "h9-17w1-5s500", "sched_tz", "America/New_York"}

// During business hours the refill drips at the halved rate toward the
// halved ceiling, stamps vu at the instant that ceiling is reached, and
// pins the schedule it read.
func TestScheduledRefillUsesTheParametersInForce(t *testing.T) {
	at := time.Date(2027, 1, 15, 15, 0, 0, 0, time.UTC) // Friday 10:00 EST
	t0 := at.UnixMilli()
	f := scheduledFixture(t, at)
	id := bid("e1", 0)
	nw := with(bucketItem(id, t0-30_000, 0, rpm(1_000, 60_000), wcu(1_000_000, 0)), business...)
	old := with(nw, tc("rpm"), 0, tk("rpm"), 61_000)
	f.put(t, nw)

	st := f.run(t, record(t, id, old, nw))
	wantStats(t, st, Stats{Refills: 1})
	// In force: cp 50 000, ra 50 000 per 60 s. 1 000 + 30 s × 50 000 / 60 s
	// = 26 000 (unscheduled: 51 000). Full at 50 000 after 24 000 more:
	// 28.8 s, long before 18:00.
	sameItem(t, "bucket", f.get(t, id), with(nw, schema.AttrRF, t0, tk("rpm"), 26_000, "vu", t0+28_800))
	in := f.rec.updates[0]
	if got := aws.ToString(in.ConditionExpression); got != "#rf = :erf AND attribute_not_exists(#vu) AND #sched = :esched" {
		t.Errorf("condition = %q", got)
	}
}

// Near the end of business hours vu is the boundary (18:00 EST), where
// the ceiling doubles back, not the instant the halved ceiling is reached.
func TestScheduledRefillStampsTheBoundary(t *testing.T) {
	at := time.Date(2027, 1, 15, 22, 59, 30, 0, time.UTC) // 17:59:30 EST
	t0 := at.UnixMilli()
	f := scheduledFixture(t, at)
	id := bid("e1", 0)
	nw := with(bucketItem(id, t0-1_200, 0, rpm(1_000, 60_000), wcu(1_000_000, 0)), business...)
	f.put(t, nw)

	wantStats(t, f.run(t, record(t, id, with(nw, tc("rpm"), 0), nw)), Stats{Refills: 1})
	// 1 000 + 1.2 s × 50 000 / 60 s = 2 000; full in 57.6 s, after 18:00.
	boundary := time.Date(2027, 1, 15, 23, 0, 0, 0, time.UTC).UnixMilli()
	sameItem(t, "bucket", f.get(t, id), with(nw, schema.AttrRF, t0, tk("rpm"), 2_000, "vu", boundary))
}

// A balance above the lowered ceiling is brought down to it.
func TestScheduledRefillLowersToTheCeilingInForce(t *testing.T) {
	at := time.Date(2027, 1, 15, 15, 0, 0, 0, time.UTC)
	t0 := at.UnixMilli()
	f := scheduledFixture(t, at)
	id := bid("e1", 0)
	nw := with(bucketItem(id, t0-1_000, 0, rpm(90_000, 0), wcu(1_000_000, 0)), business...)
	f.put(t, nw)

	wantStats(t, f.run(t, record(t, id, nw, nw)), Stats{Refills: 1})
	sameItem(t, "bucket", f.get(t, id), with(nw, schema.AttrRF, t0, tk("rpm"), 50_000, "vu", t0))
}

// Outside business hours the stored parameters hold; vu is the full-at
// instant when it comes before Monday's 09:00.
func TestScheduledRefillOutsideTheSchedule(t *testing.T) {
	at := time.Date(2027, 1, 16, 15, 0, 0, 0, time.UTC) // Saturday
	t0 := at.UnixMilli()
	f := scheduledFixture(t, at)
	id := bid("e1", 0)
	nw := with(bucketItem(id, t0-30_000, 0, rpm(1_000, 60_000), wcu(1_000_000, 0)), business...)
	f.put(t, nw)

	wantStats(t, f.run(t, record(t, id, with(nw, tc("rpm"), 0), nw)), Stats{Refills: 1})
	// As unscheduled: 51 000, full 29.4 s later.
	sameItem(t, "bucket", f.get(t, id), with(nw, schema.AttrRF, t0, tk("rpm"), 51_000, "vu", t0+29_400))
}

// A limit marked as having no schedule, and a zone with no schedule, are
// maintained with their stored parameters.
func TestScheduledRefillNoneMarkerAndBareZone(t *testing.T) {
	at := time.Date(2027, 1, 15, 15, 0, 0, 0, time.UTC)
	t0 := at.UnixMilli()
	for name, kv := range map[string][]any{
		"none marker": append([]any{"b_rpm_sched", "-"}, business...),
		"bare zone":   {"sched_tz", "Europe/Paris"},
	} {
		t.Run(name, func(t *testing.T) {
			f := scheduledFixture(t, at)
			id := bid("e1", 0)
			nw := with(bucketItem(id, t0-30_000, 0, rpm(1_000, 60_000), wcu(1_000_000, 0)), kv...)
			f.put(t, nw)
			wantStats(t, f.run(t, record(t, id, with(nw, tc("rpm"), 0), nw)), Stats{Refills: 1})
			got := f.get(t, id)
			if render(got[tk("rpm")]) != "N:51000" {
				t.Errorf("rpm tk = %s, want the unscheduled 51000", render(got[tk("rpm")]))
			}
		})
	}
}

// A schedule changed between the image and the refill is not stamped with
// the parameters of the old one.
func TestScheduledRefillPinsTheSchedule(t *testing.T) {
	at := time.Date(2027, 1, 15, 15, 0, 0, 0, time.UTC)
	t0 := at.UnixMilli()
	f := scheduledFixture(t, at)
	id := bid("e1", 0)
	nw := with(bucketItem(id, t0-30_000, 0, rpm(1_000, 60_000), wcu(1_000_000, 0)), business...)
	stored := with(nw, "sched", "h9-17w1-5s250")
	f.put(t, stored)

	st := f.run(t, record(t, id, with(nw, tc("rpm"), 0), nw))
	wantStats(t, st, Stats{RefillRace: 1})
	sameItem(t, "bucket", f.get(t, id), stored)
}
