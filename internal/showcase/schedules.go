package showcase

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/zae-limiter/zae-limiter-go/core/aggregator/maintenance"
	"github.com/zae-limiter/zae-limiter-go/core/bucket"
	"github.com/zae-limiter/zae-limiter-go/core/bucketitem"
	"github.com/zae-limiter/zae-limiter-go/core/control"
	"github.com/zae-limiter/zae-limiter-go/core/limit"
	"github.com/zae-limiter/zae-limiter-go/core/limiter"
	"github.com/zae-limiter/zae-limiter-go/core/schedule"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
	"github.com/zae-limiter/zae-limiter-go/internal/clock"
)

// scheduledRefill shows the aggregator's maintenance refilling a bucket
// that a Python client of the same table stamped with a parameter
// schedule (docs/design.md §6, §14): rpm halved during business hours in
// New York. The maintainer runs on an injected clock at three instants, so
// the figures do not depend on today's date.
func (d *demo) scheduledRefill(ctx context.Context) error {
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		return err
	}
	fmt.Fprintln(d.out, "a bucket a Python client stamped with a schedule (sched \"h9-17w1-5s500\", sched_tz America/New_York:")
	fmt.Fprintln(d.out, "rpm 100 a minute, halved 09:00-17:59 Monday to Friday), refilled by the aggregator's maintenance:")
	rpm := bucket.Params{Capacity: 100_000, RefillAmount: 100_000, RefillPeriod: 60_000}
	for i, c := range []struct {
		at    time.Time
		since time.Duration // since the bucket's rf
	}{
		{time.Date(2027, 1, 15, 10, 0, 0, 0, ny), 30 * time.Second}, // a Friday
		{time.Date(2027, 1, 15, 17, 59, 30, 0, ny), 1200 * time.Millisecond},
		{time.Date(2027, 1, 16, 10, 0, 0, 0, ny), 30 * time.Second}, // the Saturday
	} {
		id := schema.BucketID{Namespace: d.ns, Entity: fmt.Sprintf("py-client-%d", i), Resource: "scheduled/demo"}
		now := c.at.UnixMilli()
		n := bucketitem.New{ID: id, RF: now - c.since.Milliseconds(), ShardCount: 1,
			Limits: []bucketitem.NewLimit{{Name: "rpm", Tokens: 1_000, Consumed: 60_000, Params: rpm}}}
		item := n.Item()
		item[schema.AttrSched] = s("h9-17w1-5s500")
		item[schema.AttrSchedTZ] = s("America/New_York")
		if _, err := d.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(d.table), Item: item}); err != nil {
			return err
		}
		oldItem := n.Item()
		oldItem[schema.BucketAttr("rpm", schema.LimitConsumed)] = schema.Num(0) // the batch consumed 60 tokens
		m := maintenance.New(d.db, d.table, maintenance.Options{Clock: func() time.Time { return c.at }})
		st := m.Run(ctx, []maintenance.Record{{Seq: "1", ID: id, NewItem: item, OldItem: oldItem}})
		got, err := d.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(d.table), Key: id.Key().AttributeValues(), ConsistentRead: aws.Bool(true)})
		if err != nil {
			return err
		}
		img, err := bucketitem.Decode(got.Item)
		if err != nil {
			return err
		}
		vu := "none"
		if img.HasVU {
			vu = time.UnixMilli(img.VU).In(ny).Format("15:04:05.000 MST")
		}
		fmt.Fprintf(d.out, "  %s  rpm 1 → %s tokens, vu %s  (%d refill)\n",
			c.at.Format("Mon 15:04:05 MST"), tokens(img.Limit("rpm").Tokens), vu, st.Refills)
	}
	return nil
}

// tokens renders millitokens as tokens.
func tokens(milli int64) string {
	if milli%bucket.MilliPerToken == 0 {
		return fmt.Sprint(milli / bucket.MilliPerToken)
	}
	return fmt.Sprintf("%.3f", float64(milli)/bucket.MilliPerToken)
}

// scheduledLimit shows a limit with a parameter schedule set through the
// operator API and applied by the client (docs/design.md §14), on a clock
// of its own at fixed instants.
func (d *demo) scheduledLimit(ctx context.Context) error {
	const resource = "scheduled/chat"
	at := func(hms string) time.Time {
		t, err := time.Parse(time.RFC3339, "2026-11-30T"+hms+"Z")
		if err != nil {
			panic(err)
		}
		return t
	}
	clk := clock.NewManual(at("11:59:30"))
	lim, err := limiter.New(d.db, d.table, d.ns, limiter.Options{Clock: clk.Now})
	if err != nil {
		return err
	}
	ctl := control.New(d.db, d.table, control.Options{Clock: clk.Now, Caches: []control.Cache{lim}})
	halved := schedule.Schedule{{Cron: schedule.MustParseCron("* 12-13 * * *"), ScalePerMille: 500}}
	if _, err := ctl.SetResourceLimits(ctx, d.ns, resource, []limit.Limit{limit.PerMinute("rpm", 100).WithSchedule(halved, "")}, "ops@example.com"); err != nil {
		return err
	}
	fmt.Fprintln(d.out, "a scheduled limit: rpm 100 a minute, halved 12:00-13:59 UTC (limit.WithSchedule, set through core/control):")
	for _, step := range []struct {
		at     string
		tokens int64
	}{{"11:59:30", 80}, {"11:59:50", 10}, {"12:00:10", 1}, {"12:00:10", 51}} {
		clk.Set(at(step.at))
		lease, err := lim.Acquire(ctx, "chat-user", resource, limiter.Consume{"rpm": step.tokens})
		var rle *limiter.RateLimitExceeded
		switch {
		case errors.As(err, &rle):
			wait := rle.Statuses[0].RetryAfter.String()
			if rle.Statuses[0].Never {
				wait = "never (above the ceiling in force)"
			}
			fmt.Fprintf(d.out, "  %s  %2d asked: 429, %s\n", step.at, step.tokens, wait)
			continue
		case err != nil:
			return err
		}
		left, _ := lease.Remaining("rpm")
		got, err := d.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(d.table), ConsistentRead: aws.Bool(true),
			Key: schema.BucketKey(d.ns, "chat-user", resource, 0).AttributeValues()})
		if err != nil {
			return err
		}
		img, err := bucketitem.Decode(got.Item)
		if err != nil {
			return err
		}
		fmt.Fprintf(d.out, "  %s  %2d taken: %d left, vu %s\n", step.at, step.tokens, left, time.UnixMilli(img.VU).UTC().Format("15:04:05.000"))
	}
	return nil
}
