package control

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/bucket"
	"github.com/zae-limiter/zae-limiter-go/core/bucketitem"
	"github.com/zae-limiter/zae-limiter-go/core/config"
	"github.com/zae-limiter/zae-limiter-go/core/internal/expr"
	"github.com/zae-limiter/zae-limiter-go/core/internal/query"
	"github.com/zae-limiter/zae-limiter-go/core/internal/shard"
	"github.com/zae-limiter/zae-limiter-go/core/internal/wait"
	"github.com/zae-limiter/zae-limiter-go/core/limit"
	"github.com/zae-limiter/zae-limiter-go/core/schedule"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
)

// Reset and top-up (ADR-149, docs/design.md §8) change the balances of one
// (entity, resource) in place: one transaction over every existing shard,
// each shard a zero-consumption rf-locked pass of the shard model
// (core/internal/shard: every limit materialised at the parameters its
// schedule has in force, the shard's own up to now and the configured ones
// from now on, a calendar quota's pending reset applied, the named limits
// changed by a token delta — never a set — rf moved, vu = 0 so the next
// acquire materialises again, soft and bypass stamps renewed from the
// fresh read, read after the shards), with the operation record (R14, put
// only if absent: one commit per operation id) and the audit event in the
// same transaction. tc, disabled, shard_count (only raised to the planned
// count) and the parent are never touched.
//
// A reset restores each shard's share C // S (debt forgiven); a calendar
// quota's grant is sized at S again and its top-up wiped. A top-up of a
// dripping limit adds up to N over the shards, capped at each shard's
// ceiling; a top-up of a calendar quota adds exactly N, spread over the
// shards by the part of the allowance each one's grant stands for
// (bucket.TopUpPortions), each portion also recorded in the shard's tu so
// that its ceiling, C // gc + tu, holds it until the next reset. A
// session quota's reset ends its window now; its top-up adds to the live
// window, or opens one now where none is live (ADR-149).

// OperationOptions tune a reset or top-up.
type OperationOptions struct {
	// OperationID is the idempotency key, a purchase or ticket id say: a
	// second call with the same id on the same entity returns the first
	// call's result (Replayed) and changes nothing; the same id with other
	// limits or amounts is a validation error. "" mints one. At most 256
	// characters of an identifier.
	OperationID string
	// Principal is who asks, for the audit trail.
	Principal string
}

// Operation is what a reset or top-up did.
type Operation struct {
	// OperationID is the operation's idempotency key, given or minted.
	OperationID string
	// Replayed reports a call whose id had already committed: nothing was
	// written, and the rest is the first call's result.
	Replayed bool
	// ShardsWritten is the number of shards of the bucket written;
	// ShardCount is how many shards the bucket is split over (a hot
	// bucket's capacity is shared between its shards, docs/design.md §5).
	ShardsWritten int
	ShardCount    int64
	// Granted are the whole tokens the operation added per limit.
	Granted map[string]int64
}

// BucketOperationConflictError reports a reset or top-up whose transaction
// lost to concurrent writers on every try; nothing was written, and the
// call can be repeated with the same operation id.
type BucketOperationConflictError struct {
	// OperationID is the operation's idempotency key.
	OperationID string
	// Err is the last conflict.
	Err error
}

// Error implements error.
func (e *BucketOperationConflictError) Error() string {
	return "control: operation " + e.OperationID + " kept conflicting with other writers; nothing was written: " + e.Err.Error()
}

// Unwrap returns the last conflict.
func (e *BucketOperationConflictError) Unwrap() error { return e.Err }

// maxOperationRetries bounds the re-plans after a conflict.
const maxOperationRetries = 3

// operationTTL is how long an operation record is kept.
const operationTTL = 3 * 24 * time.Hour

// Reset refills the named limits (nil: every limit) of entity's bucket on
// resource to their capacity, forgiving any debt, in one transaction over
// every shard of the bucket, recorded in the entity's audit trail; a
// calendar quota gets its allowance back for the rest of the period. The
// bucket must exist (the entity has acquired on the resource); its
// consumption counters, access and parent are untouched. o.OperationID
// makes the call idempotent.
func (c *Controls) Reset(ctx context.Context, ns, entity, resource string, limits []string, o OperationOptions) (Operation, error) {
	defer c.changing()()
	return c.operate(ctx, opReset, ns, entity, resource, limits, nil, o)
}

