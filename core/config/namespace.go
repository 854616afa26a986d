package config

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/internal/expr"
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

// Namespace is one registration of a namespace as the table records it
// (R1, R2 of docs/design.md §2): its name, the id minted for it, and its
// state. A name registered again after a delete has a second registration
// with another id; the deleted one keeps its own.
type Namespace struct {
	// Name is the namespace's name.
	Name string
	// ID is the id minted at registration (11 characters).
	ID string
	// Status is NamespaceActive, NamespaceDeleted or NamespacePurging.
	Status string
	// CreatedAt is when it was registered (ISO 8601, seconds, UTC).
	CreatedAt string
	// DeletedAt is when it was deleted ("" unless deleted).
	DeletedAt string
}

// NamespaceNameTakenError refuses to recover a deleted namespace whose name
// was registered again meanwhile, under another id.
type NamespaceNameTakenError struct {
	// Name is the name both registrations carry.
	Name string
	// ID is the id of the deleted namespace that was to be recovered.
	ID string
	// HolderID is the id of the live namespace that now holds the name.
	HolderID string
}

// Error implements error.
func (e *NamespaceNameTakenError) Error() string {
	return fmt.Sprintf("namespace %q (id %s) cannot be recovered: the name is registered again, with id %s", e.Name, e.ID, e.HolderID)
}

// ListNamespaces lists every registration of the table, deleted and purging
// ones included, sorted by name, then by id: the namespaces' reverse records
// (R2), read strongly consistently, page by page.
func (s *Store) ListNamespaces(ctx context.Context) ([]Namespace, error) {
	var (
		out   []Namespace
		start map[string]types.AttributeValue
	)
	for {
		page, err := s.db.Query(ctx, &dynamodb.QueryInput{
			TableName:              aws.String(s.table),
			ConsistentRead:         aws.Bool(true),
			KeyConditionExpression: aws.String("#a0 = :v0 AND begins_with(#a1, :v1)"),
			ExpressionAttributeNames: map[string]string{
				"#a0": schema.AttrPK, "#a1": schema.AttrSK,
			},
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":v0": schema.Str(schema.TableSystemPK), ":v1": schema.Str(schema.SKNSIDPrefix),
			},
			ExclusiveStartKey: start,
		})
		if err != nil {
			return nil, fmt.Errorf("list namespaces: %w", err)
		}
		for _, it := range page.Items {
			out = append(out, decodeNamespace(it))
		}
		if len(page.LastEvaluatedKey) == 0 {
			break
		}
		start = page.LastEvaluatedKey
	}
	slices.SortFunc(out, func(a, b Namespace) int {
		if c := strings.Compare(a.Name, b.Name); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out, nil
}

// GetNamespace reads the registration whose id is id (its reverse record,
// R2), in whatever state: *NamespaceNotFoundError when there is none.
func (s *Store) GetNamespace(ctx context.Context, id string) (Namespace, error) {
	if err := schema.ValidateNamespaceID(id); err != nil {
		return Namespace{}, err
	}
	it, err := getItem(ctx, s.db, s.table, schema.NamespaceReverseKey(id), true)
	if err != nil {
		return Namespace{}, fmt.Errorf("namespace id %q: %w", id, err)
	}
	if it == nil {
		return Namespace{}, &NamespaceNotFoundError{Name: id}
	}
	return decodeNamespace(it), nil
}

// decodeNamespace reads a reverse record (R2). A record without a status
// is active, as the resolution reads it.
func decodeNamespace(it map[string]types.AttributeValue) Namespace {
	n := Namespace{Status: NamespaceActive}
	n.Name, _ = getS(it, schema.AttrNamespaceName)
	n.ID, _ = getS(it, schema.AttrNamespaceID)
	if n.ID == "" {
		sk, _ := getS(it, schema.AttrSK)
		n.ID = strings.TrimPrefix(sk, schema.SKNSIDPrefix)
	}
	if st, ok := getS(it, schema.AttrStatus); ok && st != "" {
		n.Status = st
	}
	n.CreatedAt, _ = getS(it, schema.AttrCreatedAt)
	n.DeletedAt, _ = getS(it, schema.AttrDeletedAt)
	return n
}

// deleteNamespace is Writer.DeleteNamespace.
func (s *Store) deleteNamespace(ctx context.Context, name string) (string, error) {
	id, err := s.ResolveNamespace(ctx, name)
	if err != nil {
		return "", err
	}
	// The forward record goes while it still names id and is live; the
	// reverse record is marked deleted while it is active. Either condition
	// failing means another writer got there first.
	var fwd expr.Builder
	fwd.Cond(fwd.Name(schema.AttrNamespaceID) + " = " + fwd.Value(schema.Str(id)))
	fwd.Cond("(attribute_not_exists(" + fwd.Name(schema.AttrStatus) + ") OR " +
		fwd.Name(schema.AttrStatus) + " = " + fwd.Value(schema.Str(NamespaceActive)) + ")")
	var rev expr.Builder
	rev.Set(schema.AttrStatus, schema.Str(NamespaceDeleted))
	rev.Set(schema.AttrDeletedAt, schema.Str(isoSeconds(s.opts.now())))
	rev.Cond("attribute_exists(" + rev.Name(schema.AttrPK) + ")")
	rev.Cond(rev.Name(schema.AttrNamespaceName) + " = " + rev.Value(schema.Str(name)))
	rev.Cond("(attribute_not_exists(" + rev.Name(schema.AttrStatus) + ") OR " +
		rev.Name(schema.AttrStatus) + " = " + rev.Value(schema.Str(NamespaceActive)) + ")")
	_, err = s.db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Delete: &types.Delete{
			TableName: aws.String(s.table), Key: schema.NamespaceForwardKey(name).AttributeValues(),
			ConditionExpression: aws.String(fwd.Condition()), ExpressionAttributeNames: fwd.Names(),
			ExpressionAttributeValues: fwd.Values(),
		}},
		{Update: &types.Update{
			TableName: aws.String(s.table), Key: schema.NamespaceReverseKey(id).AttributeValues(),
			UpdateExpression: aws.String(rev.Update()), ConditionExpression: aws.String(rev.Condition()),
			ExpressionAttributeNames: rev.Names(), ExpressionAttributeValues: rev.Values(),
		}},
	}})
	var tce *types.TransactionCanceledException
	if errors.As(err, &tce) {
		// Deleted (or re-registered) by another writer meanwhile: say what
		// the name is now.
		if _, rerr := s.ResolveNamespace(ctx, name); rerr != nil {
			return "", rerr
		}
		return "", fmt.Errorf("delete namespace %q: it changed while being deleted: %w", name, err)
	}
	if err != nil {
		return "", fmt.Errorf("delete namespace %q: %w", name, err)
	}
	return id, nil
}

