package handler_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/cfn"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/zae-limiter/zae-limiter-go/core/config"
	"github.com/zae-limiter/zae-limiter-go/core/control"
	"github.com/zae-limiter/zae-limiter-go/core/limit"
	"github.com/zae-limiter/zae-limiter-go/core/provision"
	"github.com/zae-limiter/zae-limiter-go/core/version"
	"github.com/zae-limiter/zae-limiter-go/functions/provisioner/customresource"
	"github.com/zae-limiter/zae-limiter-go/functions/provisioner/handler"
	"github.com/zae-limiter/zae-limiter-go/internal/ddbtest"
	"github.com/zae-limiter/zae-limiter-go/internal/faultproxy"
)

func TestMain(m *testing.M) { ddbtest.Main(m) }

var t0 = time.Date(2026, 12, 31, 23, 59, 30, 0, time.UTC)

// cloudformation is CloudFormation's side of the protocol: a local HTTP
// server that records every response PUT and answers with its script.
type cloudformation struct {
	mu       sync.Mutex
	statuses []int
	got      []cfn.Response
	sizes    []int
	srv      *httptest.Server
}

func newCloudFormation(t *testing.T, statuses ...int) *cloudformation {
	c := &cloudformation{statuses: statuses}
	c.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var resp cfn.Response
		_ = json.Unmarshal(body, &resp)
		c.mu.Lock()
		defer c.mu.Unlock()
		c.got, c.sizes = append(c.got, resp), append(c.sizes, len(body))
		status := http.StatusOK
		if len(c.statuses) > 0 {
			status, c.statuses = c.statuses[0], c.statuses[1:]
		}
		w.WriteHeader(status)
	}))
	t.Cleanup(c.srv.Close)
	return c
}

func (c *cloudformation) last(t *testing.T) (cfn.Response, int) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.got) == 0 {
		t.Fatal("no response was sent")
	}
	return c.got[len(c.got)-1], c.sizes[len(c.sizes)-1]
}

type env struct {
	t     *testing.T
	ctx   context.Context
	tbl   *ddbtest.Table
	proxy *faultproxy.Proxy
	store *config.Store
	ops   *control.Controls
	ns    string
	cf    *cloudformation
	logs  *bytes.Buffer
	h     *handler.Handler
}

func newEnv(t *testing.T) *env {
	t.Helper()
	e := &env{t: t, ctx: context.Background(), tbl: ddbtest.NewTable(t), logs: &bytes.Buffer{}}
	e.proxy = faultproxy.Start(t, e.tbl.Endpoint)
	e.store = config.NewStore(e.tbl.DB, e.tbl.Name, config.WithCacheTTL(-1))
	e.ops = control.New(e.tbl.DB, e.tbl.Name, control.Options{})
	var err error
	if e.ns, err = e.register("tenant-alpha"); err != nil {
		t.Fatal(err)
	}
	e.cf = newCloudFormation(t)
	e.h = e.handler(e.proxy.DynamoDB(func(o *dynamodb.Options) { o.RetryMaxAttempts = 1 }))
	return e
}

// register registers a namespace through the operator API.
func (e *env) register(name string) (string, error) {
	return e.ops.RegisterNamespace(e.ctx, name, "test")
}

func (e *env) handler(db provision.DB) *handler.Handler {
	log := slog.New(slog.NewJSONHandler(e.logs, nil))
	return handler.New(db, handler.Settings{Table: e.tbl.Name, Clock: func() time.Time { return t0 },
		Respond: customresource.Options{Backoff: time.Millisecond, Logger: log}}, log)
}

// event reads a sample from events/ and points it at this test's table,
// namespace and CloudFormation.
func (e *env) event(name string, edit func(ev map[string]any)) []byte {
	e.t.Helper()
	raw, err := os.ReadFile("../../../events/" + name)
	if err != nil {
		e.t.Fatal(err)
	}
	raw = bytes.ReplaceAll(raw, []byte("TABLE/NAMESPACE_ID"), []byte(e.tbl.Name+"/"+e.ns))
	var ev map[string]any
	if err := json.Unmarshal(raw, &ev); err != nil {
		e.t.Fatal(err)
	}
	if _, ok := ev["ResponseURL"]; ok {
		ev["ResponseURL"] = e.cf.srv.URL + "/response?X-Amz-Signature=test"
	}
	if props, ok := ev["ResourceProperties"].(map[string]any); ok && ev["ResourceType"] == "Custom::ZaeLimiterVersion" {
		props["TableName"] = e.tbl.Name
	}
	if edit != nil {
		edit(ev)
	}
	out, _ := json.Marshal(ev)
	return out
}

// sampleOwner is the resource of the sample events (events/cfn-limits-*.json).
var sampleOwner = provision.Owner{Stack: "tenant-alpha-limits", Name: "TenantLimits"}

// sampleID is the physical id the sample Create gives, which the sample
// Update and Delete carry.
func (e *env) sampleID() string {
	return e.tbl.Name + "/" + e.ns + "/limits/tenant-alpha-limits/TenantLimits/90559d8d3032"
}

func (e *env) invoke(raw []byte) cfn.Response {
	e.t.Helper()
	if _, err := e.h.Invoke(e.ctx, raw); err != nil {
		e.t.Fatalf("invoke: %v", err)
	}
	resp, _ := e.cf.last(e.t)
	return resp
}

