package maintenance

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/schema"
)

// A refill lands: rf moves to now, the demanded limit gets its drip, every
// other limit that had credit gets it too (rf is shared), wcu at its ceiling
// is left out of the ADD, and nothing else on the item changes.
func TestRefillLandsAndMovesRF(t *testing.T) {
	f := newFixture(t)
	id := bid("e1", 0)
	rf := now - 30_000
	tpm := lim{"tpm", 0, 1_000_000, 1_000_000, 60_000, 7_000}
	// The record: 60 rpm tokens consumed (tc 0 → 60 000), tpm untouched.
	nw := with(bucketItem(id, rf, 0, rpm(1_000, 60_000), tpm, wcu(1_000_000, 60_000)),
		"cascade", true, "parent_id", "p1", "pgen", 4, "bypass", now-1, "b_rpm_soft", now+60_000,
		"ttl", now/1000+3600, "x_future", "kept")
	old := with(nw, tc("rpm"), 0, tk("rpm"), 61_000, tc(schema.WCULimit), 0)
	f.put(t, nw)

	st := f.run(t, record(t, id, old, nw))
	wantStats(t, st, Stats{Refills: 1})
	// rpm: 1 000 + 30 s × 100 000 / 60 s = 51 000 < demand 60 000 ⇒ write.
	// tpm: 0 + 30 s × 1 000 000 / 60 s = 500 000, credited with the write.
	// vu: rpm is soft (a live stamp); tpm's 500 000 short refill in 30 s.
	want := with(nw, schema.AttrRF, now, tk("rpm"), 51_000, tk("tpm"), 500_000, "vu", now+30_000)
	sameItem(t, "bucket", f.get(t, id), want)

	in := f.rec.updates[0]
	if got := aws.ToString(in.UpdateExpression); got != "SET #rf = :rf, #vu = :vu ADD #t0 :d0, #t1 :d1" {
		t.Errorf("update = %q", got)
	}
	if got := aws.ToString(in.ConditionExpression); got != "#rf = :erf AND attribute_not_exists(#vu)" {
		t.Errorf("condition = %q", got)
	}
}

// rf never moves backwards: an image whose rf is ahead of the aggregator's
// clock keeps its rf (here a clamp is written, so a write happens).
func TestRefillKeepsRFAheadOfNow(t *testing.T) {
	f := newFixture(t)
	id := bid("e1", 0)
	rf := now + 5_000
	nw := bucketItem(id, rf, 0, rpm(150_000, 0), wcu(1_000_000, 0)) // tk above cp 100 000
	f.put(t, nw)

	st := f.run(t, record(t, id, nw, nw))
	wantStats(t, st, Stats{Refills: 1})
	// At its ceiling: full at the refill's rf.
	sameItem(t, "bucket", f.get(t, id), with(nw, tk("rpm"), 100_000, "vu", rf))
}

// A refill computed from an image whose rf a client has since moved writes
// nothing .
func TestRefillRaceWithClientWrite(t *testing.T) {
	f := newFixture(t)
	id := bid("e1", 0)
	nw := bucketItem(id, now-30_000, 0, rpm(1_000, 60_000), wcu(1_000_000, 0))
	old := with(nw, tc("rpm"), 0)
	f.put(t, nw)
	// A client slow pass materialises in between: rf moves, tk changes.
	if _, err := f.tbl.DB.UpdateItem(context.Background(), &dynamodb.UpdateItemInput{
		TableName:                 aws.String(f.tbl.Name),
		Key:                       id.Key().AttributeValues(),
		UpdateExpression:          aws.String("SET #rf = :rf ADD #t :d"),
		ExpressionAttributeNames:  map[string]string{"#rf": "rf", "#t": tk("rpm")},
		ExpressionAttributeValues: map[string]types.AttributeValue{":rf": nv(now - 1_000), ":d": nv(40_000)},
	}); err != nil {
		t.Fatal(err)
	}
	after := f.get(t, id)

	st := f.run(t, record(t, id, old, nw))
	wantStats(t, st, Stats{RefillRace: 1})
	sameItem(t, "bucket", f.get(t, id), after)
}

