package iameval

import (
	"errors"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"
)

type obj = map[string]any

const (
	nsTag   = "zael_namespace_id"
	nsKeys  = "${aws:PrincipalTag/" + nsTag + "}/*"
	table   = "{Table.Arn}"
	indexes = "{Table.Arn}/index/*"
	logsArn = "arn:aws:logs:us-east-1:123456789012:log-group:/aws/lambda/x:*"
)

// doc builds a document as cfneval renders one: every list is []any.
func doc(statements ...obj) obj {
	list := make([]any, len(statements))
	for i, s := range statements {
		list[i] = s
	}
	return obj{"Version": "2012-10-17", "Statement": list}
}

func list(s ...string) []any {
	out := make([]any, len(s))
	for i, x := range s {
		out[i] = x
	}
	return out
}

func allow(actions []any, resources ...string) obj {
	return obj{"Sid": "S", "Effect": "Allow", "Action": actions, "Resource": list(resources...)}
}

func withCondition(st obj, c obj) obj {
	st["Condition"] = c
	return st
}

func leadingKeys(st obj, patterns ...string) obj {
	return withCondition(st, obj{"ForAllValues:StringLike": obj{"dynamodb:LeadingKeys": list(patterns...)}})
}

func mustParse(t *testing.T, d obj) Policy {
	t.Helper()
	p, err := Parse(d)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return p
}

// keyed is a request naming partition keys.
func keyed(action, resource string, tags map[string]string, keys ...string) Request {
	return Request{Action: action, Resource: resource, LeadingKeys: keys, HasLeadingKeys: true, PrincipalTags: tags}
}

func ns(v string) map[string]string { return map[string]string{nsTag: v} }

type allowCase struct {
	name string
	req  Request
	want bool
}

func runAllows(t *testing.T, p Policy, cases []allowCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := p.Allows(tc.req)
			if err != nil {
				t.Fatalf("Allows: %v", err)
			}
			if got != tc.want {
				t.Errorf("Allows(%+v) = %v, want %v", tc.req, got, tc.want)
			}
		})
	}
}

// The namespace-scoped acquire policy of construct/iam.go: the acquire
// actions in the caller's namespace, GetItem in the shared namespace `_`.
func namespaceAcquirePolicy() obj {
	return doc(
		leadingKeys(allow(list("dynamodb:GetItem", "dynamodb:BatchGetItem", "dynamodb:PutItem", "dynamodb:UpdateItem"), table, indexes), nsKeys),
		leadingKeys(allow(list("dynamodb:GetItem"), table, indexes), "_/*"),
	)
}

func TestNamespaceScopedLeadingKeys(t *testing.T) {
	p := mustParse(t, namespaceAcquirePolicy())
	runAllows(t, p, []allowCase{
		{"own namespace", keyed("dynamodb:GetItem", table, ns("ns1"), "ns1/BUCKET#a"), true},
		{"own namespace, empty rest", keyed("dynamodb:GetItem", table, ns("ns1"), "ns1/"), true},
		{"other namespace", keyed("dynamodb:GetItem", table, ns("ns1"), "ns2/BUCKET#a"), false},
		{"namespace without the slash", keyed("dynamodb:GetItem", table, ns("ns1"), "ns1"), false},
		{"namespace as a prefix of another", keyed("dynamodb:GetItem", table, ns("ns1"), "ns10/BUCKET#a"), false},
		{"key is case-sensitive", keyed("dynamodb:GetItem", table, ns("ns1"), "NS1/BUCKET#a"), false},
		{"batch in one namespace", keyed("dynamodb:BatchGetItem", table, ns("ns1"), "ns1/a", "ns1/b"), true},
		{"batch across two namespaces", keyed("dynamodb:BatchGetItem", table, ns("ns1"), "ns1/a", "ns2/b"), false},
		{"batch of own and shared: no statement has both", keyed("dynamodb:BatchGetItem", table, ns("ns1"), "ns1/a", "_/v"), false},
		{"index of the table", keyed("dynamodb:GetItem", "{Table.Arn}/index/GSI4", ns("ns1"), "ns1/a"), true},
		{"another table", keyed("dynamodb:GetItem", "{Other.Arn}", ns("ns1"), "ns1/a"), false},
		{"shared namespace read", keyed("dynamodb:GetItem", table, ns("ns1"), "_/version"), true},
		{"shared namespace write", keyed("dynamodb:PutItem", table, ns("ns1"), "_/version"), false},
		{"action not granted", keyed("dynamodb:DeleteItem", table, ns("ns1"), "ns1/a"), false},
		// The classic pitfall: ForAllValues over an empty set is true, so a
		// LeadingKeys condition does not stop a call that names no key.
		{"keyless call passes ForAllValues", Request{Action: "dynamodb:GetItem", Resource: table, PrincipalTags: ns("ns1")}, true},
		{"empty key set passes ForAllValues", keyed("dynamodb:PutItem", table, ns("ns1")), true},
		// Without the tag the variable has no value.
		{"missing tag denies", keyed("dynamodb:GetItem", table, nil, "ns1/a"), false},
		{"missing tag: an empty value is no match either", keyed("dynamodb:PutItem", table, nil, "/a"), false},
		{"missing tag: keyless call still passes", Request{Action: "dynamodb:PutItem", Resource: table}, true},
		{"missing tag: shared statement needs no tag", keyed("dynamodb:GetItem", table, nil, "_/v"), true},
		{"other tags do not stand in", keyed("dynamodb:GetItem", table, map[string]string{"zael_namespace": "ns1"}, "ns1/a"), false},
		// Characters from a tag value are literal.
		{"tag value * is not a wildcard", keyed("dynamodb:GetItem", table, ns("*"), "ns1/a"), false},
		{"tag value * matches itself", keyed("dynamodb:GetItem", table, ns("*"), "*/a"), true},
		{"tag value ? is not a wildcard", keyed("dynamodb:GetItem", table, ns("n?1"), "nx1/a"), false},
		{"tag value ? matches itself", keyed("dynamodb:GetItem", table, ns("n?1"), "n?1/a"), true},
		{"tag key is case-insensitive", keyed("dynamodb:GetItem", table, map[string]string{"ZAEL_Namespace_ID": "ns1"}, "ns1/a"), true},
		{"tag value is case-sensitive", keyed("dynamodb:GetItem", table, ns("NS1"), "ns1/a"), false},
	})
}

