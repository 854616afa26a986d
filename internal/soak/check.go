package soak

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/bucket"
	"github.com/zae-limiter/zae-limiter-go/core/bucketitem"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
)

// Report is what a run did and what its checks found.
type Report struct {
	Seed   uint64
	Config Config
	// The load.
	Admitted, Rejected, Disabled, Degraded, Rollbacks, Adjusted int
	Errors                                                      map[string]int
	Faults                                                      map[string]int
	Panics                                                      int64
	// CreditsLost counts the cascade refunds the limiter reported failed.
	CreditsLost int
	// The aggregator.
	Restarts, StreamRecords, StreamBatches, Dropped, Poisoned int
	SnapshotItems                                             int
	// HotShards is the hot pair's shard count at the end (4 at the start).
	HotShards int64
	// The calendar-quota pairs: acquires admitted and refused (429; also in
	// Admitted and Rejected), their shard counts at the end by entity,
	// qhot's doublings, the reset edges the run's clock crossed, the
	// operators' top-ups and resets (TopUpsInexact: those not granted
	// exactly), and how many quota shards were last written after the edge.
	QuotaAdmitted, QuotaRejected int
	QuotaShards                  map[string]int64
	QuotaDoublings               int
	ResetEdges                   int
	TopUps, OperatorResets       int
	TopUpsInexact                []string
	QuotaPastEdge                int
	// SessionWindows counts the session pair's window starts the stream
	// showed.
	SessionWindows int
	// LimitChanges counts the operator's changes of the changing
	// resource's limit while the load ran.
	LimitChanges int
	Checks       []Check
}

// Check is one property and by how much it was missed (0: held).
type Check struct {
	Name   string
	Diff   int64
	Detail string
}

// OK reports whether every check held.
func (r *Report) OK() bool {
	for _, c := range r.Checks {
		if c.Diff != 0 {
			return false
		}
	}
	return len(r.Checks) > 0
}

func (r *Report) add(name string, diff int64, detail string) {
	r.Checks = append(r.Checks, Check{Name: name, Diff: diff, Detail: detail})
}

// WriteTable prints the summary.
func (r *Report) WriteTable(w io.Writer) {
	row := func(k string, v any) { fmt.Fprintf(w, "  %-34s %v\n", k, v) }
	fmt.Fprintf(w, "soak summary (replay: -seed %d -duration %s -over %g)\n", r.Seed, r.Config.Duration, r.Config.Over)
	row("acquires admitted", r.Admitted)
	row("acquires rejected (429)", r.Rejected)
	row("acquires refused (403)", r.Disabled)
	row("leases rolled back / adjusted", fmt.Sprintf("%d / %d", r.Rollbacks, r.Adjusted))
	for _, k := range slices.Sorted(maps.Keys(r.Errors)) {
		row("errors: "+k, r.Errors[k])
	}
	for _, k := range slices.Sorted(maps.Keys(r.Faults)) {
		row("faults injected: "+k, r.Faults[k])
	}
	row("best-effort credits lost", r.CreditsLost)
	row("panics", r.Panics)
	row("hot pair's shards (4 at start)", r.HotShards)
	row("quota acquires admitted / 429", fmt.Sprintf("%d / %d", r.QuotaAdmitted, r.QuotaRejected))
	var shards []string
	for _, e := range quotaEntities {
		shards = append(shards, fmt.Sprintf("%s %d", e, r.QuotaShards[e]))
	}
	row("quota pairs' shards (qhot 2 at start)", fmt.Sprintf("%s (qhot doubled %d times)", strings.Join(shards, ", "), r.QuotaDoublings))
	row("quota reset edges / top-ups / resets", fmt.Sprintf("%d / %d / %d (%d shards written after the edge)", r.ResetEdges, r.TopUps, r.OperatorResets, r.QuotaPastEdge))
	row("session windows opened (from the stream)", r.SessionWindows)
	row("limit changes under load", r.LimitChanges)
	row("aggregator restarts", r.Restarts)
	row("stream records delivered", fmt.Sprintf("%d in %d batches (redeliveries included)", r.StreamRecords, r.StreamBatches))
	row("poison records written / dropped", fmt.Sprintf("%d / %d", r.Poisoned, r.Dropped))
	row("snapshot items", r.SnapshotItems)
	fmt.Fprintln(w, "  checks (difference, must be 0):")
	for _, c := range r.Checks {
		mark := "ok"
		if c.Diff != 0 {
			mark = "FAILED"
		}
		fmt.Fprintf(w, "    %-6s %-48s %d  %s\n", mark, c.Name, c.Diff, c.Detail)
	}
}