// Create, Update and Delete of the sample limits resource: the responses,
// and the table after each.
func TestCreateUpdateDelete(t *testing.T) {
	e := newEnv(t)
	if _, err := e.ops.SetResourceLimits(e.ctx, e.ns, "unmanaged", []limit.Limit{limit.PerMinute("rpm", 7)}, "test"); err != nil {
		t.Fatal(err)
	}
	resp := e.invoke(e.event("cfn-limits-create.json", nil))
	wantID := e.sampleID()
	if resp.Status != cfn.StatusSuccess || resp.PhysicalResourceID != wantID || resp.Data["Created"] != "6" ||
		resp.Data["ErrorCount"] != "0" || !strings.HasPrefix(fmt.Sprint(resp.Data["AppliedHash"]), "sha256:") {
		t.Fatalf("create: %+v", resp)
	}
	if l, _ := e.store.GetResourceLimits(e.ctx, e.ns, "gpt-4"); len(l) != 2 || l[0].Capacity != 100 {
		t.Fatalf("gpt-4 %v", l)
	}

	resp = e.invoke(e.event("cfn-limits-update.json", nil))
	if resp.Status != cfn.StatusSuccess || resp.PhysicalResourceID != wantID || resp.Data["Updated"] != "1" || resp.Data["Deleted"] != "2" {
		t.Fatalf("update: %+v", resp)
	}
	if l, _ := e.store.GetResourceLimits(e.ctx, e.ns, "gpt-4"); l[0].Capacity != 200 {
		t.Fatalf("gpt-4 after update %v", l)
	}
	if _, err := e.store.GetResourceLimits(e.ctx, e.ns, "gpt-3.5"); err != nil {
		t.Fatal(err)
	}

	// The same Update again writes nothing.
	resp = e.invoke(e.event("cfn-limits-update.json", nil))
	if resp.Data["Status"] != "unchanged" {
		t.Fatalf("re-update: %+v", resp)
	}

	resp = e.invoke(e.event("cfn-limits-delete.json", nil))
	if resp.Status != cfn.StatusSuccess || resp.PhysicalResourceID != wantID {
		t.Fatalf("delete: %+v", resp)
	}
	if l, _ := e.store.GetResourceLimits(e.ctx, e.ns, "gpt-4"); len(l) != 0 {
		t.Fatalf("gpt-4 after delete %v", l)
	}
	if l, _ := e.store.GetResourceLimits(e.ctx, e.ns, "unmanaged"); len(l) != 1 {
		t.Fatal("the unmanaged resource did not survive")
	}
}

// A Delete never wedges a stack: `failed`, an id this provisioner never
// gave, and a namespace that no longer resolves answer SUCCESS, changing
// nothing.
func TestDeleteNeverWedges(t *testing.T) {
	e := newEnv(t)
	e.invoke(e.event("cfn-limits-create.json", nil))
	for _, id := range []string{customresource.FailedPhysicalID, "something-else", e.tbl.Name + "/AAAAAAAAAAA/limits-provisioner"} {
		resp := e.invoke(e.event("cfn-limits-delete.json", func(ev map[string]any) { ev["PhysicalResourceId"] = id }))
		if resp.Status != cfn.StatusSuccess || resp.PhysicalResourceID != id || resp.Data["Status"] != "skipped" {
			t.Fatalf("delete of %q: %+v", id, resp)
		}
	}
	if l, _ := e.store.GetResourceLimits(e.ctx, e.ns, "gpt-4"); len(l) != 2 {
		t.Fatal("a skipped delete changed config")
	}
}

// A bad manifest is FAILED with every bad field named, and nothing written.
func TestBadManifestNamesEveryField(t *testing.T) {
	e := newEnv(t)
	resp := e.invoke(e.event("cfn-limits-create.json", func(ev map[string]any) {
		props := ev["ResourceProperties"].(map[string]any)
		res := props["Resources"].(map[string]any)
		res["gpt-4"].(map[string]any)["Limits"].(map[string]any)["rpm"].(map[string]any)["Capacity"] = "lots"
		res["gpt-3.5"].(map[string]any)["Disabled"] = "maybe"
		props["Entities"].(map[string]any)["api-key-1"].(map[string]any)["Resources"].(map[string]any)["gpt-4"].(map[string]any)["Limits"].(map[string]any)["rpm"].(map[string]any)["ResetAfter"] = "60"
	}))
	if resp.Status != cfn.StatusFailed || resp.PhysicalResourceID != customresource.FailedPhysicalID {
		t.Fatalf("%+v", resp)
	}
	for _, want := range []string{
		`Resources.gpt-4.Limits.rpm.Capacity: "lots" is not an integer`,
		`Resources.gpt-3.5.Disabled: "maybe" is not true, false or bypass`,
		`Entities.api-key-1.Resources.gpt-4.Limits.rpm.ResetAfter: is not a field: a session window's length is ResetAfterSeconds`,
	} {
		if !strings.Contains(resp.Reason, want) {
			t.Errorf("reason lacks %q: %s", want, resp.Reason)
		}
	}
	if st, _ := provision.New(e.tbl.DB, e.tbl.Name, provision.Options{}).ReadState(e.ctx, e.ns, sampleOwner); st.Found || len(st.Targets) > 0 {
		t.Fatal("a refused manifest wrote the state record")
	}
}

