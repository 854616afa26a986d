package maintenance

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/zae-limiter/zae-limiter-go/core/schema"
	"github.com/zae-limiter/zae-limiter-go/internal/ddbtest"
	"github.com/zae-limiter/zae-limiter-go/internal/faultproxy"
)

// hotBatch is a shard-0 record that, on a phase-1 item, asks for every kind
// of write: a refill (rpm in debt with demand, wcu low), a doubling (wcu
// below 20 %) and propagation 2 → 4 (a raise of shard 1, clones 2 and 3).
func hotBatch(entity string) (old, nw item) {
	id := bid(entity, 0)
	old = bucketItem(id, now-30_000, 2, rpm(10_000, 0), wcu(150_000, 0))
	nw = with(old, "shard_count", 4, tk("rpm"), -20_000, tc("rpm"), 30_000,
		tk(schema.WCULimit), 100_000, tc(schema.WCULimit), 50_000)
	return old, nw
}

// Every shape docs/design.md §9 abstains on issues no write at all — no refill,
// doubling, Path 1 raise or Path 2 clone — counted through the fault
// proxy, i.e. on the wire.
func TestAbstentionIssuesNoWrite(t *testing.T) {
	tbl := ddbtest.NewTable(t)
	p := faultproxy.Start(t, tbl.Endpoint)
	m := New(p.DynamoDB(), tbl.Name, Options{Clock: clockAt(now)})

	shapes := []struct {
		name string
		kv   []any
	}{
		{"item sched undecodable", []any{"sched", "0 9 * * 1-5|x2"}},
		{"item sched out of range", []any{"sched", "h25s500"}},
		{"item sched unknown version", []any{"sched", "2h9s500"}},
		{"item sched unknown zone", []any{"sched", "h9-17s500", "sched_tz", "Mars/Olympus_Mons"}},
		{"item rsched", []any{"rsched", "m0h0"}},
		{"limit sched undecodable", []any{"b_rpm_sched", "0 9 * * *|x2"}},
		{"partial limit sched undecodable", []any{"b_tpm_sched", "h9"}},
		{"limit rsched on a drip", []any{"b_rpm_rsched", "m0h0"}},
		{"limit rsched undecodable", []any{"b_rpm_rsched", "x"}},
		{"wcu rsched", []any{"b_wcu_rsched", "m0h0"}},
		{"wcu sched", []any{"b_wcu_sched", "h9-17s500"}},
		{"window ws", []any{"b_rpm_ws", now - 1_000}},
		{"window rsa", []any{"b_rpm_rsa", 3_600}},
		{"window wa", []any{"b_rpm_wa", now - 1_000}},
		{"window wtc", []any{"b_rpm_wtc", 1_000}},
		{"zero-rate limit", []any{"b_rpm_ra", 0}},
		{"limit without ra", []any{"b_rpm_ra", nil}},
		{"zero period", []any{"b_rpm_rp", 0}},
		{"negative rate", []any{"b_rpm_ra", -1}},
		{"negative capacity", []any{"b_rpm_cp", -1}},
		{"wcu zero-rate", []any{"b_wcu_ra", 0}},
		{"window on a partial limit", []any{"b_tpm_ws", now - 1_000}},
		{"quota limit", []any{"b_day_tk", 5_000, "b_day_cp", 10_000, "b_day_ra", 0, "b_day_rp", 86_400_000,
			"b_day_rsched", "0 0 * * *", "b_day_gc", 4}},
	}
	for i, sh := range shapes {
		t.Run(sh.name, func(t *testing.T) {
			entity := "abst" + string(rune('a'+i))
			old, nw := hotBatch(entity)
			old, nw = with(old, sh.kv...), with(nw, sh.kv...)
			s1 := bucketItem(bid(entity, 1), now-30_000, 2, rpm(-5_000, 0), wcu(100_000, 0))
			put(t, tbl.DB, tbl.Name, nw) // straight to the table, not through the proxy
			put(t, tbl.DB, tbl.Name, s1)
			s1new := with(s1, tc("rpm"), 40_000)
			p.ResetStats()

			st := m.Run(context.Background(), []Record{
				record(t, bid(entity, 0), old, nw),
				record(t, bid(entity, 1), with(s1, sh.kv...), with(s1new, sh.kv...)),
			})
			wantStats(t, st, Stats{Abstained: 2})
			for _, op := range []string{"UpdateItem", "PutItem", "TransactWriteItems", "GetItem"} {
				if n := p.StatsFor(op).Requests; n != 0 {
					t.Errorf("%d %s requests, want none", n, op)
				}
			}
			sameItem(t, "shard 0", get(t, tbl.DB, tbl.Name, bid(entity, 0)), nw)
			sameItem(t, "shard 1", get(t, tbl.DB, tbl.Name, bid(entity, 1)), s1)
		})
	}

	// Control: the same batch without such an attribute writes all four
	// kinds.
	t.Run("control", func(t *testing.T) {
		old, nw := hotBatch("ctl")
		s1 := bucketItem(bid("ctl", 1), now-30_000, 2, rpm(-5_000, 0), wcu(100_000, 0))
		put(t, tbl.DB, tbl.Name, nw)
		put(t, tbl.DB, tbl.Name, s1)
		p.ResetStats()
		st := m.Run(context.Background(), []Record{
			record(t, bid("ctl", 0), old, nw),
			record(t, bid("ctl", 1), s1, with(s1, tc("rpm"), 40_000)),
		})
		wantStats(t, st, Stats{Refills: 2, Doublings: 1, Raises: 1, Clones: 2})
		if n := p.StatsFor("UpdateItem").Forwarded; n != 4 {
			t.Errorf("%d UpdateItem forwarded, want 4", n)
		}
		if n := p.StatsFor("PutItem").Forwarded; n != 2 {
			t.Errorf("%d PutItem forwarded, want 2", n)
		}
	})
}

