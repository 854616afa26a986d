package config

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/internal/query"
	"github.com/zae-limiter/zae-limiter-go/core/internal/ulid"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
)

// Entity is what a namespace records of one entity (an API key, a user, a
// tenant: whoever acquires): its name, its parent and whether it cascades
// to it (R4, docs/design.md §2). An entity need not be recorded to acquire
// or to carry limits.
type Entity struct {
	// ID is the entity's id, unique in its namespace.
	ID string
	// Name is the display name; it defaults to ID.
	Name string
	// ParentID is "" for a root entity.
	ParentID string
	// Cascade is the entity-wide cascade default (docs/design.md §7).
	Cascade bool
	// PGen is the parent generation, which a move to another parent
	// increments (ADR-150); 0 when never set.
	PGen int64
	// Pinc is the incarnation id (a ULID), new each time the id is
	// created: the operation ids of resets and top-ups count per
	// incarnation, so those of a deleted entity do not count for a new one
	// of the same id. "0" for an entity never created, or created before
	// the field existed.
	Pinc string
	// Metadata is free-form string metadata.
	Metadata map[string]string
	// CreatedAt is the creation time, whole seconds; zero when the stored
	// time does not parse.
	CreatedAt time.Time
}

// EntityOptions are the optional fields of CreateEntity.
type EntityOptions struct {
	// Name is the display name; "" means the entity id.
	Name string
	// ParentID makes the entity a child of an existing entity.
	ParentID string
	// Cascade is the entity-wide cascade default.
	Cascade bool
	// Metadata is free-form string metadata.
	Metadata map[string]string
}

// maxAncestorHops bounds the cycle check of CreateEntity (ADR-150).
const maxAncestorHops = 32

// pincAbsent is the incarnation of an entity without `pinc` (docs/design.md §2).
const pincAbsent = "0"

// createEntity is Writer.CreateEntity.
func (s *Store) createEntity(ctx context.Context, ns, id string, opts EntityOptions) (Entity, error) {
	if err := validateNamespace(ns); err != nil {
		return Entity{}, err
	}
	defer s.changing(schema.Key{})()
	if err := schema.ValidateEntityID(id); err != nil {
		return Entity{}, err
	}
	parent := opts.ParentID
	if parent != "" {
		if err := schema.ValidateParentID(parent); err != nil {
			return Entity{}, err
		}
		if parent == id {
			return Entity{}, schema.NewInvalidIdentifierError(schema.FieldParentID, parent, "an entity cannot be its own parent")
		}
		if err := s.checkAncestry(ctx, ns, id, parent); err != nil {
			return Entity{}, err
		}
	}
	now := s.opts.now()
	pinc, err := ulid.New(now, s.opts.entropy)
	if err != nil {
		return Entity{}, err
	}
	e := Entity{
		ID: id, Name: opts.Name, ParentID: parent, Cascade: opts.Cascade,
		Pinc: pinc, Metadata: maps.Clone(opts.Metadata), CreatedAt: now.UTC().Truncate(time.Second),
	}
	if e.Name == "" {
		e.Name = id
	}
	if e.Metadata == nil {
		e.Metadata = map[string]string{}
	}
	it := schema.EntityMetaItemKeys(ns, id, parent).Item()
	it[schema.AttrEntityID] = schema.Str(id)
	it[schema.AttrName] = schema.Str(e.Name)
	if parent != "" {
		it[schema.AttrParentID] = schema.Str(parent)
	} else {
		it[schema.AttrParentID] = &types.AttributeValueMemberNULL{Value: true}
	}
	it[schema.AttrCascade] = &types.AttributeValueMemberBOOL{Value: e.Cascade}
	md := make(map[string]types.AttributeValue, len(e.Metadata))
	for k, v := range e.Metadata {
		md[k] = schema.Str(v)
	}
	it[schema.AttrMetadata] = &types.AttributeValueMemberM{Value: md}
	it[schema.AttrCreatedAt] = schema.Str(isoSeconds(now))
	it[schema.AttrPinc] = schema.Str(pinc)

	cond := aws.String("attribute_not_exists(#pk)")
	names := map[string]string{"#pk": schema.AttrPK}
	if parent == "" {
		_, err := s.db.PutItem(ctx, &dynamodb.PutItemInput{
			TableName: aws.String(s.table), Item: it,
			ConditionExpression: cond, ExpressionAttributeNames: names,
		})
		var ccf *types.ConditionalCheckFailedException
		if errors.As(err, &ccf) {
			return Entity{}, &EntityExistsError{EntityID: id}
		}
		if err != nil {
			return Entity{}, fmt.Errorf("create entity %s: %w", id, err)
		}
		return e, nil
	}
	_, err = s.db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Put: &types.Put{
			TableName: aws.String(s.table), Item: it,
			ConditionExpression: cond, ExpressionAttributeNames: names,
		}},
		{ConditionCheck: &types.ConditionCheck{
			TableName:                aws.String(s.table),
			Key:                      schema.EntityMetaKey(ns, parent).AttributeValues(),
			ConditionExpression:      aws.String("attribute_exists(#pk)"),
			ExpressionAttributeNames: map[string]string{"#pk": schema.AttrPK},
		}},
	}})
	switch {
	case err == nil:
		return e, nil
	case conditionFailedAt(err, 0):
		return Entity{}, &EntityExistsError{EntityID: id}
	case conditionFailedAt(err, 1):
		return Entity{}, &EntityNotFoundError{EntityID: parent}
	}
	return Entity{}, fmt.Errorf("create entity %s: %w", id, err)
}

