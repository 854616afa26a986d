package showcase

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/zae-limiter/zae-limiter-go/core/config"
	"github.com/zae-limiter/zae-limiter-go/core/control"
	"github.com/zae-limiter/zae-limiter-go/core/limit"
	"github.com/zae-limiter/zae-limiter-go/core/limiter"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
	"github.com/zae-limiter/zae-limiter-go/internal/clock"
)

// The resources and API keys of the acquire step. None of them has records
// from the earlier steps, so every bucket below is created by the limiter.
const (
	acqResource = "anthropic/claude" // has its own limits
	acqOther    = "search"           // has none: the system limits apply
	acqKey      = "key-a"            // takes the resource's limits
	acqVIP      = "key-vip"          // has an entity-level override
)

// dbCall is one DynamoDB call the limiter made.
type dbCall struct {
	op      string
	failed  bool
	movesRF bool // an UpdateItem that moves rf: a slow pass or a refill pass
}

// countingDB passes every call on to DynamoDB and notes its operation and
// whether it failed, which tells the fast path (one UpdateItem) from the
// slow path (reads, then a write) without looking inside the limiter.
type countingDB struct {
	db    limiter.DB
	mu    sync.Mutex
	calls []dbCall
}

func (c *countingDB) note(op string, err error) { c.noteCall(dbCall{op: op, failed: err != nil}) }

func (c *countingDB) noteCall(call dbCall) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls = append(c.calls, call)
}

// take returns the calls noted since the last take and forgets them.
func (c *countingDB) take() []dbCall {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.calls
	c.calls = nil
	return out
}

func (c *countingDB) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	out, err := c.db.UpdateItem(ctx, in, o...)
	call := dbCall{op: "UpdateItem", failed: err != nil}
	for _, attr := range in.ExpressionAttributeNames {
		call.movesRF = call.movesRF || attr == schema.AttrRF
	}
	c.noteCall(call)
	return out, err
}

func (c *countingDB) PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	out, err := c.db.PutItem(ctx, in, o...)
	c.note("PutItem", err)
	return out, err
}

func (c *countingDB) GetItem(ctx context.Context, in *dynamodb.GetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	out, err := c.db.GetItem(ctx, in, o...)
	c.note("GetItem", err)
	return out, err
}

func (c *countingDB) BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	out, err := c.db.BatchGetItem(ctx, in, o...)
	c.note("BatchGetItem", err)
	return out, err
}

func (c *countingDB) Query(ctx context.Context, in *dynamodb.QueryInput, o ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	out, err := c.db.Query(ctx, in, o...)
	c.note("Query", err)
	return out, err
}

func (c *countingDB) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, o ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	out, err := c.db.TransactWriteItems(ctx, in, o...)
	c.note("TransactWriteItems", err)
	return out, err
}

func (c *countingDB) BatchWriteItem(ctx context.Context, in *dynamodb.BatchWriteItemInput, o ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error) {
	out, err := c.db.BatchWriteItem(ctx, in, o...)
	c.note("BatchWriteItem", err)
	return out, err
}

func (c *countingDB) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, o ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	out, err := c.db.DeleteItem(ctx, in, o...)
	c.note("DeleteItem", err)
	return out, err
}

// describeCalls names the path a call sequence shows and lists the calls,
// runs of one operation folded: "slow path, new bucket: UpdateItem
// (condition failed), BatchGetItem ×3, PutItem".
func describeCalls(calls []dbCall, admitted bool) string {
	var path string
	switch {
	case len(calls) == 0 && !admitted:
		return "local rejection (rejection cache): no DynamoDB call"
	case len(calls) == 0:
		return "no DynamoDB call"
	case len(calls) == 1 && calls[0].op == "UpdateItem" && !calls[0].failed && admitted && calls[0].movesRF:
		path = "refill pass, no read"
	case len(calls) == 1 && calls[0].op == "UpdateItem" && !calls[0].failed && admitted:
		path = "fast path"
	case len(calls) == 1 && calls[0].op == "UpdateItem" && calls[0].failed:
		path = "fast rejection"
	case admitted && hasOp(calls, "PutItem"):
		path = "slow path, new bucket"
	case admitted:
		path = "slow path"
	default:
		path = "refused"
	}
	var parts []string
	for i := 0; i < len(calls); {
		j := i
		for j < len(calls) && calls[j] == calls[i] {
			j++
		}
		p := calls[i].op
		if calls[i].failed {
			p += " (condition failed)"
		}
		if j-i > 1 {
			p += " ×" + strconv.Itoa(j-i)
		}
		parts = append(parts, p)
		i = j
	}
	return path + ": " + strings.Join(parts, ", ")
}

func hasOp(calls []dbCall, op string) bool {
	for _, c := range calls {
		if c.op == op {
			return true
		}
	}
	return false
}