// recoverNamespace is Writer.RecoverNamespace.
func (s *Store) recoverNamespace(ctx context.Context, id string) (string, error) {
	ns, err := s.GetNamespace(ctx, id)
	if err != nil {
		return "", err
	}
	if ns.Status != NamespaceDeleted {
		return "", &NamespaceStateError{Name: ns.Name, State: ns.Status}
	}
	if err := schema.ValidateNamespaceName(ns.Name); err != nil {
		return "", fmt.Errorf("namespace id %q: corrupt registration: %w", id, err)
	}
	fwd := schema.NamespaceForwardItemKeys(ns.Name).Item()
	fwd[schema.AttrNamespaceID] = schema.Str(id)
	fwd[schema.AttrNamespaceName] = schema.Str(ns.Name)
	fwd[schema.AttrStatus] = schema.Str(NamespaceActive)
	if ns.CreatedAt != "" {
		fwd[schema.AttrCreatedAt] = schema.Str(ns.CreatedAt)
	}
	// The forward record is written where the name is free, or over a
	// forward record of this same id left marked deleted.
	var put expr.Builder
	put.Cond("(attribute_not_exists(" + put.Name(schema.AttrPK) + ") OR (" +
		put.Name(schema.AttrNamespaceID) + " = " + put.Value(schema.Str(id)) + " AND " +
		put.Name(schema.AttrStatus) + " = " + put.Value(schema.Str(NamespaceDeleted)) + "))")
	var rev expr.Builder
	rev.Set(schema.AttrStatus, schema.Str(NamespaceActive))
	rev.Remove(schema.AttrDeletedAt)
	rev.Cond(rev.Name(schema.AttrStatus) + " = " + rev.Value(schema.Str(NamespaceDeleted)))
	_, err = s.db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Put: &types.Put{
			TableName: aws.String(s.table), Item: fwd,
			ConditionExpression: aws.String(put.Condition()), ExpressionAttributeNames: put.Names(),
			ExpressionAttributeValues: put.Values(),
		}},
		{Update: &types.Update{
			TableName: aws.String(s.table), Key: schema.NamespaceReverseKey(id).AttributeValues(),
			UpdateExpression: aws.String(rev.Update()), ConditionExpression: aws.String(rev.Condition()),
			ExpressionAttributeNames: rev.Names(), ExpressionAttributeValues: rev.Values(),
		}},
	}})
	var tce *types.TransactionCanceledException
	if errors.As(err, &tce) {
		if holder, rerr := s.ResolveNamespace(ctx, ns.Name); rerr == nil && holder != id {
			return "", &NamespaceNameTakenError{Name: ns.Name, ID: id, HolderID: holder}
		}
		if cur, rerr := s.GetNamespace(ctx, id); rerr == nil && cur.Status != NamespaceDeleted {
			return "", &NamespaceStateError{Name: cur.Name, State: cur.Status}
		}
		return "", fmt.Errorf("recover namespace %q: it changed while being recovered: %w", ns.Name, err)
	}
	if err != nil {
		return "", fmt.Errorf("recover namespace %q: %w", ns.Name, err)
	}
	return ns.Name, nil
}