// shardsOf reads every shard of a pair's bucket (strongly consistent).
func (w *world) shardsOf(ctx context.Context, p pair) ([]*bucketitem.Image, error) {
	out, _, err := w.numberedShardsOf(ctx, p)
	return out, err
}

// numberedShardsOf reads every shard of a pair's bucket (strongly
// consistent), with each one's shard number.
func (w *world) numberedShardsOf(ctx context.Context, p pair) ([]*bucketitem.Image, []int64, error) {
	var out []*bucketitem.Image
	var ids []int64
	for shard := range schema.MaxShardCount {
		got, err := w.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(w.table), ConsistentRead: aws.Bool(true),
			Key: schema.BucketKey(w.ns, p.entity, p.resource, shard).AttributeValues()})
		if err != nil {
			return nil, nil, err
		}
		if len(got.Item) == 0 {
			if shard == 0 || len(out) == 0 || int64(shard) >= out[0].ShardCount {
				break
			}
			continue // a shard never drawn
		}
		img, err := bucketitem.Decode(got.Item)
		if err != nil {
			return nil, nil, err
		}
		out, ids = append(out, &img), append(ids, int64(shard))
	}
	return out, ids, nil
}

// snapshots sums the usage snapshots of every entity on resource: window →
// entity → limit → whole tokens.
func (w *world) snapshots(ctx context.Context, resource string) (map[string]map[string]map[string]int64, error) {
	sums := map[string]map[string]map[string]int64{}
	var start map[string]types.AttributeValue
	for {
		out, err := w.db.Query(ctx, &dynamodb.QueryInput{
			TableName: aws.String(w.table), IndexName: aws.String(schema.GSI2), ExclusiveStartKey: start,
			KeyConditionExpression:    aws.String("#pk = :pk AND begins_with(#sk, :u)"),
			ExpressionAttributeNames:  map[string]string{"#pk": schema.AttrGSI2PK, "#sk": schema.AttrGSI2SK},
			ExpressionAttributeValues: map[string]types.AttributeValue{":pk": &types.AttributeValueMemberS{Value: schema.ResourcePK(w.ns, resource)}, ":u": &types.AttributeValueMemberS{Value: schema.PrefixUsage}},
		})
		if err != nil {
			return nil, err
		}
		for _, k := range out.Items {
			got, err := w.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(w.table), ConsistentRead: aws.Bool(true),
				Key: map[string]types.AttributeValue{schema.AttrPK: k[schema.AttrPK], schema.AttrSK: k[schema.AttrSK]}})
			if err != nil {
				return nil, err
			}
			it := got.Item
			window, entity := str(it, schema.AttrWindow), str(it, schema.AttrEntityID)
			if sums[window] == nil {
				sums[window] = map[string]map[string]int64{}
			}
			if sums[window][entity] == nil {
				sums[window][entity] = map[string]int64{}
			}
			for name, v := range it {
				n, ok := v.(*types.AttributeValueMemberN)
				if !ok || name == schema.AttrTTL || name == schema.AttrTotalEvents {
					continue
				}
				x, err := strconv.ParseInt(n.Value, 10, 64)
				if err != nil {
					return nil, err
				}
				sums[window][entity][name] += x
			}
			w.report.SnapshotItems++
		}
		if start = out.LastEvaluatedKey; len(start) == 0 {
			return sums, nil
		}
	}
}

func str(it map[string]types.AttributeValue, a string) string {
	if v, ok := it[a].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}