// A Create declaring a session quota (ResetAfterSeconds) applies it past
// the version gate (the table's readers are this build's): the quota is
// stored under the hidden w_ prefix with its window length in seconds, as
// the Python provisioner stores it (docs/decisions.md P55).
func TestSessionQuotaCreate(t *testing.T) {
	e := newEnv(t)
	resp := e.invoke(e.event("cfn-limits-create.json", func(ev map[string]any) {
		props := ev["ResourceProperties"].(map[string]any)
		props["Entities"].(map[string]any)["api-key-1"].(map[string]any)["Resources"].(map[string]any)["gpt-4"].(map[string]any)["Limits"].(map[string]any)["session"] =
			map[string]any{"Capacity": "10000", "RefillAmount": "0", "ResetAfterSeconds": "18000"}
	}))
	if resp.Status != cfn.StatusSuccess {
		t.Fatalf("%+v", resp)
	}
	ls, err := e.store.GetEntityLimits(e.ctx, e.ns, "api-key-1", "gpt-4")
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := limit.Find(ls, "session"); !ok || got != limit.Session("session", 10_000, 5*time.Hour) {
		t.Fatalf("stored %+v", ls)
	}
}

// 500 entities: the SUCCESS body and a FAILED body naming 500 bad fields
// both stay within 4,096 bytes.
func TestBodyOfALargeManifest(t *testing.T) {
	e := newEnv(t)
	ents := map[string]any{}
	bad := map[string]any{}
	for i := range 500 {
		id := fmt.Sprintf("api-key-%03d", i)
		ents[id] = map[string]any{"Resources": map[string]any{"gpt-4": map[string]any{"Limits": map[string]any{"rpm": map[string]any{"Capacity": "10"}}}}}
		bad[id] = map[string]any{"Resources": map[string]any{"gpt-4": map[string]any{"Limits": map[string]any{"rpm": map[string]any{"Capacity": "ten"}}}}}
	}
	props := func(entities map[string]any) func(ev map[string]any) {
		return func(ev map[string]any) {
			ev["ResourceProperties"] = map[string]any{"ServiceToken": "x", "Namespace": "tenant-alpha", "Entities": entities}
		}
	}
	resp := e.invoke(e.event("cfn-limits-create.json", props(bad)))
	if _, size := e.cf.last(t); resp.Status != cfn.StatusFailed || size > customresource.MaxBody || !strings.Contains(resp.Reason, "500 problems") {
		t.Fatalf("failed body %d bytes: %.200s", size, resp.Reason)
	}
	resp = e.invoke(e.event("cfn-limits-create.json", props(ents)))
	if _, size := e.cf.last(t); resp.Status != cfn.StatusSuccess || resp.Data["Created"] != "500" || size > customresource.MaxBody {
		t.Fatalf("success body %d bytes: %+v", size, resp)
	}
}

// panicky is a DynamoDB client whose reads panic: a panic in the handler
// cannot be caused for real.
type panicky struct{ provision.DB }

func (panicky) GetItem(context.Context, *dynamodb.GetItemInput, ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	panic("injected")
}

func TestPanicIsFailed(t *testing.T) {
	e := newEnv(t)
	e.h = e.handler(panicky{e.tbl.DB})
	resp := e.invoke(e.event("cfn-limits-create.json", nil))
	if resp.Status != cfn.StatusFailed || resp.Reason != "panic: injected" {
		t.Fatalf("%+v", resp)
	}
}

// A panic in a direct invocation is an error, not a crash of the
// function's process.
func TestInvocationPanicIsAnError(t *testing.T) {
	e := newEnv(t)
	e.h = e.handler(panicky{e.tbl.DB})
	for _, edit := range []func(ev map[string]any){
		nil,
		func(ev map[string]any) { ev["action"] = "apply"; ev["namespace_id"] = e.ns },
	} {
		res, err := e.h.Invoke(e.ctx, e.event("invoke-plan.json", edit))
		var pe *customresource.PanicError
		if !errors.As(err, &pe) || pe.Value != "injected" || res != nil {
			t.Fatalf("%v %v", res, err)
		}
	}
	if !strings.Contains(e.logs.String(), "invocation panicked") || !strings.Contains(e.logs.String(), "goroutine") {
		t.Fatalf("panic not logged with its stack: %s", e.logs.String())
	}
}

// A DynamoDB call that hangs: the request is answered FAILED before the
// Lambda deadline.
func TestDeadlineIsFailedInTime(t *testing.T) {
	e := newEnv(t)
	e.proxy.Add(faultproxy.Rule{Operation: "GetItem", Fault: faultproxy.Hang()})
	log := slog.New(slog.NewJSONHandler(e.logs, nil))
	e.h = handler.New(e.proxy.DynamoDB(), handler.Settings{Table: e.tbl.Name,
		Respond: customresource.Options{Margin: 2 * time.Second, Logger: log}}, log)
	deadline := time.Now().Add(3 * time.Second)
	ctx, cancel := context.WithDeadline(e.ctx, deadline)
	defer cancel()
	if _, err := e.h.Invoke(ctx, e.event("cfn-limits-create.json", nil)); err != nil {
		t.Fatal(err)
	}
	if !time.Now().Before(deadline) {
		t.Fatal("answered after the deadline")
	}
	if resp, _ := e.cf.last(t); resp.Status != cfn.StatusFailed || resp.Reason != customresource.ErrDeadline.Error() {
		t.Fatalf("%+v", resp)
	}
}

