package schema

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Key attribute names of the table and its indexes (docs/design.md §2).
const (
	AttrPK     = "PK"
	AttrSK     = "SK"
	AttrGSI1PK = "GSI1PK"
	AttrGSI1SK = "GSI1SK"
	AttrGSI2PK = "GSI2PK"
	AttrGSI2SK = "GSI2SK"
	AttrGSI3PK = "GSI3PK"
	AttrGSI3SK = "GSI3SK"
	AttrGSI4PK = "GSI4PK"
	AttrGSI4SK = "GSI4SK"
	// AttrTTL is the table's TTL attribute, in epoch seconds (docs/design.md §2).
	AttrTTL = "ttl"
)

// Index names (docs/design.md §2).
const (
	GSI1 = "GSI1"
	GSI2 = "GSI2"
	GSI3 = "GSI3"
	GSI4 = "GSI4"
)

// Index describes one secondary index: its name, key attributes and projection.
// A local index has no PartitionKey of its own (it shares the table's).
type Index struct {
	Name         string
	PartitionKey string // empty for a local secondary index
	SortKey      string
	Projection   types.ProjectionType
}

// Table is the single source of truth for the table layout: the test harness,
// `make run`, the CDK stack and the SAM template are all checked against it.
// It is a plain value; options return modified copies.
type Table struct {
	PartitionKey  string
	SortKey       string
	GlobalIndexes []Index
	LocalIndexes  []Index
	TTLAttribute  string
	StreamView    types.StreamViewType
	BillingMode   types.BillingMode
}

// TableOption adjusts a table definition.
type TableOption func(*Table)

// WithGSI2Projection sets GSI2's projection. The default is KEYS_ONLY
// (docs/design.md §2); use ALL for a table shared with Python clients, which read
// bucket attributes from GSI2.
func WithGSI2Projection(p types.ProjectionType) TableOption {
	return func(t *Table) {
		for i := range t.GlobalIndexes {
			if t.GlobalIndexes[i].Name == GSI2 {
				t.GlobalIndexes[i].Projection = p
			}
		}
	}
}

// WithoutStream leaves the table without a stream: a table no aggregator
// reads, such as a test's that only writes config (DynamoDB Local slows as
// stream records pile up).
func WithoutStream() TableOption {
	return func(t *Table) { t.StreamView = "" }
}

// Definition returns the table layout of docs/design.md §2: PK/SK, GSI1–GSI4,
// LSI1–LSI5 (odd ALL, even KEYS_ONLY), TTL on `ttl`, a NEW_AND_OLD_IMAGES
// stream and on-demand billing.
func Definition(opts ...TableOption) Table {
	t := Table{
		PartitionKey: AttrPK,
		SortKey:      AttrSK,
		GlobalIndexes: []Index{
			{Name: GSI1, PartitionKey: AttrGSI1PK, SortKey: AttrGSI1SK, Projection: types.ProjectionTypeAll},
			{Name: GSI2, PartitionKey: AttrGSI2PK, SortKey: AttrGSI2SK, Projection: types.ProjectionTypeKeysOnly},
			{Name: GSI3, PartitionKey: AttrGSI3PK, SortKey: AttrGSI3SK, Projection: types.ProjectionTypeKeysOnly},
			{Name: GSI4, PartitionKey: AttrGSI4PK, SortKey: AttrGSI4SK, Projection: types.ProjectionTypeKeysOnly},
		},
		TTLAttribute: AttrTTL,
		StreamView:   types.StreamViewTypeNewAndOldImages,
		BillingMode:  types.BillingModePayPerRequest,
	}
	for n := 1; n <= 5; n++ {
		p := types.ProjectionTypeAll
		if n%2 == 0 {
			p = types.ProjectionTypeKeysOnly
		}
		t.LocalIndexes = append(t.LocalIndexes, Index{
			Name:       fmt.Sprintf("LSI%d", n),
			SortKey:    fmt.Sprintf("LSI%dSK", n),
			Projection: p,
		})
	}
	for _, o := range opts {
		o(&t)
	}
	return t
}

