package soak

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/bucket"
	"github.com/zae-limiter/zae-limiter-go/core/bucketitem"
	"github.com/zae-limiter/zae-limiter-go/core/control"
	"github.com/zae-limiter/zae-limiter-go/core/limit"
	"github.com/zae-limiter/zae-limiter-go/core/limiter"
	"github.com/zae-limiter/zae-limiter-go/core/schedule"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
)

// The calendar-quota pairs (docs/design.md §11, §15): one resource with one
// limit, a monthly allowance, on q1 and q2 (one shard) and qhot (2 shards
// at setup, doubled twice during the run by another client's write). The
// run's clock crosses resetEdge half way; operators top the pairs up and
// reset some of them; quotaLedger books what each period admitted.
const (
	resQuota   = "quota"
	quotaLimit = "month"
	// quotaWeight is how many times each quota pair is in the load's draw
	// for once each other pair is.
	quotaWeight = 3
	// quotaMaxTake is the most tokens one quota request consumes (1 to it).
	quotaMaxTake = 20
)

var (
	quotaEntities = []string{"q1", "q2", "qhot"}
	// quotaResetEntities are the pairs an operator resets at 0.75 of the
	// run.
	quotaResetEntities = []string{"q1", "qhot"}
	monthly            = schedule.Resets{schedule.MustParseCron("0 0 1 * *")}
	// resetEdge is the monthly reset edge the run's clock crosses half way.
	resetEdge = time.Date(2026, 7, 1, 0, 0, 0, 0, time.UTC)
)

// quotaAllowance sizes the monthly allowance to the run: 8 tokens per
// second of it (960 for the 2-minute default, 160 for 20 seconds), so
// that the load, a quarter of whose draws are quota requests of 10 tokens
// on average, exhausts each period (about half the run) even on a loaded
// emulator (at 16 a second, a 20-second run beside the other test
// binaries of `make test` once admitted 167 quota requests and exhausted
// no period); a multiple of 16, so that every share C // S is whole down
// to 16 shards.
func quotaAllowance(d time.Duration) int64 {
	c := int64(d.Seconds()*8) / 16 * 16
	return max(c, 160)
}

func (w *world) quotaLimits() []limit.Limit {
	return []limit.Limit{limit.Quota(quotaLimit, w.quotaC, monthly, "")}
}

// span is a call's interval on the run's clock: taken before the call and
// after it returns, it contains every instant the call's writes carry and,
// when the call succeeded, the instant they landed.
type span struct{ from, to time.Time }

// lateLanding is how long after a failed call gave up its write may still
// land: a request the client abandoned may be in the emulator's queue,
// and it applies what the client computed before it gave up.
const lateLanding = 2 * opTimeout

// failed is s stretched for a call that failed with an unknown outcome.
func (s span) failed() span { return span{s.from, s.to.Add(lateLanding)} }

// quotaKind is what a booked quantity is.
type quotaKind int

const (
	quotaAdmitted  quotaKind = iota // an acquire admitted
	quotaReturned                   // a rollback applied
	quotaUncertain                  // an error of unknown outcome, or a straddle
	quotaTopUp                      // an operator's top-up granted
)

type quotaEntry struct {
	kind quotaKind
	span span
	n    int64 // tokens
}

// quotaLedger is what the clients and operators of one quota pair did, on
// the run's clock; its epochs are cut at check time (epochs).
type quotaLedger struct {
	entries []quotaEntry
	// resets are the operator's resets' call intervals: epoch boundaries.
	resets []span
}

// quotaEpoch is what one period (or part of one, between an edge and an
// operator's reset) saw, tokens; straddled is the part of uncertain that
// entries touching a boundary put there (for the log).
type quotaEpoch struct {
	admitted, returned, uncertain, topUps, straddled int64
}

func (w *world) quotaLedgerOf(entity string) *quotaLedger {
	l := w.quotas[entity]
	if l == nil {
		l = &quotaLedger{}
		w.quotas[entity] = l
	}
	return l
}

func (w *world) bookQuota(entity string, kind quotaKind, s span, n int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	l := w.quotaLedgerOf(entity)
	l.entries = append(l.entries, quotaEntry{kind: kind, span: s, n: n})
}