// TopUp adds amounts[limit] whole tokens to each named limit of entity's
// bucket on resource, in one transaction recorded in the entity's audit
// trail; o.OperationID makes the call idempotent: a retried purchase grants
// nothing twice. A limit that drips gets up to the amount, spread over the
// bucket's shards and capped at its capacity; a calendar quota gets exactly
// the amount on top of its allowance, until its next reset. Operation.Granted
// says what was added.
//
// The bucket must exist, except for a top-up of a calendar quota, which
// creates it (its limits from config, the quota's allowance plus the
// amount). A quota's top-up is stored where a table reader older than
// config.QuotaTopUpVersion would throw it away, so it first passes the
// version gate (a *config.VersionMismatchError otherwise, nothing written)
// and then raises client_min_version; should that last step fail, the
// top-up has committed, and the error says so beside its Operation.
func (c *Controls) TopUp(ctx context.Context, ns, entity, resource string, amounts map[string]int64, o OperationOptions) (Operation, error) {
	defer c.changing()()
	names := slices.Sorted(maps.Keys(amounts))
	for _, n := range names {
		if amounts[n] <= 0 {
			return Operation{}, schema.NewValidationError("amount", n, "a top-up adds a positive number of tokens")
		}
		if _, ok := bucket.ToMilli(amounts[n]); !ok {
			return Operation{}, schema.NewValidationError("amount", n, "amount × 1000 must fit in 64 bits")
		}
	}
	if len(names) == 0 {
		return Operation{}, schema.NewValidationError(schema.FieldLimits, "", "a top-up names at least one limit")
	}
	return c.operate(ctx, opTopUp, ns, entity, resource, names, amounts, o)
}

const (
	opReset = "reset"
	opTopUp = "top_up"
)

func (c *Controls) operate(ctx context.Context, op, ns, entity, resource string, names []string, amounts map[string]int64, o OperationOptions) (Operation, error) {
	if err := schema.ValidateEntityID(entity); err != nil {
		return Operation{}, err
	}
	if err := schema.ValidateResource(resource); err != nil {
		return Operation{}, err
	}
	for _, n := range names {
		if err := schema.ValidateLimitName(n); err != nil {
			return Operation{}, err
		}
	}
	if o.OperationID != "" {
		if err := schema.ValidateIdentifier(schema.AttrOperationID, o.OperationID); err != nil {
			return Operation{}, err
		}
	}
	pinc := "0"
	if e, err := c.store.GetEntity(ctx, ns, entity); err == nil && e.Pinc != "" {
		pinc = e.Pinc
	} else if err != nil && !isNotFound(err) {
		return Operation{}, err
	}
	walk, err := c.store.Resolver().ResolveAccess(ctx, ns, entity, resource, config.AccessOptions{Consistent: true, IncludeSystem: true})
	if err != nil {
		return Operation{}, err
	}
	if names == nil {
		for _, l := range walk.Limits {
			names = append(names, l.Name)
		}
	}
	if err := checkOperable(walk, entity, resource, names); err != nil {
		return Operation{}, err
	}
	// The version gate and its ratchet before anything is written for a
	// top-up that records tu (docs/design.md §8), a replay included.
	gated := false
	gate := func(w config.Walk) error {
		if gated || op != opTopUp || !namesQuota(w, names) {
			return nil
		}
		if err := c.store.Gate(ctx, config.QuotaTopUpVersion); err != nil {
			return err
		}
		gated = true
		return nil
	}
	if err := gate(walk); err != nil {
		return Operation{}, err
	}
	opID := o.OperationID
	if opID != "" {
		if prev, found, err := c.readOperation(ctx, ns, entity, pinc, opID); err != nil || found {
			if err == nil {
				err = prev.matches(op, resource, names, amounts)
			}
			return prev.result, err
		}
	} else if opID, err = c.ids.New(c.now(), c.entropy); err != nil {
		return Operation{}, err
	}
	var last error
	for attempt := 0; attempt <= maxOperationRetries; attempt++ {
		if attempt > 0 {
			if err := wait.Sleep(ctx, time.Duration(rand.Int64N(int64(25<<attempt)))*time.Millisecond); err != nil {
				return Operation{}, err
			}
		}
		res, _, again, err := c.operateOnce(ctx, op, ns, entity, resource, pinc, opID, names, amounts, gate, o.Principal)
		if !again {
			return res, err
		}
		last = err // the next attempt reads the shards and the config again
	}
	return Operation{}, &BucketOperationConflictError{OperationID: opID, Err: last}
}

