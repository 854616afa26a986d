package config

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/schema"
)

// setAccess is Writer.SetAccess.
func (s *Store) setAccess(ctx context.Context, ns, entity, resource string, a Access) error {
	t, err := accessTarget(ns, entity, resource)
	if err != nil {
		return err
	}
	v, err := encodeAccess(a)
	if err != nil {
		return err
	}
	write := func() error { return s.setAttr(ctx, t, schema.AttrDisabled, v, "set access") }
	if a == AccessBypass {
		return s.gated(ctx, SoftBypassVersion, write)
	}
	return write()
}

// accessTarget is the config item a SetAccess call writes.
func accessTarget(ns, entity, resource string) (target, error) {
	switch {
	case entity == "" && resource == "":
		return target{}, schema.NewValidationError(schema.AttrDisabled, "system",
			"cannot be set on the system level (a namespace kill switch is not supported)")
	case entity == "":
		if err := validateNamespace(ns); err != nil {
			return target{}, err
		}
		if err := schema.ValidateResource(resource); err != nil {
			return target{}, err
		}
		return resourceTarget(ns, resource), nil
	}
	if err := validateEntityScope(ns, entity, resource); err != nil {
		return target{}, err
	}
	return entityTarget(ns, entity, resource), nil
}

// encodeAccess is the stored value of a; nil for AccessInherit.
func encodeAccess(a Access) (types.AttributeValue, error) {
	switch a {
	case AccessInherit:
		return nil, nil
	case AccessEnforce:
		return &types.AttributeValueMemberBOOL{Value: false}, nil
	case AccessDisabled:
		return &types.AttributeValueMemberBOOL{Value: true}, nil
	case AccessBypass:
		return schema.Str(bypassValue), nil
	}
	return nil, schema.NewValidationError(schema.AttrDisabled, a.String(), "unknown access value (want inherit, enforce, disabled or bypass)")
}

// setAttr writes v (nil: remove) as t's attribute attr, keeping every other
// attribute, and creates the item when it is missing and v is not nil.
func (s *Store) setAttr(ctx context.Context, t target, attr string, v types.AttributeValue, op string) error {
	defer s.changing(t.key())()
	for range maxWriteAttempts {
		cur, err := getItem(ctx, s.db, s.table, t.key(), true)
		if err != nil {
			return s.wrap(t, op, err)
		}
		if cur == nil {
			if v == nil {
				return nil // nothing set, nothing to remove
			}
			attrs := t.identity()
			attrs[attr] = v
			done, err := s.createItem(ctx, t, attrs)
			if err != nil {
				return s.wrap(t, op, err)
			}
			if done {
				return nil
			}
			continue
		}
		set, remove := map[string]types.AttributeValue{}, []string(nil)
		if v == nil {
			if _, has := cur[attr]; !has {
				return nil
			}
			remove = []string{attr}
		} else {
			set[attr] = v
		}
		done, err := s.updateItem(ctx, t, set, remove, nil)
		if err != nil {
			return s.wrap(t, op, err)
		}
		if done {
			return nil
		}
	}
	return s.wrap(t, op, ErrConflict)
}

// setCascade is Writer.SetCascade.
func (s *Store) setCascade(ctx context.Context, ns, entity, resource string, p CascadePolicy) error {
	t, err := accessTarget(ns, entity, resource)
	if err != nil {
		return err
	}
	var v types.AttributeValue
	switch p {
	case CascadeUnset:
	case CascadeOn, CascadeOff:
		v = &types.AttributeValueMemberBOOL{Value: p == CascadeOn}
	default:
		return schema.NewValidationError(schema.AttrCascade, p.String(), "unknown cascade policy")
	}
	write := func() error { return s.setAttr(ctx, t, schema.AttrCascade, v, "set cascade") }
	if p == CascadeUnset {
		return write()
	}
	return s.gated(ctx, CascadePolicyVersion, write)
}
