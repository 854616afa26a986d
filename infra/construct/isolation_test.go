package construct_test

import (
	"encoding/json"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/zae-limiter/zae-limiter-go/core/schema"
	"github.com/zae-limiter/zae-limiter-go/infra/construct"
	"github.com/zae-limiter/zae-limiter-go/infra/internal/cfneval"
	"github.com/zae-limiter/zae-limiter-go/infra/internal/iameval"
	"github.com/zae-limiter/zae-limiter-go/internal/iamcalls"
)

// The tenants of TestTenantIsolation: the namespace the code ran in is the
// caller's; another's is a namespace id of the same shape.
const otherTenant = "OtherTenant"

// arns replaces the symbolic attributes cfneval leaves ("{RateLimitsTable.Arn}")
// with the ARNs CloudFormation would give them in the evaluated stack's
// account and region, so that statements are matched as IAM matches them:
// the table's and its stream's, a log group's (which ends in ":*") and the
// dead-letter queue's.
func arns(s *cfneval.Stack) *strings.Replacer {
	var pairs []string
	prefix := func(service string) string {
		return "arn:" + cfneval.Partition + ":" + service + ":" + cfneval.Region + ":" + cfneval.AccountID + ":"
	}
	for id, r := range s.Resources {
		name := func(prop string) string { v, _ := r.Properties[prop].(string); return v }
		switch r.Type {
		case "AWS::DynamoDB::Table":
			table := prefix("dynamodb") + "table/" + name("TableName")
			pairs = append(pairs, "{"+id+".Arn}", table, "{"+id+".StreamArn}", table+"/stream/2026-12-01T00:00:00.000")
		case "AWS::Logs::LogGroup":
			pairs = append(pairs, "{"+id+".Arn}", prefix("logs")+"log-group:"+name("LogGroupName")+":*")
		case "AWS::SQS::Queue":
			pairs = append(pairs, "{"+id+".Arn}", prefix("sqs")+name("QueueName"))
		}
	}
	return strings.NewReplacer(pairs...)
}

// policiesOf parses the identity policies of a managed policy or of a role
// (its inline policies; its managed policy ARNs are checked apart) in s,
// with symbolic ARNs replaced by rep.
func policiesOf(t *testing.T, s *cfneval.Stack, rep *strings.Replacer, id string) []iameval.Policy {
	t.Helper()
	var out []iameval.Policy
	for _, d := range policyDocs(t, s, id) {
		raw, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		var doc map[string]any
		if err := json.Unmarshal([]byte(rep.Replace(string(raw))), &doc); err != nil {
			t.Fatal(err)
		}
		p, err := iameval.Parse(doc)
		if err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		out = append(out, p)
	}
	return out
}

// principal is one role's policies and the principal tags it is called with.
type principal struct {
	name     string
	policies []iameval.Policy
	tags     map[string]string
	table    string // the table's ARN
}

// allowed evaluates one recorded authorisation (or a made-up one) for p.
func (p principal) allowed(t *testing.T, q iamcalls.Request) bool {
	t.Helper()
	res := p.table
	if q.Index != "" {
		res += "/index/" + q.Index
	}
	ok, err := iameval.AllowedBy(p.policies, iameval.Request{Action: q.Action, Resource: res,
		LeadingKeys: q.LeadingKeys, HasLeadingKeys: q.LeadingKeys != nil, PrincipalTags: p.tags})
	if err != nil {
		t.Fatalf("%s: %v", p.name, err)
	}
	return ok
}

// rekeyed is q in namespace to instead of from: every partition key of
// the namespace's items and indexes, and GSI4's bare id.
func rekeyed(q iamcalls.Request, from, to string) iamcalls.Request {
	out := q
	out.LeadingKeys = nil
	for _, k := range q.LeadingKeys {
		switch {
		case k == from:
			k = to
		case strings.HasPrefix(k, from+"/"):
			k = to + strings.TrimPrefix(k, from)
		}
		out.LeadingKeys = append(out.LeadingKeys, k)
	}
	return out
}

// inNamespace reports whether q names only keys of namespace ns.
func inNamespace(q iamcalls.Request, ns string) bool {
	if q.LeadingKeys == nil {
		return false
	}
	for _, k := range q.LeadingKeys {
		if k != ns && !strings.HasPrefix(k, ns+"/") {
			return false
		}
	}
	return true
}

// actionsOf is every action the policies grant, sorted and distinct.
func actionsOf(t *testing.T, s *cfneval.Stack, id string) []string {
	t.Helper()
	var out []string
	for _, st := range statements(t, s, id) {
		out = append(out, strs(st["Action"])...)
	}
	sort.Strings(out)
	return slices.Compact(out)
}

// union is the distinct actions of the recorders, sorted.
func union(recs ...*iamcalls.Recorder) []string {
	var out []string
	for _, r := range recs {
		out = append(out, r.Actions()...)
	}
	sort.Strings(out)
	return slices.Compact(out)
}

