package provision_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/config"
	"github.com/zae-limiter/zae-limiter-go/core/internal/capability"
	"github.com/zae-limiter/zae-limiter-go/core/limit"
	"github.com/zae-limiter/zae-limiter-go/core/limiter"
	"github.com/zae-limiter/zae-limiter-go/core/manifest"
	"github.com/zae-limiter/zae-limiter-go/core/provision"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
	"github.com/zae-limiter/zae-limiter-go/internal/clock"
	"github.com/zae-limiter/zae-limiter-go/internal/ddbtest"
	"github.com/zae-limiter/zae-limiter-go/internal/faultproxy"
	"github.com/zae-limiter/zae-limiter-go/internal/verdict"
)

func TestMain(m *testing.M) { ddbtest.Main(m) }

// t0 is the fixed instant of every test: the expected stamp deadlines are
// derived from it, never from the wall clock.
var t0 = time.Date(2028, 2, 29, 0, 30, 0, 0, time.UTC)

// env is one test's stamped table, a namespace, a limiter that creates
// buckets, and a provisioner that talks through a fault proxy.
type env struct {
	t     *testing.T
	ctx   context.Context
	tbl   *ddbtest.Table
	proxy *faultproxy.Proxy
	clk   *clock.Manual
	ns    string
	store *config.Store
	lim   *limiter.Limiter
	prov  *provision.Provisioner
	req   provision.Request
}

func newEnv(t *testing.T) *env {
	t.Helper()
	e := &env{t: t, ctx: context.Background(), tbl: ddbtest.NewTable(t), clk: clock.NewManual(t0)}
	e.proxy = faultproxy.Start(t, e.tbl.Endpoint)
	e.store = config.NewStore(e.tbl.DB, e.tbl.Name, config.WithCacheTTL(-1))
	var err error
	if e.ns, _, err = e.store.Writer(capability.ConfigWrite{}).RegisterNamespace(e.ctx, "tenant-alpha"); err != nil {
		t.Fatal(err)
	}
	if e.lim, err = limiter.New(e.tbl.DB, e.tbl.Name, e.ns, limiter.Options{Clock: e.clk.Now, Rand: func(int) int { return 0 }, ConfigCacheTTL: -1, RejectionCacheTTL: -1}); err != nil {
		t.Fatal(err)
	}
	db := e.proxy.DynamoDB(func(o *dynamodb.Options) { o.RetryMaxAttempts = 1 })
	e.prov = provision.New(db, e.tbl.Name, provision.Options{Clock: e.clk.Now, Logger: quietLogger()})
	e.req = provision.Request{Owner: provision.Owner{Name: "test"}, Principal: "test"}
	return e
}

func (e *env) parse(doc string) *manifest.Manifest {
	e.t.Helper()
	m, err := manifest.Parse([]byte(doc))
	if err != nil {
		e.t.Fatal(err)
	}
	return m
}

func (e *env) apply(doc string) *provision.Result {
	e.t.Helper()
	res, err := e.prov.Apply(e.ctx, e.ns, e.parse(doc), e.req)
	if err != nil {
		e.t.Fatalf("apply: %v", err)
	}
	if len(res.Errors) > 0 {
		e.t.Fatalf("apply errors: %v", res.Errors)
	}
	return res
}

// acquire is the outcome of one acquire of rpm 1: ok, bypass, 403 or 429.
func (e *env) acquire(entity, resource string) string {
	e.t.Helper()
	lease, err := e.lim.Acquire(e.ctx, entity, resource, limiter.Consume{"rpm": 1})
	v := verdict.Of(lease, err)
	if v == "" {
		e.t.Fatalf("acquire %s /%s: %v", entity, resource, err)
	}
	return v
}

func (e *env) item(k schema.Key) map[string]types.AttributeValue {
	e.t.Helper()
	out, err := e.tbl.DB.GetItem(e.ctx, &dynamodb.GetItemInput{TableName: aws.String(e.tbl.Name), Key: k.AttributeValues(), ConsistentRead: aws.Bool(true)})
	if err != nil {
		e.t.Fatal(err)
	}
	return out.Item
}

