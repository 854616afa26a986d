package aggregator

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/zae-limiter/zae-limiter-go/core/streamimage"
)

// failingDB fails every call.
type failingDB struct{}

var errFailing = errors.New("failingDB: unavailable")

func (failingDB) UpdateItem(context.Context, *dynamodb.UpdateItemInput, ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	return nil, errFailing
}

func (failingDB) PutItem(context.Context, *dynamodb.PutItemInput, ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	return nil, errFailing
}

func (failingDB) GetItem(context.Context, *dynamodb.GetItemInput, ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	return nil, errFailing
}

// TestProcessTextResultOwnsItsStrings: the sequence number ProcessText
// names for redelivery is a string of its own, not a view of the event's
// bytes, which the Lambda runtime writes again for the next invocation.
func TestProcessTextResultOwnsItsStrings(t *testing.T) {
	payload := []byte(seeds[0])
	recs, err := streamimage.ReadEvent(payload)
	if err != nil {
		t.Fatal(err)
	}
	a, err := New(failingDB{}, Config{TableName: "t", Windows: []Window{Hourly}}, Options{
		Logger: quiet, Clock: func() time.Time { return time.Unix(1796040000, 0) },
	})
	if err != nil {
		t.Fatal(err)
	}
	res, err := a.ProcessText(context.Background(), recs)
	if err != nil || res.RedeliverFrom == "" {
		t.Fatalf("with every write failing: %+v, %v; want a record to redeliver from", res, err)
	}
	want := strings.Clone(res.RedeliverFrom)
	for i := range payload {
		payload[i] = '9'
	}
	if res.RedeliverFrom != want {
		t.Fatalf("RedeliverFrom changed with the payload: %q, was %q", res.RedeliverFrom, want)
	}
}
