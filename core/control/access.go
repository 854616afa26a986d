package control

import (
	"context"
	"fmt"
	"sync"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/config"
	"github.com/zae-limiter/zae-limiter-go/core/internal/expr"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
)

// SetAccess changes who may use a resource (ADR-125, ADR-151 decision 2):
// the `disabled` setting of the resource (entity ""), of an entity on the
// resource, or of an entity for every resource (resource `_default_`).
//
//   - config.AccessDisabled turns the scope off: acquires get
//     *limiter.ResourceDisabled (403);
//   - config.AccessEnforce stores false: on an entity, a carve-out that
//     re-admits it to a disabled resource;
//   - config.AccessBypass waives the limits: acquires are admitted and
//     their consumption counted, but no balance is debited (the bucket's
//     own write-capacity limit still binds);
//   - config.AccessInherit removes the setting: the next level decides.
//
// SetAccess stores the setting (bypass after the version gate), records an
// audit event, and re-stamps every bucket of the scope before it returns,
// each from the walk of its own entity and resource read uncached. It
// returns the fan-out's counts; a *FanoutIncompleteError means the setting
// is stored but some buckets were not re-stamped: call again. principal,
// when not "", is recorded in the audit event. A system-level setting is a
// validation error, and nothing is written.
func (c *Controls) SetAccess(ctx context.Context, ns, entity, resource string, a config.Access, principal string) (Progress, error) {
	defer c.changing()()
	if err := c.writer.SetAccess(ctx, ns, entity, resource, a); err != nil {
		return Progress{}, err
	}
	action := "access_set"
	if a == config.AccessInherit {
		action = "access_cleared"
	}
	if err := c.recordSetting(ctx, ns, entity, resource, action, principal, accessValue(a)); err != nil {
		return Progress{}, err
	}
	return c.StampAccess(ctx, ns, Scope{Entity: entity, Resource: resource})
}

// StampAccess re-stamps the access of every bucket of sc from config read
// uncached, bucket by bucket: a bucket is stamped disabled while its
// entity and resource resolve to disabled, given a bypass deadline
// (StampTTL after the read) while they resolve to bypass, and cleared of
// both otherwise. SetAccess calls it; it also finishes a fan-out that
// stopped part way (FanoutIncompleteError).
func (c *Controls) StampAccess(ctx context.Context, ns string, sc Scope) (Progress, error) {
	defer c.changing()()
	walks := newWalkMemo(c.store.Resolver(), ns)
	return c.fanout(ctx, ns, sc, func(ctx context.Context, id schema.BucketID) (*dynamodb.UpdateItemInput, error) {
		w, err := walks.get(ctx, id.Entity, id.Resource)
		if err != nil {
			return nil, err
		}
		var b expr.Builder
		b.Cond("attribute_exists(" + b.Name(schema.AttrPK) + ")")
		switch w.Mode {
		case config.AccessDisabled:
			b.Set(schema.AttrDisabled, &types.AttributeValueMemberBOOL{Value: true})
			b.Remove(schema.AttrBypass)
		case config.AccessBypass:
			b.Set(schema.AttrBypass, schema.Num(w.ReadAt.Add(c.ttl).UnixMilli()))
			b.Remove(schema.AttrDisabled)
		default:
			b.Remove(schema.AttrDisabled)
			b.Remove(schema.AttrBypass)
		}
		in := b.UpdateInput(c.table, id.Key())
		in.ReturnValues = types.ReturnValueNone
		return in, nil
	})
}

// walkMemo reads each pair's access walk once per fan-out (the shards of a
// pair share it), uncached and strongly consistent.
type walkMemo struct {
	r     *config.Resolver
	ns    string
	mu    sync.Mutex
	walks map[[2]string]*memoWalk
}

type memoWalk struct {
	once sync.Once
	w    config.Walk
	err  error
}

func newWalkMemo(r *config.Resolver, ns string) *walkMemo {
	return &walkMemo{r: r, ns: ns, walks: map[[2]string]*memoWalk{}}
}

func (m *walkMemo) get(ctx context.Context, entity, resource string) (config.Walk, error) {
	m.mu.Lock()
	mw := m.walks[[2]string{entity, resource}]
	if mw == nil {
		mw = &memoWalk{}
		m.walks[[2]string{entity, resource}] = mw
	}
	m.mu.Unlock()
	mw.once.Do(func() {
		// A read that panics leaves this error, not a zero walk: the
		// panic is recovered on the worker that read (stampOneSafely) and
		// sync.Once never runs the read again, so every other bucket of
		// the pair would otherwise be stamped from the zero walk (access
		// inherited, no limits) and counted as stamped.
		mw.err = fmt.Errorf("control: the config walk of %s on %s panicked on another bucket", entity, resource)
		mw.w, mw.err = m.r.ResolveAccess(ctx, m.ns, entity, resource, config.AccessOptions{Consistent: true, IncludeSystem: true})
	})
	return mw.w, mw.err
}

// accessValue is an Access as the audit trail names it.
func accessValue(a config.Access) string {
	switch a {
	case config.AccessDisabled:
		return "disabled"
	case config.AccessEnforce:
		return "enforce"
	case config.AccessBypass:
		return "bypass"
	}
	return "inherit"
}
