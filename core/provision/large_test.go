package provision_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/provision"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
)

// Any manifest whose items DynamoDB can hold applies, and its Delete
// removes every item it wrote: 1,700 entities with 250-character ids (a
// single state record of them would pass DynamoDB's 400 KB item limit),
// and 10,000 entities.
func TestLargeManifests(t *testing.T) {
	for _, tc := range []struct {
		entities, idLen int
	}{{1700, 250}, {10000, 10}} {
		t.Run(fmt.Sprintf("%dx%d", tc.entities, tc.idLen), func(t *testing.T) {
			e := newEnv(t)
			prov := provision.New(e.tbl.DB, e.tbl.Name, provision.Options{Clock: e.clk.Now, Logger: quietLogger(), Workers: 16})
			req := resource("stack-a", "Limits")
			var doc strings.Builder
			doc.WriteString("namespace: tenant-alpha\nentities:\n")
			for i := range tc.entities {
				id := fmt.Sprintf("%0*d", tc.idLen, i)
				fmt.Fprintf(&doc, "  k%s: {resources: {gpt-4: {limits: {rpm: {capacity: 10}}}}}\n", id[1:])
			}
			res, err := prov.Apply(e.ctx, e.ns, e.parse(doc.String()), req)
			if err != nil || res.Created != tc.entities || len(res.Errors) > 0 {
				t.Fatalf("apply: %v %+v", err, res)
			}
			configs, claims, owners := e.count()
			if configs != tc.entities || claims != tc.entities || owners != 1 {
				t.Fatalf("after the apply: %d configs, %d claims, %d owner records", configs, claims, owners)
			}
			res, err = prov.Release(e.ctx, e.ns, req)
			if err != nil || res.Deleted != tc.entities || len(res.Errors) > 0 {
				t.Fatalf("release: %v %+v", err, res)
			}
			if configs, claims, owners := e.count(); configs+claims+owners != 0 {
				t.Fatalf("after the release: %d configs, %d claims, %d owner records", configs, claims, owners)
			}
			if it := e.item(schema.EntityConfigRegistryKey(e.ns)); it != nil {
				if m, ok := it["resources"].(*types.AttributeValueMemberM); ok && len(m.Value) > 0 {
					t.Fatalf("registry after the release: %v", m.Value)
				}
			}
		})
	}
}

// count counts the namespace's entity configs, claims and owner records
// (GSI4 keys: every item of a namespace is there).
func (e *env) count() (configs, claims, owners int) {
	e.t.Helper()
	in := &dynamodb.QueryInput{
		TableName: aws.String(e.tbl.Name), IndexName: aws.String(schema.GSI4),
		KeyConditionExpression:    aws.String("#0 = :0"),
		ExpressionAttributeNames:  map[string]string{"#0": schema.AttrGSI4PK},
		ExpressionAttributeValues: map[string]types.AttributeValue{":0": schema.Str(e.ns)},
	}
	for {
		page, err := e.tbl.DB.Query(e.ctx, in)
		if err != nil {
			e.t.Fatal(err)
		}
		for _, it := range page.Items {
			sk := it["SK"].(*types.AttributeValueMemberS).Value
			switch {
			case strings.HasPrefix(sk, schema.SKConfigPrefix):
				configs++
			case strings.HasPrefix(sk, schema.SKClaimPrefix):
				claims++
			case strings.HasPrefix(sk, schema.SKOwnerPrefix):
				owners++
			}
		}
		if len(page.LastEvaluatedKey) == 0 {
			return
		}
		in.ExclusiveStartKey = page.LastEvaluatedKey
	}
}
