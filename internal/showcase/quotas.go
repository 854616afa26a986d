package showcase

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/zae-limiter/zae-limiter-go/core/bucketitem"
	"github.com/zae-limiter/zae-limiter-go/core/control"
	"github.com/zae-limiter/zae-limiter-go/core/limit"
	"github.com/zae-limiter/zae-limiter-go/core/limiter"
	"github.com/zae-limiter/zae-limiter-go/core/schedule"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
	"github.com/zae-limiter/zae-limiter-go/internal/clock"
)

// dailyQuota shows a calendar quota (docs/design.md §15) set through the
// operator API and spent by the client on a clock of its own at fixed
// instants in New York: exhausted, its 429 names the midnight reset; an
// operator's top-up raises its ceiling for the day; past midnight the
// first acquire restores it in one lump while tc keeps climbing.
func (d *demo) dailyQuota(ctx context.Context) error {
	const resource = "quota/chat"
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		return err
	}
	at := func(s string) time.Time {
		t, err := time.ParseInLocation("2006-01-02 15:04:05", s, ny)
		if err != nil {
			panic(err)
		}
		return t
	}
	clk := clock.NewManual(at("2026-11-30 21:00:00"))
	lim, err := limiter.New(d.db, d.table, d.ns, limiter.Options{Clock: clk.Now})
	if err != nil {
		return err
	}
	ctl := control.New(d.db, d.table, control.Options{Clock: clk.Now, Caches: []control.Cache{lim}})
	midnight := schedule.Resets{schedule.MustParseCron("0 0 * * *")}
	tpd := limit.Quota("tpd", 1_000, midnight, "America/New_York")
	if _, err := ctl.SetResourceLimits(ctx, d.ns, resource, []limit.Limit{tpd}, "ops@example.com"); err != nil {
		return err
	}
	fmt.Fprintln(d.out, "a daily quota: tpd 1,000 tokens a day, resetting at midnight in New York (limit.Quota, set through core/control):")
	state := func() (string, error) {
		img, q, err := d.shardLimit(ctx, "chat-user", resource, "tpd")
		if err != nil || q == nil {
			return "no bucket", err
		}
		s := fmt.Sprintf("tk %s, tc %s, gc %d", tokens(q.Tokens), tokens(q.Consumed), q.GrantShards)
		if q.Fields.Has(bucketitem.FieldTopUp) {
			s += ", tu " + tokens(q.TopUp)
		}
		if img.HasVU && img.VU == 0 {
			return s + ", vu 0: the next acquire materialises", nil
		}
		s += ", vu " + time.UnixMilli(img.VU).In(ny).Format("Jan 2 15:04 MST")
		if img.HasRecheck {
			s += ": a new bucket's recheck deadline, its limits confirmed against config by then"
		}
		return s, nil
	}
	take := func(when string, n int64) error {
		clk.Set(at(when))
		return d.quotaTake(ctx, lim, quotaUse{entity: "chat-user", resource: resource, limit: "tpd", label: when[11:], amount: n,
			until: func(wait time.Duration) string {
				return clk.Now().Add(wait).In(ny).Format("Jan 2 15:04 MST") + ", the reset"
			}}, state)
	}
	for _, s := range []struct {
		when string
		n    int64
	}{{"2026-11-30 21:00:00", 600}, {"2026-11-30 21:30:00", 400}, {"2026-11-30 22:00:00", 100}} {
		if err := take(s.when, s.n); err != nil {
			return err
		}
	}
	op, err := ctl.TopUp(ctx, d.ns, "chat-user", resource, map[string]int64{"tpd": 250}, control.OperationOptions{OperationID: "purchase-42", Principal: "billing"})
	if err != nil {
		return err
	}
	s, err := state()
	if err != nil {
		return err
	}
	fmt.Fprintf(d.out, "  22:05:00  top-up of 250 (purchase-42): %d granted over %d shard, above the day's 1,000 until midnight (%s)\n",
		op.Granted["tpd"], op.ShardsWritten, s)
	for _, s := range []struct {
		when string
		n    int64
	}{{"2026-11-30 22:10:00", 250}, {"2026-11-30 23:59:59", 1}, {"2026-12-01 00:00:05", 100}} {
		if err := take(s.when, s.n); err != nil {
			return err
		}
	}
	return nil
}

