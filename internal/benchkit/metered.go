package benchkit

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/limiter"
)

// DB is the DynamoDB client surface MeteredDB decorates: the calls the
// limiter makes. *dynamodb.Client satisfies it.
type DB = limiter.DB

// MeteredDB is a DB that records every call it forwards in a Meter: one
// call each, and the capacity units the response reports. It asks for them
// by sending each request as a shallow copy with ReturnConsumedCapacity
// TOTAL; the caller's input is never modified. Because every call sends a
// fresh copy, the ClientRequestToken the SDK fills into a
// TransactWriteItems input lands in the copy, so a caller that reuses its
// input does not turn later calls into idempotent replays (docs/decisions.md
// P3); a token the caller set itself is kept.
//
// A call that fails is still counted, with no units: DynamoDB bills a write
// whose condition failed, but the error carries no ConsumedCapacity.
type MeteredDB struct {
	db DB
	m  *Meter
}

// Metered returns db recording its calls in m.
func Metered(db DB, m *Meter) *MeteredDB { return &MeteredDB{db: db, m: m} }

// Meter is the meter the calls are recorded in.
func (d *MeteredDB) Meter() *Meter { return d.m }

func one(cc *types.ConsumedCapacity) []types.ConsumedCapacity {
	if cc == nil {
		return nil
	}
	return []types.ConsumedCapacity{*cc}
}

// UpdateItem forwards and records a write.
func (d *MeteredDB) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	call := *in
	call.ReturnConsumedCapacity = types.ReturnConsumedCapacityTotal
	out, err := d.db.UpdateItem(ctx, &call, opts...)
	if err != nil {
		d.m.Write()
		return out, err
	}
	d.m.Write(one(out.ConsumedCapacity)...)
	return out, nil
}

// PutItem forwards and records a write.
func (d *MeteredDB) PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	call := *in
	call.ReturnConsumedCapacity = types.ReturnConsumedCapacityTotal
	out, err := d.db.PutItem(ctx, &call, opts...)
	if err != nil {
		d.m.Write()
		return out, err
	}
	d.m.Write(one(out.ConsumedCapacity)...)
	return out, nil
}

// DeleteItem forwards and records a write.
func (d *MeteredDB) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	call := *in
	call.ReturnConsumedCapacity = types.ReturnConsumedCapacityTotal
	out, err := d.db.DeleteItem(ctx, &call, opts...)
	if err != nil {
		d.m.Write()
		return out, err
	}
	d.m.Write(one(out.ConsumedCapacity)...)
	return out, nil
}

// BatchWriteItem forwards and records one write call with the units of
// every table it touched.
func (d *MeteredDB) BatchWriteItem(ctx context.Context, in *dynamodb.BatchWriteItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error) {
	call := *in
	call.ReturnConsumedCapacity = types.ReturnConsumedCapacityTotal
	out, err := d.db.BatchWriteItem(ctx, &call, opts...)
	if err != nil {
		d.m.Write()
		return out, err
	}
	d.m.Write(out.ConsumedCapacity...)
	return out, nil
}

// TransactWriteItems forwards and records a transaction (Meter.WriteTxn:
// the emulator's units, doubled as DynamoDB bills them).
func (d *MeteredDB) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, opts ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	call := *in
	call.ReturnConsumedCapacity = types.ReturnConsumedCapacityTotal
	out, err := d.db.TransactWriteItems(ctx, &call, opts...)
	if err != nil {
		d.m.WriteTxn()
		return out, err
	}
	d.m.WriteTxn(out.ConsumedCapacity...)
	return out, nil
}

// GetItem forwards and records a read.
func (d *MeteredDB) GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	call := *in
	call.ReturnConsumedCapacity = types.ReturnConsumedCapacityTotal
	out, err := d.db.GetItem(ctx, &call, opts...)
	if err != nil {
		d.m.Read()
		return out, err
	}
	d.m.Read(one(out.ConsumedCapacity)...)
	return out, nil
}

// BatchGetItem forwards and records one read call with the units of every
// table it read.
func (d *MeteredDB) BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	call := *in
	call.ReturnConsumedCapacity = types.ReturnConsumedCapacityTotal
	out, err := d.db.BatchGetItem(ctx, &call, opts...)
	if err != nil {
		d.m.Read()
		return out, err
	}
	d.m.Read(out.ConsumedCapacity...)
	return out, nil
}

// Query forwards and records a read.
func (d *MeteredDB) Query(ctx context.Context, in *dynamodb.QueryInput, opts ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	call := *in
	call.ReturnConsumedCapacity = types.ReturnConsumedCapacityTotal
	out, err := d.db.Query(ctx, &call, opts...)
	if err != nil {
		d.m.Read()
		return out, err
	}
	d.m.Read(one(out.ConsumedCapacity)...)
	return out, nil
}

// Totals are what a Meter has recorded since it was created or last reset.
type Totals struct {
	Calls      int64
	WriteUnits float64
	ReadUnits  float64
}

// Totals returns the calls and capacity units recorded so far.
func (m *Meter) Totals() Totals {
	return Totals{
		Calls:      m.calls.Load(),
		WriteUnits: float64(m.wcu.Load()) / 1000,
		ReadUnits:  float64(m.rcu.Load()) / 1000,
	}
}

// Reset zeroes the meter.
func (m *Meter) Reset() {
	m.calls.Store(0)
	m.wcu.Store(0)
	m.rcu.Store(0)
}
