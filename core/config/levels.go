package config

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/internal/expr"
	"github.com/zae-limiter/zae-limiter-go/core/limit"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
)

// SystemOptions are the non-limit settings SetSystemLimits may change.
type SystemOptions struct {
	// OnUnavailable sets the namespace's on_unavailable action; "" leaves
	// the stored value (if any) alone.
	OnUnavailable OnUnavailable
}

// target is one config item a setter reads and writes.
type target struct {
	level    Level
	ns       string
	entity   string // entity levels
	resource string // entity and resource levels
	keys     schema.ItemKeys
}

func (t target) key() schema.Key { return t.keys.Key }

// identity returns the attributes every write of the item carries besides
// keys and limits (docs/design.md §2): config_version, and entity_id/resource.
func (t target) identity() map[string]types.AttributeValue {
	id := map[string]types.AttributeValue{schema.AttrConfigVersion: &types.AttributeValueMemberN{Value: configVersion}}
	switch t.level {
	case LevelEntity, LevelEntityDefault:
		id[schema.AttrEntityID] = schema.Str(t.entity)
		id[schema.AttrResource] = schema.Str(t.resource)
	case LevelResource:
		id[schema.AttrResource] = schema.Str(t.resource)
	}
	return id
}

func systemTarget(ns string) target {
	return target{level: LevelSystem, ns: ns, keys: schema.SystemConfigItemKeys(ns)}
}

func resourceTarget(ns, resource string) target {
	return target{level: LevelResource, ns: ns, resource: resource, keys: schema.ResourceConfigItemKeys(ns, resource)}
}

func entityTarget(ns, entity, resource string) target {
	lv := LevelEntity
	if resource == schema.DefaultResource {
		lv = LevelEntityDefault
	}
	return target{level: lv, ns: ns, entity: entity, resource: resource, keys: schema.EntityConfigItemKeys(ns, entity, resource)}
}

// setSystemLimits is Writer.SetSystemLimits.
func (s *Store) setSystemLimits(ctx context.Context, ns string, limits []limit.Limit, opts SystemOptions) error {
	if err := validateNamespace(ns); err != nil {
		return err
	}
	if opts.OnUnavailable != "" && !opts.OnUnavailable.Valid() {
		return schema.NewValidationError(schema.FieldOnUnavailable, string(opts.OnUnavailable), "must be allow or block")
	}
	return s.setLimits(ctx, systemTarget(ns), limits, opts.OnUnavailable)
}

// setResourceLimits is Writer.SetResourceLimits.
func (s *Store) setResourceLimits(ctx context.Context, ns, resource string, limits []limit.Limit) error {
	if err := validateNamespace(ns); err != nil {
		return err
	}
	if err := schema.ValidateResource(resource); err != nil {
		return err
	}
	return s.setLimits(ctx, resourceTarget(ns, resource), limits, "")
}

// setEntityLimits is Writer.SetEntityLimits.
func (s *Store) setEntityLimits(ctx context.Context, ns, entity, resource string, limits []limit.Limit) error {
	if err := validateEntityScope(ns, entity, resource); err != nil {
		return err
	}
	return s.setLimits(ctx, entityTarget(ns, entity, resource), limits, "")
}

// validateEntityScope checks the namespace, entity and config scope (a
// resource or `_default_`) of an entity-level config call.
func validateEntityScope(ns, entity, resource string) error {
	if err := validateNamespace(ns); err != nil {
		return err
	}
	if err := schema.ValidateEntityID(entity); err != nil {
		return err
	}
	return schema.ValidateConfigScope(resource)
}

func validateLevelLimits(limits []limit.Limit) error {
	switch {
	case len(limits) == 0:
		return schema.NewValidationError(schema.FieldLimits, "[]",
			"must hold at least one limit; delete the level's limits to remove them")
	case len(limits) > MaxLimitsPerLevel:
		return schema.NewValidationError(schema.FieldLimits, strconv.Itoa(len(limits))+" limits",
			"at most "+strconv.Itoa(MaxLimitsPerLevel)+" limits per config item")
	}
	return limit.ValidateSet(limits)
}

