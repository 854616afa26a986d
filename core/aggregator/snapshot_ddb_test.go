package aggregator_test

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/zae-limiter/zae-limiter-go/core/aggregator"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
	"github.com/zae-limiter/zae-limiter-go/internal/faultproxy"
)

// TestSnapshotsFromRealTraffic: acquires on the fast and the slow path
// produce INSERT and MODIFY records on the table's real stream; delivered
// through streampoll in batches of 7 they give snapshot items exact in
// every attribute: per-limit counters, total_events, window keys, ttl, GSI
// keys and the seq# mark (docs/design.md §6: the INSERTs count).
func TestSnapshotsFromRealTraffic(t *testing.T) {
	e := newEnv(t, allWindows, aggregator.Options{})
	tr := e.realTraffic(12, 8)
	recs := e.drain()

	kinds := map[string][]string{}
	for _, r := range recs {
		if isBucket(r) {
			kinds[entityOf(r)] = append(kinds[entityOf(r)], r.EventName)
		}
	}
	for _, entity := range []string{"alice", "bob"} {
		k := kinds[entity]
		if len(k) < 2 || k[0] != "INSERT" || slices.ContainsFunc(k[1:], func(n string) bool { return n != "MODIFY" }) {
			t.Fatalf("%s's records %v: want the slow-path create's INSERT, then MODIFYs", entity, k)
		}
	}
	want := e.expected(recs, tr, allWindows.Windows, e.clk.Now())
	got := e.snapshots()
	equalSnapshots(t, "single delivery", got, want)

	// The totals, whatever hour the wall clock put the records in.
	sum := map[string]int64{}
	for _, it := range got {
		if it["window"] == "S:monthly" {
			sum[it["entity_id"]+" rpm"] += num(it["rpm"])
			sum[it["entity_id"]+" tpm"] += num(it["tpm"])
			sum[it["entity_id"]+" events"] += num(it["total_events"])
		}
	}
	wantSum := map[string]int64{
		"S:alice rpm": 12, "S:alice tpm": 7800, "S:alice events": 24,
		"S:bob rpm": 8, "S:bob tpm": 400, "S:bob events": 16,
	}
	if fmt.Sprint(sum) != fmt.Sprint(wantSum) {
		t.Fatalf("monthly totals %v, want %v", sum, wantSum)
	}

	// The same records at fixed instants: one every 3 minutes from 23:30
	// on the last day of a month, so they span that day, hour 00 and hour
	// 01 of the 1st. Every window of every instant has its own exact item.
	e.reset()
	first := time.Date(2026, 11, 30, 23, 30, 0, 0, time.UTC)
	fixed := restamp(recs, func(i int) time.Time { return first.Add(time.Duration(i) * 3 * time.Minute) })
	e.mustHandle(fixed)
	got = e.snapshots()
	equalSnapshots(t, "records across midnight on the 1st", got, e.expected(fixed, tr, allWindows.Windows, e.clk.Now()))
	for _, sk := range []string{"2026-12-01T00:00:00Z#hourly", "2026-12-01T00:00:00Z#daily", "2026-12-01T00:00:00Z", "2026-11-30T23:00:00Z"} {
		if k := schema.UsageKey(ns, "alice", resource, sk); got[k.PK+"|"+k.SK] == nil {
			t.Errorf("no item %s", k.SK)
		}
	}
	e.mustHandle(fixed)
	equalSnapshots(t, "redelivered", e.snapshots(), got)
}

// TestRedeliveryLeavesSnapshotsUnchanged : after one
// delivery, the whole batch again, every prefix and every suffix change
// nothing; from nothing, a split at every point delivered in order, a
// recursive bisection, and overlapping redeliveries give the single
// delivery's snapshots exactly.
func TestRedeliveryLeavesSnapshotsUnchanged(t *testing.T) {
	for _, direct := range []bool{false, true} {
		t.Run(clientName(direct), func(t *testing.T) { testRedeliveryLeavesSnapshotsUnchanged(t, direct) })
	}
}

// clientName names the aggregator's client in a subtest.
func clientName(direct bool) string {
	if direct {
		return "condwrite"
	}
	return "sdk"
}

