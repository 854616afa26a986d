package soak

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/bucketitem"
	"github.com/zae-limiter/zae-limiter-go/core/config"
	"github.com/zae-limiter/zae-limiter-go/core/control"
	"github.com/zae-limiter/zae-limiter-go/core/limit"
	"github.com/zae-limiter/zae-limiter-go/core/limiter"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
	"github.com/zae-limiter/zae-limiter-go/internal/faultproxy"
)

// The workload: three resources, each limit per second so that a run of
// seconds sees many refills.
const (
	resChat  = "chat"  // rps 4/s + tps 400/s, both hard
	resImage = "image" // rps 2/s alone
	resEmbed = "embed" // rps 4/s hard + tps 400/s soft
	rate     = 4       // rps of chat and embed; image has half
)

// resourceLimits are the limits each resource is given.
func resourceLimits() map[string][]limit.Limit {
	per := func(name string, n int64) limit.Limit { return limit.Custom(name, n, n, time.Second) }
	return map[string][]limit.Limit{
		resChat:  {per("rps", rate), per("tps", 100*rate)},
		resImage: {per("rps", rate/2)},
		resEmbed: {per("rps", rate), per("tps", 100*rate).AsSoft()},
	}
}

// Entities: plain ones; "hot" with 4 shards on chat; "team-a" and "team-b"
// cascading to "team" (on every resource); "vip" bypassed and "banned"
// disabled on chat.
var (
	plain    = []string{"e1", "e2", "e3", "e4"}
	entities = append(append([]string(nil), plain...), "hot", "team", "team-a", "team-b", "vip", "banned")
)

// pair is an (entity, resource).
type pair struct{ entity, resource string }

// world is one run's table, clients and ledger.
type world struct {
	cfg    Config
	rng    *rand.Rand
	mu     sync.Mutex // guards rng, ledger and quotas
	db     *dynamodb.Client
	table  string
	ns     string
	proxy  *faultproxy.Proxy
	report *Report
	log    io.Writer
	ledger map[pair]*account
	// offset moves the real clock to the run's (now), so that the reset
	// edge comes Duration/2 after begin (real time: Run began); quotaC is
	// the quota's monthly allowance, tokens; quotas is the quota pairs'
	// ledger by entity (quota.go).
	begin  time.Time
	offset time.Duration
	quotaC int64
	quotas map[string]*quotaLedger
	// sessionW and sessionC are the session quota's window and allowance
	// (session.go); windows, what the stream showed of each window by its
	// start, and seen the stream records already booked.
	sessionW time.Duration
	sessionC int64
	windows  map[int64]sessionWindowUse
	seen     map[string]bool
	// rateAt0 and changes are resChanging's rate at setup and the
	// operator's changes of it (change.go).
	rateAt0 int64
	changes []limitChange
	// admits and credits are the calls that admitted on resChanging, and
	// the rollbacks that credited it (change.go).
	admits, credits map[pair][]span
	t0              time.Time // setup began, run's clock: no bucket is older
	start           time.Time // the load began, real time (paces the run)
	end             time.Time // the load ended, run's clock
}

// now is the run's clock: every limiter, operator and the aggregator read
// it, and so do the ledgers. It runs at the real clock's rate.
func (w *world) now() time.Time { return time.Now().Add(w.offset) }

// account is what the clients of one pair were told.
type account struct {
	// applied is the consumption by limit (whole tokens) the clients were
	// told was applied; uncertain bounds what a failed call may have
	// applied (a lost response, a timeout, a failed commit).
	applied, uncertain map[string]int64
	// admitted counts rps tokens of successful acquires; returned, rps
	// tokens given back by rollbacks.
	admitted, returned int64
}

func (w *world) account(p pair) *account {
	a := w.ledger[p]
	if a == nil {
		a = &account{applied: map[string]int64{}, uncertain: map[string]int64{}}
		w.ledger[p] = a
	}
	return a
}

