package control

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/internal/query"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
)

// Scope names the buckets a change can reach.
//
//   - Entity "" and Resource set: every bucket of the resource;
//   - Entity set and Resource `_default_`: every bucket of the entity;
//   - Entity and Resource set: the entity's bucket on the resource;
//   - both "": every bucket of the namespace.
type Scope struct {
	// Entity is an entity id, or "" for every entity.
	Entity string
	// Resource is a resource, `_default_` for every resource of an
	// entity, or "" for every resource of the namespace.
	Resource string
}

// String names the scope for a person: "namespace", "resource gpt-4",
// "entity key-1" or "entity key-1 on gpt-4".
func (s Scope) String() string {
	switch {
	case s.Entity == "" && s.Resource == "":
		return "namespace"
	case s.Entity == "":
		return "resource " + s.Resource
	case s.Resource == schema.DefaultResource:
		return "entity " + s.Entity
	}
	return "entity " + s.Entity + " on " + s.Resource
}

// Progress counts a fan-out's work, for a caller to show.
type Progress struct {
	// Buckets is the number of distinct buckets (shards) discovered over
	// both discovery passes: the buckets found.
	Buckets int
	// Stamped are the buckets written, brought in line; Unchanged those
	// already in line, which needed no write; Vanished those gone before
	// their write (expired or deleted: not an error); Failed those whose
	// write failed. They add up to Buckets once the fan-out is done.
	Stamped, Unchanged, Vanished, Failed int
}

// FanoutIncompleteError reports a fan-out that stopped part way: the config
// change is stored, and some buckets may still carry the old stamp.
// Running the same call again finishes the job.
type FanoutIncompleteError struct {
	// Namespace is the namespace's id.
	Namespace string
	// Scope is the buckets the fan-out was to reach.
	Scope Scope
	// Progress says how far it got.
	Progress Progress
	// Err is the first failure.
	Err error
}

// Error implements error.
func (e *FanoutIncompleteError) Error() string {
	p := e.Progress
	return fmt.Sprintf("control: fan-out over %s of %s incomplete: of %d buckets found, %d brought in line, %d already in line, %d vanished, %d failed "+
		"(the config is stored; run the call again to finish): %v",
		e.Scope, e.Namespace, p.Buckets, p.Stamped, p.Unchanged, p.Vanished, p.Failed, e.Err)
}

// Unwrap returns the first failure.
func (e *FanoutIncompleteError) Unwrap() error { return e.Err }

// stamper builds the write of one bucket, or nil when it needs none.
type stamper func(ctx context.Context, id schema.BucketID) (*dynamodb.UpdateItemInput, error)

// fanout discovers the buckets of sc twice (a bucket an in-flight acquire
// creates during the first pass is found by the second), de-duplicated,
// and writes each with stamp on at most c.workers goroutines. Every write
// must be conditioned on attribute_exists(PK): a condition failure counts
// the bucket as vanished.
func (c *Controls) fanout(ctx context.Context, ns string, sc Scope, stamp stamper) (Progress, error) {
	var (
		mu    sync.Mutex
		p     Progress
		first error
		seen  = map[schema.Key]bool{}
	)
	// report tells OnProgress the counts; the caller holds mu.
	report := func() {
		if c.onProg != nil {
			c.onProg(sc, p)
		}
	}
	fail := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		p.Failed++
		if first == nil {
			first = err
		}
		report()
	}
	for pass := 0; pass < 2; pass++ {
		keys, err := c.discover(ctx, ns, sc)
		if err != nil {
			fail(err)
			break
		}
		jobs := make(chan schema.BucketID)
		var wg sync.WaitGroup
		for range c.workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for id := range jobs {
					out, err := c.stampOneSafely(ctx, id, stamp)
					if err != nil {
						fail(fmt.Errorf("%s: %w", id.PK(), err))
						continue
					}
					mu.Lock()
					switch out {
					case outVanished:
						p.Vanished++
					case outUnchanged:
						p.Unchanged++
					default:
						p.Stamped++
					}
					report()
					mu.Unlock()
				}
			}()
		}
		var found []schema.BucketID
		for _, k := range keys {
			if seen[k] {
				continue
			}
			seen[k] = true
			id, err := schema.ParseBucketPK(k.PK)
			if err != nil {
				continue // not a bucket the index should hold; nothing to stamp
			}
			found = append(found, id)
		}
		// The pass's buckets are counted before the first of them is
		// stamped, so a progress report always knows its total so far.
		mu.Lock()
		p.Buckets += len(found)
		report()
		mu.Unlock()
		for _, id := range found {
			jobs <- id
		}
		close(jobs)
		wg.Wait()
	}
	if p.Failed > 0 {
		return p, &FanoutIncompleteError{Namespace: ns, Scope: sc, Progress: p, Err: first}
	}
	return p, nil
}

// What became of one bucket of a fan-out.
type outcome uint8

const (
	outStamped outcome = iota
	outUnchanged
	outVanished
)

// stampOneSafely is stampOne on a fan-out worker: a panic is recovered on
// the worker's goroutine and counted as that bucket's failure, so no panic
// escapes the request that started the fan-out.
func (c *Controls) stampOneSafely(ctx context.Context, id schema.BucketID, stamp stamper) (out outcome, err error) {
	defer func() {
		if v := recover(); v != nil {
			// The stack goes to the log; the error, which reaches results
			// and answers, says only what panicked and where.
			c.log.ErrorContext(ctx, "control: panic while stamping a bucket", "bucket", string(id.AppendPK(nil)), "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
			err = fmt.Errorf("panic while stamping %s: %v", id.AppendPK(nil), v)
		}
	}()
	return c.stampOne(ctx, id, stamp)
}

// stampOne writes one bucket.
func (c *Controls) stampOne(ctx context.Context, id schema.BucketID, stamp stamper) (outcome, error) {
	in, err := stamp(ctx, id)
	switch {
	case err != nil:
		return 0, err
	case in == nil:
		return outUnchanged, nil
	}
	_, err = c.db.UpdateItem(ctx, in)
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return outVanished, nil
	}
	return outStamped, err
}

// discover lists the bucket keys of sc.
func (c *Controls) discover(ctx context.Context, ns string, sc Scope) ([]schema.Key, error) {
	switch {
	case sc.Entity == "" && sc.Resource == "":
		return query.Keys(ctx, c.db, c.table, schema.GSI4, schema.AttrGSI4PK, ns, schema.AttrGSI4SK, schema.PrefixBucket, false)
	case sc.Entity == "":
		return query.Keys(ctx, c.db, c.table, schema.GSI2, schema.AttrGSI2PK, schema.ResourcePK(ns, sc.Resource), schema.AttrGSI2SK, schema.PrefixBucket, false)
	case sc.Resource == schema.DefaultResource:
		return query.Keys(ctx, c.db, c.table, schema.GSI3, schema.AttrGSI3PK, schema.EntityPK(ns, sc.Entity), schema.AttrGSI3SK, schema.PrefixBucket, false)
	}
	return query.Keys(ctx, c.db, c.table, schema.GSI3, schema.AttrGSI3PK, schema.EntityPK(ns, sc.Entity), schema.AttrGSI3SK, schema.BucketGSI3SKPrefix(sc.Resource), false)
}