// checkOperable refuses, before anything is written, a named limit that
// does not resolve for (entity, resource).
func checkOperable(walk config.Walk, entity, resource string, names []string) error {
	for _, n := range names {
		if _, ok := limit.Find(walk.Limits, n); !ok {
			return schema.NewValidationError(schema.FieldLimits, n, "is not a limit of entity "+entity+" on resource "+resource)
		}
	}
	return nil
}

// namesQuota reports whether a named limit resolves to a quota: a top-up
// of it writes tu.
func namesQuota(walk config.Walk, names []string) bool {
	for _, n := range names {
		if l, ok := limit.Find(walk.Limits, n); ok && l.Params().IsQuota() {
			return true
		}
	}
	return false
}

// shardState is one shard as read.
type shardState struct {
	id   schema.BucketID
	img  bucketitem.Image
	item map[string]types.AttributeValue
}

// operateOnce reads the shards, then the config (strongly consistent, so
// that the parameters the write stores are no older than the ones the
// shards carry: docs/decisions.md P58), plans and sends one transaction.
// again asks for a re-plan (a lost condition or a conflict, err says
// which); walk is the config the plan used.
func (c *Controls) operateOnce(ctx context.Context, op, ns, entity, resource, pinc, opID string, names []string, amounts map[string]int64, gate func(config.Walk) error, principal string) (res Operation, walk config.Walk, again bool, err error) {
	shards, err := c.readShards(ctx, ns, entity, resource)
	if err != nil {
		return Operation{}, walk, false, err
	}
	if walk, err = c.store.Resolver().ResolveAccess(ctx, ns, entity, resource, config.AccessOptions{Consistent: true, IncludeSystem: true}); err != nil {
		return Operation{}, walk, false, err
	}
	if err := checkOperable(walk, entity, resource, names); err != nil {
		return Operation{}, walk, false, err
	}
	if err := gate(walk); err != nil {
		return Operation{}, walk, false, err
	}
	now := c.now().UnixMilli()
	deadline := walk.ReadAt.Add(c.ttl).UnixMilli()
	var items []types.TransactWriteItem
	if len(shards) == 0 {
		if op != opTopUp || !namesQuota(walk, names) {
			return Operation{}, walk, false, schema.NewValidationError(schema.FieldEntityID, entity, "has no bucket on resource "+resource+" to "+strings.ReplaceAll(op, "_", " "))
		}
		if items, res, err = c.createShard(ctx, ns, entity, resource, walk, names, amounts, now, deadline); err != nil {
			return Operation{}, walk, false, err
		}
	} else {
		for _, n := range names {
			if slices.IndexFunc(shards, func(s shardState) bool { return s.img.Limit(n) != nil }) < 0 {
				return Operation{}, walk, false, schema.NewValidationError(schema.FieldLimits, n, "is not on the bucket of "+entity+" on "+resource)
			}
		}
		S := int64(1)
		for _, s := range shards {
			S = max(S, s.img.ShardCount)
		}
		passes := make([]shard.Pass, len(shards))
		for i := range shards {
			if passes[i], err = shard.Materialise(shards[i].id, &shards[i].img, S, now); err != nil {
				return Operation{}, walk, false, fmt.Errorf("control: %w", err)
			}
			// The config read above, from this pass's instant on: each
			// shard's parameters are those of its limits as configured
			// (docs/design.md §8); a limit no longer configured keeps its
			// own, since an operation changes balances, not limit sets.
			if err := passes[i].Reconfigure(walk.Limits, false); err != nil {
				return Operation{}, walk, false, fmt.Errorf("control: %w", err)
			}
		}
		granted := map[string]int64{} // millitokens
		switch op {
		case opReset:
			reset(passes, names, S, granted)
		case opTopUp:
			topUp(passes, names, amounts, granted)
		}
		w := shard.Write{ForcePass: true, Deadline: deadline, SetBypass: walk.Mode == config.AccessBypass,
			ClearBypass: walk.Mode != config.AccessBypass, ClearRecheck: true}
		for i := range passes {
			in := passes[i].Update(w).UpdateInput(c.table, shards[i].id.Key())
			items = append(items, types.TransactWriteItem{Update: &types.Update{
				TableName: in.TableName, Key: in.Key, UpdateExpression: in.UpdateExpression,
				ConditionExpression: in.ConditionExpression, ExpressionAttributeNames: in.ExpressionAttributeNames,
				ExpressionAttributeValues: in.ExpressionAttributeValues,
			}})
		}
		res = Operation{ShardsWritten: len(shards), ShardCount: S, Granted: map[string]int64{}}
		for _, n := range names {
			res.Granted[n] = bucket.FloorDiv(granted[n], bucket.MilliPerToken)
		}
	}
	res.OperationID = opID
	rec := c.operationItem(ns, entity, pinc, opID, op, resource, names, amounts, res, principal)
	action := "bucket_reset"
	if op == opTopUp {
		action = "bucket_topped_up"
	}
	audit, err := c.auditItem(ns, entity, action, principal, resource, map[string]string{
		"operation_id": opID, "limits": strings.Join(names, ","), "requested": fmtAmounts(amounts),
		"granted": fmtAmounts(res.Granted), "shards": strconv.Itoa(res.ShardsWritten), "shard_count": strconv.FormatInt(res.ShardCount, 10),
	})
	if err != nil {
		return Operation{}, walk, false, err
	}
	recAt := len(items)
	items = append(items,
		types.TransactWriteItem{Put: &types.Put{TableName: aws.String(c.table), Item: rec,
			ConditionExpression: aws.String("attribute_not_exists(#pk)"), ExpressionAttributeNames: map[string]string{"#pk": schema.AttrPK}}},
		types.TransactWriteItem{Put: &types.Put{TableName: aws.String(c.table), Item: audit}},
	)
	if op == opReset {
		// A shard created since the read (funded by a move off a shard
		// this reset restores, ADR-145) would keep what it moved while its
		// donor is reset over the debit: the reset holds only while every
		// slot it did not read is still empty, and plans again otherwise.
		have := map[int]bool{}
		for _, sh := range shards {
			have[sh.id.Shard] = true
		}
		for slot := 0; slot < int(res.ShardCount); slot++ {
			if have[slot] {
				continue
			}
			key := schema.BucketKey(ns, entity, resource, slot)
			items = append(items, types.TransactWriteItem{ConditionCheck: &types.ConditionCheck{
				TableName: aws.String(c.table), Key: key.AttributeValues(),
				ConditionExpression: aws.String("attribute_not_exists(#pk)"), ExpressionAttributeNames: map[string]string{"#pk": schema.AttrPK},
			}})
		}
	}
	_, err = c.db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
	if err == nil {
		return res, walk, false, nil
	}
	var tce *types.TransactionCanceledException
	if !errors.As(err, &tce) {
		return Operation{}, walk, false, fmt.Errorf("control: %s: %w", op, err)
	}
	if recAt < len(tce.CancellationReasons) && aws.ToString(tce.CancellationReasons[recAt].Code) == "ConditionalCheckFailed" {
		// The id committed meanwhile (a concurrent call with the same key).
		prev, found, err := c.readOperation(ctx, ns, entity, pinc, opID)
		if err == nil && found {
			err = prev.matches(op, resource, names, amounts)
		}
		return prev.result, walk, false, err
	}
	return Operation{}, walk, true, err
}

