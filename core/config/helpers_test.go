package config_test

import (
	"context"
	"crypto/rand"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/config"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
	"github.com/zae-limiter/zae-limiter-go/internal/clock"
	"github.com/zae-limiter/zae-limiter-go/internal/ddbtest"
)

func newClock() *clock.Manual {
	return clock.NewManual(time.Date(2026, 11, 29, 10, 20, 30, 123_000_000, time.UTC))
}

// env is one test's table, a namespace and a raw client.
type env struct {
	tbl *ddbtest.Table
	ns  string
	ctx context.Context
}

// newEnv: a table stamped as the tooling stamps it (so gated features can
// be stored) and a fresh namespace.
func newEnv(t *testing.T) *env { t.Helper(); return newEnvOn(t, ddbtest.NewTable(t)) }

// newBareEnv: a table without the version record.
func newBareEnv(t *testing.T) *env { t.Helper(); return newEnvOn(t, ddbtest.NewBareTable(t)) }

func newEnvOn(t *testing.T, tbl *ddbtest.Table) *env {
	t.Helper()
	ns, err := schema.NewNamespaceID(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return &env{tbl: tbl, ns: ns, ctx: ctx}
}

func (e *env) store(opts ...config.Option) *config.Store {
	return config.NewStore(e.tbl.DB, e.tbl.Name, opts...)
}

// get reads an item directly (nil when absent).
func (e *env) get(t *testing.T, k schema.Key) map[string]types.AttributeValue {
	t.Helper()
	out, err := e.tbl.DB.GetItem(e.ctx, &dynamodb.GetItemInput{
		TableName: aws.String(e.tbl.Name), Key: k.AttributeValues(), ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Item) == 0 {
		return nil
	}
	return out.Item
}

// put writes an item directly: keys plus attrs.
func (e *env) put(t *testing.T, k schema.ItemKeys, a map[string]types.AttributeValue) {
	t.Helper()
	it := k.Item()
	for name, v := range a {
		it[name] = v
	}
	if _, err := e.tbl.DB.PutItem(e.ctx, &dynamodb.PutItemInput{TableName: aws.String(e.tbl.Name), Item: it}); err != nil {
		t.Fatal(err)
	}
}

// set applies SET name = value for each attribute, directly.
func (e *env) set(t *testing.T, k schema.Key, a map[string]types.AttributeValue) {
	t.Helper()
	expr, names, values := "SET ", map[string]string{}, map[string]types.AttributeValue{}
	i := 0
	for name, v := range a {
		if i > 0 {
			expr += ", "
		}
		p := string(rune('a' + i))
		expr += "#" + p + " = :" + p
		names["#"+p] = name
		values[":"+p] = v
		i++
	}
	if _, err := e.tbl.DB.UpdateItem(e.ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(e.tbl.Name), Key: k.AttributeValues(), UpdateExpression: aws.String(expr),
		ExpressionAttributeNames: names, ExpressionAttributeValues: values,
	}); err != nil {
		t.Fatal(err)
	}
}

func (e *env) del(t *testing.T, k schema.Key) {
	t.Helper()
	if _, err := e.tbl.DB.DeleteItem(e.ctx, &dynamodb.DeleteItemInput{TableName: aws.String(e.tbl.Name), Key: k.AttributeValues()}); err != nil {
		t.Fatal(err)
	}
}

// count returns the number of items in the table.
func (e *env) count(t *testing.T) int {
	t.Helper()
	n := 0
	var start map[string]types.AttributeValue
	for {
		out, err := e.tbl.DB.Scan(e.ctx, &dynamodb.ScanInput{TableName: aws.String(e.tbl.Name), ExclusiveStartKey: start, ConsistentRead: aws.Bool(true)})
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range out.Items {
			if pk, _ := it[schema.AttrPK].(*types.AttributeValueMemberS); pk == nil || pk.Value != schema.TableSystemPK || !isVersion(it) {
				n++ // the version record is the table's, not a test's
			}
		}
		if len(out.LastEvaluatedKey) == 0 {
			return n
		}
		start = out.LastEvaluatedKey
	}
}

func isVersion(it map[string]types.AttributeValue) bool {
	sk, _ := it[schema.AttrSK].(*types.AttributeValueMemberS)
	return sk != nil && sk.Value == schema.SKVersion
}

func sAttr(it map[string]types.AttributeValue, name string) string {
	if v, ok := it[name].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}

func nAttr(it map[string]types.AttributeValue, name string) string {
	if v, ok := it[name].(*types.AttributeValueMemberN); ok {
		return v.Value
	}
	return ""
}
