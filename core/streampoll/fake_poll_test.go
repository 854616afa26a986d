package streampoll_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/zae-limiter/zae-limiter-go/core/streamimage"
	"github.com/zae-limiter/zae-limiter-go/core/streampoll"
)

func TestNewValidatesOptions(t *testing.T) {
	f := &fakeStream{}
	h := (&recorder{}).handle
	for _, tc := range []struct {
		name string
		c    streampoll.StreamsAPI
		arn  string
		opts streampoll.Options
	}{
		{"nil client", nil, fakeARN, streampoll.Options{Handler: h}},
		{"no ARN", f, "", streampoll.Options{Handler: h}},
		{"no handler", f, fakeARN, streampoll.Options{}},
		{"batch too big", f, fakeARN, streampoll.Options{Handler: h, BatchSize: 10001}},
		{"negative batch", f, fakeARN, streampoll.Options{Handler: h, BatchSize: -1}},
		{"bad start", f, fakeARN, streampoll.Options{Handler: h, StartingPosition: "AT_TIMESTAMP"}},
	} {
		if _, err := streampoll.New(tc.c, tc.arn, tc.opts); !errors.Is(err, streampoll.ErrInvalidOptions) {
			t.Errorf("%s: err = %v", tc.name, err)
		}
	}
}

// A child shard is read only after its parent is finished, even when the
// stream lists it first; a shard whose parent the stream no longer lists is
// read at once.
func TestShardLineage(t *testing.T) {
	f := &fakeStream{pageSize: 1}
	child := f.addShard("child", "parent")
	grandchild := f.addShard("grandchild", "child")
	parent := f.addShard("parent", "")
	orphan := f.addShard("orphan", "trimmed-away")
	f.put(parent, "p1")
	f.put(orphan, "o1")
	f.put(parent, "p2")
	f.put(child, "c1")
	f.put(grandchild, "g1")
	f.put(parent, "p3")
	f.put(child, "c2")
	f.close(parent)
	f.close(child)

	rec := &recorder{}
	p := newPoller(t, f, fakeARN, streampoll.Options{Handler: rec.handle, BatchSize: 2})
	st := drain(t, p)

	var order []string
	for _, b := range rec.pks() {
		order = append(order, b...)
	}
	pos := func(pk string) int { return slices.Index(order, pk) }
	for _, pk := range []string{"p1", "p2", "p3", "c1", "c2", "g1", "o1"} {
		if pos(pk) < 0 {
			t.Fatalf("%s never delivered: %v", pk, order)
		}
	}
	if !(pos("p1") < pos("p2") && pos("p2") < pos("p3") && pos("p3") < pos("c1") && pos("c1") < pos("c2") && pos("c2") < pos("g1")) {
		t.Fatalf("lineage order broken: %v", order)
	}
	for _, b := range rec.pks() {
		if len(b) > 2 {
			t.Fatalf("batch larger than BatchSize: %v", b)
		}
	}
	if st.Records != 7 {
		t.Fatalf("stats = %+v", st)
	}
	// Everything is finished or caught up: a second drain delivers nothing.
	if st := drain(t, p); st != (streampoll.Stats{}) {
		t.Fatalf("second drain = %+v", st)
	}
}

// Children that appear after their parent closes are found and read.
func TestChildShardFoundLater(t *testing.T) {
	f := &fakeStream{}
	parent := f.addShard("parent", "")
	f.put(parent, "p1")
	rec := &recorder{}
	p := newPoller(t, f, fakeARN, streampoll.Options{Handler: rec.handle})
	drain(t, p)

	f.put(parent, "p2")
	f.close(parent)
	child := f.addShard("child", "parent")
	f.put(child, "c1")
	drain(t, p)
	if got := joined(rec.pks()); got != "p1 | p2 | c1" {
		t.Fatalf("batches = %s", got)
	}
}

// With Latest, closed shards are skipped and open ones start after their
// newest record; a shard found later starts at its beginning.
func TestLatestStartingPosition(t *testing.T) {
	f := &fakeStream{}
	old := f.addShard("old", "")
	f.put(old, "old1")
	f.close(old)
	cur := f.addShard("cur", "old")
	f.put(cur, "cur1")

	rec := &recorder{}
	p := newPoller(t, f, fakeARN, streampoll.Options{Handler: rec.handle, StartingPosition: streampoll.Latest})
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	f.put(cur, "cur2")
	drain(t, p)
	f.put(cur, "cur3")
	f.close(cur)
	next := f.addShard("next", "cur")
	f.put(next, "next1")
	drain(t, p)
	if got := joined(rec.pks()); got != "cur2 | cur3 | next1" {
		t.Fatalf("batches = %s", got)
	}
}

