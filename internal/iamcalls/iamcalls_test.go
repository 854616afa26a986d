package iamcalls_test

import (
	"context"
	"reflect"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/internal/ddbtest"
	"github.com/zae-limiter/zae-limiter-go/internal/iamcalls"
)

func TestMain(m *testing.M) { ddbtest.Main(m) }

func s(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }

func key(pk string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{"PK": s(pk), "SK": s("#X")}
}

func TestActionsOf(t *testing.T) {
	cases := []struct {
		in   any
		want []iamcalls.Action
	}{
		{&dynamodb.GetItemInput{Key: key("_/SYSTEM#")}, []iamcalls.Action{{Name: "dynamodb:GetItem", Key: "_/SYSTEM#"}}},
		{&dynamodb.PutItemInput{Item: key("ns/A")}, []iamcalls.Action{{Name: "dynamodb:PutItem", Key: "ns/A"}}},
		{&dynamodb.UpdateItemInput{Key: key("ns/B")}, []iamcalls.Action{{Name: "dynamodb:UpdateItem", Key: "ns/B"}}},
		{&dynamodb.DeleteItemInput{Key: key("ns/C")}, []iamcalls.Action{{Name: "dynamodb:DeleteItem", Key: "ns/C"}}},
		{&dynamodb.ScanInput{}, []iamcalls.Action{{Name: "dynamodb:Scan"}}},
		{&dynamodb.DescribeTableInput{}, []iamcalls.Action{{Name: "dynamodb:DescribeTable"}}},
		{&dynamodb.QueryInput{
			IndexName:                 aws.String("GSI3"),
			KeyConditionExpression:    aws.String("#0 = :0 AND begins_with(#1, :1)"),
			ExpressionAttributeNames:  map[string]string{"#0": "GSI3PK", "#1": "GSI3SK"},
			ExpressionAttributeValues: map[string]types.AttributeValue{":0": s("ns/ENTITY#e"), ":1": s("BUCKET#")},
		}, []iamcalls.Action{{Name: "dynamodb:Query", Key: "ns/ENTITY#e"}}},
		{&dynamodb.BatchGetItemInput{RequestItems: map[string]types.KeysAndAttributes{
			"t": {Keys: []map[string]types.AttributeValue{key("ns/D"), key("_/E")}},
		}}, []iamcalls.Action{{Name: "dynamodb:BatchGetItem", Key: "_/E"}, {Name: "dynamodb:BatchGetItem", Key: "ns/D"}}},
		{&dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{
			"t": {{DeleteRequest: &types.DeleteRequest{Key: key("ns/F")}}, {PutRequest: &types.PutRequest{Item: key("ns/G")}}},
		}}, []iamcalls.Action{{Name: "dynamodb:BatchWriteItem", Key: "ns/F"}, {Name: "dynamodb:BatchWriteItem", Key: "ns/G"}}},
		{&dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
			{Put: &types.Put{Item: key("ns/1")}},
			{Update: &types.Update{Key: key("ns/2")}},
			{Delete: &types.Delete{Key: key("ns/3")}},
			{ConditionCheck: &types.ConditionCheck{Key: key("ns/4")}},
		}}, []iamcalls.Action{
			{Name: "dynamodb:PutItem", Key: "ns/1"}, {Name: "dynamodb:UpdateItem", Key: "ns/2"},
			{Name: "dynamodb:DeleteItem", Key: "ns/3"}, {Name: "dynamodb:ConditionCheckItem", Key: "ns/4"},
		}},
		{&dynamodb.TransactGetItemsInput{TransactItems: []types.TransactGetItem{{Get: &types.Get{Key: key("ns/5")}}}},
			[]iamcalls.Action{{Name: "dynamodb:GetItem", Key: "ns/5"}}},
		{&dynamodb.ListTablesInput{}, []iamcalls.Action{{Name: "dynamodb:UnknownListTables"}}},
	}
	for _, c := range cases {
		if got := iamcalls.ActionsOf(c.in); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%T: got %v, want %v", c.in, got, c.want)
		}
	}
	if !(iamcalls.Action{Key: "_"}).Shared() || !(iamcalls.Action{Key: "_/SYSTEM#"}).Shared() || (iamcalls.Action{Key: "a_/x"}).Shared() {
		t.Error("Shared: only the namespace _")
	}
}