// setup writes the limits, entities and access settings, with no faults.
func (w *world) setup(ctx context.Context) error {
	w.t0 = w.now()
	w.ledger = map[pair]*account{}
	w.quotas = map[string]*quotaLedger{}
	w.admits, w.credits = map[pair][]span{}, map[pair][]span{}
	ctl := control.New(w.db, w.table, control.Options{Clock: w.now})
	for res, ls := range resourceLimits() {
		if _, err := ctl.SetResourceLimits(ctx, w.ns, res, ls, "soak"); err != nil {
			return err
		}
	}
	if _, err := ctl.CreateEntity(ctx, w.ns, "team", config.EntityOptions{}, "soak"); err != nil {
		return err
	}
	for _, child := range []string{"team-a", "team-b"} {
		if _, err := ctl.CreateEntity(ctx, w.ns, child, config.EntityOptions{ParentID: "team", Cascade: true}, "soak"); err != nil {
			return err
		}
	}
	if _, err := ctl.SetAccess(ctx, w.ns, "vip", resChat, config.AccessBypass, "soak"); err != nil {
		return err
	}
	if _, err := ctl.SetAccess(ctx, w.ns, "banned", resChat, config.AccessDisabled, "soak"); err != nil {
		return err
	}
	// "hot" gets 4 shards on chat: its shard 0, made by a zero acquire,
	// then its count raised as a doubling would.
	lim, err := limiter.New(w.db, w.table, w.ns, limiter.Options{Clock: w.now})
	if err != nil {
		return err
	}
	if _, err := lim.Acquire(ctx, "hot", resChat, limiter.Consume{"rps": 0, "tps": 0}); err != nil {
		return err
	}
	if err := w.setShardCount(ctx, pair{"hot", resChat}, 4); err != nil {
		return err
	}
	if err := w.setupSessions(ctx, ctl); err != nil {
		return err
	}
	if err := w.setupChanging(ctx, ctl, lim); err != nil {
		return err
	}
	return w.setupQuotas(ctx, ctl, lim)
}

// setShardCount sets a pair's shard count on its shard 0, as a doubling
// would.
func (w *world) setShardCount(ctx context.Context, p pair, n int64) error {
	_, err := w.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(w.table),
		Key:                       schema.BucketKey(w.ns, p.entity, p.resource, 0).AttributeValues(),
		UpdateExpression:          aws.String("SET shard_count = :s"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":s": schema.Num(n)}})
	return err
}

// injectFaults adds the configured fault rules to the proxy, counting what
// fires.
func (w *world) injectFaults() {
	f := w.cfg.Faults
	count := func(kind string) func(string) {
		return func(string) {
			w.mu.Lock()
			w.report.Faults[kind]++
			w.mu.Unlock()
		}
	}
	write := func(op string, _ []byte) bool {
		return op == "UpdateItem" || op == "PutItem" || op == "TransactWriteItems"
	}
	for _, r := range []struct {
		kind string
		rule faultproxy.Rule
	}{
		{"throttle", faultproxy.Rule{Fault: faultproxy.ProvisionedThroughputExceeded(), Rate: f.Throttle}},
		{"5xx", faultproxy.Rule{Fault: faultproxy.InternalServerError(), Rate: f.ServerError}},
		{"conflict", faultproxy.Rule{Operation: "TransactWriteItems", Fault: faultproxy.TransactionConflict(), Rate: f.Conflict}},
		{"timeout", faultproxy.Rule{Fault: faultproxy.Delay(3 * opTimeout), Rate: f.Timeout}},
		{"lost response", faultproxy.Rule{Match: write, Fault: faultproxy.AfterForward(faultproxy.InternalServerError()), Rate: f.LostResponse}},
	} {
		if r.rule.Rate <= 0 {
			continue
		}
		r.rule.OnFire = count(r.kind)
		w.proxy.Add(r.rule)
	}
}

// creditLog counts the limiter's warnings that a cascade refund failed: a
// best-effort credit whose failure the caller never sees (it was told 429)
// and which leaves the refunded tokens in tc. Everything else is dropped.
type creditLog struct{ w *world }

func (creditLog) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }
func (h creditLog) Handle(_ context.Context, r slog.Record) error {
	if strings.Contains(r.Message, "cascade refund failed") {
		h.w.count(func(rep *Report) { rep.CreditsLost++ })
	}
	return nil
}
func (h creditLog) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h creditLog) WithGroup(string) slog.Handler      { return h }

// opTimeout bounds every limiter call of the load.
const opTimeout = 2 * time.Second

