package faultproxy

import (
	"bytes"
	"errors"
	"maps"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	streamstypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/zae-limiter/zae-limiter-go/internal/ddbtest"
)

// TestRetryableFaultsAreRetriedTransparently shows that with the SDK's default
// retries a single transient fault (Count: 1) is retried and the write lands,
// with exactly one extra call.
func TestRetryableFaultsAreRetriedTransparently(t *testing.T) {
	tbl := ddbtest.NewTable(t)
	for _, f := range []Fault{Throttling(), ProvisionedThroughputExceeded(), RequestLimitExceeded(), InternalServerError(), ServiceUnavailable()} {
		t.Run(f.String(), func(t *testing.T) {
			t.Parallel()
			p := Start(t, tbl.Endpoint)
			id := p.Add(Rule{Operation: "PutItem", Fault: f, Count: 1})
			pk := "retried-" + f.String()
			if err := put(testCtx(t), p.DynamoDB(), tbl.Name, pk); err != nil {
				t.Fatalf("PutItem with default retries: %v", err)
			}
			if _, ok := exists(t, tbl, pk); !ok {
				t.Fatal("the retried write is not in the table")
			}
			if got := p.Fired(id); got != 1 {
				t.Errorf("rule fired %d times, want 1", got)
			}
			if got, want := p.StatsFor("PutItem"), (OpStats{Requests: 2, Forwarded: 1, Injected: 1, Succeeded: 1}); got != want {
				t.Errorf("stats = %+v, want %+v", got, want)
			}
		})
	}
}

// rateRun sends n GetItem calls one at a time through a proxy with a Rate
// rule and returns which of them failed.
func rateRun(t *testing.T, tbl *ddbtest.Table, n int, rate float64, opt Option) (pattern []bool, p *Proxy, id RuleID) {
	t.Helper()
	p = Start(t, tbl.Endpoint, opt)
	id = p.Add(Rule{Operation: "GetItem", Fault: InternalServerError(), Rate: rate})
	db := p.DynamoDB(noRetry)
	ctx := testCtx(t)
	for range n {
		_, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(tbl.Name), Key: key("rate")})
		var ise *types.InternalServerError
		if err != nil && !errors.As(err, &ise) {
			t.Fatalf("GetItem: %v", err)
		}
		pattern = append(pattern, err != nil)
	}
	return pattern, p, id
}

// TestRateIsDeterministic shows a Rate 0.5 rule fires on exactly the requests
// the injected seeded source picks, the same on every run, and that the
// counters agree with what the client saw.
func TestRateIsDeterministic(t *testing.T) {
	tbl := ddbtest.NewTable(t)
	const n, rate = 40, 0.5
	src := func() *rand.Rand { return rand.New(rand.NewPCG(7, 11)) }

	got, p, id := rateRun(t, tbl, n, rate, WithRand(src()))
	replay := src()
	fails := 0
	for i := range n {
		want := replay.Float64() < rate
		if got[i] != want {
			t.Errorf("request %d failed = %v, want %v from the seeded source", i, got[i], want)
		}
		if want {
			fails++
		}
	}
	if fails == 0 || fails == n {
		t.Fatalf("seed gives %d of %d; pick a seed that exercises both outcomes", fails, n)
	}
	if p.Fired(id) != fails {
		t.Errorf("Fired = %d, want %d", p.Fired(id), fails)
	}
	want := OpStats{Requests: n, Forwarded: n - fails, Injected: fails, Succeeded: n - fails}
	if s := p.StatsFor("GetItem"); s != want {
		t.Errorf("stats = %+v, want %+v", s, want)
	}

	// WithSeed: two proxies with one seed fault the same requests.
	a, _, _ := rateRun(t, tbl, n, rate, WithSeed(42))
	b, _, _ := rateRun(t, tbl, n, rate, WithSeed(42))
	if !equalBools(a, b) {
		t.Errorf("same seed, different faults:\n%v\n%v", a, b)
	}
}