func (e *env) bucket(entity, resource string) map[string]types.AttributeValue {
	e.t.Helper()
	it := e.item(schema.BucketKey(e.ns, entity, resource, 0))
	if it == nil {
		e.t.Fatalf("no bucket %s/%s", entity, resource)
	}
	return it
}

const tenant = `
namespace: tenant-alpha
system:
  on_unavailable: block
  limits:
    rpm: {capacity: 1000}
resources:
  gpt-4:
    limits:
      rpm: {capacity: 100}
      tpm: {capacity: 20000, refill_amount: 10000, soft: true}
  gpt-3.5:
    disabled: true
entities:
  api-key-1:
    resources:
      gpt-4: {limits: {rpm: {capacity: 5}}, cascade: false}
      gpt-3.5: {disabled: false}
  api-key-2:
    resources:
      _default_: {disabled: bypass}
`

// An apply writes config items of the setters' shape and the state record;
// re-applying the same manifest writes nothing at all; a plan writes
// nothing.
func TestApplyThenReapplyWritesNothing(t *testing.T) {
	e := newEnv(t)
	res := e.apply(tenant)
	if res.Created != 6 || res.Updated != 0 || res.Deleted != 0 || !res.StateWritten {
		t.Fatalf("result %+v", res)
	}
	sys, ou, err := e.store.GetSystemLimits(e.ctx, e.ns)
	if err != nil || !slices.Equal(sys, []limit.Limit{limit.PerMinute("rpm", 1000)}) || ou != config.OnUnavailableBlock {
		t.Fatalf("system %v %v %v", sys, ou, err)
	}
	gpt4, err := e.store.GetResourceLimits(e.ctx, e.ns, "gpt-4")
	if err != nil || len(gpt4) != 2 || !gpt4[1].Soft {
		t.Fatalf("gpt-4 %v %v", gpt4, err)
	}
	if it := e.item(schema.ResourceConfigKey(e.ns, "gpt-3.5")); it[schema.AttrDisabled].(*types.AttributeValueMemberBOOL).Value != true {
		t.Fatalf("gpt-3.5 %v", it)
	}
	ek := e.item(schema.EntityConfigKey(e.ns, "api-key-1", "gpt-4"))
	for _, a := range []string{"GSI3PK", "GSI3SK", "GSI4PK", "GSI4SK", "config_version", "entity_id", "resource", "l_rpm_cp", "cascade"} {
		if _, ok := ek[a]; !ok {
			t.Errorf("entity config lacks %s: %v", a, ek)
		}
	}
	if it := e.item(schema.EntityConfigKey(e.ns, "api-key-2", "_default_")); it[schema.AttrDisabled].(*types.AttributeValueMemberS).Value != "bypass" {
		t.Fatalf("api-key-2 %v", it)
	}
	st := e.item(schema.ProvisionerOwnerKey(e.ns, e.req.Owner.Key()))
	if st["GSI4PK"].(*types.AttributeValueMemberS).Value != e.ns || st["GSI4SK"].(*types.AttributeValueMemberS).Value != e.ns+"/PROVISIONER#" {
		t.Fatalf("owner record GSI4 keys %v", st)
	}
	if st["applied_hash"].(*types.AttributeValueMemberS).Value != e.parse(tenant).Hash() {
		t.Fatal("applied_hash")
	}
	state, err := e.prov.ReadState(e.ctx, e.ns, e.req.Owner)
	if err != nil || targets(state.Targets) != "system; gpt-3.5; gpt-4; api-key-1/gpt-3.5; api-key-1/gpt-4; api-key-2/_default_" ||
		len(state.Pending) != 0 || state.Applying {
		t.Fatalf("state %+v %v", state, err)
	}

	e.proxy.ResetStats()
	again := e.apply(tenant)
	if again.StateWritten || len(again.Changes) != 0 {
		t.Fatalf("re-apply %+v", again)
	}
	if w := e.proxy.Writes(); w != "" {
		t.Fatalf("re-apply wrote: %s", w)
	}

	e.proxy.ResetStats()
	pl, err := e.prov.Plan(e.ctx, e.ns, e.parse(strings.Replace(tenant, "capacity: 5}", "capacity: 6}", 1)), e.req)
	if err != nil {
		t.Fatal(err)
	}
	if len(pl.Changes) != 1 || pl.Changes[0].String() != "update entity api-key-1/gpt-4 (limits)" {
		t.Fatalf("plan %v", pl.Changes)
	}
	if w := e.proxy.Writes(); w != "" {
		t.Fatalf("plan wrote: %s", w)
	}
}

