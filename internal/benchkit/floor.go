package benchkit

import (
	"context"
	"fmt"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// FloorAPI is the part of the DynamoDB client the floors use.
type FloorAPI interface {
	PutItem(context.Context, *dynamodb.PutItemInput, ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	UpdateItem(context.Context, *dynamodb.UpdateItemInput, ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	TransactWriteItems(context.Context, *dynamodb.TransactWriteItemsInput, ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error)
}

// floorBalance is large enough that no benchmark run drains it.
const floorBalance = int64(1) << 60

func seed(ctx context.Context, db FloorAPI, table, pk string) error {
	_, err := db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(table),
		Item: map[string]types.AttributeValue{
			"PK":       &types.AttributeValueMemberS{Value: pk},
			"SK":       &types.AttributeValueMemberS{Value: "#STATE"},
			"b_x_tk":   &types.AttributeValueMemberN{Value: strconv.FormatInt(floorBalance, 10)},
			"b_x_tc":   &types.AttributeValueMemberN{Value: "0"},
			"b_wcu_tk": &types.AttributeValueMemberN{Value: strconv.FormatInt(floorBalance, 10)},
			"b_wcu_tc": &types.AttributeValueMemberN{Value: "0"},
		},
	})
	if err != nil {
		return fmt.Errorf("seed %s: %w", pk, err)
	}
	return nil
}

// floorUpdate is the bare conditional UpdateItem: ADD a consumption to one
// limit and to wcu, conditioned on both balances, returning ALL_NEW. It is the
// smallest write that can admit a request, the shape the fast path builds on.
func floorUpdate(table, pk string) *dynamodb.UpdateItemInput {
	return &dynamodb.UpdateItemInput{
		TableName: aws.String(table),
		Key: map[string]types.AttributeValue{
			"PK": &types.AttributeValueMemberS{Value: pk},
			"SK": &types.AttributeValueMemberS{Value: "#STATE"},
		},
		UpdateExpression:    aws.String("ADD #t0 :n0, #c0 :p0, #wt :nw, #wc :pw"),
		ConditionExpression: aws.String("attribute_exists(PK) AND #t0 >= :p0 AND #wt >= :pw"),
		ExpressionAttributeNames: map[string]string{
			"#t0": "b_x_tk", "#c0": "b_x_tc", "#wt": "b_wcu_tk", "#wc": "b_wcu_tc",
		},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":n0": &types.AttributeValueMemberN{Value: "-1000"},
			":p0": &types.AttributeValueMemberN{Value: "1000"},
			":nw": &types.AttributeValueMemberN{Value: "-1000"},
			":pw": &types.AttributeValueMemberN{Value: "1000"},
		},
		ReturnValues:                        types.ReturnValueAllNew,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		ReturnConsumedCapacity:              types.ReturnConsumedCapacityTotal,
	}
}

// FloorUpdateItem seeds one item and returns the bare conditional UpdateItem
// floor as an Op that records its calls and capacity in m.
func FloorUpdateItem(ctx context.Context, db FloorAPI, table string, m *Meter) (Op, error) {
	pk := "bench/BUCKET#floor#update#0"
	if err := seed(ctx, db, table, pk); err != nil {
		return nil, err
	}
	in := floorUpdate(table, pk)
	return func(ctx context.Context, _ int) error {
		out, err := db.UpdateItem(ctx, in)
		if err != nil {
			return err
		}
		if m != nil {
			if out.ConsumedCapacity != nil {
				m.Write(*out.ConsumedCapacity)
			} else {
				m.Write()
			}
		}
		return nil
	}, nil
}

// FloorTransactWrite seeds two items and returns a 2-item TransactWriteItems
// of the same conditional update on each: the floor of a cascaded slow-path
// write (child and parent in one transaction).
func FloorTransactWrite(ctx context.Context, db FloorAPI, table string, m *Meter) (Op, error) {
	var items []types.TransactWriteItem
	for _, pk := range []string{"bench/BUCKET#floor-child#txn#0", "bench/BUCKET#floor-parent#txn#0"} {
		if err := seed(ctx, db, table, pk); err != nil {
			return nil, err
		}
		u := floorUpdate(table, pk)
		items = append(items, types.TransactWriteItem{Update: &types.Update{
			TableName:                 u.TableName,
			Key:                       u.Key,
			UpdateExpression:          u.UpdateExpression,
			ConditionExpression:       u.ConditionExpression,
			ExpressionAttributeNames:  u.ExpressionAttributeNames,
			ExpressionAttributeValues: u.ExpressionAttributeValues,
		}})
	}
	in := &dynamodb.TransactWriteItemsInput{
		TransactItems:          items,
		ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal,
	}
	return func(ctx context.Context, _ int) error {
		// A fresh copy each call: the SDK fills ClientRequestToken into the
		// input it is given, and a reused token makes DynamoDB treat every
		// later call as an idempotent replay of the first.
		call := *in
		out, err := db.TransactWriteItems(ctx, &call)
		if err != nil {
			return err
		}
		if m != nil {
			m.WriteTxn(out.ConsumedCapacity...)
		}
		return nil
	}, nil
}

// FloorParallelUpdates seeds two items and returns an Op that sends the bare
// conditional UpdateItem to both at once, from two goroutines: the floor of
// a warm cascaded acquire, whose child and parent writes go out in parallel.
// Against an emulator that serialises writes it shows what parallelism the
// emulator allows.
func FloorParallelUpdates(ctx context.Context, db FloorAPI, table string, m *Meter) (Op, error) {
	var ins [2]*dynamodb.UpdateItemInput
	for i, pk := range []string{"bench/BUCKET#floor-child#pair#0", "bench/BUCKET#floor-parent#pair#0"} {
		if err := seed(ctx, db, table, pk); err != nil {
			return nil, err
		}
		ins[i] = floorUpdate(table, pk)
	}
	send := func(ctx context.Context, in *dynamodb.UpdateItemInput) error {
		out, err := db.UpdateItem(ctx, in)
		if err == nil && m != nil {
			if out.ConsumedCapacity != nil {
				m.Write(*out.ConsumedCapacity)
			} else {
				m.Write()
			}
		}
		return err
	}
	return func(ctx context.Context, _ int) error {
		errc := make(chan error, 1)
		go func() { errc <- send(ctx, ins[1]) }()
		err := send(ctx, ins[0])
		if perr := <-errc; err == nil {
			err = perr
		}
		return err
	}, nil
}