func equalBools(a, b []bool) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestRulesFilterByOperation shows a rule for one operation leaves every
// other operation, DynamoDB Streams included, untouched, and that a rule may
// name the whole X-Amz-Target or no operation at all.
func TestRulesFilterByOperation(t *testing.T) {
	tbl := ddbtest.NewTable(t, ddbtest.WithStream())
	ctx := testCtx(t)
	if err := put(ctx, tbl.DB, tbl.Name, "seed"); err != nil {
		t.Fatal(err)
	}
	p := Start(t, tbl.Endpoint)
	p.Add(Rule{Operation: "PutItem", Fault: Throttling()})
	db := p.DynamoDB(noRetry)

	for range 2 {
		var te *types.ThrottlingException
		if err := put(ctx, db, tbl.Name, "blocked"); !errors.As(err, &te) {
			t.Fatalf("PutItem error = %v, want *types.ThrottlingException", err)
		}
	}
	if _, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(tbl.Name), Key: key("seed")}); err != nil {
		t.Errorf("GetItem: %v", err)
	}
	if _, err := db.Query(ctx, &dynamodb.QueryInput{
		TableName:                 aws.String(tbl.Name),
		KeyConditionExpression:    aws.String("PK = :pk"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": &types.AttributeValueMemberS{Value: "seed"}},
	}); err != nil {
		t.Errorf("Query: %v", err)
	}
	if _, err := db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(tbl.Name), Key: key("seed"), UpdateExpression: aws.String("SET m = :m"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":m": &types.AttributeValueMemberS{Value: "x"}},
	}); err != nil {
		t.Errorf("UpdateItem: %v", err)
	}
	if _, err := db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Put: &types.Put{TableName: aws.String(tbl.Name), Item: item("via-transaction", 1)}},
	}}); err != nil {
		t.Errorf("TransactWriteItems: %v", err)
	}
	if _, err := p.Streams(noRetryStreams).DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(tbl.StreamARN)}); err != nil {
		t.Errorf("DescribeStream: %v", err)
	}
	want := map[string]OpStats{
		"PutItem":            {Requests: 2, Injected: 2},
		"GetItem":            {Requests: 1, Forwarded: 1, Succeeded: 1},
		"Query":              {Requests: 1, Forwarded: 1, Succeeded: 1},
		"UpdateItem":         {Requests: 1, Forwarded: 1, Succeeded: 1},
		"TransactWriteItems": {Requests: 1, Forwarded: 1, Succeeded: 1},
		"DescribeStream":     {Requests: 1, Forwarded: 1, Succeeded: 1},
	}
	if got := p.Stats(); !maps.Equal(got, want) {
		t.Errorf("stats =\n%+v\nwant\n%+v", got, want)
	}

	t.Run("full-target", func(t *testing.T) {
		p := Start(t, tbl.Endpoint)
		p.Add(Rule{Operation: "DynamoDB_20120810.GetItem", Fault: InternalServerError()})
		_, err := p.DynamoDB(noRetry).GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(tbl.Name), Key: key("seed")})
		var ise *types.InternalServerError
		if !errors.As(err, &ise) {
			t.Errorf("error = %v, want *types.InternalServerError", err)
		}
	})

	t.Run("any-operation", func(t *testing.T) {
		p := Start(t, tbl.Endpoint)
		p.Add(Rule{Fault: InternalServerError(), Count: 1})
		_, err := p.Streams(noRetryStreams).DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(tbl.StreamARN)})
		var ise *streamstypes.InternalServerError
		if !errors.As(err, &ise) {
			t.Errorf("DescribeStream error = %v, want *streamstypes.InternalServerError", err)
		}
		if err := put(ctx, p.DynamoDB(noRetry), tbl.Name, "after-any"); err != nil {
			t.Errorf("PutItem after the Count:1 rule was spent: %v", err)
		}
	})
}

