// Package query lists the primary keys of the items a key condition
// selects, on the table or one of its indexes, page by page: the discovery
// step of the config store's deletes and of the operator fan-outs.
package query

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/schema"
)

// DB is the call Keys makes. *dynamodb.Client satisfies it.
type DB interface {
	Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
}

// Keys returns the primary keys of the items of table (index "" for the
// table itself) whose pkAttr equals pk and, when skAttr is not "", whose
// skAttr begins with prefix. Only the keys are projected, so a KEYS_ONLY
// index serves it. With consistent, the reads are strongly consistent
// (the table only: DynamoDB refuses it on a global index).
func Keys(ctx context.Context, db DB, table, index, pkAttr, pk, skAttr, prefix string, consistent bool) ([]schema.Key, error) {
	in := func(start map[string]types.AttributeValue) *dynamodb.QueryInput {
		names := map[string]string{"#tpk": schema.AttrPK, "#tsk": schema.AttrSK}
		pkName := "#tpk"
		if pkAttr != schema.AttrPK {
			pkName = "#pk"
			names[pkName] = pkAttr
		}
		q := &dynamodb.QueryInput{
			TableName:                 aws.String(table),
			KeyConditionExpression:    aws.String(pkName + " = :pk"),
			ExpressionAttributeNames:  names,
			ExpressionAttributeValues: map[string]types.AttributeValue{":pk": schema.Str(pk)},
			ProjectionExpression:      aws.String("#tpk, #tsk"),
			ExclusiveStartKey:         start,
		}
		if index != "" {
			q.IndexName = aws.String(index)
		} else if consistent {
			q.ConsistentRead = aws.Bool(true)
		}
		if skAttr != "" {
			q.KeyConditionExpression = aws.String(pkName + " = :pk AND begins_with(#sk, :prefix)")
			names["#sk"] = skAttr
			q.ExpressionAttributeValues[":prefix"] = schema.Str(prefix)
		}
		return q
	}
	var keys []schema.Key
	var start map[string]types.AttributeValue
	for {
		res, err := db.Query(ctx, in(start))
		if err != nil {
			return nil, fmt.Errorf("query %s: %w", pk, err)
		}
		for _, it := range res.Items {
			pk, _ := it[schema.AttrPK].(*types.AttributeValueMemberS)
			sk, _ := it[schema.AttrSK].(*types.AttributeValueMemberS)
			if pk != nil && sk != nil {
				keys = append(keys, schema.Key{PK: pk.Value, SK: sk.Value})
			}
		}
		if len(res.LastEvaluatedKey) == 0 {
			return keys, nil
		}
		start = res.LastEvaluatedKey
	}
}
