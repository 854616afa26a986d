// Package expr is the one way the cold paths build DynamoDB update and
// condition expressions: positional placeholders only (#a0, #a1 … for
// attribute names, :v0, :v1 … for values), so that no limit, resource or
// attribute name ever appears in an expression string. The hot path's
// write shapes are built once per shape elsewhere
// (core/limiter/internal/bucketwrite).
package expr

import (
	"slices"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/schema"
)

// Builder accumulates one request's update clauses, condition terms, names
// and values. The zero value is ready to use; a Builder is not safe for
// concurrent use.
type Builder struct {
	names               map[string]string // attribute → alias
	aliases             map[string]string // alias → attribute
	values              map[string]types.AttributeValue
	sets, adds, removes []string
	conds               []string
}

// Name returns the placeholder of attribute attr, the same one every time.
func (b *Builder) Name(attr string) string {
	if a, ok := b.names[attr]; ok {
		return a
	}
	if b.names == nil {
		b.names, b.aliases = map[string]string{}, map[string]string{}
	}
	a := "#a" + strconv.Itoa(len(b.names))
	b.names[attr], b.aliases[a] = a, attr
	return a
}

// Value returns a new placeholder for v.
func (b *Builder) Value(v types.AttributeValue) string {
	if b.values == nil {
		b.values = map[string]types.AttributeValue{}
	}
	a := ":v" + strconv.Itoa(len(b.values))
	b.values[a] = v
	return a
}

// Set adds `attr = v` to the SET clause.
func (b *Builder) Set(attr string, v types.AttributeValue) {
	b.sets = append(b.sets, b.Name(attr)+" = "+b.Value(v))
}

// SetIfNotExists adds `attr = if_not_exists(attr, v)` to the SET clause:
// v where the item has no attr, the stored value otherwise.
func (b *Builder) SetIfNotExists(attr string, v types.AttributeValue) {
	n := b.Name(attr)
	b.sets = append(b.sets, n+" = if_not_exists("+n+", "+b.Value(v)+")")
}

// SetFrom adds `attr = if_not_exists(from, v)` to the SET clause: the
// item's own from, or v where it has none (a copy of one attribute into
// another in the same write).
func (b *Builder) SetFrom(attr, from string, v types.AttributeValue) {
	b.sets = append(b.sets, b.Name(attr)+" = if_not_exists("+b.Name(from)+", "+b.Value(v)+")")
}

// Add adds `attr v` to the ADD clause.
func (b *Builder) Add(attr string, v types.AttributeValue) {
	b.adds = append(b.adds, b.Name(attr)+" "+b.Value(v))
}

// Remove adds attr to the REMOVE clause.
func (b *Builder) Remove(attr string) { b.removes = append(b.removes, b.Name(attr)) }

// Cond adds a term to the condition, joined to the others with AND. Build
// it with Name and Value.
func (b *Builder) Cond(term string) { b.conds = append(b.conds, term) }

// SetRemove sets every attribute of set and removes every one of remove,
// each in name order, so that equal inputs give equal expressions.
func (b *Builder) SetRemove(set map[string]types.AttributeValue, remove []string) {
	for _, a := range slices.Sorted(func(yield func(string) bool) {
		for a := range set {
			if !yield(a) {
				return
			}
		}
	}) {
		b.Set(a, set[a])
	}
	for _, a := range slices.Sorted(slices.Values(remove)) {
		b.Remove(a)
	}
}

// Update is the update expression: "SET … ADD … REMOVE …", clauses in
// that order, each item in the order it was added.
func (b *Builder) Update() string {
	var out []string
	if len(b.sets) > 0 {
		out = append(out, "SET "+strings.Join(b.sets, ", "))
	}
	if len(b.adds) > 0 {
		out = append(out, "ADD "+strings.Join(b.adds, ", "))
	}
	if len(b.removes) > 0 {
		out = append(out, "REMOVE "+strings.Join(b.removes, ", "))
	}
	return strings.Join(out, " ")
}

// Condition is the condition expression, "" when there is none.
func (b *Builder) Condition() string { return strings.Join(b.conds, " AND ") }

// Names are the attribute name placeholders (nil when none).
func (b *Builder) Names() map[string]string { return b.aliases }

// Values are the value placeholders (nil when none).
func (b *Builder) Values() map[string]types.AttributeValue { return b.values }

// UpdateInput is an UpdateItem of key in table with the built expressions
// and ReturnValues ALL_NEW.
func (b *Builder) UpdateInput(table string, key schema.Key) *dynamodb.UpdateItemInput {
	in := &dynamodb.UpdateItemInput{
		TableName: aws.String(table), Key: key.AttributeValues(),
		UpdateExpression:         aws.String(b.Update()),
		ExpressionAttributeNames: b.Names(), ExpressionAttributeValues: b.Values(),
		ReturnValues: types.ReturnValueAllNew,
	}
	if c := b.Condition(); c != "" {
		in.ConditionExpression = aws.String(c)
	}
	return in
}