// acquire runs the limiter's acquire path through the real limiter: limits
// set through the config store, buckets created on first use, the fast
// path, a 429 with its body and Retry-After, admission again once the clock
// has moved past the retry-after, a lease adjusted and committed, one
// rolled back, and a request the limiter refuses as bad input.
func (d *demo) acquire(ctx context.Context) error {
	clk := clock.NewManual(d.now) // moves only when this step advances it
	db := &countingDB{db: d.db}
	lim, err := limiter.New(db, d.table, d.ns, limiter.Options{Clock: clk.Now})
	if err != nil {
		return err
	}
	ops := control.New(d.db, d.table, control.Options{Clock: clk.Now, Caches: []control.Cache{lim}})
	system := []limit.Limit{limit.PerMinute("rpm", 60)}
	resource := []limit.Limit{limit.PerMinute("rpm", 5), limit.PerMinute("tpm", 10_000)}
	vip := []limit.Limit{limit.PerMinute("rpm", 100), limit.PerMinute("tpm", 100_000)}
	if _, err := ops.SetSystemLimits(ctx, d.ns, system, config.SystemOptions{}, "make run"); err != nil {
		return err
	}
	if _, err := ops.SetResourceLimits(ctx, d.ns, acqResource, resource, "make run"); err != nil {
		return err
	}
	if _, err := ops.SetEntityLimits(ctx, d.ns, acqVIP, acqResource, vip, "make run"); err != nil {
		return err
	}
	db.take()
	fmt.Fprintln(d.out, "limits set through the operator API, audited (the first level with limits wins):")
	fmt.Fprintf(d.out, "  %-36s %s\n", "system", limitList(system))
	fmt.Fprintf(d.out, "  %-36s %s\n", "resource "+acqResource, limitList(resource))
	fmt.Fprintf(d.out, "  %-36s %s\n", "entity "+acqVIP+" on "+acqResource, limitList(vip))
	fmt.Fprintf(d.out, "the limiter's clock starts at %s and moves only when this step moves it\n",
		clk.Now().Format(time.RFC3339))

	// try makes one acquire and prints its outcome and the calls it made.
	tryOn := func(lim *limiter.Limiter, label, entity, resource string, consume limiter.Consume) (*limiter.Lease, error) {
		lease, err := lim.Acquire(ctx, entity, resource, consume)
		calls := describeCalls(db.take(), err == nil)
		var rle *limiter.RateLimitExceeded
		switch {
		case err == nil:
			fmt.Fprintf(d.out, "  %-7s %-34s %s\n", label, "admitted, "+remaining(lease, consume), calls)
		case errors.As(err, &rle):
			fmt.Fprintf(d.out, "  %-7s %-34s %s\n", label, strconv.Itoa(rle.HTTPStatus())+" Too Many Requests", calls)
		default:
			fmt.Fprintf(d.out, "  %-7s %T: %v\n  %-7s %-34s %s\n", label, err, err, "", "", calls)
		}
		return lease, err
	}
	try := func(label, entity, resource string, consume limiter.Consume) (*limiter.Lease, error) {
		return tryOn(lim, label, entity, resource, consume)
	}

	each := limiter.Consume{"rpm": 1, "tpm": 1500}
	fmt.Fprintf(d.out, "%s on %s, rpm 1 + tpm 1500 per request, clock held still:\n", acqKey, acqResource)
	admitted := 0
	var rle *limiter.RateLimitExceeded
	for i := 1; ; i++ {
		_, err := try("#"+strconv.Itoa(i), acqKey, acqResource, each)
		if errors.As(err, &rle) {
			break
		}
		if err != nil {
			return err
		}
		if admitted++; admitted > 5 {
			return fmt.Errorf("%d requests admitted on a limit of 5 per minute with the clock held still", admitted)
		}
	}
	fmt.Fprintf(d.out, "%d admitted, then a 429: retry_after_seconds %.3f, Retry-After: %s, body:\n",
		admitted, rle.RetryAfterSeconds(), rle.RetryAfterHeader())
	body, err := json.Marshal(rle)
	if err != nil {
		return err
	}
	var indented bytes.Buffer
	if err := json.Indent(&indented, body, "    ", "  "); err != nil {
		return err
	}
	fmt.Fprintf(d.out, "    %s\n", indented.String())
	fmt.Fprintln(d.out, "#5's write returned the bucket at rpm 0, so the rejection cache refused #6 with no call (for up to 1s);")
	fmt.Fprintln(d.out, "another process, cache off, pays one failed conditional write (1 WCU) for the same answer:")
	other, err := limiter.New(db, d.table, d.ns, limiter.Options{Clock: clk.Now, RejectionCacheTTL: -1})
	if err != nil {
		return err
	}
	if _, err := tryOn(other, "#6", acqKey, acqResource, each); !errors.As(err, &rle) {
		return fmt.Errorf("the same request from another process: %v, want a 429", err)
	}

	header, err := strconv.Atoi(rle.RetryAfterHeader())
	if err != nil {
		return fmt.Errorf("Retry-After %q: %w", rle.RetryAfterHeader(), err)
	}
	clk.Advance(time.Duration(header) * time.Second)
	fmt.Fprintf(d.out, "clock moved on %ds, past the retry-after and past vu (the instant a limit could have refilled to its\n", header)
	fmt.Fprintln(d.out, "capacity): one refill pass, built from the image the process holds, materialises and admits:")
	if _, err := try("#"+strconv.Itoa(admitted+2), acqKey, acqResource, each); err != nil {
		return err
	}

	fmt.Fprintf(d.out, "the same request for %s (entity override) and, rpm only, for %s on %s (system limits):\n",
		acqVIP, acqKey, acqOther)
	if _, err := try(acqVIP, acqVIP, acqResource, each); err != nil {
		return err
	}
	if _, err := try(acqOther, acqKey, acqOther, limiter.Consume{"rpm": 1}); err != nil {
		return err
	}

	fmt.Fprintf(d.out, "leases of %s: admission writes at once, Commit writes what changed since, Rollback undoes it:\n", acqVIP)
	lease, err := try("lease", acqVIP, acqResource, limiter.Consume{"rpm": 1, "tpm": 2000})
	if err != nil {
		return err
	}
	if err := lease.Adjust("tpm", -800); err != nil {
		return err
	}
	left, _ := lease.Remaining("tpm")
	if err := lease.Commit(ctx); err != nil {
		return err
	}
	fmt.Fprintf(d.out, "  %-7s used 1200 of the 2000 tpm estimated: Adjust(tpm, -800) then Commit: tpm %d left; %s\n",
		"", left, describeLease(db.take()))
	lease, err = try("lease", acqVIP, acqResource, limiter.Consume{"rpm": 1, "tpm": 500})
	if err != nil {
		return err
	}
	if err := lease.Rollback(ctx); err != nil {
		return err
	}
	fmt.Fprintf(d.out, "  %-7s Rollback gives back rpm 1 and tpm 500; %s\n", "", describeLease(db.take()))
	if _, err := try("peek", acqVIP, acqResource, limiter.Consume{"rpm": 0, "tpm": 0}); err != nil {
		return err
	}
	fmt.Fprintf(d.out, "  %-7s amounts of 0 are checked, not debited: the balances after the rollback. A credit sets\n", "")
	fmt.Fprintf(d.out, "  %-7s vu to now (it may fill a limit sooner), so the next acquire is a refill pass: still one\n", "")
	fmt.Fprintf(d.out, "  %-7s call, from the image the credit returned\n", "")

	// Idle past a full refill, then a burst at one instant: the bucket holds
	// its capacity, not its stored balance plus a capacity
	// (docs/decisions.md P25).
	clk.Advance(65 * time.Second)
	burst, calls, local := 0, 0, 0
	for range 150 {
		if _, err := lim.Acquire(ctx, acqVIP, acqResource, limiter.Consume{"rpm": 1}); err == nil {
			burst++
		} else if !errors.As(err, &rle) {
			return err
		} else if rle.Local {
			local++
		}
		calls += len(db.take())
	}
	fmt.Fprintf(d.out, "%s idle 65s, then 150 requests at one instant: %d admitted, the rpm capacity of 100 (%d calls; %d 429s decided locally)\n",
		acqVIP, burst, calls, local)

	fmt.Fprintln(d.out, "a limit the pair does not have is bad input (400); nothing is written:")
	if _, err := try("rpd", acqKey, acqResource, limiter.Consume{"rpd": 1}); !limiter.IsValidationError(err) {
		return fmt.Errorf("an unknown limit: %v, want a validation error", err)
	}
	return nil
}

// describeLease lists the calls a lease's Commit or Rollback made.
func describeLease(calls []dbCall) string {
	if len(calls) == 0 {
		return "no DynamoDB call"
	}
	var ops []string
	for _, c := range calls {
		ops = append(ops, c.op)
	}
	noun := " call: "
	if len(calls) > 1 {
		noun = " calls: "
	}
	return strconv.Itoa(len(calls)) + noun + strings.Join(ops, ", ")
}

// remaining renders the whole tokens a lease left of each consumed limit.
func remaining(lease *limiter.Lease, consume limiter.Consume) string {
	var parts []string
	for _, name := range []string{"rpm", "tpm"} {
		if _, ok := consume[name]; !ok {
			continue
		}
		if r, ok := lease.Remaining(name); ok {
			parts = append(parts, fmt.Sprintf("%s %d", name, r))
		}
	}
	return strings.Join(parts, ", ") + " left"
}

func limitList(ls []limit.Limit) string {
	parts := make([]string, len(ls))
	for i, l := range ls {
		parts[i] = l.String()
	}
	return strings.Join(parts, ", ")
}