func TestScanWithoutLeadingKeys(t *testing.T) {
	// A full-table grant scoped by LeadingKeys still lets Scan and
	// DescribeTable through: they carry no dynamodb:LeadingKeys. This is
	// why the namespace policies do not grant them at all.
	p := mustParse(t, doc(leadingKeys(allow(list("dynamodb:*"), table, indexes), nsKeys)))
	runAllows(t, p, []allowCase{
		{"Scan", Request{Action: "dynamodb:Scan", Resource: table, PrincipalTags: ns("ns1")}, true},
		{"DescribeTable", Request{Action: "dynamodb:DescribeTable", Resource: table, PrincipalTags: ns("ns1")}, true},
		{"Query in another namespace", keyed("dynamodb:Query", table, ns("ns1"), "ns2/a"), false},
	})
}

func TestSharedPatternWithMissingTag(t *testing.T) {
	// A value whose variable has no value matches nothing; the other values
	// of the key are still tried (IAM User Guide, "Policy variables with no
	// value": "the value is effectively null. There is no equal or like
	// value").
	p := mustParse(t, doc(leadingKeys(allow(list("dynamodb:GetItem"), table), nsKeys, "_/*")))
	runAllows(t, p, []allowCase{
		{"tagged, own namespace", keyed("dynamodb:GetItem", table, ns("ns1"), "ns1/a"), true},
		{"tagged, own and shared", keyed("dynamodb:GetItem", table, ns("ns1"), "ns1/a", "_/v"), true},
		{"tagged, shared and other", keyed("dynamodb:GetItem", table, ns("ns1"), "_/v", "ns2/a"), false},
		{"untagged, shared", keyed("dynamodb:GetItem", table, nil, "_/v"), true},
		{"untagged, a namespace", keyed("dynamodb:GetItem", table, nil, "ns1/a"), false},
		{"untagged, a key that is the unresolved text", keyed("dynamodb:GetItem", table, nil, nsKeys), false},
	})
}

func TestActionMatching(t *testing.T) {
	for _, tc := range []struct {
		pattern, action string
		want            bool
	}{
		{"dynamodb:GetItem", "dynamodb:GetItem", true},
		{"dynamodb:GetItem", "DynamoDB:getitem", true},
		{"DYNAMODB:GETITEM", "dynamodb:GetItem", true},
		{"dynamodb:GetItem", "dynamodb:GetItems", false},
		{"dynamodb:GetItem", "dynamodb:BatchGetItem", false},
		{"dynamodb:Get*", "dynamodb:GetItem", true},
		{"dynamodb:Get*", "dynamodb:BatchGetItem", false},
		{"dynamodb:*GetItem", "dynamodb:batchgetitem", true},
		{"dynamodb:?etItem", "dynamodb:GetItem", true},
		{"dynamodb:?etItem", "dynamodb:BatchGetItem", false},
		{"dynamodb:*", "logs:PutLogEvents", false},
		{"logs:*", "logs:PutLogEvents", true},
		{"*", "logs:CreateLogStream", true},
	} {
		t.Run(tc.pattern+"~"+tc.action, func(t *testing.T) {
			p := mustParse(t, doc(allow(list(tc.pattern), "*")))
			got, err := p.Allows(Request{Action: tc.action, Resource: table})
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("action %q against %q = %v, want %v", tc.action, tc.pattern, got, tc.want)
			}
		})
	}
}