// reset restores the named limits of every shard to their share C // S;
// a quota's grant is sized at S and its top-up wiped, a session quota's
// window ended. granted gathers what was added over the materialised
// balances, millitokens.
func reset(passes []shard.Pass, names []string, S int64, granted map[string]int64) {
	for i := range passes {
		for _, n := range names {
			lp := passes[i].Find(n)
			if lp == nil {
				continue
			}
			before := lp.Target
			lp.Target = lp.Pass.Share.Target
			granted[n] += max(0, lp.Target-before)
			if lp.Quota {
				lp.GC, lp.WriteGC, lp.WipeTU = S, true, true
			}
			if lp.Window != nil {
				passes[i].EndWindow(lp)
			}
		}
	}
}

// topUp adds amounts[n] tokens to each named limit. A quota takes exactly
// the amount: after the pass every shard carrying it is in the current
// period, and bucket.TopUpPortions splits the amount over them by the part
// of the allowance each grant stands for (weights S / gc, the remainder to
// the lowest shard), each portion added to tk and to tu. A dripping limit
// takes what fits under each shard's ceiling, shard by shard. granted
// gathers the millitokens added.
func topUp(passes []shard.Pass, names []string, amounts map[string]int64, granted map[string]int64) {
	for _, n := range names {
		amount := amounts[n] * bucket.MilliPerToken
		var carriers []*shard.Limit
		var siblings []bucket.GrantSibling
		for i := range passes {
			if lp := passes[i].Find(n); lp != nil {
				if lp.Window != nil && lp.Phase != bucket.WindowCurrent && lp.Phase != bucket.WindowPending {
					passes[i].OpenWindow(lp) // the window's own grant, not the top-up's
				}
				carriers = append(carriers, lp)
				siblings = append(siblings, bucket.GrantSibling{Shard: int64(passes[i].ID.Shard), GrantShards: lp.GC, Tokens: lp.Target})
			}
		}
		if len(carriers) == 0 {
			continue
		}
		if !carriers[0].Quota {
			for _, lp := range carriers {
				g := max(0, min(amount, lp.Pass.Share.Ceiling-lp.Target))
				amount -= g
				granted[n] += g
				lp.Target += g
			}
			continue
		}
		for j, portion := range bucket.TopUpPortions(amount, siblings) {
			lp := carriers[j]
			lp.Target += portion
			lp.TopUp += portion
			granted[n] += portion
			// A grant read without gc is recorded with its top-up, so that
			// every reader's ceiling is C // gc + tu.
			lp.WriteGC = lp.WriteGC || lp.Stored.GrantShards < 1
		}
	}
}

