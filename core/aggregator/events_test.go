package aggregator_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/aggregator"
	"github.com/zae-limiter/zae-limiter-go/core/aggregator/maintenance"
	"github.com/zae-limiter/zae-limiter-go/core/bucket"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
	"github.com/zae-limiter/zae-limiter-go/internal/ddbtest"
	"github.com/zae-limiter/zae-limiter-go/internal/faultproxy"
)

// limState is one limit of a hand-made bucket image.
type limState struct {
	tk, tc int64
	soft   bool
}

// bucketSim writes hand-made stream records of one bucket shard: each
// record's OldImage is the previous record's NewImage, as on a real stream.
type bucketSim struct {
	ns, entity, resource string
	shard                int
	rf                   int64
	limits               map[string]limState
	old                  map[string]events.DynamoDBAttributeValue
}

func newSim(namespace, entity, res string, shard int) *bucketSim {
	return &bucketSim{ns: namespace, entity: entity, resource: res, shard: shard, rf: start.UnixMilli(), limits: map[string]limState{}}
}

func (b *bucketSim) image() map[string]events.DynamoDBAttributeValue {
	s, n := events.NewStringAttribute, func(v int64) events.DynamoDBAttributeValue {
		return events.NewNumberAttribute(strconv.FormatInt(v, 10))
	}
	img := map[string]events.DynamoDBAttributeValue{
		"PK": s(schema.BucketPK(b.ns, b.entity, b.resource, b.shard)), "SK": s(schema.SKState),
		"entity_id": s(b.entity), "resource": s(b.resource), "rf": n(b.rf), "shard_count": n(int64(b.shard + 1)),
		"b_wcu_tk": n(999000), "b_wcu_cp": n(1000000), "b_wcu_ra": n(1000000), "b_wcu_rp": n(1000), "b_wcu_tc": n(int64(len(b.limits)) * 1000),
	}
	for name, l := range b.limits {
		img["b_"+name+"_tk"] = n(l.tk)
		img["b_"+name+"_cp"] = n(100000)
		img["b_"+name+"_ra"] = n(100000)
		img["b_"+name+"_rp"] = n(60000)
		img["b_"+name+"_tc"] = n(l.tc)
		if l.soft {
			img["b_"+name+"_soft"] = n(start.UnixMilli() + 60000)
		}
	}
	return img
}

// record emits the record of the bucket's current state at seq and at (a
// zero at leaves ApproximateCreationDateTime out).
func (b *bucketSim) record(seq int, at time.Time) events.DynamoDBEventRecord {
	img := b.image()
	r := events.DynamoDBEventRecord{
		EventName: "MODIFY", EventSource: "aws:dynamodb",
		Change: events.DynamoDBStreamRecord{
			Keys:           map[string]events.DynamoDBAttributeValue{"PK": img["PK"], "SK": img["SK"]},
			NewImage:       img,
			OldImage:       b.old,
			SequenceNumber: strconv.Itoa(seq),
			StreamViewType: "NEW_AND_OLD_IMAGES",
		},
	}
	if b.old == nil {
		r.EventName = "INSERT"
	}
	if !at.IsZero() {
		r.Change.ApproximateCreationDateTime = events.SecondsEpochTime{Time: at}
	}
	b.old = img
	return r
}