func TestBatchLargerThanOneGetRecords(t *testing.T) {
	f := &fakeStream{}
	sh := f.addShard("s", "")
	for i := range 2500 {
		f.put(sh, fmt.Sprintf("k%d", i))
	}
	rec := &recorder{}
	p := newPoller(t, f, fakeARN, streampoll.Options{Handler: rec.handle, BatchSize: 2100})
	st := drain(t, p)
	b := rec.pks()
	if len(b) != 2 || len(b[0]) != 2100 || len(b[1]) != 400 || st.Records != 2500 {
		t.Fatalf("%d batches, stats %+v", len(b), st)
	}
	for _, l := range f.getLimits {
		if l > 1000 {
			t.Fatalf("GetRecords Limit %d", l)
		}
	}
}

func TestExpiredIteratorIsRenewed(t *testing.T) {
	f := &fakeStream{}
	sh := f.addShard("s", "")
	for i := range 5 {
		f.put(sh, fmt.Sprintf("k%d", i))
	}
	rec := &recorder{}
	p := newPoller(t, f, fakeARN, streampoll.Options{Handler: rec.handle, BatchSize: 2})
	drain(t, p)
	f.put(sh, "k5")
	f.getErrs = []error{&streamtypes.ExpiredIteratorException{Message: aws.String("expired")}}
	drain(t, p)
	if got := joined(rec.pks()); got != "k0,k1 | k2,k3 | k4 | k5" {
		t.Fatalf("batches = %s", got)
	}
	if last := f.iterTypes[len(f.iterTypes)-1]; last != streamtypes.ShardIteratorTypeAfterSequenceNumber {
		t.Fatalf("renewed with %s, want AFTER_SEQUENCE_NUMBER", last)
	}
}

func TestTrimmedDataRestartsAtTrimHorizon(t *testing.T) {
	f := &fakeStream{}
	sh := f.addShard("s", "")
	f.put(sh, "k0")
	f.put(sh, "k1")
	rec := &recorder{respond: func(call int, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		if call == 0 {
			return events.DynamoDBEventResponse{}, errors.New("transient")
		}
		return events.DynamoDBEventResponse{}, nil
	}}
	// The AT_SEQUENCE_NUMBER re-read finds the record trimmed.
	p := newPoller(t, &trimOnce{fakeStream: f}, fakeARN, streampoll.Options{Handler: rec.handle, MaxRetries: 1})
	drain(t, p)
	if got := joined(rec.pks()); got != "k0,k1 | k0,k1" {
		t.Fatalf("batches = %s", got)
	}
	want := []streamtypes.ShardIteratorType{"TRIM_HORIZON", "AT_SEQUENCE_NUMBER", "TRIM_HORIZON"}
	if !slices.Equal(f.iterTypes[:3], want) {
		t.Fatalf("iterators = %v", f.iterTypes)
	}
}

// trimOnce answers the first AT_SEQUENCE_NUMBER request with
// TrimmedDataAccessException.
type trimOnce struct {
	*fakeStream
	done bool
}

func (f *trimOnce) GetShardIterator(ctx context.Context, in *dynamodbstreams.GetShardIteratorInput, o ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetShardIteratorOutput, error) {
	if in.ShardIteratorType == streamtypes.ShardIteratorTypeAtSequenceNumber && !f.done {
		f.done = true
		f.fakeStream.mu.Lock()
		f.fakeStream.iterTypes = append(f.fakeStream.iterTypes, in.ShardIteratorType)
		f.fakeStream.mu.Unlock()
		return nil, &streamtypes.TrimmedDataAccessException{Message: aws.String("trimmed")}
	}
	return f.fakeStream.GetShardIterator(ctx, in, o...)
}

func TestGoneShardIsFinished(t *testing.T) {
	f := &fakeStream{}
	sh := f.addShard("s", "")
	f.put(sh, "k0")
	f.getErrs = []error{&streamtypes.ResourceNotFoundException{Message: aws.String("gone")}}
	rec := &recorder{}
	p := newPoller(t, f, fakeARN, streampoll.Options{Handler: rec.handle})
	if st := drain(t, p); st.Batches != 0 {
		t.Fatalf("stats = %+v", st)
	}
	f.put(sh, "k1")
	if st := drain(t, p); st.Batches != 0 {
		t.Fatalf("a gone shard was read again: %+v", st)
	}
}