// sessionQuota shows a session quota (docs/design.md §15) on a clock of
// its own: a 5-hour window of 1,000 tokens opens at the first use, its
// 429 names the window's end, a top-up adds to the window, a reset ends
// it, the next use opens a new one, and the first use after that one
// ended opens another, while tc keeps climbing.
func (d *demo) sessionQuota(ctx context.Context) error {
	const resource = "quota/agent"
	at := func(s string) time.Time {
		t, err := time.Parse("2006-01-02 15:04", s)
		if err != nil {
			panic(err)
		}
		return t
	}
	clk := clock.NewManual(at("2026-11-30 09:00"))
	lim, err := limiter.New(d.db, d.table, d.ns, limiter.Options{Clock: clk.Now})
	if err != nil {
		return err
	}
	ctl := control.New(d.db, d.table, control.Options{Clock: clk.Now, Caches: []control.Cache{lim}})
	session := limit.Session("tokens", 1_000, 5*time.Hour)
	if _, err := ctl.SetResourceLimits(ctx, d.ns, resource, []limit.Limit{session}, "ops@example.com"); err != nil {
		return err
	}
	fmt.Fprintln(d.out, "\na session quota: 1,000 tokens a 5-hour window that opens on first use (limit.Session, set past the 0.15.0 reader gate):")
	hm := func(ms int64) string { return time.UnixMilli(ms).UTC().Format("15:04") }
	state := func() (string, error) {
		_, q, err := d.shardLimit(ctx, "agent-user", resource, "tokens")
		if err != nil || q == nil {
			return "no bucket", err
		}
		s := fmt.Sprintf("tk %s, tc %s", tokens(q.Tokens), tokens(q.Consumed))
		if q.Fields.Has(bucketitem.FieldTopUp) {
			s += ", tu " + tokens(q.TopUp)
		}
		if end, ok := q.WindowEnd(); ok {
			if end > clk.Now().UnixMilli() {
				s += fmt.Sprintf(", window %s–%s", hm(q.WindowStart), hm(end))
			} else {
				s += fmt.Sprintf(", window ended at %s", hm(end))
			}
		}
		return s, nil
	}
	take := func(when string, n int64) error {
		clk.Set(at(when))
		return d.quotaTake(ctx, lim, quotaUse{entity: "agent-user", resource: resource, limit: "tokens", label: when[11:], amount: n,
			until: func(wait time.Duration) string {
				return clk.Now().Add(wait).UTC().Format("15:04") + ", the window's end"
			}}, state)
	}
	for _, s := range []struct {
		when string
		n    int64
	}{{"2026-11-30 09:00", 600}, {"2026-11-30 10:00", 400}, {"2026-11-30 11:00", 100}} {
		if err := take(s.when, s.n); err != nil {
			return err
		}
	}
	clk.Set(at("2026-11-30 11:05"))
	op, err := ctl.TopUp(ctx, d.ns, "agent-user", resource, map[string]int64{"tokens": 250}, control.OperationOptions{OperationID: "purchase-43", Principal: "billing"})
	if err != nil {
		return err
	}
	s, err := state()
	if err != nil {
		return err
	}
	fmt.Fprintf(d.out, "  11:05  top-up of 250 (purchase-43): %d granted into the window (%s)\n", op.Granted["tokens"], s)
	if err := take("2026-11-30 11:10", 250); err != nil {
		return err
	}
	clk.Set(at("2026-11-30 11:15"))
	if _, err := ctl.Reset(ctx, d.ns, "agent-user", resource, nil, control.OperationOptions{Principal: "ops@example.com"}); err != nil {
		return err
	}
	if s, err = state(); err != nil {
		return err
	}
	fmt.Fprintf(d.out, "  11:15  reset: the window ends now, the next use opens a new one in full (%s)\n", s)
	for _, s := range []struct {
		when string
		n    int64
	}{{"2026-11-30 11:20", 100}, {"2026-11-30 17:00", 50}} {
		if err := take(s.when, s.n); err != nil {
			return err
		}
	}
	return nil
}

// shardLimit reads shard 0 of (entity, resource), strongly consistent, and
// returns it with its limit name (nil when there is no bucket or no such
// limit on it).
func (d *demo) shardLimit(ctx context.Context, entity, resource, name string) (*bucketitem.Image, *bucketitem.LimitImage, error) {
	got, err := d.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(d.table), ConsistentRead: aws.Bool(true),
		Key: schema.BucketKey(d.ns, entity, resource, 0).AttributeValues()})
	if err != nil {
		return nil, nil, err
	}
	img, err := bucketitem.Decode(got.Item)
	if err != nil {
		return nil, nil, err
	}
	return &img, img.Limit(name), nil
}

// quotaUse is one acquire of a quota demo: who takes how much of which
// limit, the line's label, and how a 429's retry instant reads.
type quotaUse struct {
	entity, resource, limit, label string
	amount                         int64
	until                          func(wait time.Duration) string
}

// quotaTake acquires u and prints the verdict: what is left and the
// bucket's state after an admission, the retry-after and its instant
// after a 429.
func (d *demo) quotaTake(ctx context.Context, lim *limiter.Limiter, u quotaUse, state func() (string, error)) error {
	lease, err := lim.Acquire(ctx, u.entity, u.resource, limiter.Consume{u.limit: u.amount})
	var rle *limiter.RateLimitExceeded
	switch {
	case errors.As(err, &rle):
		wait, never := rle.RetryAfter()
		if never {
			fmt.Fprintf(d.out, "  %s  %4d asked: 429, never\n", u.label, u.amount)
			return nil
		}
		fmt.Fprintf(d.out, "  %s  %4d asked: 429, retry after %v: at %s\n", u.label, u.amount, wait, u.until(wait))
		return nil
	case err != nil:
		return err
	}
	left, _ := lease.Remaining(u.limit)
	st, err := state()
	if err != nil {
		return err
	}
	fmt.Fprintf(d.out, "  %s  %4d taken: %d left (%s)\n", u.label, u.amount, left, st)
	return nil
}
