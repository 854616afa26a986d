package construct_test

import (
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/zae-limiter/zae-limiter-go/core/aggregator"
	aggregatorhandler "github.com/zae-limiter/zae-limiter-go/functions/aggregator/handler"
	"github.com/zae-limiter/zae-limiter-go/infra/construct"
	"github.com/zae-limiter/zae-limiter-go/infra/internal/cfneval"
)

func sorted(s []string) []string {
	out := append([]string(nil), s...)
	sort.Strings(out)
	return out
}

// statements returns the statements of a managed policy or of a role's
// inline policy in an evaluated stack, by Sid.
func statements(t *testing.T, s *cfneval.Stack, id string) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	for _, d := range policyDocs(t, s, id) {
		for _, st := range asList(d.(map[string]any)["Statement"]) {
			m := st.(map[string]any)
			out[m["Sid"].(string)] = m
		}
	}
	return out
}

// policyDocs are the identity policy documents of a managed policy or of
// a role (its inline policies) in an evaluated stack.
func policyDocs(t *testing.T, s *cfneval.Stack, id string) []any {
	t.Helper()
	r, ok := s.Resources[id]
	if !ok {
		t.Fatalf("no %s", id)
	}
	var docs []any
	if d, ok := r.Properties["PolicyDocument"]; ok {
		docs = append(docs, d)
	}
	for _, p := range asList(r.Properties["Policies"]) {
		docs = append(docs, p.(map[string]any)["PolicyDocument"])
	}
	return docs
}

func asList(v any) []any {
	switch x := v.(type) {
	case []any:
		return x
	case nil:
		return nil
	default:
		return []any{x}
	}
}

func strs(v any) []string {
	var out []string
	for _, x := range asList(v) {
		out = append(out, x.(string))
	}
	return out
}