// A response that cannot be sent is logged, and the invocation fails so
// that Lambda retries it.
func TestFailedSendIsLogged(t *testing.T) {
	e := newEnv(t)
	e.cf.statuses = []int{500, 500, 500, 500}
	_, err := e.h.Invoke(e.ctx, e.event("cfn-limits-create.json", nil))
	if err == nil {
		t.Fatal("a failed send was not returned")
	}
	if !strings.Contains(e.logs.String(), "custom resource response not sent") {
		t.Fatalf("not logged: %s", e.logs.String())
	}
}

// The version stamp writes lambda_version and schema_version and never
// lowers client_min_version; a version above the deployed code is refused.
func TestVersionStamp(t *testing.T) {
	e := newEnv(t)
	if err := e.store.Ratchet(e.ctx, "0.17.0"); err != nil {
		t.Fatal(err)
	}
	resp := e.invoke(e.event("cfn-version-stamp.json", func(ev map[string]any) {
		ev["ResourceProperties"].(map[string]any)["LambdaVersion"] = "0.16.0"
	}))
	if resp.Status != cfn.StatusSuccess || resp.PhysicalResourceID != e.tbl.Name+"/version-stamp" || resp.Data["ClientMinVersion"] != "0.17.0" {
		t.Fatalf("%+v", resp)
	}
	rec, _, err := e.store.ReadVersion(e.ctx)
	if err != nil || rec.LambdaVersion != "0.16.0" || rec.ClientMinVersion != "0.17.0" || rec.UpdatedBy != "cfn:tenant-alpha-limits" {
		t.Fatalf("record %+v %v", rec, err)
	}
	resp = e.invoke(e.event("cfn-version-stamp.json", func(ev map[string]any) {
		ev["ResourceProperties"].(map[string]any)["LambdaVersion"] = "9.0.0"
	}))
	if resp.Status != cfn.StatusFailed || !strings.Contains(resp.Reason, "newer than the deployed code") {
		t.Fatalf("%+v", resp)
	}
	resp = e.invoke(e.event("cfn-version-stamp.json", func(ev map[string]any) { ev["RequestType"] = "Delete"; ev["PhysicalResourceId"] = "x/version-stamp" }))
	if resp.Status != cfn.StatusSuccess {
		t.Fatalf("%+v", resp)
	}
	if rec, _, _ := e.store.ReadVersion(e.ctx); rec.LambdaVersion != "0.16.0" {
		t.Fatal("delete changed the record")
	}

	// On a table with no record, the stamp creates one at 0.0.0.
	bare := ddbtest.NewBareTable(t)
	e.h = handler.New(bare.DB, handler.Settings{Table: bare.Name, Respond: customresource.Options{Logger: slog.New(slog.NewJSONHandler(io.Discard, nil))}}, slog.New(slog.NewJSONHandler(io.Discard, nil)))
	resp = e.invoke(e.event("cfn-version-stamp.json", func(ev map[string]any) { ev["ResourceProperties"].(map[string]any)["TableName"] = bare.Name }))
	if resp.Status != cfn.StatusSuccess || resp.Data["ClientMinVersion"] != "0.0.0" || resp.Data["LambdaVersion"] != "0.17.0" {
		t.Fatalf("%+v", resp)
	}
}

