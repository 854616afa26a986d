package control

import (
	"context"
	"sync"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/config"
	"github.com/zae-limiter/zae-limiter-go/core/internal/expr"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
)

// SetCascade changes whether entities cascade to their parent on a
// resource (ADR-146): the policy of the resource (entity ""), of an entity
// on a resource, or of an entity for every resource (`_default_`);
// config.CascadeUnset falls back to each entity's own default. It stores
// the policy (after the version gate), records an audit event, and
// re-stamps the owner stamp of every bucket in scope before it returns.
func (c *Controls) SetCascade(ctx context.Context, ns, entity, resource string, p config.CascadePolicy, principal string) (Progress, error) {
	defer c.changing()()
	if err := c.writer.SetCascade(ctx, ns, entity, resource, p); err != nil {
		return Progress{}, err
	}
	action := "cascade_set"
	if p == config.CascadeUnset {
		action = "cascade_cleared"
	}
	if err := c.recordSetting(ctx, ns, entity, resource, action, principal, p.String()); err != nil {
		return Progress{}, err
	}
	return c.StampCascade(ctx, ns, Scope{Entity: entity, Resource: resource})
}

// StampCascade re-stamps the owner stamp of every bucket of sc from the
// entity's META and the cascade walk, both read fresh: `cascade` (the
// entity has a parent, and the policy — else its own default — says so),
// `parent_id` and `pgen`, under the parent-generation pin every owner-stamp
// writer honours (a stamp never goes back to an older generation).
func (c *Controls) StampCascade(ctx context.Context, ns string, sc Scope) (Progress, error) {
	defer c.changing()()
	walks := newWalkMemo(c.store.Resolver(), ns)
	var mu sync.Mutex
	metas := map[string]config.Entity{}
	meta := func(ctx context.Context, id string) (config.Entity, error) {
		mu.Lock()
		e, ok := metas[id]
		mu.Unlock()
		if ok {
			return e, nil
		}
		e, err := c.store.GetEntity(ctx, ns, id)
		if err != nil && !isNotFound(err) {
			return e, err
		}
		mu.Lock()
		metas[id] = e
		mu.Unlock()
		return e, nil
	}
	return c.fanout(ctx, ns, sc, func(ctx context.Context, id schema.BucketID) (*dynamodb.UpdateItemInput, error) {
		e, err := meta(ctx, id.Entity)
		if err != nil {
			return nil, err
		}
		w, err := walks.get(ctx, id.Entity, id.Resource)
		if err != nil {
			return nil, err
		}
		var b expr.Builder
		pgen := b.Name(schema.AttrPGen)
		b.Cond("attribute_exists(" + b.Name(schema.AttrPK) + ")")
		b.Cond("(attribute_not_exists(" + pgen + ") OR " + pgen + " <= " + b.Value(schema.Num(e.PGen)) + ")")
		b.Set(schema.AttrCascade, &types.AttributeValueMemberBOOL{Value: config.EffectiveCascade(e, w.Cascade)})
		b.Set(schema.AttrPGen, schema.Num(e.PGen))
		if e.ParentID != "" {
			b.Set(schema.AttrParentID, schema.Str(e.ParentID))
		} else {
			b.Remove(schema.AttrParentID)
		}
		in := b.UpdateInput(c.table, id.Key())
		in.ReturnValues = types.ReturnValueNone
		return in, nil
	})
}