func TestOtherAPIErrorsAreReturned(t *testing.T) {
	f := &fakeStream{}
	sh := f.addShard("s", "")
	f.put(sh, "k0")
	boom := errors.New("throttled")
	f.getErrs = []error{boom}
	rec := &recorder{}
	p := newPoller(t, f, fakeARN, streampoll.Options{Handler: rec.handle})
	if _, err := p.DrainOnce(context.Background()); !errors.Is(err, boom) {
		t.Fatalf("err = %v", err)
	}
	// Nothing was lost: the next drain delivers the record.
	if st := drain(t, p); st.Records != 1 {
		t.Fatalf("stats = %+v", st)
	}
}

func TestBisectOnError(t *testing.T) {
	f := &fakeStream{}
	sh := f.addShard("s", "")
	for i := range 6 {
		f.put(sh, fmt.Sprintf("k%d", i))
	}
	var failures []streampoll.Failure
	rec := &recorder{respond: func(_ int, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		for _, r := range ev.Records {
			if r.Change.Keys["PK"].String() == "k2" {
				return events.DynamoDBEventResponse{}, errors.New("poison")
			}
		}
		return events.DynamoDBEventResponse{}, nil
	}}
	p := newPoller(t, f, fakeARN, streampoll.Options{
		Handler: rec.handle, BatchSize: 4, MaxRetries: 1, BisectOnError: true,
		OnFailure: func(_ context.Context, fl streampoll.Failure) { failures = append(failures, fl) },
	})
	st := drain(t, p)
	// [k0..k3] fails → [k0,k1] ok, [k2,k3] fails → [k2] fails, retried once,
	// dropped → [k3] → [k4,k5].
	want := "k0,k1,k2,k3 | k0,k1 | k2,k3 | k2 | k2 | k3 | k4,k5"
	if got := joined(rec.pks()); got != want {
		t.Fatalf("batches = %s\nwant      %s", got, want)
	}
	if len(failures) != 1 || len(failures[0].Records) != 1 || failures[0].Records[0].Change.Keys["PK"].String() != "k2" || failures[0].Attempts != 2 {
		t.Fatalf("failures = %+v", failures)
	}
	if st.Dropped != 1 || st.Failures != 4 || st.Batches != 7 || st.Redeliveries != 5 {
		t.Fatalf("stats = %+v", st)
	}
}

func TestHandlerPanicIsAnError(t *testing.T) {
	f := &fakeStream{}
	sh := f.addShard("s", "")
	f.put(sh, "k0")
	var dropped streampoll.Failure
	rec := &recorder{respond: func(call int, _ events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		panic(fmt.Sprintf("boom %d", call))
	}}
	p := newPoller(t, f, fakeARN, streampoll.Options{Handler: rec.handle, MaxRetries: 2,
		OnFailure: func(_ context.Context, fl streampoll.Failure) { dropped = fl }})
	st := drain(t, p)
	var pe *streampoll.PanicError
	if !errors.As(dropped.Err, &pe) || pe.Value != "boom 2" || len(pe.Stack) == 0 {
		t.Fatalf("dropped = %+v", dropped)
	}
	if st.Batches != 3 || st.Dropped != 1 {
		t.Fatalf("stats = %+v", st)
	}
}

func TestTimeoutBoundsInvocation(t *testing.T) {
	f := &fakeStream{}
	sh := f.addShard("s", "")
	f.put(sh, "k0")
	var deadline time.Time
	var ok bool
	h := func(ctx context.Context, _ events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		deadline, ok = ctx.Deadline()
		return events.DynamoDBEventResponse{}, nil
	}
	start := time.Now()
	p := newPoller(t, f, fakeARN, streampoll.Options{Handler: h, Timeout: time.Minute})
	drain(t, p)
	if !ok || deadline.Before(start.Add(time.Minute)) || deadline.After(time.Now().Add(time.Minute)) {
		t.Fatalf("deadline = %v, %v", deadline, ok)
	}
}

func TestFilter(t *testing.T) {
	f := &fakeStream{}
	sh := f.addShard("s", "")
	for i := range 6 {
		f.put(sh, fmt.Sprintf("k%d", i))
	}
	rec := &recorder{respond: func(call int, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		if call == 1 {
			return fail(ev, "k4"), nil
		}
		return events.DynamoDBEventResponse{}, nil
	}}
	p := newPoller(t, f, fakeARN, streampoll.Options{Handler: rec.handle, BatchSize: 2, MaxRetries: 3,
		Filter: func(r events.DynamoDBEventRecord) bool { return r.Change.Keys["PK"].String() != "k2" }})
	st := drain(t, p)
	if got := joined(rec.pks()); got != "k0,k1 | k3,k4 | k4,k5" {
		t.Fatalf("batches = %s", got)
	}
	if st.Filtered != 1 {
		t.Fatalf("stats = %+v", st)
	}
}