// A bucket abstains for the whole batch when any of its NewImages is
// outside phase 1, even if the last one is not; and an abstained sibling is
// neither raised nor cloned over.
func TestAbstentionBatchWide(t *testing.T) {
	rec := &recDB{}
	m := New(rec, "t", Options{Clock: clockAt(now)})
	old, nw := hotBatch("e1")
	mid := with(old, "b_rpm_ws", now-1_000)
	st := m.Run(context.Background(), []Record{record(t, bid("e1", 0), old, mid), record(t, bid("e1", 0), mid, nw)})
	wantStats(t, st, Stats{Abstained: 1})
	if rec.writes() != 0 {
		t.Errorf("%d writes", rec.writes())
	}

	// Shard 0 is phase 1 but shard 1 (raise target) and shard 2 (clone
	// target) carry windows in this batch: only shard 3 is cloned.
	rec = &recDB{}
	m = New(rec, "t", Options{Clock: clockAt(now)})
	calm := with(nw, tk(schema.WCULimit), 1_000_000, tk("rpm"), 25_000, "rf", now)
	calmOld := with(old, tk(schema.WCULimit), 1_000_000, "rf", now)
	s1 := with(bucketItem(bid("e1", 1), now, 2, rpm(0, 0), wcu(1_000_000, 0)), "b_rpm_ws", now)
	s2 := with(bucketItem(bid("e1", 2), now, 4, rpm(0, 0), wcu(1_000_000, 0)), "b_rpm_ws", now)
	st = m.Run(context.Background(), []Record{
		record(t, bid("e1", 1), s1, s1), record(t, bid("e1", 2), nil, s2),
		record(t, bid("e1", 0), calmOld, calm),
	})
	wantStats(t, st, Stats{Abstained: 2, Clones: 1})
	if len(rec.updates) != 0 || len(rec.puts) != 1 {
		t.Fatalf("%d updates, %d puts", len(rec.updates), len(rec.puts))
	}
	if got := render(rec.puts[0].Item["PK"]); got != "S:"+bid("e1", 3).PK() {
		t.Errorf("clone PK = %s", got)
	}
}