// The order of docs/design.md §12: a resource disabled and one entity carved
// out in the same manifest leave that entity's existing bucket enforced and
// the others disabled.
func TestCarveOutIsStampedLast(t *testing.T) {
	e := newEnv(t)
	e.apply("namespace: tenant-alpha\nsystem: {limits: {rpm: {capacity: 100}}}")
	for _, u := range []string{"a", "b", "c"} {
		if got := e.acquire(u, "chat"); got != "ok" {
			t.Fatalf("before: %s %s", u, got)
		}
	}
	e.apply(`
namespace: tenant-alpha
system: {limits: {rpm: {capacity: 100}}}
resources: {chat: {disabled: true}}
entities: {b: {resources: {chat: {disabled: false}}}}
`)
	for u, want := range map[string]bool{"a": true, "b": false, "c": true} {
		_, stamped := e.bucket(u, "chat")[schema.AttrDisabled]
		if stamped != want {
			t.Errorf("bucket %s disabled stamp %v, want %v", u, stamped, want)
		}
	}
	for u, want := range map[string]string{"a": "403", "b": "ok", "c": "403", "d": "403"} {
		if got := e.acquire(u, "chat"); got != want {
			t.Errorf("%s: %s want %s", u, got, want)
		}
	}
}

// Bypass and soft changes reach existing buckets with deadlines T after the
// apply's config read; an entity `_default_` change stamps each of the
// entity's buckets with its own resource's resolution.
func TestStampsReachExistingBuckets(t *testing.T) {
	e := newEnv(t)
	e.apply("namespace: tenant-alpha\nsystem: {limits: {rpm: {capacity: 100}}}")
	for _, p := range [][2]string{{"u", "r1"}, {"u", "r2"}, {"v", "r1"}} {
		e.acquire(p[0], p[1])
	}
	e.apply(`
namespace: tenant-alpha
system: {limits: {rpm: {capacity: 100}}}
resources:
  r1: {limits: {rpm: {capacity: 50, soft: true}}}
entities:
  u: {resources: {_default_: {disabled: bypass}, r2: {disabled: false}}}
`)
	deadline := fmt.Sprint(t0.Add(60 * time.Second).UnixMilli())
	num := func(it map[string]types.AttributeValue, a string) string {
		if v, ok := it[a].(*types.AttributeValueMemberN); ok {
			return v.Value
		}
		return ""
	}
	u1, u2, v1 := e.bucket("u", "r1"), e.bucket("u", "r2"), e.bucket("v", "r1")
	if got := num(u1, schema.AttrBypass); got != deadline {
		t.Errorf("u/r1 bypass %q want %s", got, deadline)
	}
	if _, ok := u2[schema.AttrBypass]; ok {
		t.Errorf("u/r2 has a bypass stamp: its own entity config enforces")
	}
	soft := schema.BucketAttr("rpm", schema.LimitSoft)
	if got := num(v1, soft); got != deadline {
		t.Errorf("v/r1 soft stamp %q want %s", got, deadline)
	}
	if _, ok := u2[soft]; ok {
		t.Errorf("u/r2 soft stamp: r2 resolves from the hard system limit")
	}
	if got := e.acquire("u", "r1"); got != "bypass" {
		t.Errorf("u/r1 %s", got)
	}
	if got := e.acquire("u", "r2"); got != "ok" {
		t.Errorf("u/r2 %s", got)
	}
}