func (s *Store) setLimits(ctx context.Context, t target, limits []limit.Limit, onUnavailable OnUnavailable) error {
	if err := validateLevelLimits(limits); err != nil {
		return err
	}
	if need := ReadersFor(limits); need != "" {
		// Soft limits need readers that honour their stamps (ADR-151
		// decision 7), session quotas readers that keep their windows
		// (ADR-141): the version gate, then the ratchet.
		return s.gated(ctx, need, func() error { return s.replaceLimits(ctx, t, limits, onUnavailable) })
	}
	return s.replaceLimits(ctx, t, limits, onUnavailable)
}

// replaceLimits writes a validated limit set as t's limits.
func (s *Store) replaceLimits(ctx context.Context, t target, limits []limit.Limit, onUnavailable OnUnavailable) error {
	defer s.changing(t.key())()
	newAttrs := t.identity()
	putLimits(newAttrs, limits)
	if onUnavailable != "" {
		newAttrs[schema.AttrOnUnavailable] = schema.Str(string(onUnavailable))
	}
	for range maxWriteAttempts {
		cur, err := getItem(ctx, s.db, s.table, t.key(), true)
		if err != nil {
			return s.wrap(t, "set limits", err)
		}
		if cur == nil {
			done, err := s.createItem(ctx, t, newAttrs)
			if err != nil {
				return s.wrap(t, "set limits", err)
			}
			if done {
				return nil
			}
			continue
		}
		if a, ok := mergeAttr(cur); ok {
			return &UnsupportedConfigError{Item: t.key(), Attribute: a,
				Reason: "limit merging through the hierarchy (ADR-143); refusing to replace the limits of a merging level"}
		}
		var remove []string
		for a := range cur {
			if _, replaced := newAttrs[a]; !replaced && (isLimitAttr(a) || a == schema.AttrSchedTZ) {
				remove = append(remove, a)
			}
		}
		set := make(map[string]types.AttributeValue, len(newAttrs)+6)
		t.keys.AddTo(set) // GSI keys too, in case an older writer left them off
		delete(set, schema.AttrPK)
		delete(set, schema.AttrSK)
		for a, v := range newAttrs {
			set[a] = v
		}
		done, err := s.updateItem(ctx, t, set, remove, s.registryOnSet(t))
		if err != nil {
			return s.wrap(t, "set limits", err)
		}
		if done {
			return nil
		}
	}
	return s.wrap(t, "set limits", ErrConflict)
}

// createItem puts a new config item (keys + attrs) under
// attribute_not_exists(PK), with the level's registry update in the same
// transaction. done is false when the item appeared meanwhile.
func (s *Store) createItem(ctx context.Context, t target, attrs map[string]types.AttributeValue) (done bool, err error) {
	it := t.keys.Item()
	for a, v := range attrs {
		it[a] = v
	}
	cond := aws.String("attribute_not_exists(#pk)")
	names := map[string]string{"#pk": schema.AttrPK}
	var reg *types.Update
	switch t.level {
	case LevelEntity, LevelEntityDefault:
		reg = s.entityRegistryUpdate(t.ns, t.resource, 1)
	case LevelResource:
		reg = s.resourceRegistryUpdate(t.ns, t.resource, true)
	}
	if reg == nil {
		_, err = s.db.PutItem(ctx, &dynamodb.PutItemInput{
			TableName: aws.String(s.table), Item: it, ConditionExpression: cond, ExpressionAttributeNames: names,
		})
		if isConditionFailed(err) {
			return false, nil
		}
		return err == nil, err
	}
	_, err = s.db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Put: &types.Put{TableName: aws.String(s.table), Item: it, ConditionExpression: cond, ExpressionAttributeNames: names}},
		{Update: reg},
	}})
	if conditionFailedAt(err, 0) {
		return false, nil
	}
	return err == nil, err
}

// registryOnSet is the registry update that goes with an update of an
// existing item: R8 ADD for a resource (idempotent; the item may have held
// only siblings until now), nothing for the other levels (R9 counts items,
// and the item exists already).
func (s *Store) registryOnSet(t target) *types.Update {
	if t.level == LevelResource {
		return s.resourceRegistryUpdate(t.ns, t.resource, true)
	}
	return nil
}