// The version stamp refuses, before any write, a LambdaVersion above this
// build, a LambdaVersion setting above it, and a SchemaVersion of another
// major than this code's or above it; each refusal names both versions and
// leaves the record as it was. What is at or below them is stamped.
func TestVersionStampRefusals(t *testing.T) {
	e := newEnv(t)
	build, _ := version.Parse(config.BuildVersion)
	schemaV, _ := version.Parse(config.SchemaVersion)
	bump := func(v version.Version, major, minor, patch uint64) string {
		return version.Version{Major: v.Major + major, Minor: v.Minor + minor, Patch: v.Patch + patch}.String()
	}
	props := func(lv, sv string) func(ev map[string]any) {
		return func(ev map[string]any) {
			ev["StackId"] = "arn:aws:cloudformation:us-east-1:123456789012:stack/another-stack/1"
			p := ev["ResourceProperties"].(map[string]any)
			delete(p, "LambdaVersion")
			delete(p, "SchemaVersion")
			if lv != "" {
				p["LambdaVersion"] = lv
			}
			if sv != "" {
				p["SchemaVersion"] = sv
			}
		}
	}
	// The record the refusals must leave alone.
	if r := e.invoke(e.event("cfn-version-stamp.json", nil)); r.Status != cfn.StatusSuccess {
		t.Fatalf("%+v", r)
	}
	if err := e.store.Ratchet(e.ctx, config.BuildVersion); err != nil {
		t.Fatal(err)
	}
	before, _, err := e.store.ReadVersion(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, setting, lv, sv string
		names                 []string
	}{
		{"LambdaVersion far above", "", "9.0.0", "", []string{"9.0.0", config.BuildVersion}},
		{"LambdaVersion a patch above", "", bump(build, 0, 0, 1), "", []string{bump(build, 0, 0, 1), config.BuildVersion}},
		{"LambdaVersion a pre-release above", "", bump(build, 0, 1, 0) + "-rc.1", "", []string{bump(build, 0, 1, 0) + "-rc.1", config.BuildVersion}},
		{"LambdaVersion a PEP 440 dev release above", "", bump(build, 0, 1, 0) + ".dev3", "", []string{bump(build, 0, 1, 0) + ".dev3", config.BuildVersion}},
		{"SchemaVersion of the next major", "", config.BuildVersion, "1.0.0", []string{"1.0.0", config.SchemaVersion}},
		{"SchemaVersion a major above", "", "", bump(schemaV, 1, 0, 0), []string{bump(schemaV, 1, 0, 0), config.SchemaVersion}},
		{"SchemaVersion a minor above", "", "", bump(schemaV, 0, 1, 0), []string{bump(schemaV, 0, 1, 0), config.SchemaVersion}},
		{"SchemaVersion a patch above", "", "", bump(schemaV, 0, 0, 1), []string{bump(schemaV, 0, 0, 1), config.SchemaVersion}},
		{"setting above, property absent", bump(build, 0, 1, 0), "", "", []string{bump(build, 0, 1, 0), config.BuildVersion}},
		{"setting above, property present", bump(build, 0, 1, 0), config.BuildVersion, "", []string{bump(build, 0, 1, 0), config.BuildVersion}},
		{"LambdaVersion does not parse", "", "latest", "", []string{"latest"}},
		{"SchemaVersion does not parse", "", "", "ten", []string{"ten"}},
	}
	log := slog.New(slog.NewJSONHandler(e.logs, nil))
	for _, c := range cases {
		e.h = handler.New(e.tbl.DB, handler.Settings{Table: e.tbl.Name, LambdaVersion: c.setting, Clock: func() time.Time { return t0.Add(time.Hour) },
			Respond: customresource.Options{Backoff: time.Millisecond, Logger: log}}, log)
		resp := e.invoke(e.event("cfn-version-stamp.json", props(c.lv, c.sv)))
		if resp.Status != cfn.StatusFailed {
			t.Errorf("%s: %+v", c.name, resp)
			continue
		}
		for _, v := range c.names {
			if !strings.Contains(resp.Reason, v) {
				t.Errorf("%s: the reason does not name %s: %s", c.name, v, resp.Reason)
			}
		}
		if after, _, err := e.store.ReadVersion(e.ctx); err != nil || after != before {
			t.Errorf("%s: the record changed: %+v → %+v (%v)", c.name, before, after, err)
		}
	}

	// At or below this build and this schema (same major) is stamped, and
	// client_min_version is never lowered.
	for _, c := range []struct{ setting, lv, sv, wantLV, wantSV string }{
		{"", "", "", config.BuildVersion, config.SchemaVersion},
		{"0.16.0", "", "", "0.16.0", config.SchemaVersion},
		{"", config.BuildVersion + "+build.7", "", config.BuildVersion + "+build.7", config.SchemaVersion},
		{"", config.BuildVersion + "-rc.1", "", config.BuildVersion + "-rc.1", config.SchemaVersion},
		{"", "", "0.9.0", config.BuildVersion, "0.9.0"},
	} {
		e.h = handler.New(e.tbl.DB, handler.Settings{Table: e.tbl.Name, LambdaVersion: c.setting, Clock: func() time.Time { return t0 },
			Respond: customresource.Options{Backoff: time.Millisecond, Logger: log}}, log)
		resp := e.invoke(e.event("cfn-version-stamp.json", props(c.lv, c.sv)))
		if resp.Status != cfn.StatusSuccess || resp.Data["LambdaVersion"] != c.wantLV || resp.Data["SchemaVersion"] != c.wantSV ||
			resp.Data["ClientMinVersion"] != config.BuildVersion {
			t.Errorf("%+v: %+v", c, resp)
		}
	}
}