// A shard whose records are all filtered out finishes without a delivery.
func TestClosedShardAllFiltered(t *testing.T) {
	f := &fakeStream{}
	sh := f.addShard("s", "")
	f.put(sh, "k0")
	f.close(sh)
	child := f.addShard("c", "s")
	f.put(child, "c0")
	rec := &recorder{}
	p := newPoller(t, f, fakeARN, streampoll.Options{Handler: rec.handle,
		Filter: func(r events.DynamoDBEventRecord) bool { return r.Change.Keys["PK"].String() != "k0" }})
	drain(t, p)
	if got := joined(rec.pks()); got != "c0" {
		t.Fatalf("batches = %s", got)
	}
}

// Poll waits PollInterval through Options.Wait when there is nothing to
// read, picks up new records after the wait and returns ctx.Err() when ctx
// ends.
func TestPollWaitsAndStops(t *testing.T) {
	f := &fakeStream{}
	sh := f.addShard("s", "")
	f.put(sh, "k0")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	var waits []time.Duration
	wait := func(ctx context.Context, d time.Duration) error {
		mu.Lock()
		waits = append(waits, d)
		n := len(waits)
		mu.Unlock()
		switch n {
		case 1:
			f.put(sh, "k1") // arrives while Poll is idle
		case 2:
			cancel()
		}
		return ctx.Err()
	}
	rec := &recorder{}
	p := newPoller(t, f, fakeARN, streampoll.Options{Handler: rec.handle, PollInterval: 7 * time.Second, Wait: wait})
	if err := p.Poll(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Poll = %v", err)
	}
	if got := joined(rec.pks()); got != "k0 | k1" {
		t.Fatalf("batches = %s", got)
	}
	if len(waits) != 2 || waits[0] != 7*time.Second {
		t.Fatalf("waits = %v", waits)
	}
	if st := p.Stats(); st.Batches != 2 || st.Records != 2 {
		t.Fatalf("stats = %+v", st)
	}
}

// Poll waits before re-delivering a failed batch (a backoff), and a handler
// stopped by the end of ctx leaves the checkpoint in place.
func TestPollBacksOffAndKeepsCheckpointOnCancel(t *testing.T) {
	f := &fakeStream{}
	sh := f.addShard("s", "")
	f.put(sh, "k0")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	waited := 0
	rec := &recorder{respond: func(call int, _ events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		if call == 1 {
			cancel()
			return events.DynamoDBEventResponse{}, context.Canceled
		}
		return events.DynamoDBEventResponse{}, errors.New("fail")
	}}
	p := newPoller(t, f, fakeARN, streampoll.Options{Handler: rec.handle, MaxRetries: streampoll.RetryForever,
		Wait: func(ctx context.Context, _ time.Duration) error { waited++; return ctx.Err() }})
	if err := p.Poll(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Poll = %v", err)
	}
	if waited != 1 {
		t.Fatalf("waited %d times, want 1 (before the re-delivery)", waited)
	}
	rec.respond = nil
	if st := drain(t, p); st.Records != 1 || st.Redeliveries != 1 {
		t.Fatalf("after restart: %+v", st)
	}
	if got := joined(rec.pks()); got != "k0 | k0 | k0" {
		t.Fatalf("batches = %s", got)
	}
}

// A TTL delete reaches the handler with the userIdentity Lambda gives it.
func TestTTLDeleteKeepsUserIdentity(t *testing.T) {
	f := &fakeStream{}
	sh := f.addShard("s", "")
	f.put(sh, "a1B2c3D4e5F/AUDIT#user-1")
	r := &sh.records[0]
	r.EventName = streamtypes.OperationTypeRemove
	r.UserIdentity = &streamtypes.Identity{Type: aws.String("Service"), PrincipalId: aws.String("dynamodb.amazonaws.com")}
	r.Dynamodb.OldImage, r.Dynamodb.NewImage = r.Dynamodb.NewImage, nil
	rec := &recorder{}
	p := newPoller(t, f, fakeARN, streampoll.Options{Handler: rec.handle})
	drain(t, p)
	got := rec.all()[0][0]
	if !streamimage.IsTTLDelete(got) || got.EventSourceArn != fakeARN || got.Change.NewImage != nil ||
		got.Change.OldImage["PK"].String() != "a1B2c3D4e5F/AUDIT#user-1" {
		t.Fatalf("record = %+v", got)
	}
}
