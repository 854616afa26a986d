package handler_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/cfn"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/manifest"
	"github.com/zae-limiter/zae-limiter-go/core/provision"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
	"github.com/zae-limiter/zae-limiter-go/functions/provisioner/customresource"
	"github.com/zae-limiter/zae-limiter-go/functions/provisioner/handler"
)

// stackARN is the StackId of the stack named name.
func stackARN(name string) string {
	return "arn:aws:cloudformation:us-east-1:123456789012:stack/" + name + "/guid"
}

// as makes a sample event a request of the resource logical in stack, with
// its own request id.
func as(stack, logical, requestID string) func(ev map[string]any) {
	return func(ev map[string]any) {
		ev["StackId"] = stackARN(stack)
		ev["LogicalResourceId"] = logical
		ev["RequestId"] = requestID
	}
}

// with applies edits in order.
func with(edits ...func(ev map[string]any)) func(ev map[string]any) {
	return func(ev map[string]any) {
		for _, f := range edits {
			f(ev)
		}
	}
}

// resources makes a sample event's properties name only the resources rs
// of tenant-alpha, each with an rpm capacity.
func resources(rs map[string]string) func(ev map[string]any) {
	return func(ev map[string]any) {
		res := map[string]any{}
		for r, capacity := range rs {
			res[r] = map[string]any{"Limits": map[string]any{"rpm": map[string]any{"Capacity": capacity}}}
		}
		ev["ResourceProperties"] = map[string]any{"ServiceToken": "x", "Namespace": "tenant-alpha", "Resources": res}
	}
}

// physicalID sets the event's PhysicalResourceId.
func physicalID(id string) func(ev map[string]any) {
	return func(ev map[string]any) { ev["PhysicalResourceId"] = id }
}

// rpm is the rpm capacity of resource r's config ("absent" without one).
func (e *env) rpm(r string) string {
	e.t.Helper()
	l, err := e.store.GetResourceLimits(e.ctx, e.ns, r)
	if err != nil {
		e.t.Fatal(err)
	}
	for _, x := range l {
		if x.Name == "rpm" {
			return fmt.Sprint(x.Capacity)
		}
	}
	return "absent"
}

// held is what owner holds in the namespace, as a plan names targets, and
// the physical id its record names.
func (e *env) held(owner provision.Owner) (string, string) {
	e.t.Helper()
	st, err := provision.New(e.tbl.DB, e.tbl.Name, provision.Options{}).ReadState(e.ctx, e.ns, owner)
	if err != nil {
		e.t.Fatal(err)
	}
	parts := make([]string, len(st.Targets))
	for i, t := range st.Targets {
		parts[i] = t.String()
	}
	return strings.Join(parts, "; "), st.PhysicalID
}

// A NamespaceId that was never registered is FAILED before any write, and
// the reason names both the NamespaceId and the Namespace the properties
// name.
func TestUnregisteredNamespaceID(t *testing.T) {
	e := newEnv(t)
	const never = "NeverRegd01"
	e.proxy.ResetStats()
	resp := e.invoke(e.event("cfn-limits-create.json", func(ev map[string]any) {
		ev["ResourceProperties"].(map[string]any)["NamespaceId"] = never
	}))
	if resp.Status != cfn.StatusFailed || !strings.Contains(resp.Reason, `"`+never+`"`) || !strings.Contains(resp.Reason, `"tenant-alpha"`) {
		t.Fatalf("%+v", resp)
	}
	if resp.PhysicalResourceID != customresource.FailedPhysicalID {
		t.Fatalf("physical id %q: nothing was written, so there is none", resp.PhysicalResourceID)
	}
	if w := e.proxy.Writes(); w != "" {
		t.Fatalf("the refused request wrote %s", w)
	}
}