// epochs books the pair's entries in its epochs: the boundaries are the
// reset edge (an instant) and each operator's reset (its call interval).
// An entry whose span lies between two boundaries is booked in that epoch;
// one that touches or crosses a boundary is uncertain in every epoch it
// touches (it may have landed on either side).
func (l *quotaLedger) epochs() []quotaEpoch {
	bounds := append([]span{{resetEdge, resetEdge}}, l.resets...)
	slices.SortFunc(bounds, func(a, b span) int { return a.from.Compare(b.from) })
	out := make([]quotaEpoch, len(bounds)+1)
	for _, e := range l.entries {
		// lo: the boundaries wholly before the entry began; hi: those begun
		// by the time it ended.
		lo, hi := 0, 0
		for _, b := range bounds {
			if b.to.Before(e.span.from) {
				lo++
			}
			if !b.from.After(e.span.to) {
				hi++
			}
		}
		if lo != hi {
			for i := lo; i <= hi; i++ {
				out[i].uncertain += e.n
				out[i].straddled += e.n
			}
			continue
		}
		ep := &out[lo]
		switch e.kind {
		case quotaAdmitted:
			ep.admitted += e.n
		case quotaReturned:
			ep.returned += e.n
		case quotaUncertain:
			ep.uncertain += e.n
		case quotaTopUp:
			ep.topUps += e.n
		}
	}
	return out
}

// setupQuotas writes the quota resource's limit, makes every quota pair's
// shard 0 (a zero acquire: the full allowance, in the period before the
// edge) and gives qhot 2 shards.
func (w *world) setupQuotas(ctx context.Context, ctl *control.Controls, lim *limiter.Limiter) error {
	if _, err := ctl.SetResourceLimits(ctx, w.ns, resQuota, w.quotaLimits(), "soak"); err != nil {
		return err
	}
	for _, e := range quotaEntities {
		if _, err := lim.Acquire(ctx, e, resQuota, limiter.Consume{quotaLimit: 0}); err != nil {
			return err
		}
	}
	return w.setShardCount(ctx, pair{"qhot", resQuota}, 2)
}

// quotaStep is one client request on a quota pair (calendar or session):
// an acquire of 1 to 20 tokens (1 to 4 of a session quota), then a commit (nothing to write) or, one time in ten, a
// rollback. Every outcome is booked on the run's clock.
func (w *world) quotaStep(ctx context.Context, lim *limiter.Limiter, p pair) {
	name, most := quotaLimit, quotaMaxTake
	if p.resource == resSession {
		name, most = sessionLimit, sessionMaxTake
	}
	n := int64(1 + w.intn(most))
	consume := limiter.Consume{name: n}
	actx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	from := w.now()
	lease, err := lim.Acquire(actx, p.entity, p.resource, consume)
	acquired := span{from, w.now()}
	var rle *limiter.RateLimitExceeded
	var dis *limiter.ResourceDisabled
	switch {
	case err == nil && lease.Degraded():
		w.count(func(r *Report) { r.Degraded++ })
		return
	case err == nil:
	case errors.As(err, &rle):
		w.count(func(r *Report) { r.Rejected++; r.QuotaRejected++ }) // session pair included
		return
	case errors.As(err, &dis):
		w.count(func(r *Report) { r.Disabled++ })
		return
	default:
		w.record(lease, p, consume, 0, func(a *account, limit string, n int64) { a.uncertain[limit] += n })
		w.bookQuota(p.entity, quotaUncertain, acquired.failed(), n)
		w.count(func(r *Report) { r.Errors[errorKind(err)]++ })
		return
	}
	w.record(lease, p, consume, 1, func(a *account, limit string, n int64) { a.applied[limit] += n })
	w.bookQuota(p.entity, quotaAdmitted, acquired, n)
	w.count(func(r *Report) { r.Admitted++; r.QuotaAdmitted++ })
	cctx, ccancel := context.WithTimeout(ctx, opTimeout)
	defer ccancel()
	if w.intn(10) != 0 {
		if err := lease.Commit(cctx); err != nil {
			w.count(func(r *Report) { r.Errors["commit: "+errorKind(err)]++ })
		}
		return
	}
	err = lease.Rollback(cctx)
	// The rollback gives back into the epoch the lease was admitted in only
	// when no boundary came between: its span starts at the acquire (a
	// credit after the edge lands in a new period's account, or is wiped by
	// the shard's reset, or trimmed at its ceiling).
	returned := span{acquired.from, w.now()}
	w.mu.Lock()
	a := w.account(p)
	if err != nil {
		a.uncertain[name] += n
	} else {
		a.applied[name] -= n
	}
	w.mu.Unlock()
	if err != nil {
		w.bookQuota(p.entity, quotaUncertain, returned.failed(), n)
	} else {
		w.bookQuota(p.entity, quotaReturned, returned, n)
	}
	w.count(func(r *Report) { r.Rollbacks++ })
}

