package construct_test

import (
	"reflect"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/schema"
	"github.com/zae-limiter/zae-limiter-go/infra/construct"
	"github.com/zae-limiter/zae-limiter-go/infra/internal/cfneval"
)

func TestTableDefinitionFollowsProps(t *testing.T) {
	cases := []struct {
		props construct.Props
		want  types.ProjectionType
	}{
		{construct.Props{}, types.ProjectionTypeKeysOnly},
		{construct.Props{GSI2ProjectAll: true}, types.ProjectionTypeAll},
	}
	for _, c := range cases {
		def := construct.TableDefinition(c.props)
		var got types.ProjectionType
		for _, ix := range def.GlobalIndexes {
			if ix.Name == schema.GSI2 {
				got = ix.Projection
			}
		}
		if got != c.want {
			t.Errorf("props %+v: GSI2 projection %s, want %s", c.props, got, c.want)
		}
	}
}

// tableOf reads a CloudFormation AWS::DynamoDB::Table back into a
// schema.Table: keys, indexes with their keys and projections, TTL, stream
// and billing. Every attribute definition must be a string key some index
// or the table uses, and every key must be defined.
func tableOf(t *testing.T, r cfneval.Resource) schema.Table {
	t.Helper()
	p := r.Properties
	defined := map[string]bool{}
	for _, a := range asList(p["AttributeDefinitions"]) {
		m := a.(map[string]any)
		if m["AttributeType"] != "S" {
			t.Errorf("attribute %v is not a string", m)
		}
		defined[m["AttributeName"].(string)] = true
	}
	used := map[string]bool{}
	keys := func(ks any) (hash, rng string) {
		for _, k := range asList(ks) {
			m := k.(map[string]any)
			name := m["AttributeName"].(string)
			used[name] = true
			if !defined[name] {
				t.Errorf("key %s has no attribute definition", name)
			}
			switch m["KeyType"] {
			case "HASH":
				hash = name
			case "RANGE":
				rng = name
			}
		}
		return hash, rng
	}
	var tbl schema.Table
	tbl.PartitionKey, tbl.SortKey = keys(p["KeySchema"])
	for _, ix := range asList(p["GlobalSecondaryIndexes"]) {
		m := ix.(map[string]any)
		h, s := keys(m["KeySchema"])
		tbl.GlobalIndexes = append(tbl.GlobalIndexes, schema.Index{Name: m["IndexName"].(string), PartitionKey: h, SortKey: s,
			Projection: types.ProjectionType(m["Projection"].(map[string]any)["ProjectionType"].(string))})
	}
	for _, ix := range asList(p["LocalSecondaryIndexes"]) {
		m := ix.(map[string]any)
		h, s := keys(m["KeySchema"])
		if h != tbl.PartitionKey {
			t.Errorf("%s: local index on %s, not the table's partition key", m["IndexName"], h)
		}
		tbl.LocalIndexes = append(tbl.LocalIndexes, schema.Index{Name: m["IndexName"].(string), SortKey: s,
			Projection: types.ProjectionType(m["Projection"].(map[string]any)["ProjectionType"].(string))})
	}
	if !reflect.DeepEqual(defined, used) {
		t.Errorf("attribute definitions %v, keys used %v", defined, used)
	}
	if ttl := p["TimeToLiveSpecification"].(map[string]any); ttl["Enabled"] == "true" {
		tbl.TTLAttribute = ttl["AttributeName"].(string)
	}
	tbl.StreamView = types.StreamViewType(p["StreamSpecification"].(map[string]any)["StreamViewType"].(string))
	tbl.BillingMode = types.BillingMode(p["BillingMode"].(string))
	return tbl
}

// TestTableIsTheSchema: the table of the CDK stack, the table of
// template.yaml and core/schema's definition are one table (keys,
// attribute definitions, GSIs, LSIs, projections, stream view, TTL,
// billing), with GSI2 KEYS_ONLY or ALL as asked; and the settings of
// docs/design.md §13 around it: the name, the tag, PITR, deletion
// protection and retention.
func TestTableIsTheSchema(t *testing.T) {
	cases := []struct {
		props   construct.Props
		params  map[string]string
		pitr    map[string]any
		protect string
	}{
		{construct.Props{}, map[string]string{}, map[string]any{"PointInTimeRecoveryEnabled": "true"}, "false"},
		{construct.Props{GSI2ProjectAll: true, PITRRecoveryPeriodDays: 14, EnableDeletionProtection: true},
			map[string]string{"GSI2Projection": "ALL", "PITRRecoveryPeriodDays": "14", "EnableDeletionProtection": "true"},
			map[string]any{"PointInTimeRecoveryEnabled": "true", "RecoveryPeriodInDays": "14"}, "true"},
	}
	var params []map[string]string
	for _, c := range cases {
		params = append(params, c.params)
	}
	sams := translateSAM(t, params)
	for i, c := range cases {
		want := construct.TableDefinition(c.props)
		_, cdk := synth(t, c.props)
		for name, s := range map[string]*cfneval.Stack{"CDK": evaluate(t, cdk, nil), "SAM": evaluate(t, sams[i], c.params)} {
			r := s.Resources["RateLimitsTable"]
			if got := tableOf(t, r); !reflect.DeepEqual(got, want) {
				t.Errorf("%s %+v:\n got %+v\nwant %+v", name, c.props, got, want)
			}
			p := r.Properties
			if p["TableName"] != cfneval.StackName {
				t.Errorf("%s: table name %v, want the stack's", name, p["TableName"])
			}
			if !reflect.DeepEqual(p["Tags"], []any{map[string]any{"Key": construct.TableTagKey, "Value": construct.TableTagValue}}) {
				t.Errorf("%s: tags %v", name, p["Tags"])
			}
			if !reflect.DeepEqual(p["PointInTimeRecoverySpecification"], c.pitr) {
				t.Errorf("%s: PITR %v, want %v", name, p["PointInTimeRecoverySpecification"], c.pitr)
			}
			if p["DeletionProtectionEnabled"] != c.protect {
				t.Errorf("%s: deletion protection %v, want %s", name, p["DeletionProtectionEnabled"], c.protect)
			}
			if r.DeletionPolicy != "Retain" || r.UpdateReplacePolicy != "Retain" {
				t.Errorf("%s: the table is not retained: %s/%s", name, r.DeletionPolicy, r.UpdateReplacePolicy)
			}
		}
	}
}