// A Delete whose physical id names another resource than the request's
// own stack and logical id — another stack's, or another logical id's of
// the same stack — answers SUCCESS (skipped) and writes nothing: neither
// the resource the id names nor the one that sent the request loses
// anything.
func TestDeleteOfAnotherResourcesID(t *testing.T) {
	e := newEnv(t)
	a := e.invoke(e.event("cfn-limits-create.json", nil))
	b := e.invoke(e.event("cfn-limits-create.json", with(as("tenant-beta-limits", "TenantLimits", "beta-create"), resources(map[string]string{"claude": "5"}))))
	c := e.invoke(e.event("cfn-limits-create.json", with(as("tenant-alpha-limits", "OtherLimits", "other-create"), resources(map[string]string{"mistral": "7"}))))
	for _, r := range []cfn.Response{a, b, c} {
		if r.Status != cfn.StatusSuccess {
			t.Fatalf("create %+v", r)
		}
	}
	owners := map[string]provision.Owner{
		"a": sampleOwner,
		"b": {Stack: "tenant-beta-limits", Name: "TenantLimits"},
		"c": {Stack: "tenant-alpha-limits", Name: "OtherLimits"},
	}
	before := map[string]string{}
	for k, o := range owners {
		before[k], _ = e.held(o)
	}
	cases := []struct {
		name, stack, logical, id string
	}{
		{"another stack's request with a's id", "tenant-beta-limits", "TenantLimits", a.PhysicalResourceID},
		{"another logical id's request with a's id", "tenant-alpha-limits", "OtherLimits", a.PhysicalResourceID},
		{"a's request with another stack's id", "tenant-alpha-limits", "TenantLimits", b.PhysicalResourceID},
		{"a's request with another logical id's id", "tenant-alpha-limits", "TenantLimits", c.PhysicalResourceID},
	}
	for _, tc := range cases {
		e.proxy.ResetStats()
		resp := e.invoke(e.event("cfn-limits-delete.json", with(as(tc.stack, tc.logical, "delete-"+tc.logical), physicalID(tc.id))))
		if resp.Status != cfn.StatusSuccess || resp.PhysicalResourceID != tc.id || resp.Data["Status"] != "skipped" {
			t.Fatalf("%s: %+v", tc.name, resp)
		}
		if w := e.proxy.Writes(); w != "" {
			t.Fatalf("%s: wrote %s", tc.name, w)
		}
	}
	for k, o := range owners {
		if got, _ := e.held(o); got != before[k] {
			t.Errorf("%s holds %q, held %q", k, got, before[k])
		}
	}
	if got := e.rpm("gpt-4") + " " + e.rpm("claude") + " " + e.rpm("mistral"); got != "100 5 7" {
		t.Fatalf("limits after the deletes: %s", got)
	}
}