// updateItem applies SET set and REMOVE remove to t's item under
// attribute_exists(PK), in one transaction with reg when reg is not nil.
// done is false when the item vanished meanwhile.
func (s *Store) updateItem(ctx context.Context, t target, set map[string]types.AttributeValue, remove []string, reg *types.Update) (done bool, err error) {
	var e expr.Builder
	e.SetRemove(set, remove)
	cond := "attribute_exists(" + e.Name(schema.AttrPK) + ")"
	if reg == nil {
		_, err = s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: aws.String(s.table), Key: t.key().AttributeValues(),
			UpdateExpression: aws.String(e.Update()), ConditionExpression: aws.String(cond),
			ExpressionAttributeNames: e.Names(), ExpressionAttributeValues: e.Values(),
		})
		if isConditionFailed(err) {
			return false, nil
		}
		return err == nil, err
	}
	_, err = s.db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Update: &types.Update{
			TableName: aws.String(s.table), Key: t.key().AttributeValues(),
			UpdateExpression: aws.String(e.Update()), ConditionExpression: aws.String(cond),
			ExpressionAttributeNames: e.Names(), ExpressionAttributeValues: e.Values(),
		}},
		{Update: reg},
	}})
	if conditionFailedAt(err, 0) {
		return false, nil
	}
	return err == nil, err
}

// entityRegistryUpdate is R9's counter update for resource: ADD #r :delta,
// with GSI4 keys set if absent (docs/design.md §2 R9).
func (s *Store) entityRegistryUpdate(ns, resource string, delta int64) *types.Update {
	k := schema.EntityConfigRegistryItemKeys(ns)
	return &types.Update{
		TableName:        aws.String(s.table),
		Key:              k.Key.AttributeValues(),
		UpdateExpression: aws.String("ADD #r :d SET #g4pk = if_not_exists(#g4pk, :g4pk), #g4sk = if_not_exists(#g4sk, :g4sk)"),
		ExpressionAttributeNames: map[string]string{
			"#r": resource, "#g4pk": schema.AttrGSI4PK, "#g4sk": schema.AttrGSI4SK,
		},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":d": schema.Num(delta), ":g4pk": schema.Str(k.GSI4.PK), ":g4sk": schema.Str(k.GSI4.SK),
		},
	}
}

// resourceRegistryUpdate is R8's set update: ADD (add) or DELETE resource
// from `resources`, with GSI4 keys set if absent.
func (s *Store) resourceRegistryUpdate(ns, resource string, add bool) *types.Update {
	k := schema.ResourceRegistryItemKeys(ns)
	op := "DELETE"
	if add {
		op = "ADD"
	}
	return &types.Update{
		TableName:        aws.String(s.table),
		Key:              k.Key.AttributeValues(),
		UpdateExpression: aws.String(op + " #res :r SET #g4pk = if_not_exists(#g4pk, :g4pk), #g4sk = if_not_exists(#g4sk, :g4sk)"),
		ExpressionAttributeNames: map[string]string{
			"#res": schema.AttrResources, "#g4pk": schema.AttrGSI4PK, "#g4sk": schema.AttrGSI4SK,
		},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":r": &types.AttributeValueMemberSS{Value: []string{resource}}, ":g4pk": schema.Str(k.GSI4.PK), ":g4sk": schema.Str(k.GSI4.SK),
		},
	}
}

