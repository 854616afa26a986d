package provision_test

import (
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/config"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
	"github.com/zae-limiter/zae-limiter-go/internal/faultproxy"
)

// setClientMin writes the version record's client_min_version.
func (e *env) setClientMin(v string) {
	e.t.Helper()
	_, err := e.tbl.DB.UpdateItem(e.ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(e.tbl.Name), Key: schema.VersionKey().AttributeValues(),
		UpdateExpression:          aws.String("SET #m = :v"),
		ExpressionAttributeNames:  map[string]string{"#m": schema.AttrClientMinVersion},
		ExpressionAttributeValues: map[string]types.AttributeValue{":v": schema.Str(v)},
	})
	if err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) clientMin() string {
	e.t.Helper()
	rec, _, err := e.store.ReadVersion(e.ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	return rec.ClientMinVersion
}

// softStored reports whether r1's stored config has a soft limit.
func (e *env) softStored() bool {
	e.t.Helper()
	ls, err := e.store.GetResourceLimits(e.ctx, e.ns, "r1")
	if err != nil {
		e.t.Fatal(err)
	}
	for _, l := range ls {
		if l.Soft {
			return true
		}
	}
	return false
}

// TestGateBeforeWrites is a manifest with a soft limit applied over a table
// whose client_min_version is below what soft limits need, cut after each
// of its calls in turn and sent again (docs/design.md §12): at no cut is a
// soft limit stored while client_min_version is below its version, and
// every resend — an unchanged apply included — ends with client_min_version
// raised.
func TestGateBeforeWrites(t *testing.T) {
	const doc = `
namespace: tenant-alpha
system: {limits: {rpm: {capacity: 100}}}
resources: {r1: {limits: {rpm: {capacity: 20, soft: true}}}, r2: {limits: {rpm: {capacity: 5}}}}
entities: {u: {resources: {r1: {limits: {rpm: {capacity: 2}}}}}}
`
	e := newEnv(t)
	req := resource("stack-a", "Limits")
	var calls atomic.Int64
	count := e.proxy.Add(faultproxy.Rule{Fault: faultproxy.InternalServerError(), Match: func(string, []byte) bool {
		calls.Add(1)
		return false
	}})
	e.freshNamespace("clean")
	e.setClientMin("0.1.0")
	e.mustApplyAs(req, doc)
	e.proxy.Remove(count)
	n := int(calls.Load())
	if got := e.clientMin(); got != config.SoftBypassVersion {
		t.Fatalf("a clean apply left client_min_version %q", got)
	}
	for cut := 0; cut <= n; cut++ {
		e.freshNamespace(fmt.Sprintf("cut-%d", cut))
		e.setClientMin("0.1.0")
		rule := e.proxy.Add(faultproxy.Rule{Fault: faultproxy.InternalServerError(), After: cut})
		_, err := e.applyAs(req, doc)
		e.proxy.Remove(rule)
		if e.softStored() && e.clientMin() != config.SoftBypassVersion {
			t.Fatalf("cut after %d of %d calls (%v): a soft limit is stored with client_min_version %q", cut, n, err, e.clientMin())
		}
		e.mustApplyAs(req, doc)
		if got := e.clientMin(); got != config.SoftBypassVersion {
			t.Fatalf("cut after %d of %d calls (%v), sent again: client_min_version %q, want %s", cut, n, err, got, config.SoftBypassVersion)
		}
	}
	// Lowered behind the provisioner's back, an unchanged apply raises it.
	e.setClientMin("0.1.0")
	if res := e.mustApplyAs(req, doc); len(res.Changes) != 0 {
		t.Fatalf("the same manifest again: %d changes", len(res.Changes))
	}
	if got := e.clientMin(); got != config.SoftBypassVersion {
		t.Errorf("an unchanged apply left client_min_version %q", got)
	}
}
