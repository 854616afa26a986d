package config

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/schema"
)

// The listing reads of an operator tool: the entities of a namespace, an
// entity's config on every resource, the config of one level with its
// settings, and the resources the registries (R8, R9) name. Each reads
// only what it returns, or the index keys that lead to it.

// EntityConfig is an entity's config on one resource, or its default for
// every resource (Resource `_default_`).
type EntityConfig struct {
	// Resource is the resource, or schema.DefaultResource.
	Resource string
	Config
}

// RegisteredResource is one resource the namespace's registries name: one
// with a config of its own (R8), or one some entities have config on (R9),
// or both.
type RegisteredResource struct {
	// Name is the resource.
	Name string
	// OwnConfig reports that the resource registry (R8) names it: every
	// write of the resource's own limits or settings adds it, and a
	// delete of its limits removes it.
	OwnConfig bool
	// EntityConfigs counts the entity configs on the resource (the entity
	// config registry, R9); entities' `_default_` configs are counted
	// under `_default_`, which is never a resource of the list.
	EntityConfigs int64
}

// entityPageSize is the keys one GSI4 page of ListEntities asks for.
const entityPageSize = 500

// ListEntities lists the recorded entities of namespace ns (their META
// items, R4) in id order, at most limit of them (limit ≤ 0: all), starting
// after the entity id after ("" for the first). next is the id to pass as
// after for the following page, "" when this page reached the end (a full
// page may be followed by an empty one). It queries GSI4, which holds every
// item of the namespace keyed by its partition, over the entities'
// partitions (keys only, their configs, usage snapshots and operation
// records among them), then reads the META items it found strongly
// consistently; its cost grows with those partitions' items, not with the
// rest of the namespace.
func (s *Store) ListEntities(ctx context.Context, ns, after string, limit int) (entities []Entity, next string, err error) {
	if err := validateNamespace(ns); err != nil {
		return nil, "", err
	}
	low := schema.EntityPK(ns, "")
	if after != "" {
		if err := schema.ValidateEntityID(after); err != nil {
			return nil, "", err
		}
		// Past every key of that entity: "!" sorts below every character
		// an entity id may hold, so the bound is above the id and below
		// any longer id that begins with it.
		low = schema.EntityPK(ns, after) + "!"
	}
	// "$" follows "#": the bound is past every `{ns}/ENTITY#…`.
	high := ns + "/" + strings.TrimSuffix(schema.PrefixEntity, "#") + "$"
	var ids []string
	var start map[string]types.AttributeValue
	full := false
	for !full {
		res, err := s.db.Query(ctx, &dynamodb.QueryInput{
			TableName:                aws.String(s.table),
			IndexName:                aws.String(schema.GSI4),
			KeyConditionExpression:   aws.String("#pk = :pk AND #sk BETWEEN :lo AND :hi"),
			FilterExpression:         aws.String("#tsk = :meta"),
			ExpressionAttributeNames: map[string]string{"#pk": schema.AttrGSI4PK, "#sk": schema.AttrGSI4SK, "#tsk": schema.AttrSK},
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":pk": schema.Str(ns), ":lo": schema.Str(low), ":hi": schema.Str(high), ":meta": schema.Str(schema.SKMeta),
			},
			Limit:             aws.Int32(entityPageSize),
			ExclusiveStartKey: start,
		})
		if err != nil {
			return nil, "", fmt.Errorf("list entities of %s: %w", ns, err)
		}
		for _, it := range res.Items {
			pk, _ := getS(it, schema.AttrPK)
			_, id, err := schema.ParseEntityPK(pk)
			if err != nil {
				continue // not an entity partition: nothing to list
			}
			ids = append(ids, id)
			if limit > 0 && len(ids) == limit {
				full = true
				break
			}
		}
		if len(res.LastEvaluatedKey) == 0 {
			break
		}
		start = res.LastEvaluatedKey
	}
	if full {
		next = ids[len(ids)-1]
	}
	if len(ids) == 0 {
		return []Entity{}, next, nil
	}
	keys := make([]schema.Key, len(ids))
	for i, id := range ids {
		keys[i] = schema.EntityMetaKey(ns, id)
	}
	items, err := s.ReadItems(ctx, keys)
	if err != nil {
		return nil, "", fmt.Errorf("list entities of %s: %w", ns, err)
	}
	entities = make([]Entity, 0, len(ids))
	for _, k := range keys {
		if it, ok := items[k]; ok { // an entity deleted since the query is left out
			entities = append(entities, DecodeEntity(it))
		}
	}
	return entities, next, nil
}

