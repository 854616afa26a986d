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

// SetCascade changes whether an entity's acquires on a resource also debit
// its parent's bucket (ADR-146): the policy of the resource (entity ""),
// of an entity on a resource, or of an entity for every resource
// (`_default_`); config.CascadeUnset falls back to each entity's own
// default (config.EntityOptions.Cascade). It stores the policy (once the
// table's readers understand it: the version gate), records an audit
// event, and re-stamps every bucket in scope before it returns
// (StampCascade).
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

// StampCascade re-stamps the owner stamp of every bucket of sc — whether
// its acquires also debit the parent, which parent, and that parent's
// generation — from the entity (its parent and cascade default) and the
// cascade walk, both read fresh: a bucket cascades when its entity has a
// parent and the policy, else the entity's default, says so. A stamp never
// goes back to an older parent generation (docs/design.md §8).
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
