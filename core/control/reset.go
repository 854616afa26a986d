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
	"github.com/zae-limiter/zae-limiter-go/core/internal/wait"
	"github.com/zae-limiter/zae-limiter-go/core/limit"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
)

// Reset and top-up (ADR-149, docs/design.md §8) change the balances of one
// (entity, resource) in place: one transaction over every existing shard,
// each shard a zero-consumption rf-locked pass (every limit materialised,
// the named ones changed by a token delta — never a set — rf moved, vu = 0
// so the next acquire materialises again, soft and bypass stamps renewed
// from the fresh read), with the operation record (R14, put only if
// absent: one commit per operation id) and the audit event in the same
// transaction. tc, disabled, shard_count (only raised to the planned
// count) and the parent are never touched. Phase 1 limits drip: a reset
// restores each shard's share C // S (debt forgiven), a top-up adds up to
// N over the shards, capped at each shard's ceiling.

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
// every shard of the bucket, recorded in the entity's audit trail. The
// bucket must exist (the entity has acquired on the resource); its
// consumption counters, access and parent are untouched. o.OperationID
// makes the call idempotent.
func (c *Controls) Reset(ctx context.Context, ns, entity, resource string, limits []string, o OperationOptions) (Operation, error) {
	defer c.changing()()
	return c.operate(ctx, opReset, ns, entity, resource, limits, nil, o)
}

// TopUp adds up to amounts[limit] whole tokens to each named limit of
// entity's bucket on resource, spread over the bucket's shards and capped
// at its capacity; Operation.Granted says what was added. As for Reset,
// the bucket must exist, the write is one transaction recorded in the
// entity's audit trail, and o.OperationID makes the call idempotent: a
// retried purchase grants nothing twice.
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
	for _, n := range names {
		l, ok := limit.Find(walk.Limits, n)
		if !ok {
			return Operation{}, schema.NewValidationError(schema.FieldLimits, n, "is not a limit of entity "+entity+" on resource "+resource)
		}
		if l.Params().IsQuota() {
			return Operation{}, schema.NewValidationError(schema.FieldLimits, n, "quota limits are not supported by this version")
		}
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
		res, again, err := c.operateOnce(ctx, op, ns, entity, resource, pinc, opID, names, amounts, walk, o.Principal)
		if !again {
			return res, err
		}
		last = err
		// Re-read the config too: the conflict may have been a change.
		if walk, err = c.store.Resolver().ResolveAccess(ctx, ns, entity, resource, config.AccessOptions{Consistent: true, IncludeSystem: true}); err != nil {
			return Operation{}, err
		}
	}
	return Operation{}, &BucketOperationConflictError{OperationID: opID, Err: last}
}

// shardState is one shard as read.
type shardState struct {
	id   schema.BucketID
	img  bucketitem.Image
	item map[string]types.AttributeValue
}

// operateOnce reads the shards, plans and sends one transaction. again asks
// for a re-plan (a lost condition or a conflict, err says which).
func (c *Controls) operateOnce(ctx context.Context, op, ns, entity, resource, pinc, opID string, names []string, amounts map[string]int64, walk config.Walk, principal string) (Operation, bool, error) {
	shards, err := c.readShards(ctx, ns, entity, resource)
	if err != nil {
		return Operation{}, false, err
	}
	if len(shards) == 0 {
		return Operation{}, false, schema.NewValidationError(schema.FieldEntityID, entity, "has no bucket on resource "+resource+" to "+strings.ReplaceAll(op, "_", " "))
	}
	for _, n := range names {
		if slices.IndexFunc(shards, func(s shardState) bool { return s.img.Limit(n) != nil }) < 0 {
			return Operation{}, false, schema.NewValidationError(schema.FieldLimits, n, "is not on the bucket of "+entity+" on "+resource)
		}
	}
	S := int64(1)
	for _, s := range shards {
		S = max(S, s.img.ShardCount)
	}
	now := c.now().UnixMilli()
	deadline := walk.ReadAt.Add(c.ttl).UnixMilli()
	granted := map[string]int64{} // millitokens
	remaining := map[string]int64{}
	for n, a := range amounts {
		remaining[n] = a * bucket.MilliPerToken
	}
	items := make([]types.TransactWriteItem, 0, len(shards)+2)
	for _, s := range shards {
		in := c.planShard(s, op, S, now, deadline, names, walk, granted, remaining)
		items = append(items, types.TransactWriteItem{Update: &types.Update{
			TableName: in.TableName, Key: in.Key, UpdateExpression: in.UpdateExpression,
			ConditionExpression: in.ConditionExpression, ExpressionAttributeNames: in.ExpressionAttributeNames,
			ExpressionAttributeValues: in.ExpressionAttributeValues,
		}})
	}
	res := Operation{OperationID: opID, ShardsWritten: len(shards), ShardCount: S, Granted: map[string]int64{}}
	for _, n := range names {
		res.Granted[n] = bucket.FloorDiv(granted[n], bucket.MilliPerToken)
	}
	rec := c.operationItem(ns, entity, pinc, opID, op, resource, names, amounts, res, principal)
	action := "bucket_reset"
	if op == opTopUp {
		action = "bucket_topped_up"
	}
	audit, err := c.auditItem(ns, entity, action, principal, resource, map[string]string{
		"operation_id": opID, "limits": strings.Join(names, ","), "requested": fmtAmounts(amounts),
		"granted": fmtAmounts(res.Granted), "shards": strconv.Itoa(len(shards)), "shard_count": strconv.FormatInt(S, 10),
	})
	if err != nil {
		return Operation{}, false, err
	}
	items = append(items,
		types.TransactWriteItem{Put: &types.Put{TableName: aws.String(c.table), Item: rec,
			ConditionExpression: aws.String("attribute_not_exists(#pk)"), ExpressionAttributeNames: map[string]string{"#pk": schema.AttrPK}}},
		types.TransactWriteItem{Put: &types.Put{TableName: aws.String(c.table), Item: audit}},
	)
	_, err = c.db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
	if err == nil {
		return res, false, nil
	}
	var tce *types.TransactionCanceledException
	if !errors.As(err, &tce) {
		return Operation{}, false, fmt.Errorf("control: %s: %w", op, err)
	}
	if i := len(shards); i < len(tce.CancellationReasons) && aws.ToString(tce.CancellationReasons[i].Code) == "ConditionalCheckFailed" {
		// The id committed meanwhile (a concurrent call with the same key).
		prev, found, err := c.readOperation(ctx, ns, entity, pinc, opID)
		if err == nil && found {
			err = prev.matches(op, resource, names, amounts)
		}
		return prev.result, false, err
	}
	return Operation{}, true, err
}

