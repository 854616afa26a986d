package aggregator_test

import (
	"strconv"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/zae-limiter/zae-limiter-go/core/aggregator"
	"github.com/zae-limiter/zae-limiter-go/core/limit"
	"github.com/zae-limiter/zae-limiter-go/core/limiter"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
)

const resource = "gpt-4"

// traffic is what the acquires of a test consumed, per entity in order:
// each admitted acquire writes exactly one bucket record.
type traffic map[string][]limiter.Consume

// realTraffic drives interleaved acquires: alice through the speculative
// limiter (a slow-path create, an INSERT, then fast-path MODIFYs) and bob
// through the non-speculative one (an INSERT, then rf-locked slow-pass
// MODIFYs), one second of fake time apart.
func (e *env) realTraffic(nAlice, nBob int) traffic {
	e.t.Helper()
	e.setLimits(resource, limit.PerMinute("rpm", 1000), limit.PerMinute("tpm", 1_000_000))
	tr := traffic{}
	for i := 0; i < max(nAlice, nBob); i++ {
		if i < nAlice {
			c := limiter.Consume{"rpm": 1, "tpm": int64(100 * (i + 1))}
			e.acquire(e.fast, "alice", resource, c)
			tr["alice"] = append(tr["alice"], c)
		}
		if i < nBob {
			c := limiter.Consume{"rpm": 1, "tpm": 50}
			e.acquire(e.slow, "bob", resource, c)
			tr["bob"] = append(tr["bob"], c)
		}
		e.clk.Advance(time.Second)
	}
	return tr
}

// expected builds the snapshot items the records of tr must produce: the
// i-th bucket record of an entity carries its i-th acquire, filed under the
// windows of the record's ApproximateCreationDateTime. ttl is the
// aggregator's now when it first writes each item.
func (e *env) expected(recs []events.DynamoDBEventRecord, tr traffic, windows []aggregator.Window, now time.Time) map[string]flatItem {
	e.t.Helper()
	seen := map[string]int{}
	out := map[string]flatItem{}
	ttl := strconv.FormatInt(now.Unix()+90*86400, 10)
	for _, r := range recs {
		if !isBucket(r) {
			continue
		}
		entity := entityOf(r)
		i := seen[entity]
		seen[entity]++
		if i >= len(tr[entity]) {
			e.t.Fatalf("more bucket records of %s than acquires (%d)", entity, len(tr[entity]))
		}
		c := tr[entity][i]
		at := r.Change.ApproximateCreationDateTime.Time
		if at.IsZero() {
			e.t.Fatalf("record %s has no ApproximateCreationDateTime", r.Change.SequenceNumber)
		}
		for _, w := range windows {
			wk := aggregator.SnapshotKey(w, at, windows)
			keys := schema.UsageItemKeys(ns, entity, resource, wk)
			id := keys.Key.PK + "|" + keys.Key.SK
			it, ok := out[id]
			if !ok {
				it = flatItem{
					"PK": "S:" + keys.Key.PK, "SK": "S:" + keys.Key.SK,
					"entity_id": "S:" + entity, "resource": "S:" + resource,
					"window": "S:" + string(w), "window_start": "S:" + aggregator.WindowKey(w, at),
					"GSI2PK": "S:" + keys.GSI2.PK, "GSI2SK": "S:" + keys.GSI2.SK,
					"GSI4PK": "S:" + keys.GSI4.PK, "GSI4SK": "S:" + keys.GSI4.SK,
					"ttl": "N:" + ttl, "total_events": "N:0",
				}
				out[id] = it
			}
			events := 0
			for name, n := range c {
				if n != 0 {
					it[name] = "N:" + strconv.FormatInt(num(it[name])+n, 10)
					events++
				}
			}
			it["total_events"] = "N:" + strconv.FormatInt(num(it["total_events"])+int64(events), 10)
			it["seq#0"] = "S:" + pad(r.Change.SequenceNumber)
		}
	}
	for entity, cs := range tr {
		if seen[entity] != len(cs) {
			e.t.Fatalf("%s: %d bucket records for %d acquires", entity, seen[entity], len(cs))
		}
	}
	return out
}

// num parses "N:123" (or "" as 0).
func num(v string) int64 {
	if v == "" {
		return 0
	}
	n, err := strconv.ParseInt(v[2:], 10, 64)
	if err != nil {
		panic(v)
	}
	return n
}