// TestPoliciesAreWhatTheCodeCalls runs the acquire path and the aggregator
// on DynamoDB Local through recording clients (runTheCode) and checks that
// each policy grants exactly the IAM actions the code needed: no more, no
// fewer. The lists in iam.go are therefore derived, not written by hand.
func TestPoliciesAreWhatTheCodeCalls(t *testing.T) {
	obs := runTheCode(t)
	_, tpl := synth(t, construct.Props{})
	stack := evaluate(t, tpl, nil)
	t.Logf("acquire path: %v (shared: %v); operations %v", obs.limiter.Actions(), obs.limiter.SharedActions(), obs.limiter.Operations())
	t.Logf("aggregator: %v; operations %v", obs.aggregator.Actions(), obs.aggregator.Operations())

	t.Run("acquire", func(t *testing.T) {
		want := obs.limiter.Actions()
		if got := sorted(construct.AcquireActions()); !reflect.DeepEqual(got, want) {
			t.Errorf("AcquireActions %v, the acquire path calls %v", got, want)
		}
		for id, sid := range map[string]string{"AcquireOnlyPolicy": "AcquireAccess", "NamespaceAcquirePolicy": "NamespaceAcquireAccess"} {
			if got := sorted(strs(statements(t, stack, id)[sid]["Action"])); !reflect.DeepEqual(got, want) {
				t.Errorf("%s/%s grants %v, the acquire path calls %v", id, sid, got, want)
			}
		}
		for _, op := range []string{"GetItem", "BatchGetItem", "PutItem", "UpdateItem", "TransactWriteItems"} {
			if obs.limiter.Operations()[op] == 0 {
				t.Errorf("the workload never sent %s: it no longer covers the acquire path", op)
			}
		}
	})
	t.Run("operator", func(t *testing.T) {
		// The admin role (full access) can make every operator call; the
		// acquire path needs nothing the full access lacks.
		full := map[string]bool{}
		for _, a := range construct.FullAccessActions() {
			full[a] = true
		}
		for _, a := range slices.Concat(obs.platform.Actions(), obs.operator.Actions(), obs.reader.Actions(), obs.limiter.Actions()) {
			if !full[a] {
				t.Errorf("full access lacks %s, which the code calls", a)
			}
		}
		t.Logf("operator calls: %v", obs.operator.Actions())
	})
	t.Run("provisioner", func(t *testing.T) {
		// The provisioner's role is exactly what its handler called:
		// version stamp, manifest create, update, unchanged update, delete,
		// every fan-out on existing buckets.
		want := obs.provisioner.Actions()
		t.Logf("provisioner: %v; operations %v", want, obs.provisioner.Operations())
		if got := sorted(construct.ProvisionerActions()); !reflect.DeepEqual(got, want) {
			t.Errorf("ProvisionerActions %v, the provisioner calls %v", got, want)
		}
		if got := sorted(strs(statements(t, stack, "ProvisionerRole")["Table"]["Action"])); !reflect.DeepEqual(got, want) {
			t.Errorf("ProvisionerRole/Table grants %v, the provisioner calls %v", got, want)
		}
	})
	t.Run("shared namespace", func(t *testing.T) {
		want := obs.limiter.SharedActions()
		if got := sorted(construct.SharedReadActions()); !reflect.DeepEqual(got, want) {
			t.Errorf("SharedReadActions %v, the acquire path calls %v on the namespace _", got, want)
		}
		st := statements(t, stack, "NamespaceAcquirePolicy")["SharedReadAccess"]
		if got := sorted(strs(st["Action"])); !reflect.DeepEqual(got, want) {
			t.Errorf("SharedReadAccess grants %v, want %v", got, want)
		}
	})
	t.Run("aggregator", func(t *testing.T) {
		want := obs.aggregator.Actions()
		if got := sorted(construct.AggregatorTableActions()); !reflect.DeepEqual(got, want) {
			t.Errorf("AggregatorTableActions %v, the aggregator calls %v", got, want)
		}
		st := statements(t, stack, "AggregatorRole")
		if got := sorted(strs(st["TableWrites"]["Action"])); !reflect.DeepEqual(got, want) {
			t.Errorf("AggregatorRole/TableWrites grants %v, the aggregator calls %v", got, want)
		}
		var tableActions []string
		for _, s := range st {
			for _, a := range strs(s["Action"]) {
				if strings.HasPrefix(a, "dynamodb:") && !strings.Contains(strings.Join(construct.StreamReadActions(), " "), a) && a != "dynamodb:ListStreams" {
					tableActions = append(tableActions, a)
				}
			}
		}
		if got := sorted(tableActions); !reflect.DeepEqual(got, want) {
			t.Errorf("the aggregator role's table actions %v, want %v", got, want)
		}
		totals := emfTotals(t, obs.emf)
		for _, m := range []string{aggregator.MetricSnapshotsWritten, aggregator.MetricRefills, aggregator.MetricDoublings, aggregator.MetricClones} {
			t.Logf("%s = %v", m, totals[m])
		}
		if totals[aggregator.MetricSnapshotsWritten] == 0 || totals[aggregator.MetricClones] == 0 {
			t.Errorf("the aggregator wrote no snapshot or no clone (%v): the run no longer covers it", totals)
		}
	})
	t.Run("dashboard", func(t *testing.T) {
		onDashboard := map[string]bool{}
		for _, w := range construct.DashboardWidgets() {
			for _, m := range w.Metrics {
				if m.Namespace == aggregator.MetricsNamespace {
					onDashboard[m.Name] = true
				}
			}
		}
		emitted := map[string]bool{}
		for name := range emfTotals(t, obs.emf) {
			emitted[name] = true
		}
		if !reflect.DeepEqual(onDashboard, emitted) {
			t.Errorf("dashboard shows %v, the aggregator emits %v", onDashboard, emitted)
		}
	})
}

// TestAggregatorEnvironmentIsWhatItReads: the aggregator's environment in
// the stack is exactly the variables aggregatorhandler.SettingsFromEnv reads.
func TestAggregatorEnvironmentIsWhatItReads(t *testing.T) {
	read := map[string]bool{}
	if _, err := aggregatorhandler.SettingsFromEnv(func(k string) string {
		read[k] = true
		return map[string]string{"TABLE_NAME": "t"}[k]
	}); err != nil {
		t.Fatal(err)
	}
	_, tpl := synth(t, construct.Props{})
	env := evaluate(t, tpl, nil).Resources["AggregatorFunction"].Properties["Environment"].(map[string]any)["Variables"].(map[string]any)
	got := map[string]bool{}
	for k := range env {
		got[k] = true
	}
	if !reflect.DeepEqual(got, read) {
		t.Errorf("environment %v, the aggregator reads %v", got, read)
	}
}