// createShard is the top-up of a calendar quota whose bucket does not
// exist yet (docs/design.md §8): shard 0 created at a shard count of 1
// from the config just read uncached, every limit at its share (the
// parameters in force), each quota granted at 1 (gc), a named quota's
// amount on top of its share and in its tu, stamps from the same read,
// vu = now (the next acquire materialises), the expiry the limiter would
// write; put under attribute_not_exists(PK), and, when the item names a
// parent, beside a check that the entity's parent generation is the one
// read (ADR-150). A dripping limit starts full: its grant is 0.
func (c *Controls) createShard(ctx context.Context, ns, entity, resource string, walk config.Walk, names []string, amounts map[string]int64, now, deadline int64) ([]types.TransactWriteItem, Operation, error) {
	owner, err := c.store.GetEntity(ctx, ns, entity)
	if err != nil && !isNotFound(err) {
		return nil, Operation{}, err
	}
	n := bucketitem.New{
		ID: schema.BucketID{Namespace: ns, Entity: entity, Resource: resource}, RF: now, ShardCount: 1,
		Cascade: config.EffectiveCascade(owner, walk.Cascade), PGen: owner.PGen, ParentID: owner.ParentID,
		VU: now, Disabled: walk.Mode == config.AccessDisabled, Recheck: now + c.ttl.Milliseconds(),
		TTL: shard.TTL(walk.Limits, walk.Source.EntityLevel(), c.ttlMult, now),
	}
	if walk.Mode == config.AccessBypass {
		n.Bypass = deadline
	}
	res := Operation{ShardsWritten: 1, ShardCount: 1, Granted: map[string]int64{}}
	for _, l := range walk.Limits {
		sched, resets, loc, err := l.Schedules()
		if err != nil {
			return nil, Operation{}, fmt.Errorf("control: limit %s: %w", l.Name, err)
		}
		p := l.Params()
		pass := schedule.Materialise(p, sched, resets, loc, 0, now, 1, now)
		nl := bucketitem.NewLimit{Name: l.Name, Tokens: pass.Share.Target, Params: p, Schedule: l.Schedule, ResetSchedule: l.ResetSchedule}
		if l.Soft {
			nl.Soft = deadline
		}
		if l.Schedule != "" || l.ResetSchedule != "" {
			n.Zone = l.Zone
		}
		if l.IsSession() {
			// A window opens only for the top-up that names the quota
			// (ADR-149); another waits for the first use (vu = now).
			nl.ResetAfter = l.ResetAfterSeconds()
			if slices.Contains(names, l.Name) {
				nl.WindowStart, nl.WindowAnchor = now, now
			}
		}
		if p.IsQuota() {
			nl.GrantShards = 1
			if slices.Contains(names, l.Name) {
				add := amounts[l.Name] * bucket.MilliPerToken
				nl.Tokens += add
				nl.TopUp = add
				res.Granted[l.Name] = amounts[l.Name]
			}
		} else if slices.Contains(names, l.Name) {
			res.Granted[l.Name] = 0
		}
		n.Limits = append(n.Limits, nl)
	}
	items := []types.TransactWriteItem{{Put: &types.Put{TableName: aws.String(c.table), Item: n.Item(),
		ConditionExpression: aws.String("attribute_not_exists(#pk)"), ExpressionAttributeNames: map[string]string{"#pk": schema.AttrPK}}}}
	if owner.ParentID != "" {
		var b expr.Builder
		pgen := b.Name(schema.AttrPGen)
		b.Cond("(attribute_not_exists(" + pgen + ") OR " + pgen + " = " + b.Value(schema.Num(owner.PGen)) + ")")
		items = append(items, types.TransactWriteItem{ConditionCheck: &types.ConditionCheck{
			TableName: aws.String(c.table), Key: schema.EntityMetaKey(ns, entity).AttributeValues(),
			ConditionExpression: aws.String(b.Condition()), ExpressionAttributeNames: b.Names(), ExpressionAttributeValues: b.Values(),
		}})
	}
	return items, res, nil
}

