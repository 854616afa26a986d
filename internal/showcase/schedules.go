package showcase

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/zae-limiter/zae-limiter-go/core/aggregator/maintenance"
	"github.com/zae-limiter/zae-limiter-go/core/bucket"
	"github.com/zae-limiter/zae-limiter-go/core/bucketitem"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
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