// EntityConfigs returns entity's config on every resource it has one for,
// and its `_default_` one, sorted by resource (`_default_` sorts first):
// its own limits, access and cascade settings (R5), read strongly
// consistently from its partition. An entity with no config yields an
// empty slice, whether or not it is recorded. An item this version cannot
// read fails the call with its *UnsupportedConfigError.
func (s *Store) EntityConfigs(ctx context.Context, ns, entity string) ([]EntityConfig, error) {
	if err := validateNamespace(ns); err != nil {
		return nil, err
	}
	if err := schema.ValidateEntityID(entity); err != nil {
		return nil, err
	}
	out := []EntityConfig{}
	var start map[string]types.AttributeValue
	for {
		res, err := s.db.Query(ctx, &dynamodb.QueryInput{
			TableName:                 aws.String(s.table),
			KeyConditionExpression:    aws.String("#pk = :pk AND begins_with(#sk, :sk)"),
			ExpressionAttributeNames:  map[string]string{"#pk": schema.AttrPK, "#sk": schema.AttrSK},
			ExpressionAttributeValues: map[string]types.AttributeValue{":pk": schema.Str(schema.EntityPK(ns, entity)), ":sk": schema.Str(schema.SKConfigPrefix)},
			ConsistentRead:            aws.Bool(true),
			ExclusiveStartKey:         start,
		})
		if err != nil {
			return nil, fmt.Errorf("configs of entity %s: %w", entity, err)
		}
		for _, it := range res.Items {
			sk, _ := getS(it, schema.AttrSK)
			resource := strings.TrimPrefix(sk, schema.SKConfigPrefix)
			t := entityTarget(ns, entity, resource)
			d, err := DecodeConfigItem(t.level, it)
			s.resolver.report(t.key(), d.Problems, err)
			if err != nil {
				return nil, err
			}
			out = append(out, EntityConfig{Resource: resource, Config: d.Config})
		}
		if len(res.LastEvaluatedKey) == 0 {
			break
		}
		start = res.LastEvaluatedKey
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i].Resource, out[j].Resource
		if (a == schema.DefaultResource) != (b == schema.DefaultResource) {
			return a == schema.DefaultResource
		}
		return a < b
	})
	return out, nil
}

// GetResourceConfig returns resource's config — its limits, access and
// cascade settings (R6) — read strongly consistently; the zero Config when
// it has none.
func (s *Store) GetResourceConfig(ctx context.Context, ns, resource string) (Config, error) {
	if err := validateNamespace(ns); err != nil {
		return Config{}, err
	}
	if err := schema.ValidateResource(resource); err != nil {
		return Config{}, err
	}
	d, err := s.read(ctx, resourceTarget(ns, resource))
	return d.Config, err
}

// GetEntityConfig returns entity's config on resource (`_default_`: for
// every resource) — its own limits, access and cascade settings (R5) —
// read strongly consistently; the zero Config when it has none. It does
// not resolve through the hierarchy.
func (s *Store) GetEntityConfig(ctx context.Context, ns, entity, resource string) (Config, error) {
	if err := validateEntityScope(ns, entity, resource); err != nil {
		return Config{}, err
	}
	d, err := s.read(ctx, entityTarget(ns, entity, resource))
	return d.Config, err
}

// ListResources lists the resources namespace ns's registries name, sorted
// by name: those with a config of their own (R8) and those entities have
// config on (R9, counted). One strongly consistent read of the two
// registry items, whatever the namespace holds.
func (s *Store) ListResources(ctx context.Context, ns string) ([]RegisteredResource, error) {
	if err := validateNamespace(ns); err != nil {
		return nil, err
	}
	rk, ek := schema.ResourceRegistryKey(ns), schema.EntityConfigRegistryKey(ns)
	items, err := s.ReadItems(ctx, []schema.Key{rk, ek})
	if err != nil {
		return nil, fmt.Errorf("resources of %s: %w", ns, err)
	}
	byName := map[string]*RegisteredResource{}
	get := func(name string) *RegisteredResource {
		r, ok := byName[name]
		if !ok {
			r = &RegisteredResource{Name: name}
			byName[name] = r
		}
		return r
	}
	if ss, ok := items[rk][schema.AttrResources].(*types.AttributeValueMemberSS); ok {
		for _, name := range ss.Value {
			get(name).OwnConfig = true
		}
	}
	for attr, v := range items[ek] {
		if isKeyAttr(attr) || attr == schema.DefaultResource {
			continue
		}
		if n, ok := parseN(v); ok && n > 0 {
			get(attr).EntityConfigs = n
		}
	}
	out := make([]RegisteredResource, 0, len(byName))
	for _, r := range byName {
		out = append(out, *r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}