// Moving a namespace's limits to another stack through CloudFormation: the
// old stack's resource consents (AllowTakeOverBy, an Update of its stack),
// the new stack's resource names it in TakeOverFrom and takes what it
// names; the old stack's Delete then removes only what did not move, and
// the limits that moved stay in force, held by the new resource, whose own
// Delete removes them. Without the consent, the take-over is refused.
func TestTakeOverFromThroughCloudFormation(t *testing.T) {
	e := newEnv(t)
	if resp := e.invoke(e.event("cfn-limits-create.json", nil)); resp.Status != cfn.StatusSuccess {
		t.Fatalf("create %+v", resp)
	}
	beta := provision.Owner{Stack: "tenant-beta-limits", Name: "TenantLimits"}
	// The new stack declares the Update sample's limits (gpt-4 at 200, no
	// gpt-3.5) and takes them over.
	takeOver := with(as(beta.Stack, beta.Name, "beta-create"), func(ev map[string]any) {
		props := e.eventProps("cfn-limits-update.json")
		props["TakeOverFrom"] = "tenant-alpha-limits/TenantLimits"
		ev["ResourceProperties"] = props
	})
	refused := e.invoke(e.event("cfn-limits-create.json", takeOver))
	if refused.Status != cfn.StatusFailed || !strings.Contains(refused.Reason, "has not consented") {
		t.Fatalf("a take-over without consent: %+v", refused)
	}
	consent := e.invoke(e.event("cfn-limits-update.json", func(ev map[string]any) {
		props := e.eventProps("cfn-limits-create.json")
		props["AllowTakeOverBy"] = []any{"tenant-beta-limits/TenantLimits"}
		ev["ResourceProperties"], ev["OldResourceProperties"] = props, e.eventProps("cfn-limits-create.json")
	}))
	if consent.Status != cfn.StatusSuccess || consent.PhysicalResourceID != e.sampleID() {
		t.Fatalf("the old stack's consent %+v", consent)
	}
	moved := e.invoke(e.event("cfn-limits-create.json", takeOver))
	if moved.Status != cfn.StatusSuccess || moved.Data["TakenOver"] != "4" ||
		!strings.HasPrefix(moved.PhysicalResourceID, e.tbl.Name+"/"+e.ns+"/limits/tenant-beta-limits/TenantLimits/") {
		t.Fatalf("takeover %+v", moved)
	}
	if got := e.rpm("gpt-4"); got != "200" {
		t.Fatalf("gpt-4 rpm %s after the takeover", got)
	}
	if got, _ := e.held(sampleOwner); got != "gpt-3.5; api-key-1/gpt-3.5" {
		t.Fatalf("the old resource holds %q", got)
	}

	// The old resource is removed from its stack.
	old := e.invoke(e.event("cfn-limits-delete.json", nil))
	if old.Status != cfn.StatusSuccess || old.Data["Status"] != "applied" || old.Data["Deleted"] != "2" {
		t.Fatalf("old delete %+v", old)
	}
	if got := e.rpm("gpt-4") + " " + e.rpm("gpt-3.5"); got != "200 absent" {
		t.Fatalf("after the old resource's delete: gpt-4 %s", got)
	}
	if l, _ := e.store.GetEntityLimits(e.ctx, e.ns, "api-key-1", "gpt-4"); len(l) != 1 {
		t.Fatal("the old resource's delete removed an entity limit that moved")
	}
	if got, _ := e.held(sampleOwner); got != "" {
		t.Fatalf("the old resource still holds %q", got)
	}
	got, id := e.held(beta)
	if got != "system; gpt-4; api-key-1/gpt-4; api-key-2/_default_" || id != moved.PhysicalResourceID {
		t.Fatalf("the new resource holds %q as %s", got, id)
	}

	del := e.invoke(e.event("cfn-limits-delete.json", with(as(beta.Stack, beta.Name, "beta-delete"), physicalID(moved.PhysicalResourceID))))
	if del.Status != cfn.StatusSuccess || del.Data["Deleted"] != "4" || e.rpm("gpt-4") != "absent" {
		t.Fatalf("new delete %+v", del)
	}
}

// legacyNamespace lays the namespace out as an earlier provisioner left it
// after the sample Create: the config items, and a state record (R10)
// naming them, with no owner record nor claim.
func (e *env) legacyNamespace() {
	e.t.Helper()
	p := provision.New(e.tbl.DB, e.tbl.Name, provision.Options{Logger: slog.New(slog.DiscardHandler)})
	m, err := manifest.FromProperties(e.eventProps("cfn-limits-create.json"))
	if err != nil {
		e.t.Fatal(err)
	}
	setup := provision.Owner{Name: "setup"}
	if _, err := p.Apply(e.ctx, e.ns, m, provision.Request{Owner: setup}); err != nil {
		e.t.Fatal(err)
	}
	st, err := p.ReadState(e.ctx, e.ns, setup)
	if err != nil {
		e.t.Fatal(err)
	}
	out, err := e.tbl.DB.Query(e.ctx, &dynamodb.QueryInput{
		TableName: aws.String(e.tbl.Name), KeyConditionExpression: aws.String("#0 = :0"),
		ExpressionAttributeNames:  map[string]string{"#0": schema.AttrPK},
		ExpressionAttributeValues: map[string]types.AttributeValue{":0": schema.Str(schema.ProvisionerPK(e.ns))},
	})
	if err != nil {
		e.t.Fatal(err)
	}
	for _, it := range out.Items {
		if _, err := e.tbl.DB.DeleteItem(e.ctx, &dynamodb.DeleteItemInput{TableName: aws.String(e.tbl.Name),
			Key: map[string]types.AttributeValue{schema.AttrPK: it[schema.AttrPK], schema.AttrSK: it[schema.AttrSK]}}); err != nil {
			e.t.Fatal(err)
		}
	}
	r10 := schema.ProvisionerStateItemKeys(e.ns).Item()
	var system bool
	var res []types.AttributeValue
	ents := map[string]types.AttributeValue{}
	for _, t := range st.Targets {
		switch t.Kind {
		case manifest.KindSystem:
			system = true
		case manifest.KindResource:
			res = append(res, schema.Str(t.Resource))
		default:
			l, _ := ents[t.Entity].(*types.AttributeValueMemberL)
			if l == nil {
				l = &types.AttributeValueMemberL{}
				ents[t.Entity] = l
			}
			l.Value = append(l.Value, schema.Str(t.Resource))
		}
	}
	r10["managed_system"] = &types.AttributeValueMemberBOOL{Value: system}
	r10["managed_resources"] = &types.AttributeValueMemberL{Value: res}
	r10["managed_entities"] = &types.AttributeValueMemberM{Value: ents}
	r10["applied_hash"] = schema.Str(m.Hash())
	if _, err := e.tbl.DB.PutItem(e.ctx, &dynamodb.PutItemInput{TableName: aws.String(e.tbl.Name), Item: r10}); err != nil {
		e.t.Fatal(err)
	}
}