// A CloudFormation request that does not decode is still answered FAILED,
// with the decode error as the reason, when its ResponseURL, StackId,
// RequestId and LogicalResourceId are strings; the invocation returns the
// error as well. Nothing is written.
func TestUndecodableRequestIsAnswered(t *testing.T) {
	e := newEnv(t)
	cases := []struct {
		name, file string
		edit       func(ev map[string]any)
		physicalID string
	}{
		{"ResourceType a number", "cfn-limits-create.json", func(ev map[string]any) { ev["ResourceType"] = 5 }, customresource.FailedPhysicalID},
		{"properties not an object", "cfn-limits-create.json", func(ev map[string]any) { ev["ResourceProperties"] = "Namespace=tenant-alpha" }, customresource.FailedPhysicalID},
		{"properties a list", "cfn-limits-update.json", func(ev map[string]any) { ev["ResourceProperties"] = []any{1} }, e.sampleID()},
		{"RequestType a number", "cfn-limits-delete.json", func(ev map[string]any) { ev["RequestType"] = 3 }, e.sampleID()},
		{"PhysicalResourceId a number", "cfn-limits-update.json", func(ev map[string]any) { ev["PhysicalResourceId"] = 7 }, customresource.FailedPhysicalID},
		{"old properties a number", "cfn-limits-update.json", func(ev map[string]any) { ev["OldResourceProperties"] = 1.5 }, e.sampleID()},
	}
	for _, c := range cases {
		raw := e.event(c.file, c.edit)
		var sent map[string]any
		_ = json.Unmarshal(raw, &sent)
		_, err := e.h.Invoke(e.ctx, raw)
		var ee *handler.EventError
		if !errors.As(err, &ee) || !strings.Contains(err.Error(), "does not decode") {
			t.Fatalf("%s: %v", c.name, err)
		}
		resp, size := e.cf.last(t)
		if resp.Status != cfn.StatusFailed || resp.Reason != err.Error() || resp.PhysicalResourceID != c.physicalID ||
			resp.RequestID != sent["RequestId"] || resp.StackID != sent["StackId"] || resp.LogicalResourceID != sent["LogicalResourceId"] || size > customresource.MaxBody {
			t.Fatalf("%s: %+v", c.name, resp)
		}
	}
	if l, _ := e.store.GetResourceLimits(e.ctx, e.ns, "gpt-4"); len(l) != 0 {
		t.Fatal("an undecodable request wrote")
	}

	// Without a string ResponseURL, StackId, RequestId or LogicalResourceId
	// there is nothing to answer: the error alone.
	e.cf.mu.Lock()
	before := len(e.cf.got)
	e.cf.mu.Unlock()
	for _, key := range []string{"ResponseURL", "StackId", "RequestId", "LogicalResourceId"} {
		for _, v := range []any{5, nil, map[string]any{}} {
			raw := e.event("cfn-limits-create.json", func(ev map[string]any) { ev["ResourceType"] = 5; ev[key] = v })
			var ee *handler.EventError
			if _, err := e.h.Invoke(e.ctx, raw); !errors.As(err, &ee) {
				t.Fatalf("%s %v: %v", key, v, err)
			}
		}
	}
	raw := e.event("cfn-limits-create.json", func(ev map[string]any) { ev["ResourceType"] = 5; delete(ev, "LogicalResourceId") })
	if _, err := e.h.Invoke(e.ctx, raw); err == nil {
		t.Fatal("accepted")
	}
	e.cf.mu.Lock()
	after := len(e.cf.got)
	e.cf.mu.Unlock()
	if after != before {
		t.Fatalf("%d answers to requests that cannot be answered", after-before)
	}

	// The answer keeps the sending rules: a send that fails is logged
	// without the URL's query, and the invocation returns the decode error.
	e.cf.statuses = []int{500, 500, 500, 500}
	raw = e.event("cfn-limits-create.json", func(ev map[string]any) {
		ev["ResourceType"] = 5
		ev["ResponseURL"] = e.cf.srv.URL + "/response?X-Amz-Signature=s3cr3t-s1gnatur3"
	})
	var ee *handler.EventError
	if _, err := e.h.Invoke(e.ctx, raw); !errors.As(err, &ee) {
		t.Fatal(err)
	}
	if !strings.Contains(e.logs.String(), "custom resource response not sent") || strings.Contains(e.logs.String(), "s3cr3t-s1gnatur3") {
		t.Fatalf("logs: %s", e.logs.String())
	}
}

// The direct invocation plans or applies, and answers with the change list.
func TestInvocation(t *testing.T) {
	e := newEnv(t)
	res, err := e.h.Invoke(e.ctx, e.event("invoke-plan.json", nil))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(res)
	if string(b) != `{"status":"planned","changes":[{"action":"create","level":"resource","target":"gpt-4","what":"limits"}]}` {
		t.Fatalf("%s", b)
	}
	if l, _ := e.store.GetResourceLimits(e.ctx, e.ns, "gpt-4"); len(l) != 0 {
		t.Fatal("plan wrote")
	}
	res, err = e.h.Invoke(e.ctx, e.event("invoke-plan.json", func(ev map[string]any) { ev["action"] = "apply"; ev["namespace_id"] = e.ns }))
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := json.Marshal(res); !strings.Contains(string(b), `"status":"applied"`) {
		t.Fatalf("%s", b)
	}
	if l, _ := e.store.GetResourceLimits(e.ctx, e.ns, "gpt-4"); len(l) != 1 {
		t.Fatal("apply did not write")
	}
	for _, bad := range []string{`[]`, `{"action":"destroy","manifest":{}}`, `{"action":"plan"}`, `{"RequestType":"Create"}`} {
		var ee *handler.EventError
		if _, err := e.h.Invoke(e.ctx, []byte(bad)); !errors.As(err, &ee) {
			t.Errorf("%s: %v", bad, err)
		}
	}
}

// RunManifest: the -manifest flag's path, on the sample file.
func TestRunManifest(t *testing.T) {
	e := newEnv(t)
	var out bytes.Buffer
	if err := e.h.RunManifest(e.ctx, "../../../events/limits.yaml", "", false, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), `"status": "planned"`) || strings.Count(out.String(), `"action": "create"`) != 7 {
		t.Fatalf("%s", out.String())
	}
	out.Reset()
	if err := e.h.RunManifest(e.ctx, "../../../events/limits.yaml", e.ns, true, &out); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := e.h.RunManifest(e.ctx, "../../../events/limits.yaml", "", false, &out); err != nil || !strings.Contains(out.String(), `"changes": []`) {
		t.Fatalf("%v %s", err, out.String())
	}
}