// planShard builds one shard's zero-consumption pass and folds its grants
// into granted (millitokens), drawing top-ups from remaining.
func (c *Controls) planShard(s shardState, op string, S, now, deadline int64, names []string, walk config.Walk, granted, remaining map[string]int64) *dynamodb.UpdateItemInput {
	img := &s.img
	rf := bucket.StampRF(img.RF, now)
	var b expr.Builder
	b.Cond(b.Name(schema.AttrRF) + " = " + b.Value(schema.Num(img.RF)))
	if img.HasShardCount {
		b.Cond(b.Name(schema.AttrShardCount) + " = " + b.Value(schema.Num(img.ShardCount)))
	} else {
		b.Cond("attribute_not_exists(" + b.Name(schema.AttrShardCount) + ")")
	}
	if !img.HasShardCount || img.ShardCount < S {
		b.Set(schema.AttrShardCount, schema.Num(S))
	}
	b.Set(schema.AttrRF, schema.Num(rf))
	b.Set(schema.AttrVU, schema.Num(0))
	for i := range img.Limits {
		li := &img.Limits[i]
		p := li.Params()
		cfg, configured := limit.Find(walk.Limits, li.Name)
		if configured {
			p = cfg.Params()
		}
		sh := bucket.Effective(p, S)
		balance, _ := bucket.Materialise(li.Tokens, img.RF, now, sh.Ceiling, sh.Rate, sh.Period)
		target := balance
		if slices.Contains(names, li.Name) {
			switch op {
			case opReset:
				target = sh.Target
				granted[li.Name] += max(0, target-balance)
			case opTopUp:
				g := max(0, min(remaining[li.Name], sh.Ceiling-balance))
				remaining[li.Name] -= g
				granted[li.Name] += g
				target = balance + g
			}
		}
		if d := target - li.Tokens; d != 0 {
			b.Add(schema.BucketAttr(li.Name, schema.LimitTokens), schema.Num(d))
		}
		if configured {
			if li.Params() != p {
				b.Set(schema.BucketAttr(li.Name, schema.LimitCapacity), schema.Num(p.Capacity))
				b.Set(schema.BucketAttr(li.Name, schema.LimitRefillAmount), schema.Num(p.RefillAmount))
				b.Set(schema.BucketAttr(li.Name, schema.LimitRefillPeriod), schema.Num(p.RefillPeriod))
			}
			switch {
			case cfg.Soft:
				b.Set(schema.BucketAttr(li.Name, schema.LimitSoft), schema.Num(deadline))
			case li.Soft.Present:
				b.Remove(schema.BucketAttr(li.Name, schema.LimitSoft))
			}
		}
	}
	if w := &img.WCU; w.Present() {
		sh := bucket.Undivided(w.Params())
		if _, credited := bucket.Materialise(w.Tokens, img.RF, now, sh.Ceiling, sh.Rate, sh.Period); credited != 0 {
			b.Add(schema.BucketAttr(schema.WCULimit, schema.LimitTokens), schema.Num(credited))
		}
	}
	switch {
	case walk.Mode == config.AccessBypass:
		b.Set(schema.AttrBypass, schema.Num(deadline))
	case img.Bypass.Present:
		b.Remove(schema.AttrBypass)
	}
	return b.UpdateInput(c.table, s.id.Key())
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
		if img.Phase2() {
			return nil, schema.NewValidationError(schema.FieldResource, resource, "the bucket carries schedules, windows or grants, which this version does not handle")
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
