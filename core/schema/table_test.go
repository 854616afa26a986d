package schema_test

import (
	"context"
	"sort"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/schema"
	"github.com/zae-limiter/zae-limiter-go/internal/ddbtest"
)

func TestMain(m *testing.M) { ddbtest.Main(m) }

func TestDefinitionShape(t *testing.T) {
	def := schema.Definition()
	if got := len(def.GlobalIndexes); got != 4 {
		t.Fatalf("global indexes = %d, want 4", got)
	}
	if got := len(def.LocalIndexes); got != 5 {
		t.Fatalf("local indexes = %d, want 5", got)
	}
	want := map[string]types.ProjectionType{
		"GSI1": types.ProjectionTypeAll, "GSI2": types.ProjectionTypeKeysOnly,
		"GSI3": types.ProjectionTypeKeysOnly, "GSI4": types.ProjectionTypeKeysOnly,
		"LSI1": types.ProjectionTypeAll, "LSI2": types.ProjectionTypeKeysOnly,
		"LSI3": types.ProjectionTypeAll, "LSI4": types.ProjectionTypeKeysOnly,
		"LSI5": types.ProjectionTypeAll,
	}
	for _, ix := range append(append([]schema.Index{}, def.GlobalIndexes...), def.LocalIndexes...) {
		if want[ix.Name] != ix.Projection {
			t.Errorf("%s projection = %s, want %s", ix.Name, ix.Projection, want[ix.Name])
		}
	}
	all := schema.Definition(schema.WithGSI2Projection(types.ProjectionTypeAll))
	if all.GlobalIndexes[1].Projection != types.ProjectionTypeAll {
		t.Errorf("WithGSI2Projection(ALL) left %s", all.GlobalIndexes[1].Projection)
	}
	if def.GlobalIndexes[1].Projection != types.ProjectionTypeKeysOnly {
		t.Error("an option changed the default definition it was not applied to")
	}
	if got := len(def.AttributeNames()); got != 15 {
		t.Errorf("attribute definitions = %d, want 15 (PK, SK, 8 GSI keys, 5 LSI keys)", got)
	}
}

// TestCreateTableOnEmulator creates the table on DynamoDB Local and checks
// what the service reports back against the definition.
func TestCreateTableOnEmulator(t *testing.T) {
	tbl := ddbtest.NewBareTable(t, ddbtest.WithStream())
	ctx := context.Background()
	out, err := tbl.DB.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(tbl.Name)})
	if err != nil {
		t.Fatal(err)
	}
	d := out.Table
	if d.StreamSpecification == nil || !aws.ToBool(d.StreamSpecification.StreamEnabled) ||
		d.StreamSpecification.StreamViewType != types.StreamViewTypeNewAndOldImages {
		t.Errorf("stream = %+v, want NEW_AND_OLD_IMAGES", d.StreamSpecification)
	}
	if tbl.StreamARN == "" {
		t.Error("no stream ARN")
	}
	var gsis, lsis []string
	for _, g := range d.GlobalSecondaryIndexes {
		gsis = append(gsis, aws.ToString(g.IndexName)+":"+string(g.Projection.ProjectionType))
	}
	for _, l := range d.LocalSecondaryIndexes {
		lsis = append(lsis, aws.ToString(l.IndexName)+":"+string(l.Projection.ProjectionType))
	}
	sort.Strings(gsis)
	sort.Strings(lsis)
	wantG := []string{"GSI1:ALL", "GSI2:KEYS_ONLY", "GSI3:KEYS_ONLY", "GSI4:KEYS_ONLY"}
	wantL := []string{"LSI1:ALL", "LSI2:KEYS_ONLY", "LSI3:ALL", "LSI4:KEYS_ONLY", "LSI5:ALL"}
	if !equal(gsis, wantG) {
		t.Errorf("GSIs = %v, want %v", gsis, wantG)
	}
	if !equal(lsis, wantL) {
		t.Errorf("LSIs = %v, want %v", lsis, wantL)
	}
	ttl, err := tbl.DB.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(tbl.Name)})
	if err != nil {
		t.Fatal(err)
	}
	if aws.ToString(ttl.TimeToLiveDescription.AttributeName) != "ttl" ||
		ttl.TimeToLiveDescription.TimeToLiveStatus != types.TimeToLiveStatusEnabled {
		t.Errorf("ttl = %+v, want ttl ENABLED", ttl.TimeToLiveDescription)
	}
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
