package handler_test

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/cfn"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/limit"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
	"github.com/zae-limiter/zae-limiter-go/internal/faultproxy"
)

// upstreamProperties is the Custom::ZaeLimiterLimits resource the Python
// project's `limits cfn-template` writes for the manifest of its README
// (a system default, a resource, an entity override) plus a resource with
// no limits, as CloudFormation delivers it: ServiceToken resolved from its
// Fn::ImportValue, TableName the stack's name, every scalar a string, and
// `Limits: {}` where the manifest gave a resource none.
func upstreamProperties(table string) map[string]any {
	return map[string]any{
		"ServiceToken": "arn:aws:lambda:us-east-1:123456789012:function:" + table + "-limits-provisioner",
		"TableName":    table,
		"Namespace":    "tenant-alpha",
		"System": map[string]any{
			"OnUnavailable": "block",
			"Limits": map[string]any{
				"rpm": map[string]any{"Capacity": "1000"},
				"tpm": map[string]any{"Capacity": "100000"},
			},
		},
		"Resources": map[string]any{
			"gpt-4": map[string]any{"Limits": map[string]any{
				"rpm": map[string]any{"Capacity": "500", "RefillAmount": "500", "RefillPeriod": "60"},
				"tpm": map[string]any{"Capacity": "50000"},
			}},
			"gpt-3.5": map[string]any{"Limits": map[string]any{}, "Disabled": "true"},
		},
		"Entities": map[string]any{
			"user-premium": map[string]any{"Resources": map[string]any{
				"gpt-4": map[string]any{"Limits": map[string]any{"rpm": map[string]any{"Capacity": "1000"}}},
			}},
		},
	}
}

// upstreamManifest is the same manifest as the file `limits apply` reads.
const upstreamManifest = `{
  "namespace": "tenant-beta",
  "system": {"on_unavailable": "block", "limits": {"rpm": {"capacity": 1000}, "tpm": {"capacity": 100000}}},
  "resources": {
    "gpt-4": {"limits": {"rpm": {"capacity": 500, "refill_amount": 500, "refill_period": 60}, "tpm": {"capacity": 50000}}},
    "gpt-3.5": {"limits": {}, "disabled": true}
  },
  "entities": {"user-premium": {"resources": {"gpt-4": {"limits": {"rpm": {"capacity": 1000}}}}}}
}`

// configItems are the config items of namespace ns, keyed by their key with
// the namespace id taken out, every string attribute likewise.
func (e *env) configItems(ns string) map[string]map[string]types.AttributeValue {
	e.t.Helper()
	out := map[string]map[string]types.AttributeValue{}
	in := &dynamodb.ScanInput{TableName: aws.String(e.tbl.Name), ConsistentRead: aws.Bool(true)}
	for {
		page, err := e.tbl.DB.Scan(e.ctx, in)
		if err != nil {
			e.t.Fatal(err)
		}
		for _, it := range page.Items {
			pk := it[schema.AttrPK].(*types.AttributeValueMemberS).Value
			sk := it[schema.AttrSK].(*types.AttributeValueMemberS).Value
			if !strings.HasPrefix(pk, ns+"/") || !strings.HasPrefix(sk, schema.SKConfig) {
				continue
			}
			clean := map[string]types.AttributeValue{}
			for k, v := range it {
				if s, ok := v.(*types.AttributeValueMemberS); ok {
					v = &types.AttributeValueMemberS{Value: strings.ReplaceAll(s.Value, ns, "NS")}
				}
				clean[k] = v
			}
			out[strings.ReplaceAll(pk, ns, "NS")+" "+sk] = clean
		}
		if len(page.LastEvaluatedKey) == 0 {
			return out
		}
		in.ExclusiveStartKey = page.LastEvaluatedKey
	}
}