// A resource deployed by an earlier provisioner has the legacy physical id
// `{table}/{ns}/limits-provisioner`. Its next Update adopts the legacy
// state and answers a new id of the new form; CloudFormation, seeing the id
// change, then deletes the legacy id, which changes nothing: the limits of
// the Update stay in force, held by the resource under its new id, whose
// own Delete later removes them.
func TestLegacyIDMovesToTheNewForm(t *testing.T) {
	e := newEnv(t)
	e.legacyNamespace()
	legacyID := e.tbl.Name + "/" + e.ns + "/limits-provisioner"

	up := e.invoke(e.event("cfn-limits-update.json", physicalID(legacyID)))
	prefix := e.tbl.Name + "/" + e.ns + "/limits/tenant-alpha-limits/TenantLimits/"
	if up.Status != cfn.StatusSuccess || !strings.HasPrefix(up.PhysicalResourceID, prefix) || up.Data["Updated"] != "1" || up.Data["Deleted"] != "2" {
		t.Fatalf("update of the legacy resource %+v", up)
	}
	out, err := e.tbl.DB.GetItem(e.ctx, &dynamodb.GetItemInput{TableName: aws.String(e.tbl.Name),
		Key: schema.ProvisionerStateKey(e.ns).AttributeValues(), ConsistentRead: aws.Bool(true)})
	if err != nil || out.Item != nil {
		t.Fatalf("R10 after its adoption: %v %v", out.Item, err)
	}

	// CloudFormation's cleanup of the replaced id.
	e.proxy.ResetStats()
	del := e.invoke(e.event("cfn-limits-delete.json", physicalID(legacyID)))
	if del.Status != cfn.StatusSuccess || del.PhysicalResourceID != legacyID || del.Data["Status"] != "skipped" {
		t.Fatalf("delete of the legacy id %+v", del)
	}
	if w := e.proxy.Writes(); w != "" {
		t.Fatalf("the delete of the legacy id wrote %s", w)
	}
	if got := e.rpm("gpt-4") + " " + e.rpm("gpt-3.5"); got != "200 absent" {
		t.Fatalf("limits in force after the cleanup: gpt-4 %s", got)
	}
	sys, _, err := e.store.GetSystemLimits(e.ctx, e.ns)
	if err != nil || len(sys) != 1 || sys[0].Capacity != 1000 {
		t.Fatalf("system %v %v", sys, err)
	}
	if l, _ := e.store.GetEntityLimits(e.ctx, e.ns, "api-key-1", "gpt-4"); len(l) != 1 {
		t.Fatal("api-key-1/gpt-4 lost")
	}
	got, id := e.held(sampleOwner)
	if got != "system; gpt-4; api-key-1/gpt-4; api-key-2/_default_" || id != up.PhysicalResourceID {
		t.Fatalf("the resource holds %q as %s, want the Update's targets as %s", got, id, up.PhysicalResourceID)
	}

	final := e.invoke(e.event("cfn-limits-delete.json", physicalID(up.PhysicalResourceID)))
	if final.Status != cfn.StatusSuccess || final.Data["Deleted"] != "4" || e.rpm("gpt-4") != "absent" {
		t.Fatalf("delete of the new id %+v", final)
	}
	if sys, _, _ := e.store.GetSystemLimits(e.ctx, e.ns); len(sys) != 0 {
		t.Fatalf("system limits left: %v", sys)
	}
}