// cleanupEntityRegistry removes R9's counter for resource once it is ≤ 0
// (conditional; a positive counter is left alone), and the item itself
// once it counts nothing: a namespace whose entity configs are all gone
// keeps no empty registry.
func (s *Store) cleanupEntityRegistry(ctx context.Context, ns, resource string) error {
	k := schema.EntityConfigRegistryKey(ns)
	out, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.table),
		Key:                       k.AttributeValues(),
		UpdateExpression:          aws.String("REMOVE #r"),
		ConditionExpression:       aws.String("#r <= :zero"),
		ExpressionAttributeNames:  map[string]string{"#r": resource},
		ExpressionAttributeValues: map[string]types.AttributeValue{":zero": schema.Num(0)},
		ReturnValues:              types.ReturnValueAllNew,
	})
	if isConditionFailed(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("clean up entity config registry for %s: %w", resource, err)
	}
	if counters(out.Attributes) > 0 {
		return nil
	}
	// Empty: delete it. A counter another writer ADDs between the two calls
	// names no attribute the condition can see, so the delete returns what
	// it removed and any counter in it is added back (ADD commutes with the
	// other writer's own); until then ListResources misses that resource.
	del, err := s.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName: aws.String(s.table), Key: k.AttributeValues(),
		ConditionExpression:      aws.String("attribute_not_exists(#r)"),
		ExpressionAttributeNames: map[string]string{"#r": resource},
		ReturnValues:             types.ReturnValueAllOld,
	})
	if isConditionFailed(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("clean up entity config registry: %w", err)
	}
	for a, v := range del.Attributes {
		if n, ok := parseN(v); ok && !isKeyAttr(a) {
			if err := s.readdEntityRegistry(ctx, ns, a, n); err != nil {
				return err
			}
		}
	}
	return nil
}

// counters counts an R9 image's counters (every attribute but its keys).
func counters(it map[string]types.AttributeValue) int {
	n := 0
	for a := range it {
		if !isKeyAttr(a) {
			n++
		}
	}
	return n
}

// readdEntityRegistry adds back a counter a cleanup's delete removed.
func (s *Store) readdEntityRegistry(ctx context.Context, ns, resource string, n int64) error {
	u := s.entityRegistryUpdate(ns, resource, n)
	_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: u.TableName, Key: u.Key, UpdateExpression: u.UpdateExpression,
		ExpressionAttributeNames: u.ExpressionAttributeNames, ExpressionAttributeValues: u.ExpressionAttributeValues,
	})
	if err != nil {
		return fmt.Errorf("entity config registry: add back %s: %w", resource, err)
	}
	return nil
}

// cleanupResourceRegistry deletes R8 once its set is empty (DynamoDB
// removes a set's attribute with its last element): conditional, so a
// resource another writer registers meanwhile keeps it.
func (s *Store) cleanupResourceRegistry(ctx context.Context, ns string) error {
	_, err := s.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName: aws.String(s.table), Key: schema.ResourceRegistryKey(ns).AttributeValues(),
		ConditionExpression:      aws.String("attribute_exists(#pk) AND attribute_not_exists(#res)"),
		ExpressionAttributeNames: map[string]string{"#pk": schema.AttrPK, "#res": schema.AttrResources},
	})
	if err != nil && !isConditionFailed(err) {
		return fmt.Errorf("clean up resource registry: %w", err)
	}
	return nil
}

// GetSystemLimits returns namespace ns's system limits (sorted by name) and
// on_unavailable, read strongly consistently; none when no item exists.
// An unsupported item is *UnsupportedConfigError.
func (s *Store) GetSystemLimits(ctx context.Context, ns string) ([]limit.Limit, OnUnavailable, error) {
	if err := validateNamespace(ns); err != nil {
		return nil, "", err
	}
	d, err := s.read(ctx, systemTarget(ns))
	return d.Limits, d.OnUnavailable, err
}

// GetResourceLimits returns resource's limits, sorted by name, read strongly
// consistently; none when no item exists.
func (s *Store) GetResourceLimits(ctx context.Context, ns, resource string) ([]limit.Limit, error) {
	if err := validateNamespace(ns); err != nil {
		return nil, err
	}
	if err := schema.ValidateResource(resource); err != nil {
		return nil, err
	}
	d, err := s.read(ctx, resourceTarget(ns, resource))
	return d.Limits, err
}

// GetEntityLimits returns entity's own limits for resource (`_default_`
// allowed), sorted by name, read strongly consistently; none when no item
// exists. It does not resolve through the hierarchy (see Resolver.Resolve).
func (s *Store) GetEntityLimits(ctx context.Context, ns, entity, resource string) ([]limit.Limit, error) {
	if err := validateEntityScope(ns, entity, resource); err != nil {
		return nil, err
	}
	d, err := s.read(ctx, entityTarget(ns, entity, resource))
	return d.Limits, err
}