// quotaEvent is one of the quota pairs' scheduled events, at a fraction of
// the run on the timeline the reset edge is placed on (Duration from Run's
// beginning: the edge at 1/2).
type quotaEvent struct {
	at   float64
	name string
	do   func(context.Context) error
}

// runQuotaEvents does, each at its time until the deadline: top-ups of
// every quota pair at 1/4 and 0.6 of the run (away from the edge), qhot
// doubled at 1/3 and 0.55, and an operator's reset of some quota pairs at
// 0.75; the session pair's top-up at 0.4 and reset at 0.8.
func (w *world) runQuotaEvents(ctx context.Context, deadline time.Time) error {
	ctl := control.New(w.db, w.table, control.Options{Clock: w.now})
	for _, ev := range []quotaEvent{
		{0.25, "top-ups", func(ctx context.Context) error { return w.topUps(ctx, ctl, 1) }},
		{1.0 / 3, "qhot doubled", w.doubleQuota},
		{0.55, "qhot doubled", w.doubleQuota},
		{0.4, "session top-up", func(ctx context.Context) error { return w.sessionTopUp(ctx, ctl) }},
		{0.6, "top-ups", func(ctx context.Context) error { return w.topUps(ctx, ctl, 2) }},
		{0.75, "operator's resets", func(ctx context.Context) error { return w.operatorResets(ctx, ctl) }},
		{0.8, "session reset", func(ctx context.Context) error { return w.sessionReset(ctx, ctl) }},
	} {
		at := w.begin.Add(time.Duration(ev.at * float64(w.cfg.Duration)))
		if !at.Before(deadline) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Until(at)):
		}
		from := w.now()
		if err := ev.do(ctx); err != nil {
			return fmt.Errorf("quota event %s at %.2f of the run: %w", ev.name, ev.at, err)
		}
		fmt.Fprintf(w.log, "soak: quota event %s at %.2f of the run, on the run's clock from %s to %s\n",
			ev.name, ev.at, from.Format("15:04:05.000"), w.now().Format("15:04:05.000"))
	}
	return nil
}