// readShards reads every shard of (entity, resource), strongly consistent.
func (c *Controls) readShards(ctx context.Context, ns, entity, resource string) ([]shardState, error) {
	keys, err := query.Keys(ctx, c.db, c.table, schema.GSI3, schema.AttrGSI3PK, schema.EntityPK(ns, entity), schema.AttrGSI3SK, schema.BucketGSI3SKPrefix(resource), false)
	if err != nil {
		return nil, err
	}
	var out []shardState
	for _, k := range keys {
		id, err := schema.ParseBucketPK(k.PK)
		if err != nil {
			continue
		}
		got, err := c.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(c.table), Key: k.AttributeValues(), ConsistentRead: aws.Bool(true)})
		if err != nil {
			return nil, err
		}
		if len(got.Item) == 0 {
			continue // gone since the index listed it
		}
		img, err := bucketitem.Decode(got.Item)
		if err != nil {
			return nil, err
		}
		out = append(out, shardState{id: id, img: img, item: got.Item})
	}
	slices.SortFunc(out, func(a, b shardState) int { return a.id.Shard - b.id.Shard })
	return out, nil
}

// storedOperation is an operation record as read.
type storedOperation struct {
	op, resource string
	limits       []string
	requested    map[string]int64
	result       Operation
}

// matches refuses a replay whose parameters differ from the first call's.
func (s storedOperation) matches(op, resource string, names []string, amounts map[string]int64) error {
	if s.op != op || s.resource != resource || !slices.Equal(s.limits, names) || !maps.Equal(s.requested, amounts) {
		return schema.NewValidationError(schema.AttrOperationID, s.result.OperationID,
			"was used for another operation ("+s.op+" on "+s.resource+"); an id names one operation")
	}
	return nil
}