// TestMatchAfterCountRemoveReset shows the finer controls: Match narrows a
// rule to one key, After skips the first matching requests, Count caps the
// fires, Remove and Reset take rules away.
func TestMatchAfterCountRemoveReset(t *testing.T) {
	tbl := ddbtest.NewTable(t)
	ctx := testCtx(t)
	p := Start(t, tbl.Endpoint)
	victim := func(_ string, body []byte) bool { return bytes.Contains(body, []byte(`"victim"`)) }
	id := p.Add(Rule{Operation: "PutItem", Fault: RequestLimitExceeded(), After: 2, Count: 2, Match: victim})
	db := p.DynamoDB(noRetry)

	steps := []struct {
		pk   string
		fail bool
	}{
		{"bystander", false}, // does not match: not counted toward After
		{"victim", false},    // 1st match: skipped by After
		{"bystander", false},
		{"victim", false}, // 2nd match: skipped by After
		{"victim", true},  // fires (1)
		{"bystander", false},
		{"victim", true},  // fires (2)
		{"victim", false}, // Count spent
	}
	for i, s := range steps {
		err := put(ctx, db, tbl.Name, s.pk)
		var rle *types.RequestLimitExceeded
		if got := errors.As(err, &rle); got != s.fail || (err != nil && !got) {
			t.Errorf("step %d (%s): error = %v, want fault %v", i, s.pk, err, s.fail)
		}
	}
	if got := p.Fired(id); got != 2 {
		t.Errorf("Fired = %d, want 2", got)
	}

	id2 := p.Add(Rule{Operation: "PutItem", Fault: Throttling(), Match: ForTable(tbl.Name)})
	var te *types.ThrottlingException
	if err := put(ctx, db, tbl.Name, "x"); !errors.As(err, &te) {
		t.Errorf("ForTable rule: error = %v, want *types.ThrottlingException", err)
	}
	if !p.Remove(id2) {
		t.Error("Remove of an installed rule reported false")
	}
	if p.Remove(id2) {
		t.Error("second Remove reported true")
	}
	if err := put(ctx, db, tbl.Name, "x"); err != nil {
		t.Errorf("PutItem after Remove: %v", err)
	}
	if got := p.Fired(id2); got != 1 {
		t.Errorf("Fired of a removed rule = %d, want 1", got)
	}

	p.Add(Rule{Fault: InternalServerError()})
	p.Reset()
	if got := p.Stats(); len(got) != 0 {
		t.Errorf("stats after Reset = %v, want none", got)
	}
	if err := put(ctx, db, tbl.Name, "victim"); err != nil {
		t.Errorf("PutItem after Reset: %v", err)
	}
	if got, want := p.Stats(), map[string]OpStats{"PutItem": {Requests: 1, Forwarded: 1, Succeeded: 1}}; !maps.Equal(got, want) {
		t.Errorf("stats = %v, want %v", got, want)
	}
}

// TestStatsAreExact shows the counters match the calls made, retries
// included, with no operation the test did not call, and that ResetStats
// zeroes them while keeping the rules.
func TestStatsAreExact(t *testing.T) {
	tbl := ddbtest.NewTable(t)
	ctx := testCtx(t)
	p := Start(t, tbl.Endpoint)
	p.Add(Rule{Operation: "PutItem", Fault: Throttling(), Count: 1})
	p.Add(Rule{Operation: "UpdateItem", Fault: AfterForward(InternalServerError())})
	db := p.DynamoDB() // default retries
	for _, pk := range []string{"a", "b", "c"} {
		if err := put(ctx, db, tbl.Name, pk); err != nil {
			t.Fatal(err)
		}
	}
	for _, pk := range []string{"a", "missing"} {
		if _, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(tbl.Name), Key: key(pk)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.Query(ctx, &dynamodb.QueryInput{
		TableName:                 aws.String(tbl.Name),
		KeyConditionExpression:    aws.String("PK = :pk"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": &types.AttributeValueMemberS{Value: "a"}},
	}); err != nil {
		t.Fatal(err)
	}
	_, err := p.DynamoDB(noRetry).UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(tbl.Name), Key: key("a"), UpdateExpression: aws.String("SET m = :m"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":m": &types.AttributeValueMemberS{Value: "x"}},
	})
	if err == nil {
		t.Fatal("UpdateItem succeeded through AfterForward(InternalServerError)")
	}
	want := map[string]OpStats{
		"PutItem":    {Requests: 4, Forwarded: 3, Injected: 1, Succeeded: 3},
		"GetItem":    {Requests: 2, Forwarded: 2, Succeeded: 2},
		"Query":      {Requests: 1, Forwarded: 1, Succeeded: 1},
		"UpdateItem": {Requests: 1, Forwarded: 1, Injected: 1, Succeeded: 1},
	}
	if got := p.Stats(); !maps.Equal(got, want) {
		t.Errorf("stats =\n%+v\nwant\n%+v", got, want)
	}
	p.ResetStats()
	if got := p.Stats(); len(got) != 0 {
		t.Errorf("stats after ResetStats = %v", got)
	}
	if _, err := p.DynamoDB(noRetry).UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(tbl.Name), Key: key("a"), UpdateExpression: aws.String("REMOVE m"),
	}); err == nil {
		t.Error("ResetStats dropped the rules")
	}
}