// handEnv is a table and an aggregator for hand-made records, written
// straight to DynamoDB Local.
func handEnv(t *testing.T, cfg aggregator.Config, o aggregator.Options) (*ddbtest.Table, *aggregator.Aggregator) {
	t.Helper()
	tbl := ddbtest.NewTable(t, ddbtest.WithStream())
	cfg.TableName = tbl.Name
	if o.Clock == nil {
		o.Clock = func() time.Time { return start }
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	agg, err := aggregator.New(tbl.DB, cfg, o)
	if err != nil {
		t.Fatal(err)
	}
	return tbl, agg
}

func mustHandle(t *testing.T, agg *aggregator.Aggregator, recs []events.DynamoDBEventRecord) {
	t.Helper()
	if ids := handleWith(t, agg, context.Background(), recs); len(ids) > 0 {
		t.Fatalf("unexpected batch item failures %v", ids)
	}
}

func item(snaps map[string]flatItem, namespace, entity, res, windowKey string) flatItem {
	k := schema.UsageKey(namespace, entity, res, windowKey)
	return snaps[k.PK+"|"+k.SK]
}

// TestWindowFromRecordTime (docs/design.md §6): a record whose rf
// is an hour old is filed under the hour of its ApproximateCreationDateTime;
// without one, under rf's hour.
func TestWindowFromRecordTime(t *testing.T) {
	tbl, agg := handEnv(t, aggregator.Config{}, aggregator.Options{})
	b := newSim(ns, "u1", "api", 0)
	b.rf = start.Add(-time.Hour).UnixMilli() // 11:00, untouched by fast-path writes
	b.limits["rpm"] = limState{tk: 9000, tc: 1000}
	ins := b.record(100, start.Add(5*time.Minute)) // 12:05
	b.limits["rpm"] = limState{tk: 8000, tc: 3000}
	mod := b.record(101, start.Add(10*time.Minute))
	b.limits["rpm"] = limState{tk: 7000, tc: 7000}
	noTime := b.record(102, time.Time{})
	mustHandle(t, agg, []events.DynamoDBEventRecord{ins, mod, noTime})

	snaps := scanSnapshots(t, tbl)
	noon := item(snaps, ns, "u1", "api", "2026-11-29T12:00:00Z")
	eleven := item(snaps, ns, "u1", "api", "2026-11-29T11:00:00Z")
	if noon["rpm"] != "N:3" || noon["total_events"] != "N:2" || noon["seq#0"] != "S:"+pad("101") {
		t.Fatalf("12:00 item %v: want the INSERT and the MODIFY (3 tokens, 2 events)", noon)
	}
	if eleven["rpm"] != "N:4" || eleven["total_events"] != "N:1" || eleven["seq#0"] != "S:"+pad("102") {
		t.Fatalf("11:00 item %v: want the timeless record under rf's hour", eleven)
	}
	day := item(snaps, ns, "u1", "api", "2026-11-29T00:00:00Z")
	if day["rpm"] != "N:7" || day["total_events"] != "N:3" || day["window"] != "S:daily" {
		t.Fatalf("daily item %v", day)
	}
}

// TestEveryWindowHasItsOwnItem (docs/decisions.md P22): records at 23:30
// on the last day of a month, 00:10 and 01:10 on the 1st. The hour starting
// at midnight, the 1st and the month each get an item of their own with
// exactly their records' counts; the coarsest window starting at an instant
// keeps the plain key, the finer ones are suffixed; a redelivery changes
// nothing.
func TestEveryWindowHasItsOwnItem(t *testing.T) {
	for _, tc := range []struct {
		windows []aggregator.Window
		want    map[string]string // "window window_start" → "rpm key"
	}{
		{[]aggregator.Window{aggregator.Hourly, aggregator.Daily}, map[string]string{
			"hourly 2026-01-31T23:00:00Z": "1 2026-01-31T23:00:00Z",
			"daily 2026-01-31T00:00:00Z":  "1 2026-01-31T00:00:00Z",
			"hourly 2026-02-01T00:00:00Z": "2 2026-02-01T00:00:00Z#hourly",
			"daily 2026-02-01T00:00:00Z":  "6 2026-02-01T00:00:00Z",
			"hourly 2026-02-01T01:00:00Z": "4 2026-02-01T01:00:00Z",
		}},
		{[]aggregator.Window{aggregator.Monthly, aggregator.Daily, aggregator.Hourly}, map[string]string{
			"hourly 2026-01-31T23:00:00Z":  "1 2026-01-31T23:00:00Z",
			"daily 2026-01-31T00:00:00Z":   "1 2026-01-31T00:00:00Z",
			"monthly 2026-01-01T00:00:00Z": "1 2026-01-01T00:00:00Z",
			"hourly 2026-02-01T00:00:00Z":  "2 2026-02-01T00:00:00Z#hourly",
			"daily 2026-02-01T00:00:00Z":   "6 2026-02-01T00:00:00Z#daily",
			"monthly 2026-02-01T00:00:00Z": "6 2026-02-01T00:00:00Z",
			"hourly 2026-02-01T01:00:00Z":  "4 2026-02-01T01:00:00Z",
		}},
		{[]aggregator.Window{aggregator.Hourly, aggregator.Monthly}, map[string]string{
			"hourly 2026-01-31T23:00:00Z":  "1 2026-01-31T23:00:00Z",
			"monthly 2026-01-01T00:00:00Z": "1 2026-01-01T00:00:00Z",
			"hourly 2026-02-01T00:00:00Z":  "2 2026-02-01T00:00:00Z#hourly",
			"monthly 2026-02-01T00:00:00Z": "6 2026-02-01T00:00:00Z",
			"hourly 2026-02-01T01:00:00Z":  "4 2026-02-01T01:00:00Z",
		}},
	} {
		t.Run(fmt.Sprint(tc.windows), func(t *testing.T) {
			tbl, agg := handEnv(t, aggregator.Config{Windows: tc.windows}, aggregator.Options{})
			b := newSim(ns, "u1", "api", 0)
			var recs []events.DynamoDBEventRecord
			// 23:30 → 1 token, 00:10 → 2, 01:10 → 4.
			for i, step := range []struct {
				at time.Time
				tc int64
			}{
				{time.Date(2026, 1, 31, 23, 30, 0, 0, time.UTC), 1000},
				{time.Date(2026, 2, 1, 0, 10, 0, 0, time.UTC), 3000},
				{time.Date(2026, 2, 1, 1, 10, 0, 0, time.UTC), 7000},
			} {
				b.limits["rpm"] = limState{tc: step.tc}
				recs = append(recs, b.record(100+i, step.at))
			}
			read := func() map[string]string {
				got := map[string]string{}
				for _, it := range scanSnapshots(t, tbl) {
					key := strings.TrimPrefix(it["SK"], "S:"+schema.SKUsagePrefix+"api#")
					got[it["window"][2:]+" "+it["window_start"][2:]] = it["rpm"][2:] + " " + key
				}
				return got
			}
			mustHandle(t, agg, recs)
			if got := read(); !maps.Equal(got, tc.want) {
				t.Fatalf("items %v, want %v", got, tc.want)
			}
			mustHandle(t, agg, recs)
			mustHandle(t, agg, recs[1:])
			if got := read(); !maps.Equal(got, tc.want) {
				t.Fatalf("after redelivery: items %v, want %v", got, tc.want)
			}
		})
	}
}

// TestInsertCounts : a bucket created with consumption
// contributes all of it; a limit seeded by a MODIFY counts from zero; a
// limit removed from the item contributes nothing.
func TestInsertCounts(t *testing.T) {
	tbl, agg := handEnv(t, aggregator.Config{Windows: []aggregator.Window{aggregator.Hourly}}, aggregator.Options{})
	b := newSim(ns, "u1", "api", 0)
	b.limits["rpm"] = limState{tk: 5000, tc: 5000}
	ins := b.record(7, start)
	b.limits["tpm"] = limState{tk: 1000, tc: 2500} // seeded
	seeded := b.record(8, start)
	delete(b.limits, "rpm") // stale-limit removal
	b.limits["tpm"] = limState{tk: 1000, tc: 4000}
	removed := b.record(9, start)
	mustHandle(t, agg, []events.DynamoDBEventRecord{ins, seeded, removed})
	it := item(scanSnapshots(t, tbl), ns, "u1", "api", "2026-11-29T12:00:00Z")
	if it["rpm"] != "N:5" || it["tpm"] != "N:4" || it["total_events"] != "N:3" || it["b_wcu_tc"] != "" || it["wcu"] != "" {
		t.Fatalf("item %v: want rpm 5 (the INSERT), tpm 2+2, 3 events, no wcu", it)
	}
}

// TestShardsShareOneItem: two shards of a bucket write the same snapshot
// item, each under its own seq# mark; redelivering either changes nothing.
// Overdraws of soft limits are counted in {limit}#od, and limit names with
// `_ . -` work through positional aliases.
func TestShardsShareOneItem(t *testing.T) {
	tbl, agg := handEnv(t, aggregator.Config{Windows: []aggregator.Window{aggregator.Hourly}}, aggregator.Options{})
	s0, s1 := newSim(ns, "u1", "api", 0), newSim(ns, "u1", "api", 1)
	var recs []events.DynamoDBEventRecord
	seq := 95 // crosses from 2 to 3 digits: marks must compare numerically
	for i := 0; i < 6; i++ {
		for _, b := range []*bucketSim{s0, s1} {
			l := b.limits["tok.en-s_1"]
			l.tc += 1500
			l.tk -= 1500
			l.soft = true
			b.limits["tok.en-s_1"] = l
			recs = append(recs, b.record(seq, start.Add(time.Duration(i)*time.Minute)))
			seq++
		}
	}
	mustHandle(t, agg, recs)
	mustHandle(t, agg, recs[5:])
	mustHandle(t, agg, recs[:7])
	it := item(scanSnapshots(t, tbl), ns, "u1", "api", "2026-11-29T12:00:00Z")
	// Each shard: tc 0 → 9000 in 1500 steps: 9 tokens; 6 records, every one
	// an overdraw (tk < 0 after consuming on a soft limit).
	want := flatItem{"tok.en-s_1": "N:18", "tok.en-s_1#od": "N:12", "total_events": "N:12",
		"seq#0": "S:" + pad("105"), "seq#1": "S:" + pad("106")}
	for k, v := range want {
		if it[k] != v {
			t.Fatalf("%s = %q, want %q (item %v)", k, it[k], v, it)
		}
	}
}

// TestReservedLimitNamesAreLeftOut: a limit whose name collides with a
// snapshot attribute (a Python client can write one) would make the write
// fail forever; it is left out with a warning and the rest is written.
func TestReservedLimitNamesAreLeftOut(t *testing.T) {
	var logs syncBuffer
	tbl, agg := handEnv(t, aggregator.Config{Windows: []aggregator.Window{aggregator.Hourly}},
		aggregator.Options{Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	b := newSim(ns, "u1", "api", 0)
	b.limits["rpm"] = limState{tc: 2000}
	b.limits["ttl"] = limState{tc: 3000}
	b.limits["GSI2PK"] = limState{tc: 3000}
	mustHandle(t, agg, []events.DynamoDBEventRecord{b.record(1, start)})
	it := item(scanSnapshots(t, tbl), ns, "u1", "api", "2026-11-29T12:00:00Z")
	if it["rpm"] != "N:2" || it["total_events"] != "N:1" || it["ttl"] != "N:"+strconv.FormatInt(start.Unix()+90*86400, 10) {
		t.Fatalf("item %v", it)
	}
	if !strings.Contains(logs.String(), `"limits":["GSI2PK","ttl"]`) || strings.Contains(logs.String(), "u1") {
		t.Fatalf("logs: %s", logs.String())
	}
}

// TestSnapshotTotals  and random delivery schedules
// : random traffic over several buckets, shards, limits
// (sub-token and negative deltas, seeded and removed limits, soft limits in
// debt), hours and days, delivered in random contiguous batches with random
// overlapping redeliveries. Σ hourly == Σ per-record floor deltas per hour,
// daily == Σ of its hours, monthly == Σ of its days, for every counter,
// overdraw counter and total_events. The traffic crosses midnight and the
// first of a month, where window keys coincide (docs/decisions.md P22).
func TestSnapshotTotals(t *testing.T) {
	tbl, agg := handEnv(t, aggregator.Config{Windows: []aggregator.Window{aggregator.Hourly, aggregator.Daily, aggregator.Monthly}, Workers: 4}, aggregator.Options{})
	for seed := uint64(1); seed <= 4; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 42))
			namespace := fmt.Sprintf("pRoP%07d", seed)
			var sims []*bucketSim
			for _, e := range []string{"e1", "e2"} {
				for _, r := range []string{"api", "llm/gpt-4"} {
					for shard := 0; shard < 2; shard++ {
						sims = append(sims, newSim(namespace, e, r, shard))
					}
				}
			}
			names := []string{"rpm", "tok.en-s_1", "soft"}
			type key struct{ entity, res, window, limit string }
			oracle := map[key]int64{}
			at := time.Date(2026, 1, 31, 22, 0, 0, 0, time.UTC) // crosses a day and a month
			var recs []events.DynamoDBEventRecord
			seq := 90 + rng.IntN(10)
			for i := 0; i < 120; i++ {
				b := sims[rng.IntN(len(sims))]
				prev := map[string]limState{}
				for k, v := range b.limits {
					prev[k] = v
				}
				for _, name := range names {
					l, ok := b.limits[name]
					switch {
					case !ok && rng.IntN(3) > 0:
						l = limState{tk: 5000, soft: name == "soft"} // seeded
					case ok && rng.IntN(15) == 0:
						delete(b.limits, name) // stale-limit removal
						continue
					case !ok:
						continue
					}
					d := int64(rng.IntN(6500)) - 1500 // sub-token, refunds
					if rng.IntN(4) == 0 {
						d = 0
					}
					l.tc += d
					l.tk -= d
					b.limits[name] = l
				}
				at = at.Add(time.Duration(rng.IntN(25)) * time.Minute)
				b.rf = at.Add(-time.Duration(rng.IntN(3)) * time.Hour).UnixMilli()
				recAt := at
				if rng.IntN(10) == 0 {
					recAt = time.Time{} // no timestamp: filed under rf
				}
				rec := b.record(seq, recAt)
				seq += 1 + rng.IntN(3)
				recs = append(recs, rec)
				// The oracle: per-record floor deltas, straight from the
				// definition, filed under the record's instant.
				instant := recAt
				if instant.IsZero() {
					instant = time.UnixMilli(b.rf).UTC()
				}
				hour := aggregator.WindowKey(aggregator.Hourly, instant)
				for name, l := range b.limits {
					old := prev[name].tc
					tokens := bucket.FloorDiv(l.tc, 1000) - bucket.FloorDiv(old, 1000)
					if tokens != 0 {
						oracle[key{b.entity, b.resource, hour, name}] += tokens
						oracle[key{b.entity, b.resource, hour, "total_events"}]++
					}
					if l.soft && l.tc > old && l.tk < 0 {
						oracle[key{b.entity, b.resource, hour, name + "#od"}]++
					}
				}
			}
			// Random contiguous deliveries; a redelivery restarts anywhere
			// between the previous start and end (a checkpoint).
			for from := 0; from < len(recs); {
				to := min(len(recs), from+1+rng.IntN(20))
				mustHandle(t, agg, recs[from:to])
				if rng.IntN(3) == 0 {
					from += rng.IntN(to - from + 1)
				} else {
					from = to
				}
			}

			snaps := scanSnapshots(t, tbl)
			got := map[key]int64{}
			for _, it := range snaps {
				if !strings.HasPrefix(it["PK"], "S:"+namespace+"/") {
					continue
				}
				entity, res := strings.TrimPrefix(it["entity_id"], "S:"), strings.TrimPrefix(it["resource"], "S:")
				for attr, v := range it {
					if !strings.HasPrefix(v, "N:") || attr == "ttl" {
						continue
					}
					got[key{entity, res, it["window"][2:] + " " + it["window_start"][2:], attr}] = num(v)
				}
			}
			// The hours from the definition roll up into days and months.
			days, months := map[key]int64{}, map[key]int64{}
			for k, v := range oracle {
				days[key{k.entity, k.res, k.window[:10], k.limit}] += v
				months[key{k.entity, k.res, k.window[:7], k.limit}] += v
			}
			// Every stored item against the definition: hourly == Σ per-record
			// floor deltas of its hour, daily == Σ of its hours, monthly == Σ
			// of its days. An hour starting at midnight and the first of a
			// month have items of their own, under a suffixed key.
			for k, v := range got {
				w, ws, _ := strings.Cut(k.window, " ")
				var want int64
				switch w {
				case "hourly":
					want = oracle[key{k.entity, k.res, ws, k.limit}]
				case "daily":
					want = days[key{k.entity, k.res, ws[:10], k.limit}]
				case "monthly":
					want = months[key{k.entity, k.res, ws[:7], k.limit}]
				}
				if v != want {
					t.Fatalf("%s %+v = %d, want %d", w, k, v, want)
				}
			}
			// And every non-zero sum is stored in every window.
			for k, v := range oracle {
				if g := got[key{k.entity, k.res, "hourly " + k.window, k.limit}]; g != v {
					t.Fatalf("hourly %+v = %d, want %d", k, g, v)
				}
			}
			for k, v := range days {
				if g := got[key{k.entity, k.res, "daily " + k.window + "T00:00:00Z", k.limit}]; g != v {
					t.Fatalf("daily %+v = %d, want %d", k, g, v)
				}
			}
			for k, v := range months {
				if g := got[key{k.entity, k.res, "monthly " + k.window + "-01T00:00:00Z", k.limit}]; g != v {
					t.Fatalf("monthly %+v = %d, want %d", k, g, v)
				}
			}
			// Each item's key is its window's snapshot key.
			windows := []aggregator.Window{aggregator.Hourly, aggregator.Daily, aggregator.Monthly}
			for _, it := range snaps {
				if !strings.HasPrefix(it["PK"], "S:"+namespace+"/") {
					continue
				}
				at, err := time.Parse(time.RFC3339, it["window_start"][2:])
				if err != nil {
					t.Fatal(err)
				}
				w := aggregator.Window(it["window"][2:])
				want := "S:" + schema.SKUsagePrefix + it["resource"][2:] + "#" + aggregator.SnapshotKey(w, at, windows)
				if it["SK"] != want {
					t.Fatalf("%s item at %s: SK %s, want %s", w, at, it["SK"], want)
				}
			}
			suffixed := 0
			for _, it := range snaps {
				if strings.HasSuffix(it["SK"], "#hourly") || strings.HasSuffix(it["SK"], "#daily") {
					suffixed++
				}
			}
			if suffixed == 0 {
				t.Fatal("the traffic never reached a midnight or a first of the month")
			}
			if len(days) < 2 || len(months) < 2 {
				t.Fatalf("traffic too narrow: %d day sums, %d month sums", len(days), len(months))
			}
		})
	}
}