// A manifest's change of limits at any level reaches the buckets in use
// before the apply returns (docs/design.md §8, §12): a lowered system rpm
// clamps the buckets that resolve from the system, a lowered resource rpm
// the resource's, an entity's own limits its bucket; a level the manifest
// stops giving limits to falls back to the next.
func TestLimitChangesReachExistingBuckets(t *testing.T) {
	e := newEnv(t)
	e.apply(`
namespace: tenant-alpha
system: {limits: {rpm: {capacity: 100}}}
resources: {r1: {limits: {rpm: {capacity: 100}}}}
entities: {w: {resources: {r1: {limits: {rpm: {capacity: 100}}}}}}
`)
	for _, p := range [][2]string{{"u", "r1"}, {"u", "r2"}, {"w", "r1"}} {
		e.acquire(p[0], p[1])
	}
	capacity := func(entity, resource string) (cp, tk string) {
		it := e.bucket(entity, resource)
		n := func(a schema.LimitField) string {
			v, _ := it[schema.BucketAttr("rpm", a)].(*types.AttributeValueMemberN)
			if v == nil {
				return ""
			}
			return v.Value
		}
		return n(schema.LimitCapacity), n(schema.LimitTokens)
	}
	e.apply(`
namespace: tenant-alpha
system: {limits: {rpm: {capacity: 3}}}
resources: {r1: {limits: {rpm: {capacity: 5}}}}
entities: {w: {resources: {r1: {limits: {rpm: {capacity: 7}}}}}}
`)
	for _, c := range []struct{ entity, resource, cp, tk string }{
		{"u", "r2", "3000", "3000"}, // system: 99 left, clamped to 3
		{"u", "r1", "5000", "5000"}, // resource
		{"w", "r1", "7000", "7000"}, // entity
	} {
		if cp, tk := capacity(c.entity, c.resource); cp != c.cp || tk != c.tk {
			t.Errorf("%s/%s: rpm cp %s tk %s, want %s and %s", c.entity, c.resource, cp, tk, c.cp, c.tk)
		}
	}
	// The resource's and the entity's limits no longer managed: their
	// buckets fall back to the system's 3.
	e.apply("namespace: tenant-alpha\nsystem: {limits: {rpm: {capacity: 3}}}")
	for _, p := range [][2]string{{"u", "r1"}, {"w", "r1"}} {
		if cp, tk := capacity(p[0], p[1]); cp != "3000" || tk != "3000" {
			t.Errorf("%s/%s after the levels above the system went: rpm cp %s tk %s, want 3000 and 3000", p[0], p[1], cp, tk)
		}
	}
	for range 3 {
		if got := e.acquire("u", "r1"); got != "ok" {
			t.Fatalf("u/r1: %s", got)
		}
	}
	if got := e.acquire("u", "r1"); got != "429" {
		t.Errorf("u/r1's fourth under the system's 3: %s", got)
	}
}