// eachQuotaPair runs do on the entities concurrently.
func eachQuotaPair(entities []string, do func(entity string) error) error {
	errs := make([]error, len(entities))
	var wg sync.WaitGroup
	for i, e := range entities {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = do(e)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// operatorTries bounds an operator's call: a conflict with the load's
// writers leaves nothing written, and the same operation id makes a retry
// of one that committed a replay.
const operatorTries = 10

func (w *world) operate(ctx context.Context, call func(id string) (control.Operation, error), id string) (control.Operation, error) {
	var err error
	for range operatorTries {
		var op control.Operation
		if op, err = call(id); err == nil {
			return op, nil
		}
		var conflict *control.BucketOperationConflictError
		if !errors.As(err, &conflict) {
			return op, err
		}
		time.Sleep(50 * time.Millisecond)
	}
	return control.Operation{}, err
}

// topUps tops up every quota pair by a quarter of the allowance and books
// what each was granted in the epoch of its call.
func (w *world) topUps(ctx context.Context, ctl *control.Controls, round int) error {
	n := w.quotaC / 4
	return eachQuotaPair(quotaEntities, func(e string) error {
		from := w.now()
		op, err := w.operate(ctx, func(id string) (control.Operation, error) {
			return ctl.TopUp(ctx, w.ns, e, resQuota, map[string]int64{quotaLimit: n}, control.OperationOptions{OperationID: id, Principal: "soak"})
		}, fmt.Sprintf("soak-top-up-%d", round))
		if err != nil {
			return fmt.Errorf("top-up of %s: %w", e, err)
		}
		granted := op.Granted[quotaLimit]
		w.bookQuota(e, quotaTopUp, span{from, w.now()}, granted)
		w.count(func(r *Report) {
			r.TopUps++
			if granted != n {
				r.TopUpsInexact = append(r.TopUpsInexact, fmt.Sprintf("%s: %d of %d", e, granted, n))
			}
		})
		return nil
	})
}

// operatorResets resets some quota pairs, each a fresh account of the
// period: its call interval is an epoch boundary of the pair.
func (w *world) operatorResets(ctx context.Context, ctl *control.Controls) error {
	return eachQuotaPair(quotaResetEntities, func(e string) error {
		from := w.now()
		op, err := w.operate(ctx, func(id string) (control.Operation, error) {
			return ctl.Reset(ctx, w.ns, e, resQuota, nil, control.OperationOptions{OperationID: id, Principal: "soak"})
		}, "soak-reset")
		to := w.now()
		if err != nil {
			return fmt.Errorf("reset of %s: %w", e, err)
		}
		fmt.Fprintf(w.log, "soak: quota %s reset: %d shards written at a count of %d\n", e, op.ShardsWritten, op.ShardCount)
		w.mu.Lock()
		l := w.quotaLedgerOf(e)
		l.resets = append(l.resets, span{from, to})
		w.mu.Unlock()
		w.count(func(r *Report) { r.OperatorResets++ })
		return nil
	})
}

// doubleQuota doubles qhot's shard count as another client short of wcu
// would: SET shard_count = 2S on its shard 0, conditioned on it being S.
func (w *world) doubleQuota(ctx context.Context) error {
	key := schema.BucketKey(w.ns, "qhot", resQuota, 0).AttributeValues()
	for range 10 {
		got, err := w.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(w.table), Key: key, ConsistentRead: aws.Bool(true)})
		if err != nil {
			return err
		}
		img, err := bucketitem.Decode(got.Item)
		if err != nil {
			return err
		}
		s := max(img.ShardCount, 1)
		_, err = w.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(w.table), Key: key,
			UpdateExpression:          aws.String("SET shard_count = :n"),
			ConditionExpression:       aws.String("shard_count = :s"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":n": schema.Num(2 * s), ":s": schema.Num(s)},
		})
		var ccf *types.ConditionalCheckFailedException
		if errors.As(err, &ccf) {
			continue // the count moved meanwhile: read again
		}
		if err == nil {
			w.count(func(r *Report) { r.QuotaDoublings++ })
		}
		return err
	}
	return errors.New("soak: qhot's shard count kept moving")
}