// The vu pin: a param sync between the image and the write (SET vu = 0,
// rf untouched) makes the refill skip, whether the image carried vu or not.
func TestRefillVUPin(t *testing.T) {
	for _, c := range []struct {
		name    string
		imageVU any // nil: no vu on the image
	}{
		{"image without vu", nil},
		{"image with vu", now + 3_600_000},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			id := bid("e1", 0)
			nw := with(bucketItem(id, now-30_000, 0, rpm(1_000, 60_000), wcu(1_000_000, 0)), "vu", c.imageVU)
			old := with(nw, tc("rpm"), 0)
			f.put(t, nw)
			// Param sync: cp lowered, vu = 0, rf untouched.
			synced := with(nw, "vu", 0, schema.BucketAttr("rpm", schema.LimitCapacity), 50_000)
			f.put(t, synced)

			st := f.run(t, record(t, id, old, nw))
			wantStats(t, st, Stats{RefillRace: 1})
			sameItem(t, "bucket", f.get(t, id), synced)
		})
	}
	// Control: the same image with an unchanged vu lands.
	t.Run("vu unchanged", func(t *testing.T) {
		f := newFixture(t)
		id := bid("e1", 0)
		nw := with(bucketItem(id, now-30_000, 0, rpm(1_000, 60_000), wcu(1_000_000, 0)), "vu", now+3_600_000)
		f.put(t, nw)
		st := f.run(t, record(t, id, with(nw, tc("rpm"), 0), nw))
		wantStats(t, st, Stats{Refills: 1})
		// 49 000 short at 100 000 a minute: full in 29.4 s.
		sameItem(t, "bucket", f.get(t, id), with(nw, "rf", now, tk("rpm"), 51_000, "vu", now+29_400))
		if got := aws.ToString(f.rec.updates[0].ConditionExpression); got != "#rf = :erf AND #vu = :evu" {
			t.Errorf("condition = %q", got)
		}
	})
}

// A balance above a lowered ceiling is trimmed whatever the demand
// : here the ceiling fell by a doubling (C // 2) and the batch
// shows no consumption at all.
func TestNegativeClampAlwaysWritten(t *testing.T) {
	for _, c := range []struct {
		name   string
		demand int64
	}{{"no demand", 0}, {"heavy demand", 90_000}, {"release", -20_000}} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			id := bid("e1", 1)
			nw := bucketItem(id, now-1, 2, rpm(80_000, 100_000), wcu(1_000_000, 0))
			old := with(nw, tc("rpm"), 100_000-c.demand)
			f.put(t, nw)
			st := f.run(t, record(t, id, old, nw))
			wantStats(t, st, Stats{Refills: 1})
			// Ceiling 100 000 // 2 = 50 000; one ms of drip at 50 000/min is 0.
			sameItem(t, "bucket", f.get(t, id), with(nw, "rf", now, tk("rpm"), 50_000, "vu", now))
		})
	}
}

// The demand threshold: a positive delta is written only when the stored
// balance (what the fast path tests) is below the batch's consumption
// (docs/decisions.md P17). Stored 1 000, refilled 51 000.
func TestRefillDemandThreshold(t *testing.T) {
	for _, c := range []struct {
		name   string
		demand int64
		write  bool
	}{
		{"no demand", 0, false},
		{"demand below the stored balance", 999, false},
		{"demand equal to the stored balance", 1_000, false},
		{"demand above the stored balance", 1_001, true},
		{"demand above the refilled balance", 51_001, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			id := bid("e1", 0)
			nw := bucketItem(id, now-30_000, 0, rpm(1_000, 100_000), wcu(1_000_000, 0))
			f.put(t, nw)
			st := f.run(t, record(t, id, with(nw, tc("rpm"), 100_000-c.demand), nw))
			if c.write {
				wantStats(t, st, Stats{Refills: 1})
				sameItem(t, "bucket", f.get(t, id), with(nw, "rf", now, tk("rpm"), 51_000, "vu", now+29_400))
				return
			}
			wantStats(t, st, Stats{})
			if n := f.rec.writes(); n != 0 {
				t.Errorf("%d writes, want none", n)
			}
			sameItem(t, "bucket", f.get(t, id), nw)
		})
	}
}