func TestResourceMatching(t *testing.T) {
	for _, tc := range []struct {
		pattern, resource string
		tags              map[string]string
		want              bool
	}{
		{indexes, "{Table.Arn}/index/GSI4", nil, true},
		{indexes, "{Table.Arn}", nil, false},
		{indexes, "{Other.Arn}/index/GSI4", nil, false},
		{table, "{Table.Arn}", nil, true},
		{table, "{Table.Arn}/index/GSI4", nil, false},
		{table, "{table.arn}", nil, false},
		{"{Table.Arn}/index/GSI?", "{Table.Arn}/index/GSI4", nil, true},
		{"{Table.Arn}/index/GSI?", "{Table.Arn}/index/GSI10", nil, false},
		{logsArn, "arn:aws:logs:us-east-1:123456789012:log-group:/aws/lambda/x:log-stream:2024/01/01/abc", nil, true},
		{logsArn, "arn:aws:logs:us-east-1:123456789012:log-group:/aws/lambda/x:", nil, true},
		{logsArn, "arn:aws:logs:us-east-1:123456789012:log-group:/aws/lambda/x", nil, false},
		{logsArn, "arn:aws:logs:us-east-1:123456789012:log-group:/aws/lambda/xy:*", nil, false},
		{"*", "anything:at/all", nil, true},
		// Escapes are literal.
		{"arn:x/${*}", "arn:x/*", nil, true},
		{"arn:x/${*}", "arn:x/abc", nil, false},
		{"arn:x/${?}", "arn:x/?", nil, true},
		{"arn:x/${?}", "arn:x/a", nil, false},
		{"arn:x/${$}{a}", "arn:x/${a}", nil, true},
		{"arn:x/$a", "arn:x/$a", nil, true},
		{"arn:x/$", "arn:x/$", nil, true},
		// Variables.
		{"arn:x/${aws:PrincipalTag/fn}:*", "arn:x/f1:s", map[string]string{"fn": "f1"}, true},
		{"arn:x/${aws:PrincipalTag/fn}:*", "arn:x/f2:s", map[string]string{"fn": "f1"}, false},
		{"arn:x/${AWS:principaltag/FN}:*", "arn:x/f1:s", map[string]string{"fn": "f1"}, true},
		{"arn:x/${aws:PrincipalTag/fn}", "arn:x/abc", map[string]string{"fn": "*"}, false},
		{"arn:x/${aws:PrincipalTag/fn}", "arn:x/", nil, false},
		{"arn:x/${aws:PrincipalTag/fn}*", "arn:x/anything", nil, false},
		{"arn:x/${aws:PrincipalTag/fn}", "arn:x/", map[string]string{"fn": ""}, true},
	} {
		t.Run(tc.pattern+"~"+tc.resource, func(t *testing.T) {
			p := mustParse(t, doc(allow(list("dynamodb:GetItem"), tc.pattern)))
			got, err := p.Allows(Request{Action: "dynamodb:GetItem", Resource: tc.resource, PrincipalTags: tc.tags})
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("resource %q against %q with tags %v = %v, want %v", tc.resource, tc.pattern, tc.tags, got, tc.want)
			}
		})
	}
}

func TestResourceWithMissingVariableLeavesOtherEntries(t *testing.T) {
	p := mustParse(t, doc(allow(list("logs:*"), "arn:x/${aws:PrincipalTag/fn}", "arn:x/shared")))
	runAllows(t, p, []allowCase{
		{"untagged, shared entry", Request{Action: "logs:PutLogEvents", Resource: "arn:x/shared"}, true},
		{"untagged, variable entry", Request{Action: "logs:PutLogEvents", Resource: "arn:x/f1"}, false},
		{"tagged, variable entry", Request{Action: "logs:PutLogEvents", Resource: "arn:x/f1", PrincipalTags: map[string]string{"fn": "f1"}}, true},
	})
}