// checkQuotas reads every quota shard at the end (after the load and the
// drain) and checks, per quota pair: no period before the last admitted
// more than its allowance, its top-ups and its uncertainty; in the last,
// admitted − returned + held + grantable = C + top-ups within the
// uncertainty (I8 end to end, docs/design.md §15); and every
// current-period shard holds at most C // gc + tu (I7). Held is Σ tk of
// the current-period shards; grantable is C // S for every slot of
// [0, S) no current-period shard's grant covers, S being shard 0's count.
func (w *world) checkQuotas(ctx context.Context) error {
	r := w.report
	now := w.now()
	for at := w.t0; ; {
		next, ok := monthly.NextEdge(at, time.UTC)
		if !ok || next.After(w.end) {
			break
		}
		r.ResetEdges++
		at = next
	}
	capacity := w.quotaC * bucket.MilliPerToken // C, millitokens
	var overDiff, i8Diff, i7Diff int64
	var overDetail, i8Detail, i7Detail []string
	for _, e := range quotaEntities {
		shards, ids, err := w.numberedShardsOf(ctx, pair{e, resQuota})
		if err != nil {
			return err
		}
		w.mu.Lock()
		epochs := w.quotaLedgerOf(e).epochs()
		w.mu.Unlock()
		for i, ep := range epochs[:len(epochs)-1] {
			if d := ep.admitted - ep.returned - (w.quotaC + ep.topUps + ep.uncertain); d > 0 {
				overDiff += d
				overDetail = append(overDetail, fmt.Sprintf("%s epoch %d: admitted %d − returned %d > C %d + top-ups %d ± %d",
					e, i, ep.admitted, ep.returned, w.quotaC, ep.topUps, ep.uncertain))
			}
		}
		count := int64(1)
		if len(shards) > 0 && ids[0] == 0 {
			count = max(shards[0].ShardCount, 1)
		}
		r.QuotaShards[e] = count
		var held int64
		var covers [][2]int64 // shard, gc
		for i, img := range shards {
			li := img.Limit(quotaLimit)
			if li == nil {
				continue
			}
			if img.RF >= resetEdge.UnixMilli() {
				r.QuotaPastEdge++
			}
			if !monthly.CurrentPeriod(img.RF, now, time.UTC) {
				continue // the previous period's grant: its slots are grantable
			}
			gc := li.GrantShards
			if gc < 1 {
				gc = bucket.LegacyGrantShards(li.Tokens, capacity, img.ShardCount)
			}
			if ceil := bucket.FloorDiv(capacity, gc) + li.TopUp; li.Tokens > ceil {
				i7Diff += bucket.CeilDiv(li.Tokens-ceil, bucket.MilliPerToken)
				i7Detail = append(i7Detail, fmt.Sprintf("%s shard %d: tk %d > C // %d + tu %d (millitokens)", e, ids[i], li.Tokens, gc, li.TopUp))
			}
			held += li.Tokens
			covers = append(covers, [2]int64{ids[i], gc})
		}
		var uncovered int64
		for slot := range count {
			if !slices.ContainsFunc(covers, func(c [2]int64) bool { return bucket.GrantCovers(c[0], c[1], slot) }) {
				uncovered++
			}
		}
		grantable := bucket.FloorDiv(capacity, count) * uncovered
		last := epochs[len(epochs)-1]
		fmt.Fprintf(w.log, "soak: quota %s (C %d): epochs %+v; at the end %d shards, held %d, grantable %d (%d slots)\n",
			e, w.quotaC, epochs, count, held/bucket.MilliPerToken, grantable/bucket.MilliPerToken, uncovered)
		got := (last.admitted-last.returned)*bucket.MilliPerToken + held + grantable
		want := capacity + last.topUps*bucket.MilliPerToken
		if d := abs(got-want) - last.uncertain*bucket.MilliPerToken; d > 0 {
			for i, img := range shards {
				if li := img.Limit(quotaLimit); li != nil {
					fmt.Fprintf(w.log, "soak: quota %s shard %d: tk %d gc %d tu %d count %d rf %s tc %d\n", e, ids[i], li.Tokens, li.GrantShards, li.TopUp,
						img.ShardCount, time.UnixMilli(img.RF).UTC().Format("15:04:05.000"), li.Consumed)
				}
			}
			i8Diff += bucket.CeilDiv(d, bucket.MilliPerToken)
			i8Detail = append(i8Detail, fmt.Sprintf("%s: admitted %d − returned %d + held %d + grantable %d (tokens, %d of %d slots) ≠ C %d + top-ups %d ± %d",
				e, last.admitted, last.returned, held/bucket.MilliPerToken, grantable/bucket.MilliPerToken, uncovered, count, w.quotaC, last.topUps, last.uncertain))
		}
	}
	r.add("quota: no over-admission in a closed period", overDiff, strings.Join(first(overDetail, 5), "; "))
	r.add("quota: I8 admitted+held+grantable = C+top-ups", i8Diff, strings.Join(first(i8Detail, 5), "; "))
	r.add("quota: I7 a shard holds ≤ C // gc + tu", i7Diff, strings.Join(first(i7Detail, 5), "; "))
	r.add("quota: top-ups granted exactly N", int64(len(r.TopUpsInexact)), strings.Join(r.TopUpsInexact, "; "))
	return nil
}