func testRedeliveryLeavesSnapshotsUnchanged(t *testing.T, direct bool) {
	e := newEnvOver(t, aggregator.Config{}, aggregator.Options{}, direct)
	tr := e.realTraffic(10, 6)
	all := e.drain()
	ref := e.snapshots()
	equalSnapshots(t, "single delivery", ref, e.expected(all, tr, []aggregator.Window{aggregator.Hourly, aggregator.Daily}, e.clk.Now()))
	n := len(all)

	e.mustHandle(all)
	equalSnapshots(t, "whole batch again", e.snapshots(), ref)
	for k := 0; k <= n; k++ {
		e.mustHandle(all[:k])
		equalSnapshots(t, fmt.Sprintf("prefix of %d", k), e.snapshots(), ref)
		e.mustHandle(all[k:])
		equalSnapshots(t, fmt.Sprintf("suffix from %d", k), e.snapshots(), ref)
	}

	for k := 1; k < n; k++ {
		e.reset()
		e.mustHandle(all[:k])
		e.mustHandle(all[k:])
		equalSnapshots(t, fmt.Sprintf("split at %d", k), e.snapshots(), ref)
	}

	e.reset()
	var bisect func(recs []events.DynamoDBEventRecord)
	bisect = func(recs []events.DynamoDBEventRecord) {
		if len(recs) <= 2 {
			e.mustHandle(recs)
			return
		}
		bisect(recs[:len(recs)/2])
		bisect(recs[len(recs)/2:])
	}
	bisect(all)
	equalSnapshots(t, "recursive bisection", e.snapshots(), ref)

	for k := 2; k < n; k += 3 {
		e.reset()
		e.mustHandle(all[:k])
		e.mustHandle(all[k/2:]) // a partial failure checkpointed at k/2
		e.mustHandle(all[k/3:]) // and an older redelivery still
		equalSnapshots(t, fmt.Sprintf("overlap at %d", k), e.snapshots(), ref)
	}
}

// TestCrashAfterSomeWrites: the k-th snapshot UpdateItem of a delivery
// fails (not applied), fails after it applied (a lost acknowledgement), or
// the invocation dies there (every later write fails); the report and a
// redelivery from it, or of the whole batch, or of its bisected halves,
// leave exactly the single delivery's snapshots.
func TestCrashAfterSomeWrites(t *testing.T) {
	for _, direct := range []bool{false, true} {
		t.Run(clientName(direct), func(t *testing.T) { testCrashAfterSomeWrites(t, direct) })
	}
}

// testCrashAfterSomeWrites is TestCrashAfterSomeWrites over the SDK client
// or, with direct, over condwrite: there a fault that fires once is
// answered by the resend, so each fires twice: on the write's direct send
// and on its resend, the next UpdateItem when one write is in flight at a
// time (Workers 1).
func testCrashAfterSomeWrites(t *testing.T, direct bool) {
	cfg := aggregator.Config{}
	if direct {
		cfg.Workers = 1
	}
	e := newEnvOver(t, cfg, aggregator.Options{}, direct)
	tr := e.realTraffic(6, 4)
	all := e.capture()
	e.proxy.ResetStats()
	e.mustHandle(all)
	ref := e.snapshots()
	equalSnapshots(t, "single delivery", ref, e.expected(all, tr, []aggregator.Window{aggregator.Hourly, aggregator.Daily}, e.clk.Now()))
	writes := updateItems(e.proxy)
	if writes < 4 {
		t.Fatalf("a single delivery made %d UpdateItems, want at least 4 (2 entities × 2 windows)", writes)
	}
	type mode struct {
		name  string
		fault faultproxy.Fault
		count int
		redo  func(reported []string)
	}
	fromReported := func(reported []string) {
		if len(reported) != 1 {
			t.Fatalf("reported %v, want exactly one record", reported)
		}
		e.mustHandle(all[indexOf(t, all, reported[0]):])
	}
	modes := []mode{
		{"fails", faultproxy.InternalServerError(), 1, fromReported},
		{"lost ack", faultproxy.AfterForward(faultproxy.InternalServerError()), 1, fromReported},
		{"crash, whole batch again", faultproxy.InternalServerError(), 0, func([]string) { e.mustHandle(all) }},
		{"crash, bisected", faultproxy.AfterForward(faultproxy.ServiceUnavailable()), 0, func([]string) {
			e.mustHandle(all[:len(all)/2])
			e.mustHandle(all[len(all)/2:])
		}},
	}
	for _, m := range modes {
		for k := 1; k <= writes; k++ {
			e.reset()
			count := m.count
			if direct {
				count *= 2
			}
			id := e.proxy.Add(faultproxy.Rule{Operation: "UpdateItem", Fault: m.fault, After: k - 1, Count: count})
			reported := e.handle(all)
			e.proxy.Remove(id)
			if len(reported) != 1 {
				t.Fatalf("%s at write %d: reported %v, want one record", m.name, k, reported)
			}
			m.redo(reported)
			equalSnapshots(t, fmt.Sprintf("%s at write %d", m.name, k), e.snapshots(), ref)
		}
	}
}