// Unmanaged items survive every apply and the delete; what a manifest
// stops naming is removed; a delete removes every managed item and leaves
// bucket balances in place.
func TestOnlyManagedItemsChange(t *testing.T) {
	e := newEnv(t)
	if err := e.store.Writer(capability.ConfigWrite{}).SetResourceLimits(e.ctx, e.ns, "unmanaged", []limit.Limit{limit.PerMinute("rpm", 7)}); err != nil {
		t.Fatal(err)
	}
	if err := e.store.Writer(capability.ConfigWrite{}).SetEntityLimits(e.ctx, e.ns, "x", "r1", []limit.Limit{limit.PerMinute("rpm", 8)}); err != nil {
		t.Fatal(err)
	}
	e.apply(`
namespace: tenant-alpha
system: {limits: {rpm: {capacity: 100}}}
resources: {r1: {limits: {rpm: {capacity: 10}}}, r2: {disabled: true}}
entities: {y: {resources: {r1: {limits: {rpm: {capacity: 3}}}}}}
`)
	e.acquire("y", "r1")
	res := e.apply(`
namespace: tenant-alpha
system: {limits: {rpm: {capacity: 100}}}
resources: {r1: {limits: {rpm: {capacity: 10}}}}
`)
	var got []string
	for _, c := range res.Changes {
		got = append(got, c.String())
	}
	if strings.Join(got, "; ") != "delete resource r2 (disabled: disabled → inherit); delete entity y/r1 (limits)" {
		t.Fatalf("changes %v", got)
	}
	if it := e.item(schema.ResourceConfigKey(e.ns, "r2")); it != nil {
		t.Fatalf("r2 left: %v", it)
	}
	if it := e.item(schema.EntityConfigKey(e.ns, "y", "r1")); it != nil {
		t.Fatalf("y/r1 left: %v", it)
	}
	// The bucket of y now resolves from r1: its parameters follow (sync).
	if v := e.bucket("y", "r1")[schema.BucketAttr("rpm", schema.LimitCapacity)].(*types.AttributeValueMemberN).Value; v != "10000" {
		t.Errorf("y/r1 capacity %s", v)
	}

	if _, err := e.prov.Release(e.ctx, e.ns, e.req); err != nil {
		t.Fatal(err)
	}
	for _, k := range []schema.Key{schema.SystemConfigKey(e.ns), schema.ResourceConfigKey(e.ns, "r1")} {
		if it := e.item(k); it != nil {
			t.Errorf("managed item %v left after delete", k)
		}
	}
	if l, _ := e.store.GetResourceLimits(e.ctx, e.ns, "unmanaged"); len(l) != 1 {
		t.Error("unmanaged resource lost")
	}
	if l, _ := e.store.GetEntityLimits(e.ctx, e.ns, "x", "r1"); len(l) != 1 {
		t.Error("unmanaged entity config lost")
	}
	e.bucket("y", "r1") // balances stay
	st, _ := e.prov.ReadState(e.ctx, e.ns, e.req.Owner)
	if st.Found || len(st.Targets) != 0 {
		t.Fatalf("state after the release %+v", st)
	}
}

// An out-of-band edit of a managed item is overwritten by the next apply.
func TestDriftIsRepaired(t *testing.T) {
	e := newEnv(t)
	doc := "namespace: tenant-alpha\nresources: {r1: {limits: {rpm: {capacity: 10}}, cascade: true}}"
	e.apply(doc)
	if err := e.store.Writer(capability.ConfigWrite{}).SetResourceLimits(e.ctx, e.ns, "r1", []limit.Limit{limit.PerMinute("rpm", 99)}); err != nil {
		t.Fatal(err)
	}
	if err := e.store.Writer(capability.ConfigWrite{}).SetAccess(e.ctx, e.ns, "", "r1", config.AccessDisabled); err != nil {
		t.Fatal(err)
	}
	res := e.apply(doc)
	if len(res.Changes) != 1 || res.Changes[0].String() != "update resource r1 (limits, disabled: disabled → inherit)" {
		t.Fatalf("changes %v", res.Changes)
	}
	if l, _ := e.store.GetResourceLimits(e.ctx, e.ns, "r1"); l[0].Capacity != 10 {
		t.Fatalf("limits %v", l)
	}
}

// The version gate runs before any write: a table whose readers are older
// than a feature refuses the manifest and nothing is written.
func TestVersionGateBeforeAnyWrite(t *testing.T) {
	e := newEnv(t)
	if err := e.store.WriteVersion(e.ctx, config.VersionRecord{LambdaVersion: "0.16.2"}); err != nil {
		t.Fatal(err)
	}
	e.proxy.ResetStats()
	_, err := e.prov.Apply(e.ctx, e.ns, e.parse("namespace: tenant-alpha\nresources: {r: {limits: {rpm: {capacity: 1}}}}\nentities: {u: {resources: {r: {disabled: bypass}}}}"), e.req)
	var vm *config.VersionMismatchError
	if !errors.As(err, &vm) || !vm.Gate {
		t.Fatalf("err %v", err)
	}
	if w := e.proxy.Writes(); w != "" {
		t.Fatalf("refused apply wrote %s", w)
	}
	// Cascade needs 0.16.0: admitted, and client_min_version ratchets.
	e.apply("namespace: tenant-alpha\nresources: {r: {cascade: true}}")
	rec, _, _ := e.store.ReadVersion(e.ctx)
	if rec.ClientMinVersion != config.CascadePolicyVersion {
		t.Fatalf("client_min_version %q", rec.ClientMinVersion)
	}
}

