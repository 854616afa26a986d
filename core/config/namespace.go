package config

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/schema"
)

// Namespace states (docs/design.md §2): a deleted namespace, or one being
// purged, no longer resolves.
const (
	NamespaceActive  = "active"
	NamespaceDeleted = "deleted"
	NamespacePurging = "purging"
)

// NamespaceNotFoundError reports a namespace that was never registered.
type NamespaceNotFoundError struct {
	// Name is the name looked up, or the id for a lookup by id.
	Name string
}

// Error implements error.
func (e *NamespaceNotFoundError) Error() string {
	return fmt.Sprintf("namespace %q is not registered", e.Name)
}

// NamespaceStateError reports a namespace that is registered but no longer
// usable: deleted, or being purged.
type NamespaceStateError struct {
	// Name is the namespace's name.
	Name string
	// State is NamespaceDeleted or NamespacePurging.
	State string
}

// Error implements error.
func (e *NamespaceStateError) Error() string {
	return fmt.Sprintf("namespace %q is %s", e.Name, e.State)
}

// registerNamespace is Writer.RegisterNamespace.
func (s *Store) registerNamespace(ctx context.Context, name string) (id string, created bool, err error) {
	if err := schema.ValidateNamespaceName(name); err != nil {
		return "", false, err
	}
	if id, err := s.ResolveNamespace(ctx, name); err == nil {
		return id, false, nil
	} else if nf := (*NamespaceNotFoundError)(nil); !errors.As(err, &nf) {
		return "", false, err
	}
	if id, err = schema.NewNamespaceID(s.opts.entropy); err != nil {
		return "", false, err
	}
	at := isoSeconds(s.opts.now())
	put := func(k schema.ItemKeys) types.TransactWriteItem {
		item := k.Item()
		item[schema.AttrNamespaceID] = schema.Str(id)
		item[schema.AttrNamespaceName] = schema.Str(name)
		item[schema.AttrStatus] = schema.Str(NamespaceActive)
		item[schema.AttrCreatedAt] = schema.Str(at)
		return types.TransactWriteItem{Put: &types.Put{
			TableName: aws.String(s.table), Item: item,
			ConditionExpression: aws.String("attribute_not_exists(PK)"),
		}}
	}
	_, err = s.db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		put(schema.NamespaceForwardItemKeys(name)), put(schema.NamespaceReverseItemKeys(id)),
	}})
	var tce *types.TransactionCanceledException
	switch {
	case errors.As(err, &tce):
		id, err = s.ResolveNamespace(ctx, name) // registered by another writer: use theirs
		return id, false, err
	case err != nil:
		return "", false, fmt.Errorf("register namespace %q: %w", name, err)
	}
	return id, true, nil
}

// ResolveNamespace returns the id of the namespace name, read strongly
// consistently: *NamespaceNotFoundError when it was never registered,
// *NamespaceStateError when it is deleted or being purged.
func (s *Store) ResolveNamespace(ctx context.Context, name string) (string, error) {
	if err := schema.ValidateNamespaceName(name); err != nil {
		return "", err
	}
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(s.table), ConsistentRead: aws.Bool(true),
		Key: schema.NamespaceForwardKey(name).AttributeValues(),
	})
	if err != nil {
		return "", fmt.Errorf("resolve namespace %q: %w", name, err)
	}
	if out.Item == nil {
		return "", &NamespaceNotFoundError{Name: name}
	}
	state, _ := getS(out.Item, schema.AttrStatus)
	if state == NamespaceDeleted || state == NamespacePurging {
		return "", &NamespaceStateError{Name: name, State: state}
	}
	id, _ := getS(out.Item, schema.AttrNamespaceID)
	if err := schema.ValidateNamespaceID(id); err != nil {
		return "", fmt.Errorf("namespace %q: corrupt registration: %w", name, err)
	}
	return id, nil
}

// NamespaceName returns the name of the live namespace whose id is id:
// *NamespaceNotFoundError when there is none, *NamespaceStateError when it
// is deleted or being purged.
func (s *Store) NamespaceName(ctx context.Context, id string) (string, error) {
	if err := schema.ValidateNamespaceID(id); err != nil {
		return "", err
	}
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(s.table), ConsistentRead: aws.Bool(true),
		Key: schema.NamespaceReverseKey(id).AttributeValues(),
	})
	if err != nil {
		return "", fmt.Errorf("namespace id %q: %w", id, err)
	}
	name, _ := getS(out.Item, schema.AttrNamespaceName)
	if out.Item == nil {
		return "", &NamespaceNotFoundError{Name: id}
	}
	if state, _ := getS(out.Item, schema.AttrStatus); state == NamespaceDeleted || state == NamespacePurging {
		return "", &NamespaceStateError{Name: name, State: state}
	}
	return name, nil
}
