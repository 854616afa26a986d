package config_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/config"
	"github.com/zae-limiter/zae-limiter-go/core/internal/capability"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
	"github.com/zae-limiter/zae-limiter-go/internal/ddbtest"
)

func TestRegisterAndResolveNamespace(t *testing.T) {
	tbl := ddbtest.NewBareTable(t)
	st := config.NewStore(tbl.DB, tbl.Name)
	ctx := context.Background()
	var nf *config.NamespaceNotFoundError
	if _, err := st.ResolveNamespace(ctx, "prod"); !errors.As(err, &nf) {
		t.Fatalf("unregistered: err = %v, want NamespaceNotFoundError", err)
	}
	// Concurrent registrations of one name agree on one id.
	ids := make([]string, 8)
	var creators atomic.Int32
	var wg sync.WaitGroup
	for i := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id, created, err := st.Writer(capability.ConfigWrite{}).RegisterNamespace(ctx, "prod")
			if err != nil {
				t.Error(err)
			}
			if created {
				creators.Add(1)
			}
			ids[i] = id
		}()
	}
	wg.Wait()
	if n := creators.Load(); n != 1 {
		t.Fatalf("%d registrations say they created the namespace, want 1", n)
	}
	for _, id := range ids {
		if id != ids[0] || schema.ValidateNamespaceID(id) != nil {
			t.Fatalf("ids %v: want one valid id", ids)
		}
	}
	got, err := st.ResolveNamespace(ctx, "prod")
	if err != nil || got != ids[0] {
		t.Fatalf("resolve = %q, %v; want %q", got, err, ids[0])
	}
	rev, err := tbl.DB.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(tbl.Name), Key: schema.NamespaceReverseKey(got).AttributeValues()})
	if err != nil || rev.Item[schema.AttrNamespaceName].(*types.AttributeValueMemberS).Value != "prod" {
		t.Fatalf("reverse record: %v %v", rev.Item, err)
	}
	other, _, err := st.Writer(capability.ConfigWrite{}).RegisterNamespace(ctx, "staging")
	if err != nil || other == got {
		t.Fatalf("second namespace %q, %v", other, err)
	}
	if _, _, err := st.Writer(capability.ConfigWrite{}).RegisterNamespace(ctx, "_"); !schema.IsValidationError(err) {
		t.Fatalf("reserved name: %v", err)
	}
	_, err = tbl.DB.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(tbl.Name), Key: schema.NamespaceForwardKey("staging").AttributeValues(),
		UpdateExpression:          aws.String("SET #s = :d"),
		ExpressionAttributeNames:  map[string]string{"#s": "status"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":d": &types.AttributeValueMemberS{Value: "deleted"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	var se *config.NamespaceStateError
	if _, err := st.ResolveNamespace(ctx, "staging"); !errors.As(err, &se) {
		t.Fatalf("deleted namespace: %v", err)
	}
}

func TestNamespaceName(t *testing.T) {
	tbl := ddbtest.NewBareTable(t)
	st := config.NewStore(tbl.DB, tbl.Name)
	ctx := context.Background()
	id, _, err := st.Writer(capability.ConfigWrite{}).RegisterNamespace(ctx, "prod")
	if err != nil {
		t.Fatal(err)
	}
	if name, err := st.NamespaceName(ctx, id); err != nil || name != "prod" {
		t.Fatalf("name %q %v", name, err)
	}
	var nf *config.NamespaceNotFoundError
	if _, err := st.NamespaceName(ctx, "AAAAAAAAAAA"); !errors.As(err, &nf) {
		t.Fatalf("unknown id: %v", err)
	}
	if _, err := tbl.DB.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(tbl.Name), Key: schema.NamespaceReverseKey(id).AttributeValues(),
		UpdateExpression:          aws.String("SET #s = :d"),
		ExpressionAttributeNames:  map[string]string{"#s": schema.AttrStatus},
		ExpressionAttributeValues: map[string]types.AttributeValue{":d": schema.Str(config.NamespaceDeleted)}}); err != nil {
		t.Fatal(err)
	}
	var se *config.NamespaceStateError
	if _, err := st.NamespaceName(ctx, id); !errors.As(err, &se) || se.State != config.NamespaceDeleted {
		t.Fatalf("deleted: %v", err)
	}
	if _, err := st.NamespaceName(ctx, "bad/id"); !schema.IsValidationError(err) {
		t.Fatalf("bad id: %v", err)
	}
}