// A manifest may not replace an item carrying the config merge attributes
// (ADR-143 in docs/compatibility.md, not implemented here): refused
// before any write.
func TestMergeItemRefused(t *testing.T) {
	e := newEnv(t)
	_, err := e.tbl.DB.PutItem(e.ctx, &dynamodb.PutItemInput{TableName: aws.String(e.tbl.Name), Item: map[string]types.AttributeValue{
		"PK": schema.Str(schema.ResourceConfigKey(e.ns, "r").PK), "SK": schema.Str(schema.ResourceConfigKey(e.ns, "r").SK),
		"inherit_limits": &types.AttributeValueMemberBOOL{Value: true},
	}})
	if err != nil {
		t.Fatal(err)
	}
	e.proxy.ResetStats()
	_, err = e.prov.Apply(e.ctx, e.ns, e.parse("namespace: tenant-alpha\nresources: {r: {limits: {rpm: {capacity: 1}}}}"), e.req)
	var ref *provision.RefusedItemError
	if !errors.As(err, &ref) || ref.Target.Resource != "r" {
		t.Fatalf("err %v", err)
	}
	if w := e.proxy.Writes(); w != "" {
		t.Fatalf("wrote %s", w)
	}
}

// A fan-out that fails after the config is written is reported, owed in
// the state record, and finished by the next apply of the same manifest.
func TestFailedFanoutIsOwedAndFinished(t *testing.T) {
	e := newEnv(t)
	e.apply("namespace: tenant-alpha\nsystem: {limits: {rpm: {capacity: 100}}}")
	e.acquire("u", "r")
	bucketPK := schema.BucketKey(e.ns, "u", "r", 0).PK
	id := e.proxy.Add(faultproxy.Rule{Operation: "UpdateItem", Fault: faultproxy.InternalServerError(),
		Match: func(_ string, body []byte) bool { return strings.Contains(string(body), bucketPK) }})
	doc := "namespace: tenant-alpha\nsystem: {limits: {rpm: {capacity: 100}}}\nresources: {r: {disabled: true}}"
	res, err := e.prov.Apply(e.ctx, e.ns, e.parse(doc), e.req)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Errors) != 1 || !strings.Contains(res.Errors[0], "access fan-out resource r") {
		t.Fatalf("errors %v", res.Errors)
	}
	st, _ := e.prov.ReadState(e.ctx, e.ns, e.req.Owner)
	if len(st.Pending) != 1 || st.Pending[0].Resource != "r" {
		t.Fatalf("pending %+v", st.Pending)
	}
	if _, stamped := e.bucket("u", "r")[schema.AttrDisabled]; stamped {
		t.Fatal("the failed write stamped")
	}
	e.proxy.Remove(id)
	res = e.apply(doc)
	if !res.StateWritten {
		t.Fatal("the owed fan-out did not run")
	}
	if _, stamped := e.bucket("u", "r")[schema.AttrDisabled]; !stamped {
		t.Fatal("not stamped after the re-apply")
	}
	if st, _ := e.prov.ReadState(e.ctx, e.ns, e.req.Owner); len(st.Pending) != 0 {
		t.Fatalf("still owed %+v", st.Pending)
	}
	e.proxy.ResetStats()
	e.apply(doc)
	if w := e.proxy.Writes(); w != "" {
		t.Fatalf("third apply wrote %s", w)
	}
}