// Ownership through CloudFormation (docs/design.md §12): another stack's
// resource naming a held target is FAILED naming the holder, and its
// rollback Delete changes nothing; a logical id renamed within the stack
// takes the targets over, and the old id's Delete removes none of them.
func TestOwnershipThroughCloudFormation(t *testing.T) {
	e := newEnv(t)
	created := e.invoke(e.event("cfn-limits-create.json", nil))
	if created.Status != cfn.StatusSuccess || created.PhysicalResourceID != e.sampleID() || created.Data["created"] != "6" {
		t.Fatalf("create %+v", created)
	}
	other := e.invoke(e.event("cfn-limits-create.json", func(ev map[string]any) {
		ev["StackId"] = "arn:aws:cloudformation:us-east-1:123456789012:stack/tenant-beta-limits/guid"
		ev["RequestId"] = "other-create"
	}))
	if other.Status != cfn.StatusFailed || !strings.Contains(other.Reason, "stack tenant-alpha-limits, logical id TenantLimits") ||
		!strings.HasPrefix(other.PhysicalResourceID, e.tbl.Name+"/"+e.ns+"/limits/tenant-beta-limits/TenantLimits/") {
		t.Fatalf("overlapping create %+v", other)
	}
	rollback := e.invoke(e.event("cfn-limits-delete.json", func(ev map[string]any) {
		ev["StackId"] = "arn:aws:cloudformation:us-east-1:123456789012:stack/tenant-beta-limits/guid"
		ev["PhysicalResourceId"] = other.PhysicalResourceID
	}))
	if rollback.Status != cfn.StatusSuccess || rollback.Data["Status"] != "skipped" {
		t.Fatalf("rollback of the refused create %+v", rollback)
	}
	if l, _ := e.store.GetResourceLimits(e.ctx, e.ns, "gpt-4"); len(l) != 2 {
		t.Fatal("the refused create's rollback removed the owner's limits")
	}

	renamed := e.invoke(e.event("cfn-limits-create.json", func(ev map[string]any) {
		ev["LogicalResourceId"] = "RenamedLimits"
		ev["RequestId"] = "rename-create"
	}))
	if renamed.Status != cfn.StatusSuccess || renamed.Data["TakenOver"] != "6" {
		t.Fatalf("rename %+v", renamed)
	}
	if old := e.invoke(e.event("cfn-limits-delete.json", nil)); old.Status != cfn.StatusSuccess {
		t.Fatalf("old delete %+v", old)
	}
	if l, _ := e.store.GetResourceLimits(e.ctx, e.ns, "gpt-4"); len(l) != 2 {
		t.Fatal("the old logical id's delete removed what the new one took over")
	}
}

// A NamespaceId must be the registered id of the namespace the manifest
// names.
func TestNamespaceIDMustMatch(t *testing.T) {
	e := newEnv(t)
	beta, err := e.register("tenant-beta")
	if err != nil {
		t.Fatal(err)
	}
	resp := e.invoke(e.event("cfn-limits-create.json", func(ev map[string]any) {
		ev["ResourceProperties"].(map[string]any)["NamespaceId"] = beta
	}))
	if resp.Status != cfn.StatusFailed || !strings.Contains(resp.Reason, beta) || !strings.Contains(resp.Reason, `"tenant-beta"`) ||
		!strings.Contains(resp.Reason, `"tenant-alpha"`) {
		t.Fatalf("%+v", resp)
	}
	for _, ns := range []string{e.ns, beta} {
		if l, _ := e.store.GetResourceLimits(e.ctx, ns, "gpt-4"); len(l) != 0 {
			t.Fatalf("namespace %s was written", ns)
		}
	}
}

// An unknown field the resource was already deployed with (a typo the
// Python provisioner ignored) does not fail the Update, nor its rollback;
// a new one does.
func TestUnknownFieldOfTheDeployedProperties(t *testing.T) {
	e := newEnv(t)
	e.invoke(e.event("cfn-limits-create.json", nil))
	typo := func(props map[string]any) map[string]any {
		props["Resources"].(map[string]any)["gpt-4"].(map[string]any)["Limits"].(map[string]any)["rpm"].(map[string]any)["RefilAmount"] = "5"
		return props
	}
	resp := e.invoke(e.event("cfn-limits-update.json", func(ev map[string]any) {
		typo(ev["ResourceProperties"].(map[string]any))
		typo(ev["OldResourceProperties"].(map[string]any))
	}))
	if resp.Status != cfn.StatusSuccess || resp.Data["IgnoredFields"] != "1" {
		t.Fatalf("update with the deployed typo %+v", resp)
	}
	resp = e.invoke(e.event("cfn-limits-update.json", func(ev map[string]any) {
		props := ev["ResourceProperties"].(map[string]any)
		typo(props)
		props["Resources"].(map[string]any)["gpt-4"].(map[string]any)["Limits"].(map[string]any)["tpm"].(map[string]any)["Capacty"] = "5"
		ev["OldResourceProperties"] = typo(e.eventProps("cfn-limits-update.json"))
	}))
	if resp.Status != cfn.StatusFailed || !strings.Contains(resp.Reason, "Capacty: unknown field") || strings.Contains(resp.Reason, "RefilAmount") {
		t.Fatalf("update with a new typo %+v", resp)
	}
}