func TestConditionLogic(t *testing.T) {
	st := allow(list("dynamodb:GetItem"), table)
	st["Condition"] = obj{
		// Two operators: ANDed.
		"StringEquals": obj{
			// Two keys under one operator: ANDed; two values: ORed.
			"aws:PrincipalTag/role": list("admin", "ops"),
			"AWS:PRINCIPALTAG/Team": "blue",
		},
		"ForAllValues:StringLike": obj{"DynamoDB:leadingkeys": list("a/*", "b/*")},
	}
	p := mustParse(t, doc(st))
	tags := func(role, team string) map[string]string {
		m := map[string]string{}
		if role != "" {
			m["role"] = role
		}
		if team != "" {
			m["team"] = team
		}
		return m
	}
	runAllows(t, p, []allowCase{
		{"all hold (first value)", keyed("dynamodb:GetItem", table, tags("admin", "blue"), "a/1"), true},
		{"all hold (second value)", keyed("dynamodb:GetItem", table, tags("ops", "blue"), "b/1"), true},
		{"keys from both values", keyed("dynamodb:GetItem", table, tags("ops", "blue"), "a/1", "b/2"), true},
		{"one key under an operator fails", keyed("dynamodb:GetItem", table, tags("admin", "red"), "a/1"), false},
		{"other key under an operator fails", keyed("dynamodb:GetItem", table, tags("dev", "blue"), "a/1"), false},
		{"tag missing", keyed("dynamodb:GetItem", table, tags("admin", ""), "a/1"), false},
		{"other operator fails", keyed("dynamodb:GetItem", table, tags("admin", "blue"), "c/1"), false},
		{"StringEquals is case-sensitive", keyed("dynamodb:GetItem", table, tags("Admin", "blue"), "a/1"), false},
	})
}

func TestPrincipalTagConditions(t *testing.T) {
	for _, tc := range []struct {
		name  string
		op    string
		value string
		tags  map[string]string
		want  bool
	}{
		{"equals", "StringEquals", "x", map[string]string{"t": "x"}, true},
		{"equals other", "StringEquals", "x", map[string]string{"t": "y"}, false},
		{"equals absent", "StringEquals", "x", nil, false},
		{"equals absent, empty value", "StringEquals", "", nil, false},
		{"equals empty tag value", "StringEquals", "", map[string]string{"t": ""}, true},
		{"equals takes * literally", "StringEquals", "*", map[string]string{"t": "x"}, false},
		{"equals * itself", "StringEquals", "*", map[string]string{"t": "*"}, true},
		{"equals takes ? literally", "StringEquals", "?", map[string]string{"t": "x"}, false},
		{"like *", "StringLike", "*", map[string]string{"t": "x"}, true},
		{"like * needs the tag", "StringLike", "*", nil, false},
		{"like prefix", "StringLike", "team-*", map[string]string{"t": "team-a"}, true},
		{"like prefix other", "StringLike", "team-*", map[string]string{"t": "squad-a"}, false},
		{"like ?", "StringLike", "n?", map[string]string{"t": "n1"}, true},
		{"like ? is one character", "StringLike", "n?", map[string]string{"t": "n12"}, false},
		{"like ? is one code point", "StringLike", "n?", map[string]string{"t": "né"}, true},
		{"like is case-sensitive", "StringLike", "team-*", map[string]string{"t": "Team-a"}, false},
		{"like escaped *", "StringLike", "a${*}", map[string]string{"t": "ab"}, false},
		{"like escaped * itself", "StringLike", "a${*}", map[string]string{"t": "a*"}, true},
		{"variable value", "StringEquals", "${aws:PrincipalTag/u}", map[string]string{"t": "v", "u": "v"}, true},
		{"variable value differs", "StringEquals", "${aws:PrincipalTag/u}", map[string]string{"t": "v", "u": "w"}, false},
		{"variable value missing", "StringEquals", "${aws:PrincipalTag/u}", map[string]string{"t": ""}, false},
		{"variable * literal in like", "StringLike", "${aws:PrincipalTag/u}", map[string]string{"t": "v", "u": "*"}, false},
		{"tag key case-insensitive", "StringEquals", "x", map[string]string{"T": "x"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := withCondition(allow(list("dynamodb:GetItem"), table), obj{tc.op: obj{"aws:PrincipalTag/t": tc.value}})
			p := mustParse(t, doc(st))
			got, err := p.Allows(Request{Action: "dynamodb:GetItem", Resource: table, PrincipalTags: tc.tags})
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("%s %q with tags %v = %v, want %v", tc.op, tc.value, tc.tags, got, tc.want)
			}
		})
	}
}