// load runs the goroutines for the configured duration.
func (w *world) load(ctx context.Context, f *follower) error {
	lims := make([]*limiter.Limiter, w.cfg.Limiters)
	for i := range lims {
		var err error
		// The SDK's default retries, as a service would configure them.
		if lims[i], err = limiter.New(w.proxy.DynamoDB(), w.table, w.ns, limiter.Options{Clock: w.now, Logger: slog.New(creditLog{w})}); err != nil {
			return err
		}
	}
	// presser is one more process, new, whose draw always lands on shard 0.
	presser, err := limiter.New(w.db, w.table, w.ns, limiter.Options{Clock: w.now, Rand: func(int) int { return 0 }})
	if err != nil {
		return err
	}
	pairs := w.pairs()
	// What the limits admit per second over the pairs, times Over, spread
	// over the goroutines; the quota pairs' draws come on top, at the same
	// rate per draw.
	var admits float64
	for _, p := range pairs {
		admits += float64(rpsOf(p.resource))
	}
	n := len(pairs)
	for range quotaWeight {
		for _, e := range quotaEntities {
			pairs = append(pairs, pair{e, resQuota})
		}
	}
	for range sessionWeight {
		for _, e := range sessionEntities {
			pairs = append(pairs, pair{e, resSession})
		}
	}
	admits *= float64(len(pairs)) / float64(n)
	interval := time.Duration(float64(time.Second) * float64(w.cfg.Goroutines) / (admits * w.cfg.Over))
	w.start = time.Now()
	deadline := w.start.Add(w.cfg.Duration)
	restarts := w.restartTimes()
	loadCtx, stopLoad := context.WithCancel(ctx)
	defer stopLoad()
	var wg sync.WaitGroup
	var panics atomic.Int64
	for g := range w.cfg.Goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() {
				if v := recover(); v != nil {
					panics.Add(1)
					fmt.Fprintf(w.log, "soak: goroutine %d panicked: %v\n", g, v)
				}
			}()
			lim := lims[g%len(lims)]
			next := w.start.Add(time.Duration(w.intn(int(interval))))
			for {
				if d := time.Until(next); d > 0 {
					time.Sleep(d)
				}
				if time.Now().After(deadline) || loadCtx.Err() != nil {
					return
				}
				w.step(loadCtx, lim, pairs[w.intn(len(pairs))])
				next = next.Add(interval)
			}
		}()
	}
	err = w.drive(ctx, f, presser, restarts, deadline)
	stopLoad() // an error ends the load early
	wg.Wait()
	w.end = w.now()
	w.report.Panics = panics.Load()
	if err != nil {
		return err
	}
	return ctx.Err()
}

