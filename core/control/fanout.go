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

// tally counts a fan-out's work as it goes and tells OnProgress; safe
// for concurrent use.
type tally struct {
	mu     sync.Mutex
	p      Progress
	first  error
	sc     Scope
	onProg func(Scope, Progress)
}

// report tells OnProgress the counts; the caller holds mu.
func (t *tally) report() {
	if t.onProg != nil {
		t.onProg(t.sc, t.p)
	}
}

// found counts n buckets a discovery pass found, before the first of them
// is written, so that a progress report always knows its total so far.
func (t *tally) found(n int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.p.Buckets += n
	t.report()
}

// record counts one bucket's outcome, or its failure.
func (t *tally) record(out outcome, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case err != nil:
		t.p.Failed++
		if t.first == nil {
			t.first = err
		}
	case out == outVanished:
		t.p.Vanished++
	case out == outUnchanged:
		t.p.Unchanged++
	default:
		t.p.Stamped++
	}
	t.report()
}

// result is the fan-out's answer: its counts, and a FanoutIncompleteError
// when some bucket failed.
func (t *tally) result(ns string) (Progress, error) {
	if t.p.Failed > 0 {
		return t.p, &FanoutIncompleteError{Namespace: ns, Scope: t.sc, Progress: t.p, Err: t.first}
	}
	return t.p, nil
}

// discoverNew lists the buckets of sc not in seen, and adds them to it.
func (c *Controls) discoverNew(ctx context.Context, ns string, sc Scope, seen map[schema.Key]bool) ([]schema.BucketID, error) {
	keys, err := c.discover(ctx, ns, sc)
	if err != nil {
		return nil, err
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
	return found, nil
}

// passes runs a fan-out's two discovery passes over the buckets of sc (a
// bucket an in-flight acquire creates during the first is found by the
// second): each pass's new buckets are counted found, then handed to
// work, which records each one's outcome in t.
func (c *Controls) passes(ctx context.Context, ns string, sc Scope, work func(t *tally, found []schema.BucketID)) (Progress, error) {
	t := &tally{sc: sc, onProg: c.onProg}
	seen := map[schema.Key]bool{}
	for range 2 {
		found, err := c.discoverNew(ctx, ns, sc, seen)
		if err != nil {
			t.record(0, err)
			break
		}
		t.found(len(found))
		work(t, found)
	}
	return t.result(ns)
}

// onWorkers calls do for each of items on at most n goroutines, and
// returns when every call has.
func onWorkers[T any](n int, items []T, do func(T)) {
	jobs := make(chan T)
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for it := range jobs {
				do(it)
			}
		}()
	}
	for _, it := range items {
		jobs <- it
	}
	close(jobs)
	wg.Wait()
}

// fanout writes each bucket of sc with stamp, on at most c.workers
// goroutines, over both discovery passes. Every write must be conditioned
// on attribute_exists(PK): a condition failure counts the bucket as
// vanished.
func (c *Controls) fanout(ctx context.Context, ns string, sc Scope, stamp stamper) (Progress, error) {
	return c.passes(ctx, ns, sc, func(t *tally, found []schema.BucketID) {
		onWorkers(c.workers, found, func(id schema.BucketID) {
			out, err := c.stampOneSafely(ctx, id, stamp)
			if err != nil {
				err = fmt.Errorf("%s: %w", id.PK(), err)
			}
			t.record(out, err)
		})
	})
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