// fakeMaintainer records what it is given and answers fixed stats.
type fakeMaintainer struct {
	mu    sync.Mutex
	calls [][]maintenance.Record
	stats maintenance.Stats
}

func (m *fakeMaintainer) Run(_ context.Context, recs []maintenance.Record) maintenance.Stats {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls = append(m.calls, recs)
	return m.stats
}

// TestMaintainerAndMetrics: the maintainer gets the bucket records in
// stream order, converted; its stats reach the summary log line and the
// EMF document, which has the shape the EMF specification requires.
func TestMaintainerAndMetrics(t *testing.T) {
	var logs syncBuffer
	sk := &sink{}
	m := &fakeMaintainer{stats: maintenance.Stats{Refills: 2, Doublings: 1, Clones: 3, Failures: 1}}
	_, agg := handEnv(t, aggregator.Config{}, aggregator.Options{
		Logger: slog.New(slog.NewJSONHandler(&logs, nil)), Metrics: sk, Maintainer: m,
		Clock: func() time.Time { return start.Add(90 * time.Second) },
	})
	b := newSim(ns, "u1", "api", 0)
	b.limits["rpm"] = limState{tk: 9000, tc: 1000}
	r1 := b.record(10, start)
	b.limits["rpm"] = limState{tk: 8000, tc: 2000}
	r2 := b.record(11, start.Add(30*time.Second))
	cfgRec := events.DynamoDBEventRecord{EventName: "INSERT", Change: events.DynamoDBStreamRecord{
		Keys:           map[string]events.DynamoDBAttributeValue{"PK": events.NewStringAttribute(ns + "/RESOURCE#api"), "SK": events.NewStringAttribute("#CONFIG")},
		SequenceNumber: "12", ApproximateCreationDateTime: events.SecondsEpochTime{Time: start.Add(40 * time.Second)},
	}}
	mustHandle(t, agg, []events.DynamoDBEventRecord{r1, cfgRec, r2})

	if len(m.calls) != 1 || len(m.calls[0]) != 2 {
		t.Fatalf("maintainer calls %v", m.calls)
	}
	got := m.calls[0]
	if got[0].Seq != "10" || got[1].Seq != "11" || got[0].OldItem != nil || got[0].OldImage != nil || got[1].OldImage == nil ||
		got[0].ID != (schema.BucketID{Namespace: ns, Entity: "u1", Resource: "api", Shard: 0}) ||
		!got[1].At.Equal(start.Add(30*time.Second)) || got[1].NewImage.Limits[0].Consumed != 2000 || rawRF(t, got[1]) == nil {
		t.Fatalf("maintenance records %+v", got)
	}

	// One summary line.
	var summary map[string]any
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line is not JSON: %s", line)
		}
		if m["msg"] == "aggregator batch processed" {
			summary = m
		}
	}
	for k, v := range map[string]float64{"records": 3, "processed": 2, "snapshots_updated": 2, "refills_written": 2,
		"skipped": 1, "error_count": 1, "stream_lag_ms": 90000, "doublings": 1, "clones": 3} {
		if summary[k] != v {
			t.Errorf("summary %s = %v, want %v (%v)", k, summary[k], v, summary)
		}
	}
	if _, ok := summary["processing_time_ms"]; !ok {
		t.Error("summary without processing_time_ms")
	}

	docs := sk.all()
	if len(docs) != 1 {
		t.Fatalf("%d EMF documents, want 1", len(docs))
	}
	values := checkEMF(t, docs[0])
	want := map[string]float64{"Records": 3, "SnapshotsWritten": 2, "Refills": 2, "Doublings": 1, "Clones": 3,
		"SkippedRecords": 1, "PoisonRecords": 0, "Failures": 1, "StreamLagMs": 90000}
	for k, v := range want {
		if values[k] != v {
			t.Errorf("metric %s = %v, want %v", k, values[k], v)
		}
	}
	if len(values) != len(want) {
		t.Errorf("metrics %v, want %v", values, want)
	}
}