// drive does the run's scheduled events until the deadline: the hot pair's
// wcu runs out at a third of the run, the aggregator is stopped and
// restarted at the planned instants, a rogue writer poisons the stream
// half way, and the quota pairs see theirs (runQuotaEvents: top-ups,
// doublings, an operator's reset).
func (w *world) drive(ctx context.Context, f *follower, presser *limiter.Limiter, restarts []time.Time, deadline time.Time) error {
	poisoned, pressed := false, false
	// The quota events run beside the others: an operator's calls take
	// seconds on a loaded emulator, which must delay neither the other
	// events nor the next quota event.
	qctx, stopQuota := context.WithCancel(ctx)
	quota := make(chan error, 1)
	go func() { quota <- w.runQuotaEvents(qctx, deadline) }()
	// So do the changes of the changing resource's limit.
	changes := make(chan error, 1)
	go func() { changes <- w.runLimitChanges(qctx, deadline) }()
	defer func() {
		stopQuota() // an error ends them early
		if quota != nil {
			<-quota
		}
		if changes != nil {
			<-changes
		}
	}()
	for time.Now().Before(deadline) && ctx.Err() == nil {
		select {
		case err := <-quota:
			if err != nil {
				return err
			}
			quota = nil
		case err := <-changes:
			if err != nil {
				return err
			}
			changes = nil
		default:
		}
		if !pressed && time.Since(w.start) > w.cfg.Duration/3 {
			pressed = true
			if err := w.pressure(ctx, presser); err != nil {
				return err
			}
		}
		if len(restarts) > 0 && time.Now().After(restarts[0]) {
			restarts = restarts[1:]
			if err := f.restart(ctx); err != nil {
				return err
			}
		}
		if !poisoned && time.Since(w.start) > w.cfg.Duration/2 {
			poisoned = true
			if err := w.poison(ctx); err != nil {
				return err
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	var errs []error
	if quota != nil {
		errs = append(errs, <-quota) // the event under way finishes; none starts
		quota = nil
	}
	if changes != nil {
		errs = append(errs, <-changes)
		changes = nil
	}
	return errors.Join(errs...)
}

// rpsOf is a resource's rps at setup.
func rpsOf(resource string) int64 {
	if resource == resImage {
		return rate / 2
	}
	return rate
}

// pairs are the (entity, resource) pairs the load draws from.
func (w *world) pairs() []pair {
	var ps []pair
	for _, e := range entities {
		for _, r := range []string{resChat, resImage, resEmbed} {
			ps = append(ps, pair{e, r})
		}
	}
	for _, e := range plain {
		ps = append(ps, pair{e, resChanging})
	}
	return ps
}

// restartTimes spreads the aggregator's restarts over the run.
func (w *world) restartTimes() []time.Time {
	var ts []time.Time
	for i := range max(w.cfg.Restarts, 0) {
		frac := (float64(i) + 0.2 + 0.6*w.float()) / float64(w.cfg.Restarts)
		ts = append(ts, w.start.Add(time.Duration(frac*float64(w.cfg.Duration))))
	}
	return ts
}

func (w *world) intn(n int) int {
	if n <= 0 {
		return 0
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.rng.IntN(n)
}

func (w *world) float() float64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.rng.Float64()
}

// step is one client request: an acquire, then (when admitted) a commit
// as it is, a commit after adjusting tps, or a rollback. A quota pair's is
// quotaStep.
func (w *world) step(ctx context.Context, lim *limiter.Limiter, p pair) {
	if p.resource == resQuota || p.resource == resSession {
		w.quotaStep(ctx, lim, p)
		return
	}
	consume := limiter.Consume{"rps": 1}
	if p.resource == resChat || p.resource == resEmbed {
		consume["tps"] = int64(1 + w.intn(60))
	}
	actx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	start := w.now()
	lease, err := lim.Acquire(actx, p.entity, p.resource, consume)
	if err == nil && p.resource == resChanging && !lease.Degraded() {
		w.noteChanging(p, span{start, w.now()}, false)
	}
	var rle *limiter.RateLimitExceeded
	var dis *limiter.ResourceDisabled
	switch {
	case err == nil && lease.Degraded():
		w.count(func(r *Report) { r.Degraded++ })
		return
	case err == nil:
	case errors.As(err, &rle):
		w.count(func(r *Report) { r.Rejected++ })
		return
	case errors.As(err, &dis):
		w.count(func(r *Report) { r.Disabled++ })
		return
	default:
		// Unavailable, or the deadline: the write may have landed.
		w.record(lease, p, consume, 0, func(a *account, limit string, n int64) { a.uncertain[limit] += n })
		w.count(func(r *Report) { r.Errors[errorKind(err)]++ })
		return
	}
	w.record(lease, p, consume, 1, func(a *account, limit string, n int64) { a.applied[limit] += n })
	w.count(func(r *Report) { r.Admitted++ })
	cctx, ccancel := context.WithTimeout(ctx, opTimeout)
	defer ccancel()
	switch roll := w.intn(10); {
	case roll == 0: // rollback
		start := w.now()
		err := lease.Rollback(cctx)
		if p.resource == resChanging {
			// A failed rollback may have credited too.
			w.noteChanging(p, span{start, w.now()}.failed(), true)
		}
		w.mu.Lock()
		for _, e := range chain(lease) {
			a := w.account(pair{e, p.resource})
			for name, n := range consume {
				if err != nil {
					a.uncertain[name] += n
				} else {
					a.applied[name] -= n
				}
			}
			if err == nil {
				a.returned += consume["rps"]
			}
		}
		w.mu.Unlock()
		w.count(func(r *Report) { r.Rollbacks++ })
	case roll < 4 && consume["tps"] > 0: // adjust tps, then commit
		delta := int64(w.intn(80)) - 40
		if err := lease.Adjust("tps", delta); err != nil {
			w.count(func(r *Report) { r.Errors["adjust: "+err.Error()]++ })
			return
		}
		err := lease.Commit(cctx)
		w.mu.Lock()
		for _, e := range chain(lease) {
			a := w.account(pair{e, p.resource})
			if err != nil {
				a.uncertain["tps"] += abs(delta)
			} else {
				a.applied["tps"] += delta
			}
		}
		w.mu.Unlock()
		w.count(func(r *Report) { r.Adjusted++ })
	default:
		if err := lease.Commit(cctx); err != nil {
			w.count(func(r *Report) { r.Errors["commit: "+errorKind(err)]++ })
		}
	}
}

// chain is the entities a lease debited: the entity and its cascade parent.
func chain(l *limiter.Lease) []string {
	if p := l.Parent(); p != "" {
		return []string{l.Entity(), p}
	}
	return []string{l.Entity()}
}

// record books consume on the pair's entity and, when the lease (or, for a
// failed acquire, the workload) says so, on the cascade parent. admitted
// counts rps admissions.
func (w *world) record(lease *limiter.Lease, p pair, consume limiter.Consume, admitted int64, book func(*account, string, int64)) {
	ents := []string{p.entity}
	switch {
	case lease != nil:
		ents = chain(lease)
	case p.entity == "team-a" || p.entity == "team-b":
		ents = append(ents, "team") // a failed cascade may have reached the parent
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, e := range ents {
		a := w.account(pair{e, p.resource})
		for name, n := range consume {
			book(a, name, n)
		}
		a.admitted += admitted * consume["rps"]
	}
}

func (w *world) count(f func(*Report)) {
	w.mu.Lock()
	defer w.mu.Unlock()
	f(w.report)
}

func errorKind(err error) string {
	var un *limiter.RateLimiterUnavailable
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return "deadline"
	case errors.As(err, &un):
		return "unavailable"
	}
	return fmt.Sprintf("%T", err)
}

func abs(n int64) int64 {
	if n < 0 {
		return -n
	}
	return n
}

// pressure puts the wcu of the hot pair's shard 0 five seconds of writes
// in debt after the refill it has earned since rf, as a partition
// hammered by more writes than it takes would be, and sends requests to
// the pair until one lands on shard 0 and the limiter doubles the shard
// count (docs/design.md §5), 4 to 8 (or further, when more requests land
// on the short shard meanwhile); the load goes on over the new shards.
// The limiter draws the shard of a request, so one request alone found
// shard 0 only one time in four; and a debt of one second was repaid
// before a request came on a machine loaded by other test binaries.
// Nothing else on the item changes: the write is pinned on rf.
func (w *world) pressure(ctx context.Context, lim *limiter.Limiter) error {
	key := schema.BucketKey(w.ns, "hot", resChat, 0).AttributeValues()
	for range 10 {
		got, err := w.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(w.table), Key: key, ConsistentRead: aws.Bool(true)})
		if err != nil {
			return err
		}
		img, err := bucketitem.Decode(got.Item)
		if err != nil {
			return err
		}
		// wcu refills 1000 tokens a second: 1000 millitokens a millisecond.
		debt := -(w.now().UnixMilli() - img.RF + 5000) * 1000
		_, err = w.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(w.table), Key: key,
			UpdateExpression:          aws.String("SET #w = :debt"),
			ConditionExpression:       aws.String("#rf = :rf"),
			ExpressionAttributeNames:  map[string]string{"#w": schema.BucketAttr(schema.WCULimit, schema.LimitTokens), "#rf": schema.AttrRF},
			ExpressionAttributeValues: map[string]types.AttributeValue{":debt": schema.Num(debt), ":rf": schema.Num(img.RF)},
		})
		var ccf *types.ConditionalCheckFailedException
		if errors.As(err, &ccf) {
			continue // rf moved meanwhile: read again
		}
		if err != nil {
			return err
		}
		return w.pressUntilDoubled(ctx, lim, key, img.ShardCount)
	}
	return errors.New("soak: the hot shard's rf kept moving")
}