// TestRecorderSeesWhatTheClientSends installs the recorder on a real client
// and checks it records every call, refused ones included.
func TestRecorderSeesWhatTheClientSends(t *testing.T) {
	tbl := ddbtest.NewBareTable(t)
	rec := iamcalls.New()
	db := dynamodb.New(tbl.DB.Options(), rec.Option())
	ctx := context.Background()
	if _, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(tbl.Name), Item: key("ns/a")}); err != nil {
		t.Fatal(err)
	}
	_, err := db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{ConditionCheck: &types.ConditionCheck{TableName: aws.String(tbl.Name), Key: key("ns/a"), ConditionExpression: aws.String("attribute_not_exists(PK)")}},
		{Update: &types.Update{TableName: aws.String(tbl.Name), Key: key("ns/b"), UpdateExpression: aws.String("SET x = :x"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":x": s("1")}}},
	}})
	if err == nil {
		t.Fatal("the condition check should fail")
	}
	if _, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(tbl.Name), Key: key("_/SYSTEM#")}); err != nil {
		t.Fatal(err)
	}
	want := []string{"dynamodb:ConditionCheckItem", "dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem"}
	if got := rec.Actions(); !reflect.DeepEqual(got, want) {
		t.Errorf("actions %v, want %v", got, want)
	}
	if got := rec.SharedActions(); !reflect.DeepEqual(got, []string{"dynamodb:GetItem"}) {
		t.Errorf("shared actions %v", got)
	}
	if got := rec.Operations(); !reflect.DeepEqual(got, map[string]int{"PutItem": 1, "TransactWriteItems": 1, "GetItem": 1}) {
		t.Errorf("operations %v", got)
	}
	wantReqs := []iamcalls.Request{
		{Action: "dynamodb:ConditionCheckItem", LeadingKeys: []string{"ns/a"}},
		{Action: "dynamodb:GetItem", LeadingKeys: []string{"_/SYSTEM#"}},
		{Action: "dynamodb:PutItem", LeadingKeys: []string{"ns/a"}},
		{Action: "dynamodb:UpdateItem", LeadingKeys: []string{"ns/b"}},
	}
	if got := rec.Requests(); !reflect.DeepEqual(got, wantReqs) {
		t.Errorf("requests %v, want %v", got, wantReqs)
	}
}

// TestRequestsOf: a batch is one authorisation with every key it names
// (distinct, sorted), a transaction one per member, a Query one on the
// partition key of the table or index it reads, a Scan one with no key.
func TestRequestsOf(t *testing.T) {
	cases := []struct {
		in   any
		want []iamcalls.Request
	}{
		{&dynamodb.BatchGetItemInput{RequestItems: map[string]types.KeysAndAttributes{
			"t": {Keys: []map[string]types.AttributeValue{key("ns/D"), key("_/E"), key("ns/D")}},
		}}, []iamcalls.Request{{Action: "dynamodb:BatchGetItem", LeadingKeys: []string{"_/E", "ns/D"}}}},
		{&dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{
			"t": {{DeleteRequest: &types.DeleteRequest{Key: key("ns/F")}}, {PutRequest: &types.PutRequest{Item: key("ns/G")}}},
		}}, []iamcalls.Request{{Action: "dynamodb:BatchWriteItem", LeadingKeys: []string{"ns/F", "ns/G"}}}},
		{&dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
			{Put: &types.Put{Item: key("ns/1")}}, {ConditionCheck: &types.ConditionCheck{Key: key("_/2")}},
		}}, []iamcalls.Request{
			{Action: "dynamodb:PutItem", LeadingKeys: []string{"ns/1"}},
			{Action: "dynamodb:ConditionCheckItem", LeadingKeys: []string{"_/2"}},
		}},
		{&dynamodb.QueryInput{
			IndexName:                 aws.String("GSI4"),
			KeyConditionExpression:    aws.String("GSI4PK = :p"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":p": s("ns")},
		}, []iamcalls.Request{{Action: "dynamodb:Query", Index: "GSI4", LeadingKeys: []string{"ns"}}}},
		{&dynamodb.ScanInput{IndexName: aws.String("GSI4")}, []iamcalls.Request{{Action: "dynamodb:Scan", Index: "GSI4"}}},
	}
	for _, c := range cases {
		if got := iamcalls.RequestsOf(c.in); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%T: got %v, want %v", c.in, got, c.want)
		}
	}
}