// Create, Update and Delete answer the Python provisioner's lower-case
// Data keys beside ours, with the same values, so that a template's
// `!GetAtt Limits.created` (status, updated, deleted) keeps resolving.
func TestUpstreamDataKeys(t *testing.T) {
	e := newEnv(t)
	steps := []struct {
		file string
		want map[string]string // ours → value
	}{
		{"cfn-limits-create.json", map[string]string{"Status": "applied", "Created": "6", "Updated": "0", "Deleted": "0"}},
		{"cfn-limits-update.json", map[string]string{"Status": "applied", "Created": "0", "Updated": "1", "Deleted": "2"}},
		{"cfn-limits-delete.json", map[string]string{"Status": "applied", "Created": "0", "Updated": "0", "Deleted": "4"}},
	}
	for _, s := range steps {
		resp := e.invoke(e.event(s.file, nil))
		if resp.Status != cfn.StatusSuccess {
			t.Fatalf("%s: %+v", s.file, resp)
		}
		if _, size := e.cf.last(t); size > customresource.MaxBody {
			t.Fatalf("%s: %d-byte body", s.file, size)
		}
		for ours, v := range s.want {
			upstream := strings.ToLower(ours)
			if resp.Data[ours] != v || resp.Data[upstream] != v {
				t.Errorf("%s: Data[%s] = %v, Data[%s] = %v, want both %s", s.file, ours, resp.Data[ours], upstream, resp.Data[upstream], v)
			}
		}
	}
}

// auditPanics is a DynamoDB client whose first audit event write panics:
// a panic on one of an apply's goroutines cannot be caused for real.
type auditPanics struct {
	provision.DB
	fired atomic.Bool
}

func (p *auditPanics) PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	if pk, ok := in.Item[schema.AttrPK].(*types.AttributeValueMemberS); ok && strings.Contains(pk.Value, "/AUDIT#") && p.fired.CompareAndSwap(false, true) {
		panic("injected")
	}
	return p.DB.PutItem(ctx, in, o...)
}

// A panic on an apply's audit worker (a goroutine the handler's own
// recovery does not cover) is answered FAILED with the real physical id
// and logged with its stack; CloudFormation's rollback, the Delete of that
// id, leaves the namespace as it was.
func TestPanicInAnApplyWorkerIsFailed(t *testing.T) {
	e := newEnv(t)
	db := &auditPanics{DB: e.proxy.DynamoDB(func(o *dynamodb.Options) { o.RetryMaxAttempts = 1 })}
	log := slog.New(slog.NewJSONHandler(e.logs, nil))
	e.h = handler.New(db, handler.Settings{Table: e.tbl.Name, Clock: func() time.Time { return t0 },
		Respond: customresource.Options{Backoff: time.Millisecond, Logger: log}}, log)
	resp := e.invoke(e.event("cfn-limits-create.json", nil))
	if !db.fired.Load() {
		t.Fatal("the panic was not injected")
	}
	if resp.Status != cfn.StatusFailed || resp.PhysicalResourceID != e.sampleID() || resp.Reason != "provision: panic: injected" {
		t.Fatalf("%+v", resp)
	}
	if logs := e.logs.String(); !strings.Contains(logs, "a worker panicked") || !strings.Contains(logs, "auditPanics") {
		t.Fatalf("the panic is not logged with its stack: %s", logs)
	}
	if e.rpm("gpt-4") != "100" {
		t.Fatal("the config was not written before the panic: the rollback below proves nothing")
	}
	if del := e.invoke(e.event("cfn-limits-delete.json", nil)); del.Status != cfn.StatusSuccess || del.Data["Status"] != "applied" {
		t.Fatalf("rollback %+v", del)
	}
	if got := e.rpm("gpt-4") + " " + e.rpm("gpt-3.5"); got != "absent absent" {
		t.Fatalf("after the rollback: %s", got)
	}
	if sys, _, _ := e.store.GetSystemLimits(e.ctx, e.ns); len(sys) != 0 {
		t.Fatalf("system limits left: %v", sys)
	}
	if got, _ := e.held(sampleOwner); got != "" {
		t.Fatalf("the resource still holds %q", got)
	}
}