// checkAncestry walks up from parent and fails if it meets id (a cycle) or
// if parent does not exist.
func (s *Store) checkAncestry(ctx context.Context, ns, id, parent string) error {
	cur := parent
	for hop := 0; hop < maxAncestorHops && cur != ""; hop++ {
		it, err := getItem(ctx, s.db, s.table, schema.EntityMetaKey(ns, cur), true)
		if err != nil {
			return fmt.Errorf("create entity %s: read ancestor %s: %w", id, cur, err)
		}
		if it == nil {
			if hop == 0 {
				return &EntityNotFoundError{EntityID: parent}
			}
			return nil // a dangling parent_id further up ends the chain
		}
		next, _ := getS(it, schema.AttrParentID)
		if next == id {
			return schema.NewInvalidIdentifierError(schema.FieldParentID, parent,
				"would make "+strconv.Quote(id)+" its own ancestor")
		}
		cur = next
	}
	return nil
}

// conditionFailedAt reports whether err is a TransactionCanceledException
// whose item i failed its condition.
func conditionFailedAt(err error, i int) bool {
	var tce *types.TransactionCanceledException
	if !errors.As(err, &tce) || i >= len(tce.CancellationReasons) {
		return false
	}
	return aws.ToString(tce.CancellationReasons[i].Code) == "ConditionalCheckFailed"
}

// GetEntity returns entity id of namespace ns, read strongly consistently, or
// *EntityNotFoundError.
func (s *Store) GetEntity(ctx context.Context, ns, id string) (Entity, error) {
	if err := validateNamespace(ns); err != nil {
		return Entity{}, err
	}
	if err := schema.ValidateEntityID(id); err != nil {
		return Entity{}, err
	}
	it, err := getItem(ctx, s.db, s.table, schema.EntityMetaKey(ns, id), true)
	if err != nil {
		return Entity{}, fmt.Errorf("get entity %s: %w", id, err)
	}
	if it == nil {
		return Entity{}, &EntityNotFoundError{EntityID: id}
	}
	return DecodeEntity(it), nil
}

// DecodeEntity decodes an entity's stored record (its META item, R4).
// Missing or mistyped attributes take
// their defaults: name = id, no parent, cascade false, pgen 0, pinc "0",
// empty metadata (non-S values skipped), zero CreatedAt. When `entity_id`
// is absent the id is taken from the partition key.
func DecodeEntity(it map[string]types.AttributeValue) Entity {
	e := Entity{Pinc: pincAbsent, Metadata: map[string]string{}}
	e.ID, _ = getS(it, schema.AttrEntityID)
	if e.ID == "" {
		if pk, ok := getS(it, schema.AttrPK); ok {
			if _, id, err := schema.ParseEntityPK(pk); err == nil {
				e.ID = id
			}
		}
	}
	e.Name, _ = getS(it, schema.AttrName)
	if e.Name == "" {
		e.Name = e.ID
	}
	e.ParentID, _ = getS(it, schema.AttrParentID)
	if b, ok := it[schema.AttrCascade].(*types.AttributeValueMemberBOOL); ok {
		e.Cascade = b.Value
	}
	if n, ok := parseN(it[schema.AttrPGen]); ok {
		e.PGen = n
	}
	if p, ok := getS(it, schema.AttrPinc); ok && p != "" {
		e.Pinc = p
	}
	if m, ok := it[schema.AttrMetadata].(*types.AttributeValueMemberM); ok {
		for k, v := range m.Value {
			if sv, ok := v.(*types.AttributeValueMemberS); ok {
				e.Metadata[k] = sv.Value
			}
		}
	}
	if c, ok := getS(it, schema.AttrCreatedAt); ok {
		if t, err := time.Parse(time.RFC3339, c); err == nil {
			e.CreatedAt = t.UTC()
		}
	}
	return e
}

