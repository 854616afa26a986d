package config

import (
	"context"
	"errors"
	"sort"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/limit"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
)

// NewEntityConfig is an entity-level config item to create: what
// SetEntityLimits, SetAccess and SetCascade would leave on a key that had no
// item.
type NewEntityConfig struct {
	Entity string
	// Resource is a resource or `_default_`.
	Resource string
	// Limits may be empty (an item that only sets access or cascade).
	Limits  []limit.Limit
	Access  Access
	Cascade CascadePolicy
}

// maxCreateBatch is the items of one CreateEntityConfigs transaction: the
// puts and the registry update make DynamoDB's 100.
const maxCreateBatch = 99

// CreateEntityConfigs creates entity config items in namespace ns that do
// not exist yet, in transactions of up to 99 items of one resource with
// that resource's registry update (R9 `ADD #r :n`), each put under
// attribute_not_exists(PK). Each item is attribute for attribute the one
// the setters write (docs/design.md §7). A transaction whose condition fails
// (an item appeared meanwhile) writes nothing, and its configs are
// returned: the caller writes those through the setters. A config with
// nothing to write is skipped. The inputs are validated before anything is
// written. The version gates of soft limits, bypass and cascade policies
// are the caller's: RequireReaders before, Ratchet after.
func (s *Store) CreateEntityConfigs(ctx context.Context, ns string, cs []NewEntityConfig) (left []NewEntityConfig, err error) {
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
	resources := make([]string, 0, len(byResource))
	for r := range byResource {
		resources = append(resources, r)
	}
	sort.Strings(resources)
	defer s.changing(schema.Key{})()
	for _, r := range resources {
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
