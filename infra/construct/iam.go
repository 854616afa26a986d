package construct

import (
	"slices"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/jsii-runtime-go"

	"github.com/zae-limiter/zae-limiter-go/core/schema"
)

// The DynamoDB IAM actions of each principal (docs/design.md §13,
// docs/decisions.md P37). A TransactWriteItems call is authorised per
// member (Put → PutItem, Update → UpdateItem, Delete → DeleteItem,
// ConditionCheck → ConditionCheckItem); dynamodb:TransactWriteItems is not
// an IAM action and no policy names it.

// AcquireActions are what the acquire path of core/limiter calls: Open,
// fast path, refill passes, slow path and creates, cascade, doubling and
// leases. TestPoliciesAreWhatTheCodeCalls derives the list by running the
// limiter on DynamoDB Local.
func AcquireActions() []string {
	return dynamo("GetItem", "BatchGetItem", "PutItem", "UpdateItem")
}

// SharedReadActions are every namespace-scoped principal's calls on the
// table's own records (partition SharedPartition: the version record and
// the namespace registry), derived by the same test: reads of one item by
// its key, never a Query that would list the registry and never a write.
func SharedReadActions() []string { return dynamo("GetItem") }

// FullAccessActions are every data-plane call of the core: the acquire path,
// config and entities, the operator controls and namespace purges.
func FullAccessActions() []string {
	return dynamo("GetItem", "BatchGetItem", "Query", "Scan", "DescribeTable",
		"PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "ConditionCheckItem")
}

// ReadOnlyActions read items and describe the table.
func ReadOnlyActions() []string {
	return dynamo("GetItem", "BatchGetItem", "Query", "Scan", "DescribeTable")
}

// NamespaceFullAccessActions are what a tenant's operator and service call
// in their own namespace (core/control and core/limiter), as the same test
// records them. No Scan or DescribeTable: a dynamodb:LeadingKeys condition
// cannot scope a call that names no key (IAM's ForAllValues holds for an
// empty set), so a namespace-scoped policy never grants one.
func NamespaceFullAccessActions() []string {
	return dynamo("GetItem", "BatchGetItem", "Query",
		"PutItem", "UpdateItem", "DeleteItem", "ConditionCheckItem")
}

// NamespaceReadOnlyActions are what a tenant's reader calls in its own
// namespace: configs, entities, the audit trail, live buckets, snapshots.
func NamespaceReadOnlyActions() []string { return dynamo("GetItem", "BatchGetItem", "Query") }

// IndexActions are the only actions that name an index: a Query or a Scan
// of one. A write or a GetItem is authorised on the table alone, so no
// statement grants one on the indexes.
func IndexActions() []string { return dynamo("Query", "Scan") }

// AggregatorTableActions are what core/aggregator and its maintainer call;
// TestAggregatorRoleIsWhatTheAggregatorCalls derives them from a run on a
// real stream.
func AggregatorTableActions() []string { return dynamo("PutItem", "UpdateItem") }

// ProvisionerActions are the provisioner's calls, as its handler is seen to
// make them (TestPoliciesAreWhatTheCodeCalls): config writes and their
// fan-outs, the state and audit records, the version stamp. No
// ConditionCheckItem: no apply path sends one (docs/decisions.md P37).
func ProvisionerActions() []string {
	return dynamo("GetItem", "BatchGetItem", "Query", "PutItem", "UpdateItem", "DeleteItem")
}

// StreamReadActions are what the event source mapping needs on the stream
// (DescribeStream, GetRecords, GetShardIterator); ListStreams names no
// resource, so it is granted on "*".
func StreamReadActions() []string {
	return dynamo("DescribeStream", "GetRecords", "GetShardIterator")
}

// LogActions are what a function's runtime calls on its own log group: a
// stream, then its events. The group is the stack's, created before the
// function, so no CreateLogGroup.
func LogActions() []string { return []string{"logs:CreateLogStream", "logs:PutLogEvents"} }

// NamespaceTag is the principal tag the namespace-scoped policies read.
const NamespaceTag = "zael_namespace_id"

func dynamo(ops ...string) []string {
	out := make([]string, len(ops))
	for i, op := range ops {
		out[i] = "dynamodb:" + op
	}
	return out
}

type doc = map[string]any

func policy(statements ...doc) doc {
	return doc{"Version": "2012-10-17", "Statement": statements}
}

func allow(sid string, actions []string, resources ...*string) doc {
	return doc{"Sid": sid, "Effect": "Allow", "Action": actions, "Resource": resources}
}

// leadingKeys limits a statement to items whose partition key matches one
// of the patterns.
func leadingKeys(st doc, patterns ...string) doc {
	st["Condition"] = doc{"ForAllValues:StringLike": doc{"dynamodb:LeadingKeys": patterns}}
	return st
}

// onIndexes is IndexActions among actions.
func onIndexes(actions []string) []string {
	var out []string
	for _, a := range actions {
		if slices.Contains(IndexActions(), a) {
			out = append(out, a)
		}
	}
	return out
}

// The LeadingKeys patterns of the namespace-scoped policies (docs/design.md
// §13 "Who may do what"): the caller's namespace (every partition key of
// its items and of GSI1–GSI3 starts "{ns}/"; GSI4's, which lists a
// namespace's items, is the bare id), and the one partition of the table's
// own records. Every namespace id is 11 characters without "/", so no
// namespace's pattern covers another's.
const (
	namespaceKeys     = "${aws:PrincipalTag/" + NamespaceTag + "}/*"
	namespaceIndexKey = "${aws:PrincipalTag/" + NamespaceTag + "}"
	// SharedPartition is the partition key of the version record and the
	// namespace registry (core/schema.TableSystemPK).
	SharedPartition = schema.TableSystemPK
)

// tableAccess is a platform policy's statements: actions on the table
// (sid), and the index actions among them on the indexes (sid+"Indexes").
func (b *builder) tableAccess(sid string, actions []string) []doc {
	out := []doc{allow(sid, actions, b.tableArn())}
	if ix := onIndexes(actions); len(ix) > 0 {
		out = append(out, allow(sid+"Indexes", ix, b.indexArns()))
	}
	return out
}

// namespaceAccess is a namespace-scoped policy's statements: actions on
// the caller's items (sid), the index actions among them on its index
// partitions (sid+"Indexes"), and the reads of the shared partition
// (SharedReadAccess).
func (b *builder) namespaceAccess(sid string, actions []string) []doc {
	out := []doc{leadingKeys(allow(sid, actions, b.tableArn()), namespaceKeys)}
	if ix := onIndexes(actions); len(ix) > 0 {
		out = append(out, leadingKeys(allow(sid+"Indexes", ix, b.indexArns()), namespaceKeys, namespaceIndexKey))
	}
	return append(out, leadingKeys(allow("SharedReadAccess", SharedReadActions(), b.tableArn()), SharedPartition))
}

func (b *builder) managedPolicy(id, customName, defaultSuffix, description string, d doc) *string {
	name := named(defaultSuffix)
	if customName != "" {
		name = jsii.String(customName)
	}
	p := awsiam.NewCfnManagedPolicy(b.scope(), jsii.String(id), &awsiam.CfnManagedPolicyProps{
		ManagedPolicyName: name,
		Description:       jsii.String(description),
		PolicyDocument:    d,
	})
	logicalID(p, id)
	return p.Ref()
}

// buildPolicies adds the six managed policies (with IAM on) and the app,
// admin and read-only roles (with IAM roles on).
func (b *builder) buildPolicies() {
	if !b.s.iam {
		return
	}
	s := b.s
	l := b.l
	l.AcquireOnlyPolicy = b.managedPolicy("AcquireOnlyPolicy", s.AcquireOnlyPolicyName, "-acq",
		"Rate limiter: the acquire path on the whole table",
		policy(b.tableAccess("AcquireAccess", AcquireActions())...))
	l.FullAccessPolicy = b.managedPolicy("FullAccessPolicy", s.FullAccessPolicyName, "-full",
		"Rate limiter: every operation on the whole table",
		policy(b.tableAccess("FullAccess", FullAccessActions())...))
	l.ReadOnlyPolicy = b.managedPolicy("ReadOnlyPolicy", s.ReadOnlyPolicyName, "-read",
		"Rate limiter: read the whole table",
		policy(b.tableAccess("ReadAccess", ReadOnlyActions())...))
	l.NamespaceAcquirePolicy = b.managedPolicy("NamespaceAcquirePolicy", s.NamespaceAcquirePolicyName, "-ns-acq",
		"Rate limiter: the acquire path in the namespace of the caller's "+NamespaceTag+" tag",
		policy(b.namespaceAccess("NamespaceAcquireAccess", AcquireActions())...))
	l.NamespaceFullAccessPolicy = b.managedPolicy("NamespaceFullAccessPolicy", s.NamespaceFullAccessPolicyName, "-ns-full",
		"Rate limiter: a tenant's operator and service in the namespace of the caller's "+NamespaceTag+" tag",
		policy(b.namespaceAccess("NamespaceFullAccess", NamespaceFullAccessActions())...))
	l.NamespaceReadOnlyPolicy = b.managedPolicy("NamespaceReadOnlyPolicy", s.NamespaceReadOnlyPolicyName, "-ns-read",
		"Rate limiter: read the namespace of the caller's "+NamespaceTag+" tag",
		policy(b.namespaceAccess("NamespaceReadAccess", NamespaceReadOnlyActions())...))

	if !s.iamRoles {
		return
	}
	account := doc{"AWS": jsii.String("arn:" + *awscdk.Aws_PARTITION() + ":iam::" + *awscdk.Aws_ACCOUNT_ID() + ":root")}
	for _, r := range []struct {
		id, custom, suffix, tag string
		policy                  *string
	}{
		{"AppRole", s.AppRoleName, "-app", "app", l.AcquireOnlyPolicy},
		{"AdminRole", s.AdminRoleName, "-admin", "admin", l.FullAccessPolicy},
		{"ReadOnlyRole", s.ReadOnlyRoleName, "-read", "readonly", l.ReadOnlyPolicy},
	} {
		b.role(r.id, r.custom, r.suffix, account, []any{r.policy}, nil,
			&awscdk.CfnTag{Key: jsii.String(TableTagKey), Value: jsii.String(TableTagValue)},
			&awscdk.CfnTag{Key: jsii.String("Role"), Value: jsii.String(r.tag)})
	}
}

// lambdaTrust lets Lambda assume a role.
func lambdaTrust() doc { return doc{"Service": "lambda.amazonaws.com"} }

// logsTo is the statement that lets a function write to its own log
// group (the group's Arn attribute ends in ":*", which covers its streams).
func logsTo(lg awslogs.CfnLogGroup) doc { return allow("Logs", LogActions(), lg.AttrArn()) }

// role adds an IAM role named customName, or RoleNameFormat applied to
// "{stack}{suffix}", with the permission boundary when one is set.
func (b *builder) role(id, customName, suffix string, principal doc, managed []any, inline []any, tags ...*awscdk.CfnTag) awsiam.CfnRole {
	name := named(suffix)
	if f := b.s.RoleNameFormat; f != "" {
		name = jsii.String(strings.ReplaceAll(f, "{}", *name))
	}
	if customName != "" {
		name = jsii.String(customName)
	}
	props := &awsiam.CfnRoleProps{
		RoleName: name,
		AssumeRolePolicyDocument: policy(doc{
			"Effect": "Allow", "Principal": principal, "Action": "sts:AssumeRole",
		}),
	}
	if len(managed) > 0 {
		props.ManagedPolicyArns = &managed
	}
	if pb := b.permissionBoundary(); pb != nil {
		props.PermissionsBoundary = pb
	}
	if len(inline) > 0 {
		props.Policies = inline
	}
	if len(tags) > 0 {
		props.Tags = &tags
	}
	r := awsiam.NewCfnRole(b.scope(), jsii.String(id), props)
	logicalID(r, id)
	b.roles = append(b.roles, namedRole{id, r})
	return r
}

// permissionBoundary is the boundary's ARN (a bare name is a managed policy
// of the account), or nil.
func (b *builder) permissionBoundary() *string {
	pb := b.s.PermissionBoundary
	switch {
	case pb == "":
		return nil
	case strings.Split(pb, ":")[0] == "arn": // template.yaml's PermissionBoundaryIsArn
		return jsii.String(pb)
	default:
		return jsii.String("arn:" + *awscdk.Aws_PARTITION() + ":iam::" + *awscdk.Aws_ACCOUNT_ID() + ":policy/" + pb)
	}
}

// inlinePolicy is one entry of a role's Policies.
func inlinePolicy(name string, d doc) any {
	return &awsiam.CfnRole_PolicyProperty{PolicyName: jsii.String(name), PolicyDocument: d}
}
