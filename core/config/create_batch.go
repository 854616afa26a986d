package config

import (
	"context"
	"errors"
	"maps"
	"slices"
	"sort"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/limit"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
)

// NewEntityConfig is an entity's config on one resource to create: what
// SetEntityLimits, SetAccess and SetCascade would leave where the entity
// had no config on the resource.
type NewEntityConfig struct {
	// Entity is the entity's id.
	Entity string
	// Resource is a resource or `_default_`.
	Resource string
	// Limits may be empty (a config that only sets access or cascade).
	Limits []limit.Limit
	// Access is the access setting (AccessInherit: none).
	Access Access
	// Cascade is the cascade policy (CascadeUnset: none).
	Cascade CascadePolicy
}

// maxCreateBatch is the items of one CreateEntityConfigs transaction: the
// puts and the registry update make DynamoDB's 100.
const maxCreateBatch = 99

// createEntityConfigs is Writer.CreateEntityConfigs.
func (s *Store) createEntityConfigs(ctx context.Context, ns string, cs []NewEntityConfig) (left []NewEntityConfig, err error) {
	type put struct {
		cfg  NewEntityConfig
		t    target
		item map[string]types.AttributeValue
	}
	byResource := map[string][]put{}
	for _, c := range cs {
		if err := validateEntityScope(ns, c.Entity, c.Resource); err != nil {
			return nil, err
		}
		t := entityTarget(ns, c.Entity, c.Resource)
		it := t.keys.Item()
		for a, v := range t.identity() {
			it[a] = v
		}
		if len(c.Limits) > 0 {
			if err := validateLevelLimits(c.Limits); err != nil {
				return nil, s.wrap(t, "create", err)
			}
			putLimits(it, c.Limits)
		}
		access, err := encodeAccess(c.Access)
		if err != nil {
			return nil, err
		}
		if access != nil {
			it[schema.AttrDisabled] = access
		}
		switch c.Cascade {
		case CascadeUnset:
		case CascadeOn, CascadeOff:
			it[schema.AttrCascade] = &types.AttributeValueMemberBOOL{Value: c.Cascade == CascadeOn}
		default:
			return nil, schema.NewValidationError(schema.AttrCascade, c.Cascade.String(), "unknown cascade policy")
		}
		if len(c.Limits) == 0 && access == nil && c.Cascade == CascadeUnset {
			continue
		}
		byResource[c.Resource] = append(byResource[c.Resource], put{cfg: c, t: t, item: it})
	}
	defer s.changing(schema.Key{})()
	for _, r := range slices.Sorted(maps.Keys(byResource)) {
		ps := byResource[r]
		for start := 0; start < len(ps); start += maxCreateBatch {
			batch := ps[start:min(start+maxCreateBatch, len(ps))]
			items := make([]types.TransactWriteItem, 0, len(batch)+1)
			for _, p := range batch {
				items = append(items, types.TransactWriteItem{Put: &types.Put{
					TableName: aws.String(s.table), Item: p.item,
					ConditionExpression:      aws.String("attribute_not_exists(#pk)"),
					ExpressionAttributeNames: map[string]string{"#pk": schema.AttrPK},
				}})
			}
			items = append(items, types.TransactWriteItem{Update: s.entityRegistryUpdate(ns, r, int64(len(batch)))})
			_, err := s.db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
			for _, p := range batch {
				s.resolver.evictKey(p.t.key())
			}
			switch {
			case err == nil:
			case anyConditionFailed(err):
				for _, p := range batch {
					left = append(left, p.cfg)
				}
			default:
				return nil, s.wrap(batch[0].t, "create", err)
			}
		}
	}
	return left, nil
}

// anyConditionFailed reports a cancelled transaction one of whose
// conditions failed.
func anyConditionFailed(err error) bool {
	var tc *types.TransactionCanceledException
	if !errors.As(err, &tc) {
		return false
	}
	for _, r := range tc.CancellationReasons {
		if aws.ToString(r.Code) == "ConditionalCheckFailed" {
			return true
		}
	}
	return false
}

// deleteEntityConfigs is Writer.DeleteEntityConfigs.
func (s *Store) deleteEntityConfigs(ctx context.Context, ns string, items map[schema.Key]map[string]types.AttributeValue) (left []schema.Key, err error) {
	if err := validateNamespace(ns); err != nil {
		return nil, err
	}
	type del struct {
		key schema.Key
		t   target
	}
	byResource := map[string][]del{}
	for k, it := range items {
		info := schema.ClassifyKey(k.PK, k.SK)
		if info.Kind != schema.KindEntityConfig || info.Namespace != ns || !onlyManagedAttrs(entityTarget(ns, info.Entity, info.Resource), it) {
			left = append(left, k)
			continue
		}
		t := entityTarget(ns, info.Entity, info.Resource)
		byResource[t.resource] = append(byResource[t.resource], del{key: k, t: t})
	}
	defer s.changing(schema.Key{})()
	for _, r := range slices.Sorted(maps.Keys(byResource)) {
		ds := byResource[r]
		sort.Slice(ds, func(i, j int) bool { return ds[i].key.PK < ds[j].key.PK })
		for start := 0; start < len(ds); start += maxCreateBatch {
			batch := ds[start:min(start+maxCreateBatch, len(ds))]
			tx := make([]types.TransactWriteItem, 0, len(batch)+1)
			for _, d := range batch {
				tx = append(tx, types.TransactWriteItem{Delete: &types.Delete{
					TableName: aws.String(s.table), Key: d.key.AttributeValues(),
					ConditionExpression:      aws.String("attribute_exists(#pk)"),
					ExpressionAttributeNames: map[string]string{"#pk": schema.AttrPK},
				}})
			}
			tx = append(tx, types.TransactWriteItem{Update: s.entityRegistryUpdate(ns, r, -int64(len(batch)))})
			_, err := s.db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: tx})
			for _, d := range batch {
				s.resolver.evictKey(d.key)
			}
			switch {
			case err == nil:
			case anyConditionFailed(err):
				for _, d := range batch {
					left = append(left, d.key)
				}
			default:
				return nil, s.wrap(batch[0].t, "delete", err)
			}
		}
		if err := s.cleanupEntityRegistry(ctx, ns, r); err != nil {
			return nil, err
		}
	}
	return left, nil
}

// onlyManagedAttrs reports an item that holds nothing but its keys, its
// identity, limits, access and cascade.
func onlyManagedAttrs(t target, it map[string]types.AttributeValue) bool {
	identity := t.identity()
	for a := range it {
		if _, ok := identity[a]; ok || isKeyAttr(a) || a == schema.AttrDisabled || a == schema.AttrCascade {
			continue
		}
		_, f, hidden, ok := schema.ParseConfigAttr(a)
		if !ok || hidden {
			return false
		}
		switch f {
		case schema.LimitCapacity, schema.LimitRefillAmount, schema.LimitRefillPeriod, schema.LimitSoft:
		default:
			return false // a schedule, a window: not this version's to delete
		}
	}
	return true
}