// TestTenantIsolation evaluates the stack's policy documents, CDK's and
// template.yaml's alike, as IAM would (internal/iameval) against every
// DynamoDB call the code made on DynamoDB Local (runTheCode), each principal
// through its own recording client:
//
//   - a namespace-scoped role, tagged with the tenant's namespace id, is
//     allowed every call its code path makes (a tenant's service: the
//     acquire path; its operator: the service's calls and every operator
//     control in the namespace; its reader: configs, entities, audit,
//     live buckets, snapshots) and grants exactly those actions;
//   - it is denied the same calls in another tenant's namespace, all of
//     them without the tag, every write, Query or Scan of the table's
//     own records (the namespace registry and the version record), a
//     batch that reaches into another namespace, and the platform's own
//     calls (registering a namespace, raising client_min_version);
//   - the platform's policies allow what the platform's code calls;
//   - no policy grants an item action on an index;
//   - each function writes its logs to its own log group only, with no
//     AWS managed policy (AWSLambdaBasicExecutionRole grants logs on *).
func TestTenantIsolation(t *testing.T) {
	obs := runTheCode(t)
	tenant := map[string]string{construct.NamespaceTag: obs.ns}
	_, cdk := synth(t, construct.Props{})
	sam := translateSAM(t, []map[string]string{{}})[0]
	for name, s := range map[string]*cfneval.Stack{"CDK": evaluate(t, cdk, nil), "SAM": evaluate(t, sam, nil)} {
		rep := arns(s)
		table := rep.Replace("{RateLimitsTable.Arn}")
		role := func(id string, tags map[string]string) principal {
			return principal{name: name + " " + id, policies: policiesOf(t, s, rep, id), tags: tags, table: table}
		}
		tenants := []struct {
			policy string
			work   []*iamcalls.Recorder
		}{
			{"NamespaceAcquirePolicy", []*iamcalls.Recorder{obs.limiter}},
			{"NamespaceFullAccessPolicy", []*iamcalls.Recorder{obs.operator, obs.limiter}},
			{"NamespaceReadOnlyPolicy", []*iamcalls.Recorder{obs.reader}},
		}
		for _, tn := range tenants {
			p := role(tn.policy, tenant)
			untagged := role(tn.policy, nil)
			var made []iamcalls.Request
			for _, r := range tn.work {
				made = append(made, r.Requests()...)
			}
			if len(made) < 10 {
				t.Fatalf("%s: %d calls recorded: the run no longer covers the path", p.name, len(made))
			}
			if got, want := actionsOf(t, s, tn.policy), union(tn.work...); !reflect.DeepEqual(got, want) {
				t.Errorf("%s grants %v, the code calls %v", p.name, got, want)
			}
			shared := 0
			for _, q := range made {
				if !p.allowed(t, q) {
					t.Errorf("%s: the code's own %s %s %v is denied", p.name, q.Action, q.Index, q.LeadingKeys)
				}
				if untagged.allowed(t, q) && inNamespace(q, obs.ns) {
					t.Errorf("%s: %s %v is allowed without the namespace tag", p.name, q.Action, q.LeadingKeys)
				}
				if !inNamespace(q, obs.ns) {
					shared++
					if q.Action != "dynamodb:GetItem" || !slices.Equal(q.LeadingKeys, []string{construct.SharedPartition}) {
						t.Errorf("%s: the code calls %s %v outside its namespace; only GetItem of the table's own records is granted", p.name, q.Action, q.LeadingKeys)
					}
					continue
				}
				if o := rekeyed(q, obs.ns, otherTenant); p.allowed(t, o) {
					t.Errorf("%s: allowed in another tenant's namespace: %s %s %v", p.name, o.Action, o.Index, o.LeadingKeys)
				}
			}
			if shared == 0 {
				t.Errorf("%s: the code never read the version record: the run no longer covers the gate", p.name)
			}
			own := func(pk string) string { return obs.ns + "/" + pk }
			for _, q := range []iamcalls.Request{
				{Action: "dynamodb:PutItem", LeadingKeys: []string{construct.SharedPartition}},
				{Action: "dynamodb:UpdateItem", LeadingKeys: []string{construct.SharedPartition}},
				{Action: "dynamodb:DeleteItem", LeadingKeys: []string{construct.SharedPartition}},
				{Action: "dynamodb:ConditionCheckItem", LeadingKeys: []string{construct.SharedPartition}},
				{Action: "dynamodb:BatchWriteItem", LeadingKeys: []string{construct.SharedPartition}},
				{Action: "dynamodb:Query", LeadingKeys: []string{construct.SharedPartition}},
				{Action: "dynamodb:Query", Index: schema.GSI4, LeadingKeys: []string{schema.ReservedNamespace}},
				{Action: "dynamodb:Query", Index: schema.GSI4, LeadingKeys: []string{otherTenant}},
				{Action: "dynamodb:BatchGetItem", LeadingKeys: []string{construct.SharedPartition, own(schema.PrefixSystem)}},
				{Action: "dynamodb:BatchGetItem", LeadingKeys: []string{own(schema.PrefixSystem), otherTenant + "/" + schema.PrefixSystem}},
				{Action: "dynamodb:GetItem", LeadingKeys: []string{"_/OTHER#"}},
				{Action: "dynamodb:GetItem", LeadingKeys: []string{obs.ns}},
				{Action: "dynamodb:Scan"},
				{Action: "dynamodb:Scan", Index: schema.GSI4},
				{Action: "dynamodb:DescribeTable"},
			} {
				if p.allowed(t, q) {
					t.Errorf("%s allows %s %s %v", p.name, q.Action, q.Index, q.LeadingKeys)
				}
			}
			platform := 0
			for _, q := range obs.platform.Requests() {
				if q.Action == "dynamodb:GetItem" || inNamespace(q, obs.ns) {
					continue // reads of the version record; the new namespace's first audit event
				}
				platform++
				if p.allowed(t, q) {
					t.Errorf("%s allows the platform's %s %v", p.name, q.Action, q.LeadingKeys)
				}
			}
			if platform == 0 {
				t.Errorf("the platform wrote nothing outside the namespace: the run no longer registers it")
			}
		}

		// The platform's roles and the functions' roles allow what their
		// code calls.
		for _, c := range []struct {
			id   string
			work []*iamcalls.Recorder
		}{
			{"FullAccessPolicy", []*iamcalls.Recorder{obs.platform, obs.operator, obs.reader, obs.limiter}},
			{"ReadOnlyPolicy", []*iamcalls.Recorder{obs.reader}},
			{"AcquireOnlyPolicy", []*iamcalls.Recorder{obs.limiter}},
			{"AggregatorRole", []*iamcalls.Recorder{obs.aggregator}},
			{"ProvisionerRole", []*iamcalls.Recorder{obs.provisioner}},
		} {
			p := role(c.id, nil)
			for _, r := range c.work {
				for _, q := range r.Requests() {
					if !p.allowed(t, q) {
						t.Errorf("%s: the code's own %s %s %v is denied", p.name, q.Action, q.Index, q.LeadingKeys)
					}
				}
			}
		}

		// No item action on an index, for any principal.
		for id, r := range s.Resources {
			if r.Type != "AWS::IAM::ManagedPolicy" && r.Type != "AWS::IAM::Role" {
				continue
			}
			p := role(id, tenant)
			for _, a := range construct.FullAccessActions() {
				if slices.Contains(construct.IndexActions(), a) {
					continue
				}
				q := iamcalls.Request{Action: a, Index: schema.GSI1, LeadingKeys: []string{obs.ns + "/" + schema.PrefixParent + "x"}}
				if a == "dynamodb:DescribeTable" {
					q.LeadingKeys = nil
				}
				if p.allowed(t, q) {
					t.Errorf("%s grants %s on an index", p.name, a)
				}
			}
		}

		// Each function's logs, and nobody else's.
		groups := map[string]string{}
		for id, r := range s.Resources {
			if r.Type == "AWS::Logs::LogGroup" {
				groups[id] = r.Properties["LogGroupName"].(string)
			}
		}
		for roleID, groupID := range map[string]string{"AggregatorRole": "AggregatorLogGroup", "ProvisionerRole": "ProvisionerLogGroup"} {
			r := s.Resources[roleID]
			if arns := r.Properties["ManagedPolicyArns"]; len(asList(arns)) > 0 {
				t.Errorf("%s %s attaches managed policies %v", name, roleID, arns)
			}
			p := role(roleID, nil)
			for gid, group := range groups {
				stream := "arn:aws:logs:" + cfneval.Region + ":" + cfneval.AccountID + ":log-group:" + group + ":log-stream:2026/12/07/[$LATEST]0f1e2d3c"
				for _, a := range construct.LogActions() {
					ok, err := iameval.AllowedBy(p.policies, iameval.Request{Action: a, Resource: stream})
					if err != nil {
						t.Fatal(err)
					}
					if want := gid == groupID; ok != want {
						t.Errorf("%s %s: %s on %s allowed %v, want %v", name, roleID, a, group, ok, want)
					}
				}
			}
			other := "arn:aws:logs:" + cfneval.Region + ":" + cfneval.AccountID + ":log-group:/aws/lambda/someone-else:log-stream:x"
			for _, a := range append(construct.LogActions(), "logs:CreateLogGroup") {
				if ok, _ := iameval.AllowedBy(p.policies, iameval.Request{Action: a, Resource: other}); ok {
					t.Errorf("%s %s: %s allowed on another log group", name, roleID, a)
				}
			}
		}
	}
}