// AttributeNames lists every key attribute the table and its indexes define,
// in a stable order: PK, SK, GSI keys, LSI sort keys. All are strings.
func (t Table) AttributeNames() []string {
	names := []string{t.PartitionKey, t.SortKey}
	for _, ix := range t.GlobalIndexes {
		names = append(names, ix.PartitionKey, ix.SortKey)
	}
	for _, ix := range t.LocalIndexes {
		names = append(names, ix.SortKey)
	}
	return names
}

// CreateTableInput renders the definition as a CreateTable request.
func (t Table) CreateTableInput(name string) *dynamodb.CreateTableInput {
	in := &dynamodb.CreateTableInput{
		TableName:   aws.String(name),
		BillingMode: t.BillingMode,
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String(t.PartitionKey), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String(t.SortKey), KeyType: types.KeyTypeRange},
		},
		Tags: []types.Tag{{Key: aws.String("Application"), Value: aws.String("zae-limiter")}},
	}
	if t.StreamView != "" {
		in.StreamSpecification = &types.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: t.StreamView}
	}
	for _, a := range t.AttributeNames() {
		in.AttributeDefinitions = append(in.AttributeDefinitions, types.AttributeDefinition{
			AttributeName: aws.String(a), AttributeType: types.ScalarAttributeTypeS,
		})
	}
	for _, ix := range t.GlobalIndexes {
		in.GlobalSecondaryIndexes = append(in.GlobalSecondaryIndexes, types.GlobalSecondaryIndex{
			IndexName: aws.String(ix.Name),
			KeySchema: []types.KeySchemaElement{
				{AttributeName: aws.String(ix.PartitionKey), KeyType: types.KeyTypeHash},
				{AttributeName: aws.String(ix.SortKey), KeyType: types.KeyTypeRange},
			},
			Projection: &types.Projection{ProjectionType: ix.Projection},
		})
	}
	for _, ix := range t.LocalIndexes {
		in.LocalSecondaryIndexes = append(in.LocalSecondaryIndexes, types.LocalSecondaryIndex{
			IndexName: aws.String(ix.Name),
			KeySchema: []types.KeySchemaElement{
				{AttributeName: aws.String(t.PartitionKey), KeyType: types.KeyTypeHash},
				{AttributeName: aws.String(ix.SortKey), KeyType: types.KeyTypeRange},
			},
			Projection: &types.Projection{ProjectionType: ix.Projection},
		})
	}
	return in
}

// TableAPI is the part of the DynamoDB client that CreateTable needs.
type TableAPI interface {
	CreateTable(context.Context, *dynamodb.CreateTableInput, ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error)
	DescribeTable(context.Context, *dynamodb.DescribeTableInput, ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error)
	UpdateTimeToLive(context.Context, *dynamodb.UpdateTimeToLiveInput, ...func(*dynamodb.Options)) (*dynamodb.UpdateTimeToLiveOutput, error)
}

// CreateTable creates the table from the definition, waits until it is
// ACTIVE and enables TTL on the TTL attribute. It returns the table's
// description (whose LatestStreamArn names the stream).
func (t Table) CreateTable(ctx context.Context, api TableAPI, name string, wait time.Duration) (*types.TableDescription, error) {
	if _, err := api.CreateTable(ctx, t.CreateTableInput(name)); err != nil {
		return nil, fmt.Errorf("create table %s: %w", name, err)
	}
	w := dynamodb.NewTableExistsWaiter(api, func(o *dynamodb.TableExistsWaiterOptions) {
		o.MinDelay = 50 * time.Millisecond
		o.MaxDelay = time.Second
	})
	desc, err := w.WaitForOutput(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)}, wait)
	if err != nil {
		return nil, fmt.Errorf("wait for table %s: %w", name, err)
	}
	if t.TTLAttribute != "" {
		_, err := api.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
			TableName: aws.String(name),
			TimeToLiveSpecification: &types.TimeToLiveSpecification{
				AttributeName: aws.String(t.TTLAttribute), Enabled: aws.Bool(true),
			},
		})
		if err != nil {
			return nil, fmt.Errorf("enable ttl on %s: %w", name, err)
		}
	}
	if desc.Table == nil {
		return nil, errors.New("describe table returned no table")
	}
	return desc.Table, nil
}
