package limiter

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go"

	"github.com/zae-limiter/zae-limiter-go/core/limiter/internal/answer"
)

// throttleRetries is how many times the limiter re-sends a write DynamoDB
// refused without applying it (a throttle), after the first try.
const throttleRetries = 3

// onceWrites is the limiter's DB with its non-idempotent writes sent once
// (docs/decisions.md P30). A fast-path debit, a credit, a refill pass or a
// slow-path write whose response is lost after DynamoDB applied it must not
// be applied again by an SDK retry: an ADD would count the tokens twice,
// and a pinned write, re-planned from the image its retry fails on, would
// debit again. So these calls go out with the SDK's retries off, and only
// the errors that prove nothing was applied — throttles — are retried,
// here, with jittered back-off. Any other failure reaches the caller as an
// infrastructure error (on_unavailable decides), the write applied at most
// once. Reads and TransactWriteItems (made idempotent by the SDK's client
// request token) keep the client's retries.
type onceWrites struct {
	DB
	sleep func(context.Context, time.Duration) error
	// once is the option list of a call that passes none: the SDK's
	// retries off. Built once and only ever read (the SDK ranges over it;
	// its capacity is its length, so an append copies).
	once []func(*dynamodb.Options)
	// answered is once with the answer's reader (package answer) too: the
	// option list of the fast path's UpdateItem, built once like once.
	answered []func(*dynamodb.Options)
}

func newOnceWrites(db DB, sleep func(context.Context, time.Duration) error) onceWrites {
	return onceWrites{DB: db, sleep: sleep, once: []func(*dynamodb.Options){noRetries},
		answered: []func(*dynamodb.Options){noRetries, answer.Read}}
}

// noRetries turns the SDK's retries off for one call.
func noRetries(o *dynamodb.Options) { o.RetryMaxAttempts = 1 }

// sendOnce returns opts with the SDK's retries off.
func (d onceWrites) sendOnce(opts []func(*dynamodb.Options)) []func(*dynamodb.Options) {
	if len(opts) == 0 {
		return d.once[:len(d.once):len(d.once)]
	}
	return append(opts[:len(opts):len(opts)], noRetries)
}

// throttled reports an error DynamoDB returns before it applies anything.
func throttled(err error) bool {
	var api smithy.APIError
	if !errors.As(err, &api) {
		return false
	}
	switch api.ErrorCode() {
	case "ProvisionedThroughputExceededException", "ThrottlingException", "RequestLimitExceeded":
		return true
	}
	return false
}

func retryThrottled[T any](ctx context.Context, sleep func(context.Context, time.Duration) error, send func() (T, error)) (T, error) {
	for attempt := 0; ; attempt++ {
		out, err := send()
		if err == nil || attempt >= throttleRetries || !throttled(err) {
			return out, err
		}
		// Full jitter over 10, 20, 40 ms.
		if serr := sleep(ctx, time.Duration(rand.Int64N(int64(10*time.Millisecond)<<attempt))); serr != nil {
			return out, err
		}
	}
}

func (d onceWrites) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	return retryThrottled(ctx, d.sleep, func() (*dynamodb.UpdateItemOutput, error) {
		return d.DB.UpdateItem(ctx, in, d.sendOnce(opts)...)
	})
}

// updateAnswered is UpdateItem with no options, sent once, its answer's
// image read by the answer's reader (package answer, answer.Image).
func (d onceWrites) updateAnswered(ctx context.Context, in *dynamodb.UpdateItemInput) (*dynamodb.UpdateItemOutput, error) {
	return retryThrottled(ctx, d.sleep, func() (*dynamodb.UpdateItemOutput, error) {
		return d.DB.UpdateItem(ctx, in, d.answered[:len(d.answered):len(d.answered)]...)
	})
}

func (d onceWrites) PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	return retryThrottled(ctx, d.sleep, func() (*dynamodb.PutItemOutput, error) {
		return d.DB.PutItem(ctx, in, d.sendOnce(opts)...)
	})
}