// TestAnotherStackOfTheSameName: a request with the sample's stack name,
// logical id and physical id from another stack (StackId) — an attacker's
// stack of the same name, or the stack created again after a deletion the
// provisioner never saw — changes nothing: its Delete is answered SUCCESS
// with nothing released (a Delete never wedges a stack), its Update FAILED
// naming the stack that holds the targets.
func TestAnotherStackOfTheSameName(t *testing.T) {
	e := newEnv(t)
	if resp := e.invoke(e.event("cfn-limits-create.json", nil)); resp.Status != cfn.StatusSuccess {
		t.Fatalf("create %+v", resp)
	}
	before, _ := e.held(sampleOwner)
	namesake := func(ev map[string]any) {
		ev["StackId"] = "arn:aws:cloudformation:us-east-1:999999999999:stack/tenant-alpha-limits/another-guid"
	}
	e.proxy.ResetStats()
	del := e.invoke(e.event("cfn-limits-delete.json", namesake))
	if del.Status != cfn.StatusSuccess || del.Data["Status"] != "skipped" {
		t.Fatalf("the namesake's Delete %+v", del)
	}
	upd := e.invoke(e.event("cfn-limits-update.json", namesake))
	if upd.Status != cfn.StatusFailed || !strings.Contains(upd.Reason, "is held by the stack arn:aws:cloudformation:us-east-1:123456789012:stack/tenant-alpha-limits/") {
		t.Fatalf("the namesake's Update %+v", upd)
	}
	if w := e.proxy.Writes(); w != "" {
		t.Fatalf("the namesake's requests wrote %s", w)
	}
	if got, _ := e.held(sampleOwner); got != before {
		t.Fatalf("the sample holds %q, held %q", got, before)
	}
}

// TestHugeValuesAreNotEchoed: a Create whose manifest holds a 5 MB bad
// value, a 5 MB unknown field and thousands of bad entries answers FAILED
// with a reason, a log line and a function result of a few kilobytes
// each, the cuts marked; a direct invocation's error too.
func TestHugeValuesAreNotEchoed(t *testing.T) {
	e := newEnv(t)
	huge := strings.Repeat("9", 5<<20)
	many := map[string]any{}
	for i := range 5000 {
		many[fmt.Sprintf("r%04d", i)] = map[string]any{"Limits": map[string]any{"rpm": map[string]any{"Capacity": "-1"}}}
	}
	many["gpt-4"] = map[string]any{"Limits": map[string]any{"rpm": map[string]any{"Capacity": huge}}}
	edit := func(ev map[string]any) {
		props := ev["ResourceProperties"].(map[string]any)
		props["Resources"] = many
		props[strings.Repeat("X", 5<<20)] = "unknown"
	}
	raw := e.event("cfn-limits-create.json", edit)
	res, err := e.h.Invoke(e.ctx, raw)
	if err != nil {
		t.Fatal(err)
	}
	resp, size := e.cf.last(t)
	if resp.Status != cfn.StatusFailed || !strings.Contains(resp.Reason, "…[cut") {
		t.Fatalf("the answer: %s %.300s", resp.Status, resp.Reason)
	}
	if size > customresource.MaxBody {
		t.Errorf("the response body has %d bytes", size)
	}
	result, _ := json.Marshal(res)
	if len(result) > 2*customresource.MaxBody {
		t.Errorf("the function's result has %d bytes", len(result))
	}
	for _, line := range strings.Split(e.logs.String(), "\n") {
		if len(line) > 3*customresource.MaxBody {
			t.Errorf("a log line of %d bytes: %.200s", len(line), line)
		}
	}
	e.logs.Reset()
	_, err = e.h.Invoke(e.ctx, []byte(`{"action":"apply","manifest":{"namespace":"tenant-alpha","resources":{"gpt-4":{"limits":{"rpm":{"capacity":"`+huge+`"}}}}}}`))
	if err == nil || len(err.Error()) > customresource.MaxBody || !strings.Contains(err.Error(), "…[cut") {
		t.Fatalf("a direct invocation's error: %d bytes: %.300v", len(fmt.Sprint(err)), err)
	}
}