// The deadline margin after the first write: the FAILED answer carries the
// real physical id, and CloudFormation's rollback (the Delete of that id)
// leaves the namespace as it was — whether the apply hung at its claims or
// at its commit, after every config write.
func TestDeadlineAfterTheFirstWriteRollsBack(t *testing.T) {
	for _, at := range []string{"#CLAIM#", `"applied"`} {
		t.Run(at, func(t *testing.T) {
			e := newEnv(t)
			hang := e.proxy.Add(faultproxy.Rule{Fault: faultproxy.Hang(), Count: 1, Match: func(op string, body []byte) bool {
				return (op == "TransactWriteItems" || op == "PutItem") && strings.Contains(string(body), at)
			}})
			log := slog.New(slog.NewJSONHandler(e.logs, nil))
			e.h = handler.New(e.proxy.DynamoDB(), handler.Settings{Table: e.tbl.Name,
				Respond: customresource.Options{Margin: 2 * time.Second, Logger: log, Backoff: time.Millisecond}}, log)
			ctx, cancel := context.WithDeadline(e.ctx, time.Now().Add(4*time.Second))
			defer cancel()
			if _, err := e.h.Invoke(ctx, e.event("cfn-limits-create.json", nil)); err != nil {
				t.Fatal(err)
			}
			resp, _ := e.cf.last(t)
			if resp.Status != cfn.StatusFailed || resp.PhysicalResourceID != e.sampleID() {
				t.Fatalf("%+v", resp)
			}
			if e.proxy.Fired(hang) != 1 {
				t.Fatal("the hang did not fire")
			}
			e.proxy.Remove(hang)
			if del := e.invoke(e.event("cfn-limits-delete.json", nil)); del.Status != cfn.StatusSuccess || del.Data["Status"] != "applied" {
				t.Fatalf("rollback delete %+v", del)
			}
			for _, r := range []string{"gpt-4", "gpt-3.5"} {
				if l, _ := e.store.GetResourceLimits(e.ctx, e.ns, r); len(l) != 0 {
					t.Fatalf("%s left after the rollback: %v", r, l)
				}
			}
			st, err := provision.New(e.tbl.DB, e.tbl.Name, provision.Options{}).ReadState(e.ctx, e.ns, sampleOwner)
			if err != nil || st.Found || len(st.Targets) > 0 {
				t.Fatalf("state after the rollback %+v %v", st, err)
			}
		})
	}
}

// An Update that moves the resource to another namespace: if it fails, the
// rollback (an Update back to the old properties) releases what the move
// wrote in the new namespace first; if it succeeds, the Delete of the old
// incarnation removes the old namespace's limits and none of the new one's.
func TestMoveToAnotherNamespace(t *testing.T) {
	for _, fail := range []bool{true, false} {
		t.Run(fmt.Sprintf("fail=%v", fail), func(t *testing.T) {
			e := newEnv(t)
			beta, err := e.register("tenant-beta")
			if err != nil {
				t.Fatal(err)
			}
			e.invoke(e.event("cfn-limits-create.json", nil))
			toBeta := func(ev map[string]any) {
				ev["ResourceProperties"].(map[string]any)["Namespace"] = "tenant-beta"
			}
			var cut faultproxy.RuleID
			if fail {
				cut = e.proxy.Add(faultproxy.Rule{Fault: faultproxy.InternalServerError(), Match: func(op string, body []byte) bool {
					return op == "PutItem" && strings.Contains(string(body), `"applied"`) && strings.Contains(string(body), beta)
				}})
			}
			moved := e.invoke(e.event("cfn-limits-update.json", toBeta))
			betaID := e.tbl.Name + "/" + beta + "/limits/tenant-alpha-limits/TenantLimits/"
			if !strings.HasPrefix(moved.PhysicalResourceID, betaID) || (moved.Status == cfn.StatusFailed) != fail {
				t.Fatalf("move %+v", moved)
			}
			if l, _ := e.store.GetResourceLimits(e.ctx, beta, "gpt-4"); len(l) == 0 {
				t.Fatal("the move did not write the new namespace")
			}
			if fail {
				e.proxy.Remove(cut)
				// The rollback: the old properties, the old incarnation.
				back := e.invoke(e.event("cfn-limits-update.json", func(ev map[string]any) {
					ev["OldResourceProperties"] = ev["ResourceProperties"]
					toBeta(map[string]any{"ResourceProperties": ev["OldResourceProperties"]})
					ev["ResourceProperties"] = e.eventProps("cfn-limits-update.json")
				}))
				if back.Status != cfn.StatusSuccess || back.PhysicalResourceID != e.sampleID() {
					t.Fatalf("rollback %+v", back)
				}
				if l, _ := e.store.GetResourceLimits(e.ctx, beta, "gpt-4"); len(l) != 0 {
					t.Fatalf("the rollback left the move's limits in %s: %v", beta, l)
				}
				if l, _ := e.store.GetResourceLimits(e.ctx, e.ns, "gpt-4"); len(l) == 0 {
					t.Fatal("the old namespace lost its limits")
				}
				return
			}
			if del := e.invoke(e.event("cfn-limits-delete.json", nil)); del.Status != cfn.StatusSuccess || del.Data["Status"] != "applied" {
				t.Fatalf("cleanup delete %+v", del)
			}
			if l, _ := e.store.GetResourceLimits(e.ctx, e.ns, "gpt-4"); len(l) != 0 {
				t.Fatal("the old namespace kept its limits")
			}
			if l, _ := e.store.GetResourceLimits(e.ctx, beta, "gpt-4"); len(l) == 0 {
				t.Fatal("the cleanup removed the new namespace's limits")
			}
		})
	}
}

// eventProps is a sample event's ResourceProperties.
func (e *env) eventProps(name string) map[string]any {
	e.t.Helper()
	var ev map[string]any
	if err := json.Unmarshal(e.event(name, nil), &ev); err != nil {
		e.t.Fatal(err)
	}
	return ev["ResourceProperties"].(map[string]any)
}