// checkEMF validates doc against the CloudWatch Embedded Metric Format
// specification and returns the metric values by name: a root object with
// an _aws member holding an integer Timestamp (epoch ms) and a
// CloudWatchMetrics array of directives; each directive a Namespace
// (1–255 chars), Dimensions (an array of dimension sets, each an array of
// at most 30 names that are top-level string members), and Metrics (at
// most 100, each a Name that is a top-level number member and a Unit from
// the CloudWatch unit list).
func checkEMF(t *testing.T, doc []byte) map[string]float64 {
	t.Helper()
	var root map[string]json.RawMessage
	if err := json.Unmarshal(doc, &root); err != nil {
		t.Fatalf("EMF document is not a JSON object: %v: %s", err, doc)
	}
	var meta struct {
		Timestamp         *json.Number
		CloudWatchMetrics []struct {
			Namespace  *string
			Dimensions [][]string
			Metrics    []struct{ Name, Unit *string }
		}
	}
	dec := json.NewDecoder(strings.NewReader(string(root["_aws"])))
	dec.UseNumber()
	dec.DisallowUnknownFields()
	if err := dec.Decode(&meta); err != nil {
		t.Fatalf("_aws: %v: %s", err, doc)
	}
	if meta.Timestamp == nil {
		t.Fatal("_aws.Timestamp missing")
	}
	if ts, err := meta.Timestamp.Int64(); err != nil || ts != start.Add(90*time.Second).UnixMilli() {
		t.Fatalf("_aws.Timestamp %v: want integer epoch ms of the clock", meta.Timestamp)
	}
	if len(meta.CloudWatchMetrics) != 1 {
		t.Fatalf("CloudWatchMetrics %d directives", len(meta.CloudWatchMetrics))
	}
	units := map[string]bool{"Seconds": true, "Microseconds": true, "Milliseconds": true, "Bytes": true, "Kilobytes": true,
		"Megabytes": true, "Gigabytes": true, "Terabytes": true, "Bits": true, "Kilobits": true, "Megabits": true, "Gigabits": true,
		"Terabits": true, "Percent": true, "Count": true, "Bytes/Second": true, "Kilobytes/Second": true, "Megabytes/Second": true,
		"Gigabytes/Second": true, "Terabytes/Second": true, "Bits/Second": true, "Kilobits/Second": true, "Megabits/Second": true,
		"Gigabits/Second": true, "Terabits/Second": true, "Count/Second": true, "None": true}
	d := meta.CloudWatchMetrics[0]
	if d.Namespace == nil || *d.Namespace != aggregator.MetricsNamespace {
		t.Fatalf("Namespace %v", d.Namespace)
	}
	if !slices.EqualFunc(d.Dimensions, [][]string{{"TableName"}}, slices.Equal) {
		t.Fatalf("Dimensions %v", d.Dimensions)
	}
	for _, set := range d.Dimensions {
		if len(set) > 30 {
			t.Fatal("more than 30 dimensions in a set")
		}
		for _, name := range set {
			var s string
			if err := json.Unmarshal(root[name], &s); err != nil || s == "" {
				t.Fatalf("dimension %s has no top-level string value", name)
			}
		}
	}
	if len(d.Metrics) == 0 || len(d.Metrics) > 100 {
		t.Fatalf("%d metrics", len(d.Metrics))
	}
	values := map[string]float64{}
	for _, m := range d.Metrics {
		if m.Name == nil || m.Unit == nil || !units[*m.Unit] {
			t.Fatalf("metric definition %v/%v", m.Name, m.Unit)
		}
		var v float64
		if err := json.Unmarshal(root[*m.Name], &v); err != nil {
			t.Fatalf("metric %s has no top-level number: %s", *m.Name, root[*m.Name])
		}
		values[*m.Name] = v
	}
	return values
}

