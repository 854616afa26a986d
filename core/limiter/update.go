package limiter

// updateBuilder: the cold paths' one way to build an UpdateItem (the hot
// path's shapes are cached in internal/fastpath).

import (
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/schema"
)

// updateBuilder assembles an UpdateItem with positional aliases only
// (SPEC §19 rule 2): #a0, #a1 … for names, :v0, :v1 … for values.
type updateBuilder struct {
	names               map[string]string // attribute → alias
	aliases             map[string]string // alias → attribute
	values              map[string]types.AttributeValue
	sets, adds, removes []string
	conds               []string
}

func (u *updateBuilder) name(attr string) string {
	if a, ok := u.names[attr]; ok {
		return a
	}
	if u.names == nil {
		u.names, u.aliases = map[string]string{}, map[string]string{}
	}
	a := "#a" + strconv.Itoa(len(u.names))
	u.names[attr], u.aliases[a] = a, attr
	return a
}

func (u *updateBuilder) value(v types.AttributeValue) string {
	if u.values == nil {
		u.values = map[string]types.AttributeValue{}
	}
	a := ":v" + strconv.Itoa(len(u.values))
	u.values[a] = v
	return a
}

func (u *updateBuilder) set(attr string, v types.AttributeValue) {
	u.sets = append(u.sets, u.name(attr)+" = "+u.value(v))
}

func (u *updateBuilder) add(attr string, v types.AttributeValue) {
	u.adds = append(u.adds, u.name(attr)+" "+u.value(v))
}

func (u *updateBuilder) remove(attr string) { u.removes = append(u.removes, u.name(attr)) }

func (u *updateBuilder) cond(c string) { u.conds = append(u.conds, c) }

func (u *updateBuilder) input(table string, key schema.Key) *dynamodb.UpdateItemInput {
	var expr []string
	if len(u.sets) > 0 {
		expr = append(expr, "SET "+strings.Join(u.sets, ", "))
	}
	if len(u.adds) > 0 {
		expr = append(expr, "ADD "+strings.Join(u.adds, ", "))
	}
	if len(u.removes) > 0 {
		expr = append(expr, "REMOVE "+strings.Join(u.removes, ", "))
	}
	in := &dynamodb.UpdateItemInput{
		TableName: aws.String(table), Key: key.AttributeValues(),
		UpdateExpression:         aws.String(strings.Join(expr, " ")),
		ExpressionAttributeNames: u.aliases, ExpressionAttributeValues: u.values,
		ReturnValues: types.ReturnValueAllNew,
	}
	if len(u.conds) > 0 {
		in.ConditionExpression = aws.String(strings.Join(u.conds, " AND "))
	}
	return in
}