// A stack made with the Python project's `limits cfn-template` moves over
// unchanged: its resource applies through CloudFormation and writes the
// same config items as the same manifest applied from a file, answers the
// Python provisioner's Data keys beside ours, and its Delete leaves the
// namespace's config as it was before the Create.
func TestUpstreamCfnTemplateResource(t *testing.T) {
	e := newEnv(t)
	beta, err := e.register("tenant-beta")
	if err != nil {
		t.Fatal(err)
	}
	before := e.configItems(e.ns)
	create := e.invoke(e.event("cfn-limits-create.json", func(ev map[string]any) {
		ev["ResourceProperties"] = upstreamProperties(e.tbl.Name)
		ev["ServiceToken"] = ev["ResourceProperties"].(map[string]any)["ServiceToken"]
	}))
	if create.Status != cfn.StatusSuccess {
		t.Fatalf("create %+v", create)
	}
	for _, k := range []string{"created", "updated", "deleted", "status"} {
		if create.Data[k] == "" || create.Data[k] != create.Data[strings.ToUpper(k[:1])+k[1:]] {
			t.Errorf("Data[%q] = %q beside %v", k, create.Data[k], create.Data)
		}
	}
	if create.Data["created"] != "4" {
		t.Errorf("created = %s, want 4 (the system, two resources, the entity's resource)", create.Data["created"])
	}

	var doc map[string]any
	if err := json.Unmarshal([]byte(upstreamManifest), &doc); err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(map[string]any{"action": "apply", "namespace_id": beta, "manifest": doc})
	if _, err := e.h.Invoke(e.ctx, raw); err != nil {
		t.Fatal(err)
	}
	alpha, fromFile := e.configItems(e.ns), e.configItems(beta)
	if len(alpha) == 0 || !slices.Equal(slices.Sorted(maps.Keys(alpha)), slices.Sorted(maps.Keys(fromFile))) {
		t.Fatalf("config items: through CloudFormation %v, from the file %v", slices.Sorted(maps.Keys(alpha)), slices.Sorted(maps.Keys(fromFile)))
	}
	for k, it := range alpha {
		a, _ := json.Marshal(it)
		b, _ := json.Marshal(fromFile[k])
		if string(a) != string(b) {
			t.Errorf("%s differs:\nthrough CloudFormation %s\nfrom the file           %s", k, a, b)
		}
	}
	if l, _ := e.store.GetResourceLimits(e.ctx, e.ns, "gpt-4"); len(l) != 2 || l[0] != limit.PerMinute("rpm", 500) {
		t.Errorf("gpt-4 limits %v", l)
	}

	del := e.invoke(e.event("cfn-limits-delete.json", func(ev map[string]any) {
		ev["ResourceProperties"] = upstreamProperties(e.tbl.Name)
		ev["PhysicalResourceId"] = create.PhysicalResourceID
	}))
	if del.Status != cfn.StatusSuccess || del.Data["deleted"] != "4" {
		t.Fatalf("delete %+v", del)
	}
	a, _ := json.Marshal(before)
	b, _ := json.Marshal(e.configItems(e.ns))
	if string(a) != string(b) {
		t.Fatalf("config items after the Delete:\n%s\nbefore the Create:\n%s", b, a)
	}
}