// read reads and decodes t's item; the zero Decoded when absent.
func (s *Store) read(ctx context.Context, t target) (Decoded, error) {
	it, err := getItem(ctx, s.db, s.table, t.key(), true)
	if err != nil {
		return Decoded{}, s.wrap(t, "get limits", err)
	}
	if it == nil {
		return Decoded{}, nil
	}
	d, err := DecodeConfigItem(t.level, it)
	s.resolver.report(t.key(), d.Problems, err)
	if err != nil {
		return Decoded{}, err
	}
	return d, nil
}

// deleteSystemLimits is Writer.DeleteSystemLimits.
func (s *Store) deleteSystemLimits(ctx context.Context, ns string) error {
	if err := validateNamespace(ns); err != nil {
		return err
	}
	return s.deleteLimits(ctx, systemTarget(ns))
}

// deleteResourceLimits is Writer.DeleteResourceLimits.
func (s *Store) deleteResourceLimits(ctx context.Context, ns, resource string) error {
	if err := validateNamespace(ns); err != nil {
		return err
	}
	if err := schema.ValidateResource(resource); err != nil {
		return err
	}
	return s.deleteLimits(ctx, resourceTarget(ns, resource))
}

// deleteEntityLimits is Writer.DeleteEntityLimits.
func (s *Store) deleteEntityLimits(ctx context.Context, ns, entity, resource string) error {
	if err := validateEntityScope(ns, entity, resource); err != nil {
		return err
	}
	return s.deleteLimits(ctx, entityTarget(ns, entity, resource))
}

func (s *Store) deleteLimits(ctx context.Context, t target) error {
	defer s.changing(t.key())()
	identity := t.identity()
	for range maxWriteAttempts {
		cur, err := getItem(ctx, s.db, s.table, t.key(), true)
		if err != nil {
			return s.wrap(t, "delete limits", err)
		}
		if cur == nil {
			return nil
		}
		var remove []string
		residual := 0
		for a := range cur {
			switch {
			case isLimitAttr(a) || a == schema.AttrSchedTZ || isMergeAttr(a):
				remove = append(remove, a)
			case isKeyAttr(a):
			default:
				if _, ok := identity[a]; !ok {
					residual++
				}
			}
		}
		var done bool
		switch {
		case residual == 0:
			done, err = s.deleteWholeItem(ctx, t, true)
		case len(remove) > 0:
			var reg *types.Update
			if t.level == LevelResource {
				reg = s.resourceRegistryUpdate(t.ns, t.resource, false)
			}
			done, err = s.updateItem(ctx, t, nil, remove, reg)
		case t.level == LevelResource:
			// Only siblings and no limits: make sure the registry agrees.
			reg := s.resourceRegistryUpdate(t.ns, t.resource, false)
			_, err = s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
				TableName: reg.TableName, Key: reg.Key, UpdateExpression: reg.UpdateExpression,
				ExpressionAttributeNames: reg.ExpressionAttributeNames, ExpressionAttributeValues: reg.ExpressionAttributeValues,
			})
			if err != nil {
				return s.wrap(t, "delete limits", err)
			}
			return s.cleanupResourceRegistry(ctx, t.ns)
		default:
			return nil // only siblings: no limits to delete
		}
		if err != nil {
			return s.wrap(t, "delete limits", err)
		}
		if done {
			switch t.level {
			case LevelEntity, LevelEntityDefault:
				return s.cleanupEntityRegistry(ctx, t.ns, t.resource)
			case LevelResource:
				return s.cleanupResourceRegistry(ctx, t.ns)
			}
			return nil
		}
	}
	return s.wrap(t, "delete limits", ErrConflict)
}