func TestDocumentForms(t *testing.T) {
	req := Request{Action: "dynamodb:GetItem", Resource: table}
	for _, tc := range []struct {
		name string
		doc  obj
		want bool
	}{
		{"single statement object", obj{"Version": "2012-10-17", "Id": "x", "Statement": obj{"Effect": "Allow", "Action": "dynamodb:GetItem", "Resource": table}}, true},
		{"string action and resource", doc(obj{"Effect": "Allow", "Action": "dynamodb:GetItem", "Resource": table}), true},
		{"[]string lists", obj{"Version": "2012-10-17", "Statement": []map[string]any{{"Effect": "Allow", "Action": []string{"dynamodb:PutItem", "dynamodb:GetItem"}, "Resource": []string{table}}}}, true},
		{"second statement allows", doc(allow(list("dynamodb:PutItem"), table), allow(list("dynamodb:GetItem"), table)), true},
		{"no statement allows", doc(allow(list("dynamodb:PutItem"), table), allow(list("dynamodb:GetItem"), "{Other.Arn}")), false},
		{"action from one statement, resource from another", doc(allow(list("dynamodb:GetItem"), "{Other.Arn}"), allow(list("dynamodb:PutItem"), table)), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := mustParse(t, tc.doc).Allows(req)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("Allows = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestUnsupported(t *testing.T) {
	base := func() obj { return allow(list("dynamodb:GetItem"), table) }
	with := func(k string, v any) obj {
		st := base()
		st[k] = v
		return doc(st)
	}
	cond := func(op, key string, v any) obj { return doc(withCondition(base(), obj{op: obj{key: v}})) }
	for _, tc := range []struct {
		name string
		doc  obj
		want UnsupportedError // Reason is not compared
	}{
		{"Deny", with("Effect", "Deny"), UnsupportedError{Statement: 0, Element: "Effect", Value: "Deny"}},
		{"lower-case allow", with("Effect", "allow"), UnsupportedError{Statement: 0, Element: "Effect", Value: "allow"}},
		{"NotAction", with("NotAction", "dynamodb:Scan"), UnsupportedError{Statement: 0, Element: "NotAction"}},
		{"NotResource", with("NotResource", table), UnsupportedError{Statement: 0, Element: "NotResource"}},
		{"Principal", with("Principal", obj{"AWS": "*"}), UnsupportedError{Statement: 0, Element: "Principal"}},
		{"NotPrincipal", with("NotPrincipal", obj{"AWS": "*"}), UnsupportedError{Statement: 0, Element: "NotPrincipal"}},
		{"unknown element", with("Conditions", obj{}), UnsupportedError{Statement: 0, Element: "Conditions"}},
		{"second statement", doc(base(), obj{"Effect": "Deny", "Action": "*", "Resource": "*"}), UnsupportedError{Statement: 1, Element: "Effect", Value: "Deny"}},
		{"no Version", obj{"Statement": base()}, UnsupportedError{Statement: -1, Element: "Version"}},
		{"old Version", obj{"Version": "2008-10-17", "Statement": base()}, UnsupportedError{Statement: -1, Element: "Version", Value: "2008-10-17"}},
		{"unknown document element", obj{"Version": "2012-10-17", "Statement": base(), "Extra": "x"}, UnsupportedError{Statement: -1, Element: "Extra"}},
		{"StringNotLike", cond("StringNotLike", "aws:PrincipalTag/t", "x"), UnsupportedError{Element: "Condition", Operator: "StringNotLike"}},
		{"ForAnyValue", cond("ForAnyValue:StringLike", "dynamodb:LeadingKeys", "x"), UnsupportedError{Element: "Condition", Operator: "ForAnyValue:StringLike"}},
		{"IfExists", cond("StringEqualsIfExists", "aws:PrincipalTag/t", "x"), UnsupportedError{Element: "Condition", Operator: "StringEqualsIfExists"}},
		{"ForAllValues:StringEquals", cond("ForAllValues:StringEquals", "dynamodb:LeadingKeys", "x"), UnsupportedError{Element: "Condition", Operator: "ForAllValues:StringEquals"}},
		{"operator case", cond("stringlike", "aws:PrincipalTag/t", "x"), UnsupportedError{Element: "Condition", Operator: "stringlike"}},
		{"Null", cond("Null", "aws:PrincipalTag/t", "false"), UnsupportedError{Element: "Condition", Operator: "Null"}},
		{"Bool", cond("Bool", "aws:SecureTransport", "true"), UnsupportedError{Element: "Condition", Operator: "Bool"}},
		{"ForAllValues on an attribute key", cond("ForAllValues:StringLike", "dynamodb:Attributes", "x"), UnsupportedError{Element: "Condition", Operator: "ForAllValues:StringLike", Key: "dynamodb:Attributes"}},
		{"ForAllValues on a tag", cond("ForAllValues:StringLike", "aws:PrincipalTag/t", "x"), UnsupportedError{Element: "Condition", Operator: "ForAllValues:StringLike", Key: "aws:PrincipalTag/t"}},
		{"StringLike on LeadingKeys", cond("StringLike", "dynamodb:LeadingKeys", "x"), UnsupportedError{Element: "Condition", Operator: "StringLike", Key: "dynamodb:LeadingKeys"}},
		{"StringEquals on LeadingKeys", cond("StringEquals", "dynamodb:LeadingKeys", "x"), UnsupportedError{Element: "Condition", Operator: "StringEquals", Key: "dynamodb:LeadingKeys"}},
		{"request tag", cond("StringEquals", "aws:RequestTag/t", "x"), UnsupportedError{Element: "Condition", Operator: "StringEquals", Key: "aws:RequestTag/t"}},
		{"resource tag", cond("StringEquals", "aws:ResourceTag/t", "x"), UnsupportedError{Element: "Condition", Operator: "StringEquals", Key: "aws:ResourceTag/t"}},
		{"username", cond("StringEquals", "aws:username", "x"), UnsupportedError{Element: "Condition", Operator: "StringEquals", Key: "aws:username"}},
		{"empty tag key", cond("StringEquals", "aws:PrincipalTag/", "x"), UnsupportedError{Element: "Condition", Operator: "StringEquals", Key: "aws:PrincipalTag/"}},
		{"variable aws:username in Resource", doc(allow(list("dynamodb:GetItem"), "arn:x/${aws:username}")), UnsupportedError{Element: "Resource", Value: "${aws:username}"}},
		{"variable with default", doc(allow(list("dynamodb:GetItem"), "arn:x/${aws:PrincipalTag/t, 'd'}")), UnsupportedError{Element: "Resource", Value: "${aws:PrincipalTag/t, 'd'}"}},
		{"variable with spaces", doc(allow(list("dynamodb:GetItem"), "arn:x/${ aws:PrincipalTag/t }")), UnsupportedError{Element: "Resource", Value: "${ aws:PrincipalTag/t }"}},
		{"empty variable", doc(allow(list("dynamodb:GetItem"), "arn:x/${}")), UnsupportedError{Element: "Resource", Value: "${}"}},
		{"empty tag in variable", doc(allow(list("dynamodb:GetItem"), "arn:x/${aws:PrincipalTag/}")), UnsupportedError{Element: "Resource", Value: "${aws:PrincipalTag/}"}},
		{"unterminated variable", doc(allow(list("dynamodb:GetItem"), "arn:x/${aws:PrincipalTag/t")), UnsupportedError{Element: "Resource", Value: "arn:x/${aws:PrincipalTag/t"}},
		{"variable in a condition value", cond("ForAllValues:StringLike", "dynamodb:LeadingKeys", list("_/*", "${aws:userid}/*")), UnsupportedError{Element: "Condition", Operator: "ForAllValues:StringLike", Key: "dynamodb:LeadingKeys", Value: "${aws:userid}"}},
		{"variable in StringEquals value", cond("StringEquals", "aws:PrincipalTag/t", "${aws:PrincipalType}"), UnsupportedError{Element: "Condition", Operator: "StringEquals", Key: "aws:PrincipalTag/t", Value: "${aws:PrincipalType}"}},
		{"variable in Action", doc(allow(list("dynamodb:${aws:PrincipalTag/t}"), table)), UnsupportedError{Element: "Action", Value: "dynamodb:${aws:PrincipalTag/t}"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(tc.doc)
			var ue *UnsupportedError
			if !errors.As(err, &ue) {
				t.Fatalf("Parse error = %v, want an *UnsupportedError", err)
			}
			got := *ue
			got.Reason = ""
			if got != tc.want {
				t.Errorf("Parse error = %+v, want %+v", got, tc.want)
			}
			if ue.Reason == "" || !strings.Contains(err.Error(), "unsupported") {
				t.Errorf("error %q says nothing", err)
			}
		})
	}
}

func TestMalformed(t *testing.T) {
	base := func() obj { return allow(list("dynamodb:GetItem"), table) }
	without := func(k string) obj {
		st := base()
		delete(st, k)
		return doc(st)
	}
	with := func(k string, v any) obj {
		st := base()
		st[k] = v
		return doc(st)
	}
	for _, tc := range []struct {
		name    string
		doc     obj
		element string
	}{
		{"no Statement", obj{"Version": "2012-10-17"}, "Statement"},
		{"empty Statement", obj{"Version": "2012-10-17", "Statement": []any{}}, "Statement"},
		{"Statement a string", obj{"Version": "2012-10-17", "Statement": "x"}, "Statement"},
		{"statement a string", obj{"Version": "2012-10-17", "Statement": list("x")}, ""},
		{"no Effect", without("Effect"), "Effect"},
		{"no Action", without("Action"), "Action"},
		{"no Resource", without("Resource"), "Resource"},
		{"empty Action", with("Action", []any{}), "Action"},
		{"Action not a string", with("Action", []any{"dynamodb:GetItem", 1}), "Action"},
		{"Resource an object", with("Resource", obj{"Fn::GetAtt": list("Table", "Arn")}), "Resource"},
		{"Sid not a string", with("Sid", 1), "Sid"},
		{"Condition a string", with("Condition", "x"), "Condition"},
		{"empty Condition", with("Condition", obj{}), "Condition"},
		{"operator without keys", with("Condition", obj{"StringEquals": obj{}}), "Condition"},
		{"condition value an object", with("Condition", obj{"StringEquals": obj{"aws:PrincipalTag/t": obj{}}}), "Condition"},
		{"condition values empty", with("Condition", obj{"StringEquals": obj{"aws:PrincipalTag/t": []any{}}}), "Condition"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(tc.doc)
			var me *MalformedError
			if !errors.As(err, &me) {
				t.Fatalf("Parse error = %v, want a *MalformedError", err)
			}
			if me.Element != tc.element {
				t.Errorf("Element = %q, want %q (%v)", me.Element, tc.element, err)
			}
			var ue *UnsupportedError
			if errors.As(err, &ue) {
				t.Errorf("a malformed document is reported as unsupported: %v", err)
			}
		})
	}
}

func TestRequestErrors(t *testing.T) {
	p := mustParse(t, doc(allow(list("*"), "*")))
	for _, tc := range []struct {
		name  string
		req   Request
		field string
	}{
		{"no action", Request{Resource: table}, "Action"},
		{"action without service", Request{Action: "GetItem", Resource: table}, "Action"},
		{"action without name", Request{Action: "dynamodb:", Resource: table}, "Action"},
		{"no resource", Request{Action: "dynamodb:GetItem"}, "Resource"},
		{"keys without HasLeadingKeys", Request{Action: "dynamodb:GetItem", Resource: table, LeadingKeys: []string{"a"}}, "LeadingKeys"},
		{"tag keys equal but for case", Request{Action: "dynamodb:GetItem", Resource: table, PrincipalTags: map[string]string{"t": "a", "T": "b"}}, "PrincipalTags"},
		{"empty tag key", Request{Action: "dynamodb:GetItem", Resource: table, PrincipalTags: map[string]string{"": "a"}}, "PrincipalTags"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for name, allows := range map[string]func(Request) (bool, error){
				"Allows":    p.Allows,
				"AllowedBy": func(r Request) (bool, error) { return AllowedBy([]Policy{p}, r) },
			} {
				ok, err := allows(tc.req)
				var re *RequestError
				if !errors.As(err, &re) || re.Field != tc.field {
					t.Errorf("%s error = %v, want a *RequestError on %s", name, err, tc.field)
				}
				if ok {
					t.Errorf("%s allowed a bad request", name)
				}
			}
		})
	}
}

func TestZeroPolicy(t *testing.T) {
	req := Request{Action: "dynamodb:GetItem", Resource: table}
	var re *RequestError
	if _, err := (Policy{}).Allows(req); !errors.As(err, &re) || re.Field != "Policy" {
		t.Errorf("Allows on the zero Policy: error = %v, want a *RequestError on Policy", err)
	}
	good := mustParse(t, doc(allow(list("*"), "*")))
	ok, err := AllowedBy([]Policy{good, {}}, req)
	if !errors.As(err, &re) || re.Field != "Policy" || !strings.Contains(err.Error(), "policy 1") {
		t.Errorf("AllowedBy with a zero Policy: error = %v, want a wrapped *RequestError naming policy 1", err)
	}
	if ok {
		t.Error("AllowedBy allowed with an error")
	}
}

func TestAllowedBy(t *testing.T) {
	get := mustParse(t, doc(allow(list("dynamodb:GetItem"), table)))
	put := mustParse(t, doc(allow(list("dynamodb:PutItem"), table)))
	scoped := mustParse(t, namespaceAcquirePolicy())
	for _, tc := range []struct {
		name     string
		policies []Policy
		req      Request
		want     bool
	}{
		{"no policies", nil, Request{Action: "dynamodb:GetItem", Resource: table}, false},
		{"first allows", []Policy{get, put}, Request{Action: "dynamodb:GetItem", Resource: table}, true},
		{"second allows", []Policy{get, put}, Request{Action: "dynamodb:PutItem", Resource: table}, true},
		{"none allows", []Policy{get, put}, Request{Action: "dynamodb:DeleteItem", Resource: table}, false},
		{"scoped denies, other allows", []Policy{scoped, get}, keyed("dynamodb:GetItem", table, ns("ns1"), "ns2/a"), true},
		{"scoped denies alone", []Policy{scoped, put}, keyed("dynamodb:GetItem", table, ns("ns1"), "ns2/a"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := AllowedBy(tc.policies, tc.req)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("AllowedBy = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestGlob(t *testing.T) {
	for _, tc := range []struct {
		pattern, s string
		want       bool
	}{
		{"", "", true},
		{"", "a", false},
		{"*", "", true},
		{"*", "abc", true},
		{"?", "", false},
		{"?", "é", true},
		{"??", "é", false},
		{"a*b*c", "abc", true},
		{"a*b*c", "aXbYc", true},
		{"a*b*c", "acb", false},
		{"a*b*c", "abcb", false},
		{"a*b*c", "abcbc", true},
		{"*a", "bbba", true},
		{"*a", "bbab", false},
		{"a**", "a", true},
		{"*?*", "", false},
		{"*?*", "x", true},
		{"ab", "abc", false},
		{"abc", "ab", false},
	} {
		if got := plainGlob(tc.pattern).match(tc.s); got != tc.want {
			t.Errorf("%q ~ %q = %v, want %v", tc.pattern, tc.s, got, tc.want)
		}
		if got, want := literalGlob(tc.pattern).match(tc.s), tc.pattern == tc.s; got != want {
			t.Errorf("literal %q ~ %q = %v, want %v", tc.pattern, tc.s, got, want)
		}
	}
}

// FuzzStringLike checks the glob matcher against a regexp built from the
// pattern, that a literal glob matches only its own text, and that a
// policy value without variables parses to the plain glob.
func FuzzStringLike(f *testing.F) {
	for _, s := range [][2]string{
		{"", ""}, {"*", ""}, {"?", "a"}, {"a*b?c", "axxbyc"}, {"ns1/*", "ns1/BUCKET#a"},
		{"ns1/*", "ns1"}, {`\*`, `\x`}, {"*a*a*a*b", "aaaaaaaaaaaaaaaaaaaa"}, {"é?", "éé"},
		{"[a].+(", "[a].+("}, {"a\nb*", "a\nbc\n"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, pattern, s string) {
		if !utf8.ValidString(pattern) || !utf8.ValidString(s) {
			t.Skip("matching is on code points; the reference needs valid UTF-8")
		}
		if len(pattern) > 64 || len(s) > 64 {
			// Both sides are quadratic at worst; long inputs find nothing
			// short ones do not, and slow the fuzzer's minimisation down.
			t.Skip("long input")
		}
		expr := strings.ReplaceAll(regexp.QuoteMeta(pattern), `\*`, `.*`)
		expr = strings.ReplaceAll(expr, `\?`, `.`)
		re, err := regexp.Compile(`(?s)\A` + expr + `\z`)
		if err != nil {
			t.Fatalf("reference for %q: %v", pattern, err)
		}
		if got, want := plainGlob(pattern).match(s), re.MatchString(s); got != want {
			t.Errorf("%q ~ %q = %v, regexp %v", pattern, s, got, want)
		}
		if got, want := literalGlob(pattern).match(s), pattern == s; got != want {
			t.Errorf("literal %q ~ %q = %v, want %v", pattern, s, got, want)
		}
		if !strings.Contains(pattern, "$") {
			p, uerr := parseValue(pattern, true)
			if uerr != nil {
				t.Fatalf("parseValue(%q): %v", pattern, uerr)
			}
			g, ok := p.resolve(&reqContext{})
			if !ok || g.match(s) != re.MatchString(s) {
				t.Errorf("policy value %q ~ %q = %v (resolved %v), regexp %v", pattern, s, g.match(s), ok, re.MatchString(s))
			}
		}
	})
}
