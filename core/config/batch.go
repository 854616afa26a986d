package config

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/internal/wait"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
)

// DynamoDB batch limits (docs/design.md §5).
const (
	batchGetChunk   = 100
	batchWriteChunk = 25
)

// errUnprocessed reports keys or writes DynamoDB still left unprocessed after
// the retries.
var errUnprocessed = errors.New("unprocessed after retries")

type item = map[string]types.AttributeValue

// batchGet reads keys (duplicates allowed) with BatchGetItem in chunks of
// 100, re-sending UnprocessedKeys up to o.batchRetries times with backoff.
// It returns the items found and, in known, every key whose answer is
// known: found, or absent from the table. On error it returns what it had so
// far with the error, so a caller can fall back for the keys not in known.
func batchGet(ctx context.Context, db ReadDB, table string, keys []schema.Key, consistent bool, o *options) (
	found map[schema.Key]item, known map[schema.Key]bool, err error) {
	found = make(map[schema.Key]item, len(keys))
	known = make(map[schema.Key]bool, len(keys))
	var pending []schema.Key
	seen := make(map[schema.Key]bool, len(keys))
	for _, k := range keys {
		if !seen[k] {
			seen[k] = true
			pending = append(pending, k)
		}
	}
	for len(pending) > 0 {
		n := min(len(pending), batchGetChunk)
		chunk := pending[:n]
		pending = pending[n:]
		if err := batchGetChunkRetry(ctx, db, table, chunk, consistent, o, found, known); err != nil {
			return found, known, err
		}
	}
	return found, known, nil
}

func batchGetChunkRetry(ctx context.Context, db ReadDB, table string, chunk []schema.Key, consistent bool, o *options,
	found map[schema.Key]item, known map[schema.Key]bool) error {
	req := make([]map[string]types.AttributeValue, len(chunk))
	for i, k := range chunk {
		req[i] = k.AttributeValues()
	}
	for attempt := 0; ; attempt++ {
		// A fresh input per call: the SDK may write into it.
		out, err := db.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{
			RequestItems: map[string]types.KeysAndAttributes{
				table: {Keys: req, ConsistentRead: aws.Bool(consistent)},
			},
		})
		if err != nil {
			return fmt.Errorf("BatchGetItem: %w", err)
		}
		for _, it := range out.Responses[table] {
			k := itemKey(it)
			found[k] = it
		}
		var unprocessed []map[string]types.AttributeValue
		if ka, ok := out.UnprocessedKeys[table]; ok {
			unprocessed = ka.Keys
		}
		left := make(map[schema.Key]bool, len(unprocessed))
		for _, uk := range unprocessed {
			left[itemKey(uk)] = true
		}
		for _, r := range req {
			if k := itemKey(r); !left[k] {
				known[k] = true
			}
		}
		if len(unprocessed) == 0 {
			return nil
		}
		if attempt >= o.batchRetries {
			return fmt.Errorf("BatchGetItem: %d keys %w", len(unprocessed), errUnprocessed)
		}
		if err := wait.Sleep(ctx, backoff(o.batchBackoff, attempt)); err != nil {
			return err
		}
		req = unprocessed
	}
}

// getItem reads one item; nil when absent.
func getItem(ctx context.Context, db ReadDB, table string, k schema.Key, consistent bool) (item, error) {
	out, err := db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(table),
		Key:            k.AttributeValues(),
		ConsistentRead: aws.Bool(consistent),
	})
	if err != nil {
		return nil, fmt.Errorf("GetItem %s %s: %w", k.PK, k.SK, err)
	}
	if len(out.Item) == 0 {
		return nil, nil
	}
	return out.Item, nil
}

// readItems reads keys with one batchGet and falls back to sequential
// GetItems for every key the batch did not settle (docs/design.md §7). It returns the
// items found (absent keys are missing from the map) and the keys whose
// answer is known; on error, both hold what was settled before it.
func readItems(ctx context.Context, db ReadDB, table string, keys []schema.Key, consistent bool, o *options) (
	found map[schema.Key]item, known map[schema.Key]bool, err error) {
	found, known, berr := batchGet(ctx, db, table, keys, consistent, o)
	if berr == nil {
		return found, known, nil
	}
	if ctx.Err() != nil {
		return found, known, berr
	}
	for _, k := range keys {
		if known[k] {
			continue
		}
		it, err := getItem(ctx, db, table, k, consistent)
		if err != nil {
			return found, known, fmt.Errorf("%w (after %w)", err, berr)
		}
		known[k] = true
		if it != nil {
			found[k] = it
		}
	}
	return found, known, nil
}

// batchDelete deletes keys with BatchWriteItem in chunks of 25, re-sending
// UnprocessedItems up to o.batchRetries times with backoff.
func batchDelete(ctx context.Context, db DB, table string, keys []schema.Key, o *options) error {
	for start := 0; start < len(keys); start += batchWriteChunk {
		chunk := keys[start:min(start+batchWriteChunk, len(keys))]
		reqs := make([]types.WriteRequest, len(chunk))
		for i, k := range chunk {
			reqs[i] = types.WriteRequest{DeleteRequest: &types.DeleteRequest{Key: k.AttributeValues()}}
		}
		for attempt := 0; ; attempt++ {
			out, err := db.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{
				RequestItems: map[string][]types.WriteRequest{table: reqs},
			})
			if err != nil {
				return fmt.Errorf("BatchWriteItem: %w", err)
			}
			reqs = out.UnprocessedItems[table]
			if len(reqs) == 0 {
				break
			}
			if attempt >= o.batchRetries {
				return fmt.Errorf("BatchWriteItem: %d deletes %w", len(reqs), errUnprocessed)
			}
			if err := wait.Sleep(ctx, backoff(o.batchBackoff, attempt)); err != nil {
				return err
			}
		}
	}
	return nil
}

// backoff is base × 2^attempt capped at one second, with equal jitter (half
// fixed, half random).
func backoff(base time.Duration, attempt int) time.Duration {
	d := base
	for i := 0; i < attempt && d < maxBatchBackoff; i++ {
		d *= 2
	}
	d = min(d, maxBatchBackoff)
	if d <= 1 {
		return d
	}
	half := d / 2
	return half + rand.N(half+1)
}