// TestFailedWriteReportsItsRunsFirstRecord : a throttled or
// failed snapshot write reports the first record of its run and nothing
// else; every other item is written; retrying from the report gives exact
// snapshots. With the client's retries off, every fault reaches the handler.
func TestFailedWriteReportsItsRunsFirstRecord(t *testing.T) {
	faults := []struct {
		name  string
		fault faultproxy.Fault
	}{
		{"Throttling", faultproxy.Throttling()},
		{"ProvisionedThroughputExceeded", faultproxy.ProvisionedThroughputExceeded()},
		{"RequestLimitExceeded", faultproxy.RequestLimitExceeded()},
		{"InternalServerError", faultproxy.InternalServerError()},
		{"ServiceUnavailable", faultproxy.ServiceUnavailable()},
	}
	for _, f := range faults {
		t.Run(f.name, func(t *testing.T) {
			e := newEnv(t, aggregator.Config{Workers: 1}, aggregator.Options{})
			tr := e.realTraffic(6, 4)
			all := e.capture()
			want := e.expected(all, tr, []aggregator.Window{aggregator.Hourly, aggregator.Daily}, e.clk.Now())
			firstBob := ""
			for _, r := range all {
				if isBucket(r) && entityOf(r) == "bob" {
					firstBob = r.Change.SequenceNumber
					break
				}
			}
			bobDaily := func(_ string, body []byte) bool {
				return bytes.Contains(body, []byte("ENTITY#bob")) && bytes.Contains(body, []byte(`{"S":"daily"}`))
			}
			e.proxy.Add(faultproxy.Rule{Operation: "UpdateItem", Fault: f.fault, Count: 1, Match: bobDaily})
			reported := e.handle(all)
			if len(reported) != 1 || reported[0] != firstBob {
				t.Fatalf("reported %v, want [%s] (bob's first record, the first of the failed run)", reported, firstBob)
			}
			got := e.snapshots()
			for k, it := range want {
				if it["window"] == "S:daily" && it["entity_id"] == "S:bob" {
					if _, ok := got[k]; ok {
						t.Fatalf("the failed item %s exists", k)
					}
					continue
				}
				if d := diffSnapshots(map[string]flatItem{k: got[k]}, map[string]flatItem{k: it}); d != "" {
					t.Fatalf("an item beside the failed one is not written:\n%s", d)
				}
			}
			e.mustHandle(all[indexOf(t, all, firstBob):])
			equalSnapshots(t, "retried from the report", e.snapshots(), want)
			if !strings.Contains(e.logs.String(), `"error":"`+f.name) {
				t.Errorf("no warning names the error code %s:\n%s", f.name, e.logs.String())
			}
		})
	}
}

// TestOnlyTheEarliestFailureIsReported : two failed runs
// report one record, the lowest; nothing before it is reported.
func TestOnlyTheEarliestFailureIsReported(t *testing.T) {
	e := newEnv(t, aggregator.Config{}, aggregator.Options{})
	tr := e.realTraffic(5, 5)
	all := e.capture()
	want := e.expected(all, tr, []aggregator.Window{aggregator.Hourly, aggregator.Daily}, e.clk.Now())
	first := ""
	for _, r := range all {
		if isBucket(r) {
			first = r.Change.SequenceNumber
			break
		}
	}
	e.proxy.Add(faultproxy.Rule{Operation: "UpdateItem", Fault: faultproxy.Throttling(), Count: 2,
		Match: func(_ string, body []byte) bool { return bytes.Contains(body, []byte(`{"S":"daily"}`)) }})
	reported := e.handle(all)
	if len(reported) != 1 || reported[0] != first {
		t.Fatalf("reported %v, want [%s]", reported, first)
	}
	e.mustHandle(all[indexOf(t, all, first):])
	equalSnapshots(t, "retried", e.snapshots(), want)
}