// panickyMaintainer stands for a maintainer with a bug.
type panickyMaintainer struct{}

func (panickyMaintainer) Run(context.Context, []maintenance.Record) maintenance.Stats {
	panic("maintenance bug")
}

// TestMaintainerPanicIsNotTheBatchs: maintenance is best effort; its panic
// is logged and counted, the snapshots stand, and nothing is reported.
func TestMaintainerPanicIsNotTheBatchs(t *testing.T) {
	var logs syncBuffer
	tbl, agg := handEnv(t, aggregator.Config{Windows: []aggregator.Window{aggregator.Hourly}},
		aggregator.Options{Maintainer: panickyMaintainer{}, Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	b := newSim(ns, "u1", "api", 0)
	b.limits["rpm"] = limState{tc: 2000}
	mustHandle(t, agg, []events.DynamoDBEventRecord{b.record(1, start)})
	if it := item(scanSnapshots(t, tbl), ns, "u1", "api", "2026-11-29T12:00:00Z"); it["rpm"] != "N:2" {
		t.Fatalf("item %v", it)
	}
	if !strings.Contains(logs.String(), "panic in bucket maintenance") || !strings.Contains(logs.String(), `"error_count":1`) {
		t.Fatalf("logs: %s", logs.String())
	}
}

// TestFailedRunBlocksLaterRunsOfItsItem: one bucket shard maps records to
// hour 12, hour 13, then hour 12 again (a record without a timestamp, filed
// under rf): two runs of the 12:00 item. When the first fails, the second
// must not be applied — its mark would cover the failed record, and the
// redelivery would skip it. Reported: the failed run's first record; after
// the redelivery every item is exact.
func TestFailedRunBlocksLaterRunsOfItsItem(t *testing.T) {
	tbl := ddbtest.NewTable(t, ddbtest.WithStream())
	proxy := faultproxy.Start(t, tbl.Endpoint)
	agg, err := aggregator.New(proxy.DynamoDB(func(o *dynamodb.Options) { o.RetryMaxAttempts = 1 }),
		aggregator.Config{TableName: tbl.Name, Workers: 1},
		aggregator.Options{Clock: func() time.Time { return start }, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	b := newSim(ns, "u1", "api", 0)
	var recs []events.DynamoDBEventRecord
	for i, step := range []struct {
		at time.Time
		rf time.Time
	}{
		{start.Add(5 * time.Minute), start},                   // 12:05 → 1 token
		{start.Add(65 * time.Minute), start},                  // 13:05 → 2 tokens
		{time.Time{}, start.Add(10 * time.Minute)},            // rf 12:10 → 4 tokens
		{start.Add(70 * time.Minute), start.Add(time.Minute)}, // 13:10 → 8 tokens
	} {
		b.rf = step.rf.UnixMilli()
		b.limits["rpm"] = limState{tc: int64(1<<(i+1)-1) * 1000}
		recs = append(recs, b.record(200+i, step.at))
	}
	// The first run of the 12:00 item: its key and its first record.
	first12 := func(_ string, body []byte) bool {
		return strings.Contains(string(body), "#USAGE#api#2026-11-29T12:00:00Z") && strings.Contains(string(body), pad("200"))
	}
	proxy.Add(faultproxy.Rule{Operation: "UpdateItem", Fault: faultproxy.Throttling(), Count: 1, Match: first12})
	reported := handleWith(t, agg, context.Background(), recs)
	if len(reported) != 1 || reported[0] != "200" {
		t.Fatalf("reported %v, want [200]", reported)
	}
	if it := item(scanSnapshots(t, tbl), ns, "u1", "api", "2026-11-29T12:00:00Z"); it != nil {
		t.Fatalf("the 12:00 item was written after its first run failed: %v", it)
	}
	mustHandle(t, agg, recs)
	snaps := scanSnapshots(t, tbl)
	for wk, want := range map[string]string{"2026-11-29T12:00:00Z": "N:5", "2026-11-29T13:00:00Z": "N:10", "2026-11-29T00:00:00Z": "N:15"} {
		if it := item(snaps, ns, "u1", "api", wk); it["rpm"] != want {
			t.Fatalf("%s: rpm %q, want %q (%v)", wk, it["rpm"], want, it)
		}
	}
}

// rawRF is the rf attribute of the raw new image a maintenance record
// builds on demand.
func rawRF(t *testing.T, r maintenance.Record) types.AttributeValue {
	t.Helper()
	if r.RawNew == nil {
		t.Fatal("no RawNew")
	}
	item, err := r.RawNew()
	if err != nil {
		t.Fatal(err)
	}
	return item["rf"]
}