func (c *Controls) readOperation(ctx context.Context, ns, entity, pinc, opID string) (storedOperation, bool, error) {
	got, err := c.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(c.table), Key: schema.OperationKey(ns, entity, pinc, opID).AttributeValues(), ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return storedOperation{}, false, err
	}
	if len(got.Item) == 0 {
		return storedOperation{}, false, nil
	}
	it := got.Item
	s := func(a string) string {
		v, _ := it[a].(*types.AttributeValueMemberS)
		if v == nil {
			return ""
		}
		return v.Value
	}
	n := func(v types.AttributeValue) int64 {
		nv, _ := v.(*types.AttributeValueMemberN)
		if nv == nil {
			return 0
		}
		x, _ := strconv.ParseInt(nv.Value, 10, 64)
		return x
	}
	m := func(a string) map[string]int64 {
		out := map[string]int64{}
		if mv, ok := it[a].(*types.AttributeValueMemberM); ok {
			for k, v := range mv.Value {
				out[k] = n(v)
			}
		}
		return out
	}
	so := storedOperation{op: s(schema.AttrOp), resource: s(schema.AttrResource), requested: m(schema.AttrRequested)}
	if l, ok := it[schema.AttrLimits].(*types.AttributeValueMemberL); ok {
		for _, v := range l.Value {
			if sv, ok := v.(*types.AttributeValueMemberS); ok {
				so.limits = append(so.limits, sv.Value)
			}
		}
	}
	so.result = Operation{
		OperationID: opID, Replayed: true, ShardsWritten: int(n(it[schema.AttrShards])),
		ShardCount: n(it[schema.AttrShardCount]), Granted: m(schema.AttrGranted),
	}
	return so, true, nil
}

// operationItem is the R14 record of an operation.
func (c *Controls) operationItem(ns, entity, pinc, opID, op, resource string, names []string, amounts map[string]int64, res Operation, principal string) map[string]types.AttributeValue {
	now := c.now()
	it := schema.OperationItemKeys(ns, entity, pinc, opID).Item()
	it[schema.AttrOperationID] = schema.Str(opID)
	it[schema.AttrOp] = schema.Str(op)
	it[schema.AttrEntityID] = schema.Str(entity)
	it[schema.AttrResource] = schema.Str(resource)
	lst := make([]types.AttributeValue, len(names))
	for i, n := range names {
		lst[i] = schema.Str(n)
	}
	it[schema.AttrLimits] = &types.AttributeValueMemberL{Value: lst}
	it[schema.AttrRequested] = numMap(amounts)
	it[schema.AttrGranted] = numMap(res.Granted)
	it[schema.AttrShards] = schema.Num(int64(res.ShardsWritten))
	it[schema.AttrShardCount] = schema.Num(res.ShardCount)
	it[schema.AttrPinc] = schema.Str(pinc)
	it[schema.AttrPrincipal] = strOrNull(principal)
	it[schema.AttrCreatedAt] = schema.Str(now.UTC().Format("2006-01-02T15:04:05Z"))
	it[schema.AttrTTL] = schema.Num(now.Add(operationTTL).Unix())
	return it
}

func numMap(m map[string]int64) types.AttributeValue {
	out := make(map[string]types.AttributeValue, len(m))
	for k, v := range m {
		out[k] = schema.Num(v)
	}
	return &types.AttributeValueMemberM{Value: out}
}

func fmtAmounts(m map[string]int64) string {
	parts := make([]string, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, k+"="+strconv.FormatInt(m[k], 10))
	}
	return strings.Join(parts, ",")
}

func isNotFound(err error) bool {
	var nf *config.EntityNotFoundError
	return errors.As(err, &nf)
}