// TestConcurrentRequests drives the proxy from many goroutines (run with
// -race) and shows the counters stay exact: every fault the clients saw is
// one fire and one injection, every other call was forwarded once, and even
// under concurrency the number of faults a seed gives is fixed.
func TestConcurrentRequests(t *testing.T) {
	tbl := ddbtest.NewTable(t)
	ctx := testCtx(t)
	p := Start(t, tbl.Endpoint, WithSeed(3))
	id := p.Add(Rule{Operation: "PutItem", Fault: ProvisionedThroughputExceeded(), Rate: 0.3})
	db := p.DynamoDB(noRetry)
	const workers, each = 8, 10
	var faults atomic.Int64
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				err := put(ctx, db, tbl.Name, "w"+string(rune('a'+w))+string(rune('a'+i)))
				var pte *types.ProvisionedThroughputExceededException
				switch {
				case errors.As(err, &pte):
					faults.Add(1)
				case err != nil:
					t.Errorf("PutItem: %v", err)
				}
			}
		})
	}
	// Rule and stats calls racing the traffic.
	wg.Go(func() {
		for range 50 {
			other := p.Add(Rule{Operation: "DeleteTable", Fault: Hang()})
			_ = p.Stats()
			p.Remove(other)
		}
	})
	wg.Wait()
	f := int(faults.Load())
	if p.Fired(id) != f {
		t.Errorf("Fired = %d, clients saw %d faults", p.Fired(id), f)
	}
	n := workers * each
	if got, want := p.StatsFor("PutItem"), (OpStats{Requests: n, Forwarded: n - f, Injected: f, Succeeded: n - f}); got != want {
		t.Errorf("stats = %+v, want %+v", got, want)
	}
	// Which request gets which draw depends on scheduling, but every request
	// is eligible, so there are exactly n draws from the seeded source and
	// the number of faults is fixed.
	replay, want := rand.New(rand.NewPCG(3, 3)), 0
	for range n {
		if replay.Float64() < 0.3 {
			want++
		}
	}
	if f != want || f == 0 {
		t.Errorf("%d of %d faulted, want %d", f, n, want)
	}
}

// TestStreamsThroughTheProxy shows the DynamoDB Streams API is forwarded on
// the same endpoint (a write shows up via GetRecords) and that rules reach
// Streams operations as the Streams client's typed errors.
func TestStreamsThroughTheProxy(t *testing.T) {
	tbl := ddbtest.NewTable(t, ddbtest.WithStream())
	ctx := testCtx(t)
	p := Start(t, tbl.Endpoint)
	if err := put(ctx, p.DynamoDB(noRetry), tbl.Name, "streamed"); err != nil {
		t.Fatal(err)
	}
	sc := p.Streams(noRetryStreams)
	desc, err := sc.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(tbl.StreamARN)})
	if err != nil {
		t.Fatal(err)
	}
	var records []streamstypes.Record
	for _, sh := range desc.StreamDescription.Shards {
		it, err := sc.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{
			StreamArn: aws.String(tbl.StreamARN), ShardId: sh.ShardId, ShardIteratorType: streamstypes.ShardIteratorTypeTrimHorizon,
		})
		if err != nil {
			t.Fatal(err)
		}
		out, err := sc.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: it.ShardIterator})
		if err != nil {
			t.Fatal(err)
		}
		records = append(records, out.Records...)
	}
	found := false
	for _, r := range records {
		if pk, ok := r.Dynamodb.Keys["PK"].(*streamstypes.AttributeValueMemberS); ok && pk.Value == "streamed" {
			found = true
		}
	}
	if !found {
		t.Errorf("the write is not among %d stream records", len(records))
	}
	shards := len(desc.StreamDescription.Shards)
	if got, want := p.StatsFor("GetRecords"), (OpStats{Requests: shards, Forwarded: shards, Succeeded: shards}); got != want {
		t.Errorf("GetRecords stats = %+v, want %+v", got, want)
	}

	p.Add(Rule{Operation: "GetShardIterator", Fault: InternalServerError()})
	_, err = sc.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{
		StreamArn: aws.String(tbl.StreamARN), ShardId: desc.StreamDescription.Shards[0].ShardId,
		ShardIteratorType: streamstypes.ShardIteratorTypeTrimHorizon,
	})
	var ise *streamstypes.InternalServerError
	if !errors.As(err, &ise) {
		t.Errorf("GetShardIterator error = %v, want *streamstypes.InternalServerError", err)
	}
}