// The rollback of a failed Update never wedges on an unknown field the
// stack was deployed with. The resource runs with a typo (RefilAmount, which
// the Python provisioner ignored); an Update removes it and fails, before
// any write (its properties are refused) or after the first (DynamoDB
// fails); CloudFormation's rollback resends the deployed properties, typo
// and all, with the failed ones as the old: SUCCESS, and the limits are the
// deployed ones. A forward Update that only adds a typo stays refused.
func TestRollbackToDeployedPropertiesWithATypo(t *testing.T) {
	typo := func(props map[string]any) map[string]any {
		props["Resources"].(map[string]any)["gpt-4"].(map[string]any)["Limits"].(map[string]any)["rpm"].(map[string]any)["RefilAmount"] = "5"
		return props
	}
	rpmOf := func(props map[string]any) map[string]any {
		return props["Resources"].(map[string]any)["gpt-4"].(map[string]any)["Limits"].(map[string]any)["rpm"].(map[string]any)
	}
	for _, how := range []string{"refused", "failed"} {
		t.Run(how, func(t *testing.T) {
			e := newEnv(t)
			e.invoke(e.event("cfn-limits-create.json", nil))
			deployed := typo(e.eventProps("cfn-limits-update.json")) // rpm capacity 200
			resp := e.invoke(e.event("cfn-limits-update.json", func(ev map[string]any) {
				ev["ResourceProperties"] = deployed
				ev["OldResourceProperties"] = typo(e.eventProps("cfn-limits-create.json"))
			}))
			if resp.Status != cfn.StatusSuccess || resp.Data["IgnoredFields"] != "1" {
				t.Fatalf("deploying the typo %+v", resp)
			}

			// A forward Update that adds nothing but a typo the committed
			// properties did not have is refused.
			resp = e.invoke(e.event("cfn-limits-update.json", func(ev map[string]any) {
				ev["ResourceProperties"] = typo(e.eventProps("cfn-limits-update.json"))
				ev["OldResourceProperties"] = e.eventProps("cfn-limits-update.json")
			}))
			if resp.Status != cfn.StatusFailed || !strings.Contains(resp.Reason, "RefilAmount: unknown field") {
				t.Fatalf("a forward Update adding a typo %+v", resp)
			}

			fixed := e.eventProps("cfn-limits-update.json")
			rpmOf(fixed)["Capacity"] = "300"
			if how == "refused" {
				rpmOf(fixed)["RefillPeriod"] = "soon"
			} else {
				e.proxy.Add(faultproxy.Rule{Fault: faultproxy.InternalServerError(), Count: 1, Match: func(op string, body []byte) bool {
					return op != "GetItem" && op != "BatchGetItem" && op != "Query" && strings.Contains(string(body), `"l_rpm_cp"`)
				}})
			}
			failed := e.invoke(e.event("cfn-limits-update.json", func(ev map[string]any) {
				ev["ResourceProperties"] = fixed
				ev["OldResourceProperties"] = deployed
			}))
			if failed.Status != cfn.StatusFailed {
				t.Fatalf("the Update that removes the typo should fail here: %+v", failed)
			}

			rollback := e.invoke(e.event("cfn-limits-update.json", func(ev map[string]any) {
				ev["ResourceProperties"] = deployed
				ev["OldResourceProperties"] = fixed
				ev["PhysicalResourceId"] = failed.PhysicalResourceID
			}))
			if rollback.Status != cfn.StatusSuccess || rollback.Data["IgnoredFields"] != "1" {
				t.Fatalf("rollback %+v", rollback)
			}
			if l, _ := e.store.GetResourceLimits(e.ctx, e.ns, "gpt-4"); len(l) != 2 || l[0].Capacity != 200 {
				t.Fatalf("gpt-4 after the rollback: %v", l)
			}
		})
	}
}

// An Update that changes nothing but ServiceToken, with properties this
// provisioner cannot apply (a stack moving over from the Python
// provisioner with a limit this one finds invalid), and its rollback:
// SUCCESS, nothing written, the problems in Data. The same properties with
// a real change are refused.
func TestUnchangedPropertiesThatCannotApply(t *testing.T) {
	e := newEnv(t)
	e.invoke(e.event("cfn-limits-create.json", nil))
	before := e.configItems(e.ns)
	invalid := func(token string) map[string]any {
		props := e.eventProps("cfn-limits-create.json")
		props["ServiceToken"] = token
		props["Resources"].(map[string]any)["gpt-4"].(map[string]any)["Limits"].(map[string]any)["session"] = map[string]any{
			"Capacity": "10000", "RefillAmount": "0", "RefillPeriod": "1"}
		return props
	}
	python, ours := "arn:aws:lambda:us-east-1:123456789012:function:python-provisioner", "arn:aws:lambda:us-east-1:123456789012:function:go-provisioner"
	for _, step := range []struct{ name, from, to string }{{"move over", python, ours}, {"its rollback", ours, python}} {
		resp := e.invoke(e.event("cfn-limits-update.json", func(ev map[string]any) {
			ev["ResourceProperties"], ev["OldResourceProperties"] = invalid(step.to), invalid(step.from)
			ev["PhysicalResourceId"] = e.sampleID()
		}))
		if resp.Status != cfn.StatusSuccess || resp.Data["Refused"] != "1" || resp.Data["status"] != "unchanged" ||
			resp.PhysicalResourceID != e.sampleID() {
			t.Fatalf("%s: %+v", step.name, resp)
		}
	}
	after := e.configItems(e.ns)
	a, _ := json.Marshal(before)
	b, _ := json.Marshal(after)
	if string(a) != string(b) {
		t.Fatal("an unchanged Update wrote")
	}
	resp := e.invoke(e.event("cfn-limits-update.json", func(ev map[string]any) {
		changed := invalid(ours)
		changed["System"].(map[string]any)["OnUnavailable"] = "allow"
		ev["ResourceProperties"], ev["OldResourceProperties"] = changed, invalid(python)
		ev["PhysicalResourceId"] = e.sampleID()
	}))
	if resp.Status != cfn.StatusFailed || !strings.Contains(resp.Reason, "Resources.gpt-4.Limits.session") {
		t.Fatalf("a real change with an invalid limit %+v", resp)
	}
}