// Children returns the entities whose parent is parent, ordered by id. A
// parent without children (or not recorded) yields an empty slice.
func (s *Store) Children(ctx context.Context, ns, parent string) ([]Entity, error) {
	if err := validateNamespace(ns); err != nil {
		return nil, err
	}
	if err := schema.ValidateParentID(parent); err != nil {
		return nil, err
	}
	var out []Entity
	var start map[string]types.AttributeValue
	for {
		res, err := s.db.Query(ctx, &dynamodb.QueryInput{
			TableName:                 aws.String(s.table),
			IndexName:                 aws.String(schema.GSI1),
			KeyConditionExpression:    aws.String("#pk = :pk"),
			ExpressionAttributeNames:  map[string]string{"#pk": schema.AttrGSI1PK},
			ExpressionAttributeValues: map[string]types.AttributeValue{":pk": schema.Str(schema.ParentGSI1PK(ns, parent))},
			ExclusiveStartKey:         start,
		})
		if err != nil {
			return nil, fmt.Errorf("children of %s: %w", parent, err)
		}
		for _, it := range res.Items {
			if sk, _ := getS(it, schema.AttrSK); sk != schema.SKMeta {
				continue
			}
			out = append(out, DecodeEntity(it))
		}
		if len(res.LastEvaluatedKey) == 0 {
			return out, nil
		}
		start = res.LastEvaluatedKey
	}
}

// deleteEntity is Writer.DeleteEntity.
func (s *Store) deleteEntity(ctx context.Context, ns, id string) error {
	if err := validateNamespace(ns); err != nil {
		return err
	}
	if err := schema.ValidateEntityID(id); err != nil {
		return err
	}
	defer s.resolver.EvictEntity(ns, id)
	defer s.changing(schema.Key{})()
	metaKey := schema.EntityMetaKey(ns, id)
	it, err := getItem(ctx, s.db, s.table, metaKey, true)
	if err != nil {
		return fmt.Errorf("delete entity %s: %w", id, err)
	}
	if it == nil {
		return &EntityNotFoundError{EntityID: id}
	}

	partition, err := s.queryKeys(ctx, "", schema.AttrPK, schema.EntityPK(ns, id), "", "")
	if err != nil {
		return fmt.Errorf("delete entity %s: %w", id, err)
	}
	var rest []schema.Key
	for _, k := range partition {
		switch {
		case k == metaKey:
		case strings.HasPrefix(k.SK, schema.SKConfigPrefix):
			resource := k.SK[len(schema.SKConfigPrefix):]
			if err := s.deleteEntityConfigItem(ctx, ns, id, resource); err != nil {
				return fmt.Errorf("delete entity %s: config %s: %w", id, resource, err)
			}
		default:
			rest = append(rest, k)
		}
	}
	buckets, err := s.queryKeys(ctx, schema.GSI3, schema.AttrGSI3PK, schema.EntityPK(ns, id), schema.AttrGSI3SK, schema.PrefixBucket)
	if err != nil {
		return fmt.Errorf("delete entity %s: buckets: %w", id, err)
	}
	for _, k := range buckets {
		if schema.ClassifyKey(k.PK, k.SK).Kind == schema.KindBucket {
			rest = append(rest, k)
		}
	}
	if err := batchDelete(ctx, s.db, s.table, rest, &s.opts); err != nil {
		return fmt.Errorf("delete entity %s: %w", id, err)
	}
	if _, err := s.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName: aws.String(s.table), Key: metaKey.AttributeValues(),
	}); err != nil {
		return fmt.Errorf("delete entity %s: META: %w", id, err)
	}
	return nil
}

// queryKeys lists the primary keys a key condition selects (query.Keys).
func (s *Store) queryKeys(ctx context.Context, index, pkAttr, pk, skAttr, prefix string) ([]schema.Key, error) {
	return query.Keys(ctx, s.db, s.table, index, pkAttr, pk, skAttr, prefix, false)
}