// A config write that fails stops the apply with a typed error; the state
// record then manages the new targets too, so applying the previous
// manifest (a CloudFormation rollback) removes what the failed apply created.
func TestFailedConfigWriteRollsBack(t *testing.T) {
	e := newEnv(t)
	old := "namespace: tenant-alpha\nresources: {r1: {limits: {rpm: {capacity: 10}}}}"
	e.apply(old)
	// u2 has an item nobody manages: the apply adopts it, writing it after
	// the batch that creates u1.
	if err := e.store.Writer(capability.ConfigWrite{}).SetEntityLimits(e.ctx, e.ns, "u2", "r1", []limit.Limit{limit.PerMinute("rpm", 9)}); err != nil {
		t.Fatal(err)
	}
	e.proxy.Add(faultproxy.Rule{Fault: faultproxy.InternalServerError(), Count: 1,
		Match: func(op string, body []byte) bool {
			return op != "BatchGetItem" && op != "TransactWriteItems" && strings.Contains(string(body), "ENTITY#u2")
		}})
	_, err := e.prov.Apply(e.ctx, e.ns, e.parse(old+"\nentities: {u1: {resources: {r1: {limits: {rpm: {capacity: 1}}}}}, u2: {resources: {r1: {limits: {rpm: {capacity: 2}}}}}}"), e.req)
	var cw *provision.ConfigWriteError
	if !errors.As(err, &cw) || cw.Target.Entity != "u2" {
		t.Fatalf("err %v", err)
	}
	if it := e.item(schema.EntityConfigKey(e.ns, "u1", "r1")); it == nil {
		t.Fatal("u1 was written before the failure")
	}
	e.apply(old)
	if it := e.item(schema.EntityConfigKey(e.ns, "u1", "r1")); it != nil {
		t.Fatal("rollback left u1")
	}
	if l, _ := e.store.GetEntityLimits(e.ctx, e.ns, "u2", "r1"); len(l) != 1 || l[0].Capacity != 9 {
		t.Fatalf("rollback did not give u2 back as it was: %v", l)
	}
	st, _ := e.prov.ReadState(e.ctx, e.ns, e.req.Owner)
	if targets(st.Targets) != "r1" || len(st.Pending) != 0 {
		t.Fatalf("state %+v", st)
	}
}

// targets names targets as a plan prints them, `; `-separated.
func targets(ts []manifest.Target) string {
	parts := make([]string, len(ts))
	for i, t := range ts {
		parts[i] = t.String()
	}
	return strings.Join(parts, "; ")
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// A cascade policy in the manifest reaches the existing buckets of the
// entities it concerns (the owner stamp), resource level and entity level.
func TestCascadeReachesBuckets(t *testing.T) {
	e := newEnv(t)
	e.apply("namespace: tenant-alpha\nsystem: {limits: {rpm: {capacity: 100}}}")
	for _, c := range []struct{ id, parent string }{{"org", ""}, {"k1", "org"}, {"k2", "org"}} {
		if _, err := e.store.Writer(capability.ConfigWrite{}).CreateEntity(e.ctx, e.ns, c.id, config.EntityOptions{ParentID: c.parent}); err != nil {
			t.Fatal(err)
		}
	}
	e.acquire("k1", "r")
	e.acquire("k2", "r")
	cascade := func(u string) bool {
		v, ok := e.bucket(u, "r")[schema.AttrCascade].(*types.AttributeValueMemberBOOL)
		return ok && v.Value
	}
	if cascade("k1") || cascade("k2") {
		t.Fatal("cascading before the manifest says so")
	}
	e.apply(`
namespace: tenant-alpha
system: {limits: {rpm: {capacity: 100}}}
resources: {r: {cascade: true}}
entities: {k2: {resources: {r: {cascade: false}}}}
`)
	if !cascade("k1") || cascade("k2") {
		t.Fatalf("k1 %v (want true), k2 %v (want false: its own policy)", cascade("k1"), cascade("k2"))
	}
	if p, ok := e.bucket("k1", "r")[schema.AttrParentID].(*types.AttributeValueMemberS); !ok || p.Value != "org" {
		t.Fatalf("parent stamp %v", e.bucket("k1", "r")[schema.AttrParentID])
	}
}
