package showcase

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"sort"
	"strings"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/aggregator"
	"github.com/zae-limiter/zae-limiter-go/core/condwrite"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
	"github.com/zae-limiter/zae-limiter-go/core/streampoll"
	"github.com/zae-limiter/zae-limiter-go/functions/aggregator/handler"
)

// snapshots runs the aggregator on the table's real stream, as its Lambda
// would, and shows the usage snapshots the acquire traffic turned into:
// hourly and daily, exact to the token (docs/design.md §6). A second pass over
// the same records shows that redelivery changes nothing (docs/design.md §6).
// Its client is the Lambda's: condwrite sends the snapshot writes itself
// (docs/design.md §6, "Snapshot writes without the SDK's stack").
func (d *demo) snapshots(ctx context.Context) error {
	logs := &bytes.Buffer{}
	log := slog.New(slog.NewJSONHandler(logs, nil))
	direct := condwrite.New(ctx, d.db)
	h, err := handler.New(direct, handler.Settings{Config: aggregator.Config{TableName: d.table}}, log)
	if err != nil {
		return err
	}
	var reported int
	drain := func() (streampoll.Stats, error) {
		p, err := streampoll.New(d.streams, d.streamARN, streampoll.Options{
			Logger: slog.New(slog.DiscardHandler),
			Handler: func(ctx context.Context, ev events.DynamoDBEvent) (resp events.DynamoDBEventResponse, err error) {
				resp, err = h.Handle(ctx, ev)
				reported += len(resp.BatchItemFailures)
				return resp, err
			},
		})
		if err != nil {
			return streampoll.Stats{}, err
		}
		return p.DrainOnce(ctx)
	}
	st, err := drain()
	if err != nil {
		return err
	}
	fmt.Fprintf(d.out, "the aggregator read %d stream records in %d batches (from the start of the stream); %d reported as failed\n",
		st.Records, st.Batches, reported)
	before, err := d.usage(ctx)
	if err != nil {
		return err
	}
	for _, line := range before {
		fmt.Fprintln(d.out, line)
	}
	if _, err := drain(); err != nil {
		return err
	}
	after, err := d.usage(ctx)
	if err != nil {
		return err
	}
	same := strings.Join(before, "\n") == strings.Join(after, "\n")
	fmt.Fprintf(d.out, "the same records delivered again: snapshots unchanged: %v (seq# high-water marks)\n", same)
	c := direct.Stats()
	fmt.Fprintf(d.out, "snapshot writes sent by condwrite without the SDK's stack: %d applied, %d refused conditions read (the redelivery); %d sent again through the SDK, %d passed to it\n",
		c.Succeeded, c.Refused, c.Resent, c.Passed)
	return d.scheduledRefill(ctx)
}

// usage lists the snapshot items of the acquire step's resource, one line
// each: window, entity, start and the counters (GSI2: USAGE#… items).
func (d *demo) usage(ctx context.Context) ([]string, error) {
	out, err := d.db.Query(ctx, &dynamodb.QueryInput{
		TableName: aws.String(d.table), IndexName: aws.String(schema.GSI2),
		KeyConditionExpression:    aws.String("#pk = :pk AND begins_with(#sk, :u)"),
		ExpressionAttributeNames:  map[string]string{"#pk": schema.AttrGSI2PK, "#sk": schema.AttrGSI2SK},
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": s(schema.ResourcePK(d.ns, acqResource)), ":u": s(schema.PrefixUsage)},
	})
	if err != nil {
		return nil, err
	}
	var lines []string
	for _, k := range out.Items {
		got, err := d.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(d.table), ConsistentRead: aws.Bool(true),
			Key: map[string]types.AttributeValue{schema.AttrPK: k[schema.AttrPK], schema.AttrSK: k[schema.AttrSK]}})
		if err != nil {
			return nil, err
		}
		it := got.Item
		var counters []string
		for name, v := range it {
			nv, ok := v.(*types.AttributeValueMemberN)
			if !ok || name == schema.AttrTTL || name == schema.AttrTotalEvents {
				continue
			}
			counters = append(counters, name+"="+nv.Value)
		}
		sort.Strings(counters)
		lines = append(lines, fmt.Sprintf("  %-7s %-8s %s  %s  total_events=%s", str(it, schema.AttrWindow), str(it, schema.AttrEntityID),
			str(it, schema.AttrWindowStart), strings.Join(counters, " "), numStr(it, schema.AttrTotalEvents)))
	}
	sort.Strings(lines)
	return lines, nil
}

func str(it map[string]types.AttributeValue, a string) string {
	if v, ok := it[a].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return "-"
}

func numStr(it map[string]types.AttributeValue, a string) string {
	if v, ok := it[a].(*types.AttributeValueMemberN); ok {
		return v.Value
	}
	return "-"
}