// TestPollerRedeliversAfterFailure: end to end through streampoll, a
// throttled write is reported, the poller redelivers from it, and the
// snapshots come out exact.
func TestPollerRedeliversAfterFailure(t *testing.T) {
	e := newEnv(t, aggregator.Config{}, aggregator.Options{})
	tr := e.realTraffic(9, 9)
	rule := e.proxy.Add(faultproxy.Rule{Operation: "UpdateItem", Fault: faultproxy.Throttling(), After: 2, Count: 2})
	recs := e.drain()
	if e.proxy.Fired(rule) != 2 {
		t.Fatalf("the fault fired %d times, want 2", e.proxy.Fired(rule))
	}
	if st := e.poller.Stats(); st.Failures < 1 || st.Redeliveries != st.Failures {
		t.Fatalf("poller stats %+v: want failed invocations, each redelivered", st)
	}
	equalSnapshots(t, "after redelivery", e.snapshots(), e.expected(recs, tr, []aggregator.Window{aggregator.Hourly, aggregator.Daily}, e.clk.Now()))
}

// TestCoalescing pins the number of snapshot UpdateItems: one per window
// per snapshot item per bucket shard per batch.
func TestCoalescing(t *testing.T) {
	e := newEnv(t, allWindows, aggregator.Options{})
	tr := e.realTraffic(20, 20)
	recs := e.capture()
	var alice, both []events.DynamoDBEventRecord
	for _, r := range recs {
		if isBucket(r) {
			both = append(both, r)
			if entityOf(r) == "alice" {
				alice = append(alice, r)
			}
		}
	}
	if len(alice) != 20 || len(both) != 40 {
		t.Fatalf("%d records of alice, %d in all; want 20, 40", len(alice), len(both))
	}
	at := time.Date(2026, 11, 29, 12, 10, 0, 0, time.UTC)
	count := func(what string, recs []events.DynamoDBEventRecord, want int) {
		t.Helper()
		e.proxy.ResetStats()
		e.mustHandle(recs)
		if got := updateItems(e.proxy); got != want {
			t.Fatalf("%s: %d UpdateItems, want %d", what, got, want)
		}
	}

	// 20 records of one bucket in one hour: 1 write per window.
	count("20 records, one bucket, one hour", restamp(alice, func(int) time.Time { return at }), 3)
	got := e.snapshots()
	if len(got) != 3 {
		t.Fatalf("%d snapshot items, want 3", len(got))
	}
	for _, it := range got {
		if it["rpm"] != "N:20" || it["tpm"] != "N:21000" || it["total_events"] != "N:40" || it["seq#0"] != "S:"+pad(alice[19].Change.SequenceNumber) {
			t.Fatalf("coalesced item %v", it)
		}
	}
	// The same batch again: each run's condition fails, the returned mark
	// covers every record, no per-record write is needed.
	count("the same batch redelivered", restamp(alice, func(int) time.Time { return at }), 3)
	if d := diffSnapshots(e.snapshots(), got); d != "" {
		t.Fatalf("redelivery changed the snapshots:\n%s", d)
	}

	// Half an hour later: 10 records at 12:50, 10 at 13:05 → 2 hourly, 1
	// daily, 1 monthly.
	e.reset()
	count("20 records across an hour boundary", restamp(alice, func(i int) time.Time {
		if i < 10 {
			return at.Add(40 * time.Minute)
		}
		return at.Add(55 * time.Minute)
	}), 4)

	// Two buckets, their records interleaved, one hour: interleaving does
	// not break a bucket shard's runs → 2 × 3.
	e.reset()
	count("40 interleaved records of two buckets", restamp(both, func(int) time.Time { return at }), 6)
	want := e.expected(restamp(both, func(int) time.Time { return at }), tr, allWindows.Windows, e.clk.Now())
	equalSnapshots(t, "interleaved", e.snapshots(), want)

	// A record of another day between two of the same day breaks the
	// daily run: records 0–9 on day 1, 10 on day 2, 11–19 on day 1 →
	// hourly 3 (12:10, day-2 hour, 12:10 again), daily 3, monthly 1.
	e.reset()
	count("a run broken by another window", restamp(alice, func(i int) time.Time {
		if i == 10 {
			return at.Add(24 * time.Hour)
		}
		return at
	}), 7)
}