// A throttled write is counted as a failure, does not stop the rest of the
// batch and never panics; the client's retries are off so the fault is
// felt once.
func TestFaultsCountedAsFailures(t *testing.T) {
	tbl := ddbtest.NewTable(t)
	p := faultproxy.Start(t, tbl.Endpoint)
	db := p.DynamoDB(func(o *dynamodb.Options) { o.Retryer = aws.NopRetryer{} })
	m := New(db, tbl.Name, Options{Clock: clockAt(now)})
	old, nw := hotBatch("e1")
	put(t, tbl.DB, tbl.Name, nw)
	p.Add(faultproxy.Rule{Operation: "UpdateItem", Fault: faultproxy.ProvisionedThroughputExceeded(), Count: 1})
	p.Add(faultproxy.Rule{Operation: "PutItem", Fault: faultproxy.InternalServerError(), Count: 1})

	st := m.Run(context.Background(), []Record{record(t, bid("e1", 0), old, nw)})
	// The refill (first UpdateItem) and clone 2 (first PutItem) fail; the
	// doubling, the raise of the missing shard 1 (superseded) and clone 3 run.
	wantStats(t, st, Stats{Failures: 2, Doublings: 1, Superseded: 1, Clones: 1})
	if n := p.StatsFor("UpdateItem").Requests; n != 3 {
		t.Errorf("%d UpdateItem requests, want 3 (no retries)", n)
	}
	if n := p.StatsFor("UpdateItem").Forwarded; n != 2 {
		t.Errorf("%d UpdateItem forwarded, want 2", n)
	}
	got := get(t, tbl.DB, tbl.Name, bid("e1", 0))
	sameItem(t, "shard 0", got, with(nw, "shard_count", 8))
}

// Once ctx is done no write starts.
func TestContextDoneStopsWrites(t *testing.T) {
	tbl := ddbtest.NewTable(t)
	p := faultproxy.Start(t, tbl.Endpoint)
	m := New(p.DynamoDB(), tbl.Name, Options{Clock: clockAt(now)})
	old, nw := hotBatch("e1")
	put(t, tbl.DB, tbl.Name, nw)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	st := m.Run(ctx, []Record{record(t, bid("e1", 0), old, nw)})
	wantStats(t, st, Stats{Pending: 5})
	if n := p.StatsFor("UpdateItem").Requests + p.StatsFor("PutItem").Requests; n != 0 {
		t.Errorf("%d writes sent", n)
	}

	// Cancelled mid-batch: the write in flight is the last one started.
	rec := &recDB{}
	ctx, cancel = context.WithCancel(context.Background())
	rec.fail = func(string, item) error { cancel(); return nil }
	st = New(rec, "t", Options{Clock: clockAt(now)}).Run(ctx, []Record{record(t, bid("e1", 0), old, nw)})
	wantStats(t, st, Stats{Refills: 1, Pending: 4})
}

// Records that do not decode are skipped and counted; the rest of the batch
// still runs, and Run never panics on junk.
func TestCorruptRecordsSkipped(t *testing.T) {
	rec := &recDB{}
	m := New(rec, "t", Options{Clock: clockAt(now)})
	id := bid("e1", 0)
	good := bucketItem(id, now, 1, rpm(150_000, 0), wcu(1_000_000, 0)) // above ceiling: clamp
	recs := []Record{
		{ID: id, NewItem: with(good, "rf", "not a number")},
		{ID: id},
		{ID: bid("e1", -1), NewItem: good},
		{ID: id, NewItem: good, OldItem: with(good, "shard_count", 0)}, // bad old image: ignored
	}
	st := m.Run(context.Background(), recs)
	wantStats(t, st, Stats{Corrupt: 3, Refills: 1})

	nilDB := New(nil, "t", Options{})
	st = nilDB.Run(context.Background(), recs)
	if st.Failures != 1 {
		t.Errorf("nil DB: stats %+v, want one failure", st)
	}
}
