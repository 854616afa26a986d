package benchkit_test

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/internal/benchkit"
	"github.com/zae-limiter/zae-limiter-go/internal/ddbtest"
)

var _ benchkit.DB = (*dynamodb.Client)(nil)

func meterKey(pk string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		"PK": &types.AttributeValueMemberS{Value: pk},
		"SK": &types.AttributeValueMemberS{Value: "#STATE"},
	}
}

func meterAdd(table, pk string) *types.Update {
	return &types.Update{
		TableName:                 aws.String(table),
		Key:                       meterKey(pk),
		UpdateExpression:          aws.String("ADD #n :one"),
		ExpressionAttributeNames:  map[string]string{"#n": "n"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":one": &types.AttributeValueMemberN{Value: "1"}},
	}
}

// TestMeteringDecorator sends a PutItem, an UpdateItem, the same 2-item
// transaction input twice, a write whose condition fails and two reads
// through MeteredDB on DynamoDB Local, and checks the calls and units it
// recorded, that both transactions were applied (a reused input must not
// become an idempotent replay, docs/decisions.md P3), and that the caller's
// inputs were left as they were.
func TestMeteringDecorator(t *testing.T) {
	tbl := ddbtest.NewTable(t)
	ctx := context.Background()
	var m benchkit.Meter
	db := benchkit.Metered(tbl.DB, &m)
	want := func(step string, calls int64, wcu, rcu float64) {
		t.Helper()
		if got := m.Totals(); got != (benchkit.Totals{Calls: calls, WriteUnits: wcu, ReadUnits: rcu}) {
			t.Fatalf("after %s: %+v, want %d calls, %v WCU, %v RCU", step, got, calls, wcu, rcu)
		}
	}

	put := &dynamodb.PutItemInput{TableName: aws.String(tbl.Name), Item: meterKey("meter/a")}
	if _, err := db.PutItem(ctx, put); err != nil {
		t.Fatal(err)
	}
	want("PutItem", 1, 1, 0)

	a := meterAdd(tbl.Name, "meter/a")
	up := &dynamodb.UpdateItemInput{
		TableName: a.TableName, Key: a.Key, UpdateExpression: a.UpdateExpression,
		ExpressionAttributeNames: a.ExpressionAttributeNames, ExpressionAttributeValues: a.ExpressionAttributeValues,
	}
	if _, err := db.UpdateItem(ctx, up); err != nil {
		t.Fatal(err)
	}
	want("UpdateItem", 2, 2, 0)

	// One input, sent twice: each call must be a new transaction.
	txn := &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Update: meterAdd(tbl.Name, "meter/a")}, {Update: meterAdd(tbl.Name, "meter/b")},
	}}
	for range 2 {
		if _, err := db.TransactWriteItems(ctx, txn); err != nil {
			t.Fatal(err)
		}
	}
	// 2 transactions × 2 items × 2 units (a transactional write costs two).
	want("2 transactions", 4, 10, 0)

	failed := &dynamodb.UpdateItemInput{
		TableName: up.TableName, Key: up.Key, UpdateExpression: up.UpdateExpression,
		ConditionExpression:      aws.String("attribute_not_exists(PK)"),
		ExpressionAttributeNames: up.ExpressionAttributeNames, ExpressionAttributeValues: up.ExpressionAttributeValues,
	}
	var ccf *types.ConditionalCheckFailedException
	if _, err := db.UpdateItem(ctx, failed); !errors.As(err, &ccf) {
		t.Fatalf("conditioned write: %v, want ConditionalCheckFailedException", err)
	}
	want("a failed condition", 5, 10, 0)

	got, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(tbl.Name), Key: meterKey("meter/a"), ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	if n := got.Item["n"].(*types.AttributeValueMemberN).Value; n != "3" {
		t.Fatalf("meter/a n = %s, want 3 (1 update + 2 transactions)", n)
	}
	want("GetItem", 6, 10, 1)
	batch, err := db.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: map[string]types.KeysAndAttributes{
		tbl.Name: {Keys: []map[string]types.AttributeValue{meterKey("meter/a"), meterKey("meter/b")}, ConsistentRead: aws.Bool(true)},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if len(batch.Responses[tbl.Name]) != 2 {
		t.Fatalf("BatchGetItem returned %d items, want 2", len(batch.Responses[tbl.Name]))
	}
	want("BatchGetItem", 7, 10, 3)

	if put.ReturnConsumedCapacity != "" || up.ReturnConsumedCapacity != "" || failed.ReturnConsumedCapacity != "" ||
		txn.ReturnConsumedCapacity != "" || txn.ClientRequestToken != nil {
		t.Fatal("the decorator modified a caller's input")
	}
	m.Reset()
	want("Reset", 0, 0, 0)
}