// Demand is the sum of the batch's tc deltas per bucket, and the refill is
// computed from the last image.
func TestRefillAggregatesBatch(t *testing.T) {
	f := newFixture(t)
	id := bid("e1", 0)
	i0 := bucketItem(id, now-30_000, 0, rpm(71_000, 0), wcu(1_000_000, 0))
	i1 := with(i0, tk("rpm"), 51_000, tc("rpm"), 20_000)
	i2 := with(i1, tk("rpm"), 41_000, tc("rpm"), 30_000)
	f.put(t, i2)
	// Demand 20 000 + 10 000 = 30 000 against the last image's stored
	// 41 000 ⇒ no write. A third record takes 25 000 more: demand 55 000
	// against a stored 16 000 ⇒ write (refilled from the last image: 16 000
	// + 50 000 = 66 000).
	r1, r2 := record(t, id, i0, i1), record(t, id, i1, i2)
	if st := f.run(t, r1, r2); st != (Stats{}) {
		t.Fatalf("stats = %+v, want none", st)
	}
	i3 := with(i2, tk("rpm"), 16_000, tc("rpm"), 55_000)
	f.put(t, i3)
	st := f.run(t, r1, r2, record(t, id, i2, i3))
	wantStats(t, st, Stats{Refills: 1})
	// 34 000 short: full in 20.4 s.
	sameItem(t, "bucket", f.get(t, id), with(i3, "rf", now, tk("rpm"), 66_000, "vu", now+20_400))
}

// wcu is refilled on its stored balance: when b_wcu_tk less the batch's wcu
// consumption is below half of cp.
func TestRefillWCU(t *testing.T) {
	for _, c := range []struct {
		name       string
		tk, demand int64
		write      bool
	}{
		{"full", 1_000_000, 0, false},
		{"above half", 600_000, 0, false},
		{"above half less demand", 600_000, 100_000, false},
		{"below half after demand", 600_000, 100_001, true},
		{"below half", 400_000, 0, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			id := bid("e1", 1)
			nw := bucketItem(id, now-300, 2, rpm(50_000, 0), wcu(c.tk, 500_000))
			f.put(t, nw)
			st := f.run(t, record(t, id, with(nw, tc(schema.WCULimit), 500_000-c.demand), nw))
			if !c.write {
				wantStats(t, st, Stats{})
				sameItem(t, "bucket", f.get(t, id), nw)
				return
			}
			wantStats(t, st, Stats{Refills: 1})
			// 300 ms of wcu drip is 300 000 millitokens.
			// rpm is at its ceiling (50 000 of 2 shards): vu = rf.
			sameItem(t, "bucket", f.get(t, id), with(nw, "rf", now, tk(schema.WCULimit), c.tk+300_000, "vu", now))
		})
	}
}

// No rf on the image: no refill (nothing to lock on).
func TestRefillNeedsRF(t *testing.T) {
	f := newFixture(t)
	id := bid("e1", 0)
	nw := with(bucketItem(id, 0, 0, rpm(150_000, 0), wcu(1_000_000, 0)), "rf", nil)
	f.put(t, nw)
	if st := f.run(t, record(t, id, nw, nw)); st != (Stats{}) {
		t.Errorf("stats = %+v", st)
	}
	if n := f.rec.writes(); n != 0 {
		t.Errorf("%d writes", n)
	}
}