// check runs every check on the drained table.
func (w *world) check(ctx context.Context) error {
	r := w.report
	limits := resourceLimits()
	limits[resQuota] = w.quotaLimits()
	limits[resSession] = w.sessionLimits()
	limits[resChanging] = changingLimits(rate)
	elapsedMs := w.end.Sub(w.t0).Milliseconds()
	r.LimitChanges = len(w.changes)
	var snapDiff, ledgerDiff, overDiff int64
	var snapDetail, ledgerDetail, overDetail []string
	var excessTotal int64
	for _, res := range []string{resChat, resImage, resEmbed, resQuota, resSession, resChanging} {
		snaps, err := w.snapshots(ctx, res)
		if err != nil {
			return err
		}
		ents := entities
		switch res {
		case resQuota:
			ents = quotaEntities
		case resSession:
			ents = sessionEntities
		case resChanging:
			ents = plain
		}
		for _, e := range ents {
			p := pair{e, res}
			shards, err := w.shardsOf(ctx, p)
			if err != nil {
				return err
			}
			if p == (pair{"hot", resChat}) && len(shards) > 0 {
				r.HotShards = shards[0].ShardCount
			}
			a := w.account(p)
			for _, l := range limits[res] {
				var tc, floorSum int64
				for _, img := range shards {
					if li := img.Limit(l.Name); li != nil {
						tc += li.Consumed
						floorSum += bucket.FloorDiv(li.Consumed, bucket.MilliPerToken)
					}
				}
				// Snapshots: hourly = daily = Σ floor(tc/1000).
				for _, win := range []string{"hourly", "daily"} {
					if got := snaps[win][e][l.Name]; got != floorSum {
						snapDiff += abs(got - floorSum)
						snapDetail = append(snapDetail, fmt.Sprintf("%s/%s/%s %s %d≠%d", e, res, l.Name, win, got, floorSum))
					}
				}
				// Ledger: applied = tc growth, within what failures may
				// have applied.
				growth := tc / bucket.MilliPerToken
				if d := abs(growth-a.applied[l.Name]) - a.uncertain[l.Name]; d > 0 {
					ledgerDetail = append(ledgerDetail, fmt.Sprintf("%s/%s/%s tc %d told %d ±%d", e, res, l.Name, growth, a.applied[l.Name], a.uncertain[l.Name]))
					if cascadePair(p) {
						excessTotal += d // may be a lost cascade refund
					} else {
						ledgerDiff += d
					}
				}
			}
			// Over-admission on the hard rps: admitted ≤ capacity + refill
			// over the run + what rollbacks returned + what failures may
			// have returned.
			if e == "vip" && res == resChat || res == resQuota || res == resSession {
				continue // bypassed: admitted without limit, by design; a quota has no rps (checkQuotas, checkSessions)
			}
			rps := rpsOf(res)
			bound := rps + bucket.FloorDiv(rps*elapsedMs, 1000) + a.returned + a.uncertain["rps"]
			if res == resChanging {
				// The limit in force at every instant, changed under load
				// (change.go: changingBound).
				bound = w.changingBound(w.t0, w.end) + a.returned + a.uncertain["rps"]
			}
			if e == "banned" && res == resChat {
				bound = 0
			}
			if a.admitted > bound {
				overDiff += a.admitted - bound
				overDetail = append(overDetail, fmt.Sprintf("%s/%s admitted %d > %d", e, res, a.admitted, bound))
			}
		}
	}
	// A cascade refund is best effort: each one the limiter reports lost
	// may leave one request's tokens (at most 60 tps and 1 rps) in the tc of
	// a cascading pair, which the log does not name.
	slack := int64(r.CreditsLost) * 61
	if excessTotal > slack {
		ledgerDiff += excessTotal - slack
	}
	r.add("snapshots = Σ floor(tc/1000), hourly and daily", snapDiff, strings.Join(first(snapDetail, 5), "; "))
	r.add("ledger: told applied = tc growth (± failures)", ledgerDiff,
		fmt.Sprintf("cascade pairs: excess %d within %d (%d refunds lost) %s", excessTotal, slack, r.CreditsLost, strings.Join(first(ledgerDetail, 5), "; ")))
	r.add("no over-admission (hard rps; the limit in force as it changes)", overDiff, strings.Join(first(overDetail, 5), "; "))
	changeDiff, changeDetail := w.checkChanging()
	r.add("no admission above the limit in force, between changes", changeDiff,
		fmt.Sprintf("%d changes; %s", len(w.changes), strings.Join(first(changeDetail, 5), "; ")))
	r.add("no panic", r.Panics, "")
	var undue int64
	if r.Dropped > r.Poisoned {
		undue = int64(r.Dropped - r.Poisoned)
	}
	r.add("only poison records dropped", undue, fmt.Sprintf("%d dropped, %d poisoned", r.Dropped, r.Poisoned))
	if err := w.checkQuotas(ctx); err != nil {
		return err
	}
	return w.checkSessions(ctx)
}

func first(s []string, n int) []string { return s[:min(len(s), n)] }

// cascadePair reports a pair a cascade refund can touch: a cascading child
// or its parent (the children cascade on every resource).
func cascadePair(p pair) bool {
	return p.entity == "team" || p.entity == "team-a" || p.entity == "team-b"
}