// iamDocuments yields every policy document of the stack's roles and
// managed policies.
func iamDocuments(s *cfneval.Stack) map[string][]map[string]any {
	out := map[string][]map[string]any{}
	for id, r := range s.Resources {
		switch r.Type {
		case "AWS::IAM::ManagedPolicy":
			out[id] = append(out[id], r.Properties["PolicyDocument"].(map[string]any))
		case "AWS::IAM::Role":
			out[id] = append(out[id], r.Properties["AssumeRolePolicyDocument"].(map[string]any))
			for _, p := range asList(r.Properties["Policies"]) {
				out[id] = append(out[id], p.(map[string]any)["PolicyDocument"].(map[string]any))
			}
		}
	}
	return out
}

// TestNoWildcardAction: in every scenario, in both renderings, no statement
// names an action with a wildcard, and only the actions that name no
// resource (ListStreams, the X-Ray writes) are granted on "*".
func TestNoWildcardAction(t *testing.T) {
	scs, sams := translatedScenarios(t)
	resourceless := map[string]bool{"dynamodb:ListStreams": true, "xray:PutTraceSegments": true, "xray:PutTelemetryRecords": true}
	for i, sc := range scs {
		_, cdk := synth(t, sc.props)
		for name, s := range map[string]*cfneval.Stack{"CDK": evaluate(t, cdk, nil), "SAM": evaluate(t, sams[i], sc.params)} {
			n := 0
			for id, docs := range iamDocuments(s) {
				for _, d := range docs {
					for _, st := range asList(d["Statement"]) {
						m := st.(map[string]any)
						actions := strs(m["Action"])
						for _, a := range actions {
							n++
							if strings.Contains(a, "*") {
								t.Errorf("%s %s: %s grants %q", sc.name, name, id, a)
							}
						}
						for _, r := range strs(m["Resource"]) {
							if r != "*" {
								continue
							}
							for _, a := range actions {
								if !resourceless[a] {
									t.Errorf("%s %s: %s grants %s on *", sc.name, name, id, a)
								}
							}
						}
					}
				}
			}
			if len(sc.want) > 0 && sc.props.DisableIAM == (n > 0) && sc.props.AggregatorRoleArn == "" {
				t.Errorf("%s %s: %d actions checked", sc.name, name, n)
			}
		}
	}
}

// TestEveryRoleHonoursThePermissionBoundary: with a boundary (a name or an
// ARN) every role the stack creates carries it; without, none does.
func TestEveryRoleHonoursThePermissionBoundary(t *testing.T) {
	named := "arn:aws:iam::" + cfneval.AccountID + ":policy/Boundary"
	cases := []struct {
		boundary, want string
	}{
		{"", ""},
		{"Boundary", named},
		{"arn:aws:iam::123456789012:policy/pb", "arn:aws:iam::123456789012:policy/pb"},
	}
	params := []map[string]string{}
	for _, c := range cases {
		params = append(params, map[string]string{"PermissionBoundary": c.boundary, "EnableIAMRoles": "true"})
	}
	sams := translateSAM(t, params)
	for i, c := range cases {
		_, cdk := synth(t, construct.Props{PermissionBoundary: c.boundary, EnableIAMRoles: true})
		for name, s := range map[string]*cfneval.Stack{"CDK": evaluate(t, cdk, nil), "SAM": evaluate(t, sams[i], params[i])} {
			roles := 0
			for id, r := range s.Resources {
				if r.Type != "AWS::IAM::Role" {
					continue
				}
				roles++
				got, _ := r.Properties["PermissionsBoundary"].(string)
				if got != c.want {
					t.Errorf("boundary %q, %s: %s has %q, want %q", c.boundary, name, id, got, c.want)
				}
			}
			if roles != 5 {
				t.Errorf("%s: %d roles, want the aggregator's, the provisioner's and three access roles", name, roles)
			}
			if out := s.Outputs["PermissionBoundaryArn"]; out.Value != c.want {
				t.Errorf("%s: output PermissionBoundaryArn %q, want %q", name, out.Value, c.want)
			}
		}
	}
}
