package faultproxy

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"

	"github.com/zae-limiter/zae-limiter-go/internal/ddbtest"
)

func TestMain(m *testing.M) { ddbtest.Main(m) }

// noRetry makes a client give up after its first attempt.
func noRetry(o *dynamodb.Options) { o.RetryMaxAttempts = 1 }

func noRetryStreams(o *dynamodbstreams.Options) { o.RetryMaxAttempts = 1 }

// checksums turns response CRC32 validation back on (ddblocal turns it off).
func checksums(o *dynamodb.Options) { o.DisableValidateResponseChecksum = false }

// withoutErrorTypeHeader makes the client decode errors from the body alone.
func withoutErrorTypeHeader(o *dynamodb.Options) {
	o.HTTPClient = stripErrorType{next: o.HTTPClient}
}

type stripErrorType struct{ next dynamodb.HTTPClient }

func (s stripErrorType) Do(r *http.Request) (*http.Response, error) {
	resp, err := s.next.Do(r)
	if resp != nil {
		resp.Header.Del("X-Amzn-ErrorType")
	}
	return resp, err
}

// testCtx bounds one test's calls so a bug fails the test instead of hanging it.
func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func key(pk string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		"PK": &types.AttributeValueMemberS{Value: pk},
		"SK": &types.AttributeValueMemberS{Value: "s"},
	}
}

func item(pk string, n int) map[string]types.AttributeValue {
	it := key(pk)
	it["n"] = &types.AttributeValueMemberN{Value: strconv.Itoa(n)}
	return it
}

func put(ctx context.Context, db *dynamodb.Client, table, pk string) error {
	_, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: item(pk, 1)})
	return err
}

// exists reads an item straight from the emulator (not through a proxy) and
// reports whether it exists.
func exists(t *testing.T, tbl *ddbtest.Table, pk string) (map[string]types.AttributeValue, bool) {
	t.Helper()
	out, err := tbl.DB.GetItem(testCtx(t), &dynamodb.GetItemInput{
		TableName: aws.String(tbl.Name), Key: key(pk), ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		t.Fatalf("read %s back: %v", pk, err)
	}
	return out.Item, out.Item != nil
}

// numberAttr returns a number attribute of an item.
func numberAttr(t *testing.T, it map[string]types.AttributeValue, name string) string {
	t.Helper()
	n, ok := it[name].(*types.AttributeValueMemberN)
	if !ok {
		t.Fatalf("attribute %s = %#v, want a number", name, it[name])
	}
	return n.Value
}

// await receives from ch or fails the test after a generous bound (a guard
// against a bug, never a wait that makes the test pass).
func await[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(30 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

func isDeadline(err error) bool { return errors.Is(err, context.DeadlineExceeded) }