// deleteWholeItem deletes t's item under attribute_exists(PK) (and, when
// guard, the absence of the guarded siblings), with the level's registry
// update in the same transaction. done is false when the condition failed.
func (s *Store) deleteWholeItem(ctx context.Context, t target, guard bool) (done bool, err error) {
	var e expr.Builder
	cond := "attribute_exists(" + e.Name(schema.AttrPK) + ")"
	if guard {
		// The known non-limit attributes must not be destroyed if they
		// appeared after the read.
		for _, a := range [...]string{schema.AttrDisabled, schema.AttrCascade, schema.AttrOnUnavailable, schema.AttrAuditRetentionDays} {
			cond += " AND attribute_not_exists(" + e.Name(a) + ")"
		}
	}
	var reg *types.Update
	switch t.level {
	case LevelEntity, LevelEntityDefault:
		reg = s.entityRegistryUpdate(t.ns, t.resource, -1)
	case LevelResource:
		reg = s.resourceRegistryUpdate(t.ns, t.resource, false)
	}
	if reg == nil {
		_, err = s.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{
			TableName: aws.String(s.table), Key: t.key().AttributeValues(),
			ConditionExpression: aws.String(cond), ExpressionAttributeNames: e.Names(),
		})
		if isConditionFailed(err) {
			return false, nil
		}
		return err == nil, err
	}
	_, err = s.db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Delete: &types.Delete{
			TableName: aws.String(s.table), Key: t.key().AttributeValues(),
			ConditionExpression: aws.String(cond), ExpressionAttributeNames: e.Names(),
		}},
		{Update: reg},
	}})
	if conditionFailedAt(err, 0) {
		return false, nil
	}
	return err == nil, err
}

// deleteEntityConfigItem deletes an entity config item whatever it holds,
// with its R9 decrement, as DeleteEntity does. An item already gone is fine.
func (s *Store) deleteEntityConfigItem(ctx context.Context, ns, entity, resource string) error {
	t := entityTarget(ns, entity, resource)
	defer s.changing(t.key())()
	done, err := s.deleteWholeItem(ctx, t, false)
	if err != nil || !done {
		return err
	}
	return s.cleanupEntityRegistry(ctx, ns, resource)
}

func (s *Store) wrap(t target, op string, err error) error {
	where := t.level.String()
	switch t.level {
	case LevelEntity, LevelEntityDefault:
		where += " " + t.entity + "/" + t.resource
	case LevelResource:
		where += " " + t.resource
	}
	return fmt.Errorf("%s (%s config): %w", op, where, err)
}

// mergeAttr returns the first ADR-143 merge attribute of an item.
func mergeAttr(it map[string]types.AttributeValue) (string, bool) {
	var found []string
	for a := range it {
		if isMergeAttr(a) {
			found = append(found, a)
		}
	}
	if len(found) == 0 {
		return "", false
	}
	return slices.Min(found), true
}

func isMergeAttr(a string) bool {
	return a == AttrInheritLimits || a == AttrExcludeLimits || a == AttrPatchLimits || isPatchAttr(a)
}

// isKeyAttr reports whether a is PK, SK or a GSI/LSI key attribute.
func isKeyAttr(a string) bool {
	switch a {
	case schema.AttrPK, schema.AttrSK, schema.AttrGSI1PK, schema.AttrGSI1SK, schema.AttrGSI2PK, schema.AttrGSI2SK,
		schema.AttrGSI3PK, schema.AttrGSI3SK, schema.AttrGSI4PK, schema.AttrGSI4SK:
		return true
	}
	return len(a) == 6 && a[:3] == "LSI" && a[4:] == "SK"
}

func isConditionFailed(err error) bool {
	var ccf *types.ConditionalCheckFailedException
	return errors.As(err, &ccf)
}

// setOnUnavailable is Writer.SetOnUnavailable.
func (s *Store) setOnUnavailable(ctx context.Context, ns string, o OnUnavailable) error {
	if err := validateNamespace(ns); err != nil {
		return err
	}
	if err := ValidateOnUnavailable(o); err != nil {
		return err
	}
	var v types.AttributeValue
	if o != "" {
		v = schema.Str(string(o))
	}
	return s.setAttr(ctx, systemTarget(ns), schema.AttrOnUnavailable, v, "set on_unavailable")
}

// ReadItems reads the items of keys strongly consistently (BatchGetItem in
// chunks of 100, GetItem for what a batch leaves unsettled). Absent items
// are missing from the map. It is the bulk read of a declarative apply
// (core/provision), which compares many config items at once.
func (s *Store) ReadItems(ctx context.Context, keys []schema.Key) (map[schema.Key]map[string]types.AttributeValue, error) {
	found, _, err := readItems(ctx, s.db, s.table, keys, true, &s.opts)
	if err != nil {
		return nil, err
	}
	return found, nil
}