// pressUntilDoubled sends requests to the hot pair until shard 0's count
// is above shards (64 requests at most: a miss of shard 0 every time is a
// chance of (3/4)^64).
func (w *world) pressUntilDoubled(ctx context.Context, lim *limiter.Limiter, key map[string]types.AttributeValue, shards int64) error {
	for range 64 {
		w.step(ctx, lim, pair{"hot", resChat})
		got, err := w.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(w.table), Key: key, ConsistentRead: aws.Bool(true)})
		if err != nil {
			return err
		}
		img, err := bucketitem.Decode(got.Item)
		if err != nil {
			return err
		}
		if img.ShardCount > shards {
			return nil
		}
	}
	return nil
}

// poison writes malformed bucket items, as a rogue writer would: their
// stream records are not decodable bucket images.
func (w *world) poison(ctx context.Context) error {
	for i := range max(w.cfg.Poison, 0) {
		k := schema.BucketKey(w.ns, fmt.Sprintf("rogue-%d", i), resChat, 0)
		it := k.AttributeValues()
		it[schema.AttrEntityID] = &types.AttributeValueMemberS{Value: fmt.Sprintf("rogue-%d", i)}
		it[schema.AttrResource] = &types.AttributeValueMemberS{Value: resChat}
		it[schema.BucketAttr("rps", schema.LimitConsumed)] = &types.AttributeValueMemberS{Value: "not a number"}
		it[schema.BucketAttr("rps", schema.LimitTokens)] = &types.AttributeValueMemberL{}
		if _, err := w.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(w.table), Item: it}); err != nil {
			return err
		}
	}
	w.report.Poisoned = max(w.cfg.Poison, 0)
	return nil
}