// TestDeadline: with less than DeadlineMargin left no write starts and the
// earliest record is reported; a deadline reached mid-batch stops the
// remaining writes, and a redelivery completes the snapshots exactly.
func TestDeadline(t *testing.T) {
	e := newEnv(t, aggregator.Config{Workers: 1, DeadlineMargin: time.Second}, aggregator.Options{})
	tr := e.realTraffic(4, 4)
	all := e.capture()
	want := e.expected(all, tr, []aggregator.Window{aggregator.Hourly, aggregator.Daily}, e.clk.Now())
	first := ""
	for _, r := range all {
		if isBucket(r) {
			first = r.Change.SequenceNumber
			break
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	reported := handleWith(t, e.agg, ctx, all)
	cancel()
	if updateItems(e.proxy) != 0 {
		t.Fatalf("%d writes started with less than the margin left", updateItems(e.proxy))
	}
	if len(reported) != 1 || reported[0] != first {
		t.Fatalf("reported %v, want [%s]", reported, first)
	}

	// The first write takes 1.2 s of a 2 s budget: 0.8 s < 1 s margin left.
	e.proxy.Add(faultproxy.Rule{Operation: "UpdateItem", Fault: faultproxy.Delay(1200 * time.Millisecond), Count: 1})
	ctx, cancel = context.WithTimeout(context.Background(), 2*time.Second)
	reported = handleWith(t, e.agg, ctx, all)
	cancel()
	if got := updateItems(e.proxy); got != 1 {
		t.Fatalf("%d writes, want only the first", got)
	}
	if len(reported) != 1 || reported[0] != first {
		t.Fatalf("reported %v, want [%s]", reported, first)
	}
	if !strings.Contains(e.logs.String(), "deadline near") {
		t.Error("no deadline warning")
	}
	e.mustHandle(all[indexOf(t, all, reported[0]):])
	equalSnapshots(t, "after the deadline", e.snapshots(), want)
}

// TestPoisonRecords: unusable bucket records are logged with their index,
// skipped and never reported; non-bucket records are skipped silently; the
// rest of the batch is processed. Warnings never name an entity.
func TestPoisonRecords(t *testing.T) {
	e := newEnv(t, aggregator.Config{}, aggregator.Options{})
	tr := e.realTraffic(6, 3)
	all := e.capture()
	var batch []events.DynamoDBEventRecord
	poisoned := -1
	for _, r := range all {
		batch = append(batch, r)
		if poisoned < 0 && isBucket(r) && entityOf(r) == "alice" && r.EventName == "MODIFY" {
			// A malformed number in alice's second acquire (tpm 200), her
			// first MODIFY.
			bad := r
			bad.Change.NewImage = cloneImage(r.Change.NewImage)
			bad.Change.NewImage["b_rpm_tc"] = events.NewNumberAttribute("12abc")
			batch[len(batch)-1] = bad
			poisoned = len(batch) - 1
		}
	}
	if poisoned < 0 {
		t.Fatal("no alice MODIFY")
	}
	template := all[poisoned]
	mk := func(mut func(r *events.DynamoDBEventRecord)) events.DynamoDBEventRecord {
		r := template
		r.Change.NewImage = cloneImage(r.Change.NewImage)
		r.Change.OldImage = cloneImage(r.Change.OldImage)
		mut(&r)
		return r
	}
	extra := []events.DynamoDBEventRecord{
		mk(func(r *events.DynamoDBEventRecord) { r.Change.OldImage = nil }),                                           // MODIFY without OldImage
		mk(func(r *events.DynamoDBEventRecord) { r.Change.SequenceNumber = "12x" }),                                   // bad sequence number
		mk(func(r *events.DynamoDBEventRecord) { r.EventName = "UPSERT" }),                                            // unknown event
		mk(func(r *events.DynamoDBEventRecord) { r.Change.NewImage["entity_id"] = events.NewNumberAttribute("1") }),   // wrong type
		mk(func(r *events.DynamoDBEventRecord) { r.Change.NewImage["b_tpm_tc"] = events.NewStringAttribute("1000") }), // wrong type
		mk(func(r *events.DynamoDBEventRecord) {
			r.Change.NewImage["entity_id"] = events.NewStringAttribute("mallory")
		}), // another entity
		mk(func(r *events.DynamoDBEventRecord) { // no time at all
			r.Change.ApproximateCreationDateTime = events.SecondsEpochTime{}
			delete(r.Change.NewImage, "rf")
		}),
	}
	skipped := []events.DynamoDBEventRecord{
		mk(func(r *events.DynamoDBEventRecord) { r.EventName = "REMOVE"; r.Change.NewImage = nil }), // bucket TTL delete
		mk(func(r *events.DynamoDBEventRecord) { // a usage snapshot
			r.Change.Keys = map[string]events.DynamoDBAttributeValue{"PK": events.NewStringAttribute(ns + "/ENTITY#alice"), "SK": events.NewStringAttribute("#USAGE#gpt-4#2026-11-29T12:00:00Z")}
		}),
		mk(func(r *events.DynamoDBEventRecord) { // a legacy bucket key
			r.Change.Keys = map[string]events.DynamoDBAttributeValue{"PK": events.NewStringAttribute("ENTITY#alice"), "SK": events.NewStringAttribute("#BUCKET#gpt-4")}
		}),
	}
	// Poison and skipped records get sequence numbers above the batch, so
	// a report of one would be visible.
	for i := range extra {
		if extra[i].Change.SequenceNumber != "12x" {
			extra[i].Change.SequenceNumber = fmt.Sprintf("9%020d", i)
		}
	}
	for i := range skipped {
		skipped[i].Change.SequenceNumber = fmt.Sprintf("8%020d", i)
	}
	batch = append(append(batch, extra...), skipped...)
	if reported := e.handle(batch); len(reported) != 0 {
		t.Fatalf("reported %v: poison must never be reported", reported)
	}

	// Everything but the poisoned record counts: the next record's delta
	// is taken from its own OldImage.
	lost := tr["alice"][1]
	want := e.expected(all, tr, []aggregator.Window{aggregator.Hourly, aggregator.Daily}, e.clk.Now())
	got := e.snapshots()
	var aliceRPM, aliceTPM int64
	for k, it := range got {
		if it["entity_id"] == "S:alice" {
			aliceRPM += num(it["rpm"])
			aliceTPM += num(it["tpm"])
			continue
		}
		if d := diffSnapshots(map[string]flatItem{k: it}, map[string]flatItem{k: want[k]}); d != "" {
			t.Fatalf("bob's items:\n%s", d)
		}
	}
	if aliceRPM != 2*(6-lost["rpm"]) || aliceTPM != 2*(2100-lost["tpm"]) {
		t.Fatalf("alice rpm %d tpm %d over hourly+daily, want %d and %d", aliceRPM, aliceTPM, 2*(6-lost["rpm"]), 2*(2100-lost["tpm"]))
	}

	logs := e.logs.String()
	warnings := 0
	for _, line := range strings.Split(logs, "\n") {
		if !strings.Contains(line, `"level":"WARN"`) && !strings.Contains(line, `"level":"ERROR"`) {
			continue
		}
		warnings++
		for _, entity := range []string{"alice", "bob", "mallory"} {
			if strings.Contains(line, entity) {
				t.Errorf("a warning names entity %s: %s", entity, line)
			}
		}
		if !strings.Contains(line, `"index":`) {
			t.Errorf("a poison warning without its index: %s", line)
		}
	}
	if warnings != len(extra)+1 {
		t.Errorf("%d warnings, want %d (one per poison record):\n%s", warnings, len(extra)+1, logs)
	}
	if !strings.Contains(logs, fmt.Sprintf(`"index":%d`, poisoned)) {
		t.Errorf("no warning names index %d", poisoned)
	}
	if !strings.Contains(logs, fmt.Sprintf(`"poison":%d`, len(extra)+1)) || !strings.Contains(logs, fmt.Sprintf(`"skipped":%d`, len(skipped)+len(all)-countBuckets(all))) {
		t.Errorf("summary counts:\n%s", logs)
	}
}

func countBuckets(recs []events.DynamoDBEventRecord) int {
	n := 0
	for _, r := range recs {
		if isBucket(r) {
			n++
		}
	}
	return n
}

func cloneImage(img map[string]events.DynamoDBAttributeValue) map[string]events.DynamoDBAttributeValue {
	if img == nil {
		return nil
	}
	out := make(map[string]events.DynamoDBAttributeValue, len(img))
	for k, v := range img {
		out[k] = v
	}
	return out
}

// TestUsageKeysOfSnapshots: the snapshot keys the aggregator writes parse
// back as R12 items.
func TestUsageKeysOfSnapshots(t *testing.T) {
	e := newEnv(t, aggregator.Config{}, aggregator.Options{})
	e.realTraffic(2, 0)
	e.drain()
	for k := range e.snapshots() {
		pk, sk, _ := strings.Cut(k, "|")
		info := schema.ClassifyKey(pk, sk)
		if info.Kind != schema.KindUsageSnapshot || info.Entity != "alice" || info.Resource != resource {
			t.Fatalf("%s classifies as %+v", k, info)
		}
	}
}
