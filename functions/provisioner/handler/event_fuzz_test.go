package handler

import (
	"errors"
	"testing"

	"github.com/zae-limiter/zae-limiter-go/core/provision"
)

// FuzzDecodeEvent: any payload is a CloudFormation request with a
// ResponseURL, a plan/apply invocation with a manifest, or an *EventError;
// never a panic.
func FuzzDecodeEvent(f *testing.F) {
	f.Add([]byte(`{"RequestType":"Create","ResponseURL":"http://x","ResourceProperties":{"Namespace":"n","Resources":{"r":{"Limits":{"l":{"Capacity":5}}}}}}`))
	f.Add([]byte(`{"action":"apply","manifest":{"namespace":"n"},"namespace_id":"Ab3dEf6hIjk"}`))
	f.Add([]byte(`{"RequestType":"Delete"}`))
	f.Add([]byte(`{"RequestType":"Create","ResponseURL":"http://x","StackId":"s","RequestId":"r","LogicalResourceId":"L","ResourceType":5}`))
	f.Add([]byte(`{"RequestType":"Create","ResponseURL":"http://x","StackId":"s","RequestId":"r","LogicalResourceId":5}`))
	f.Add([]byte(`[1,2]`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		ev, err := decodeEvent(raw)
		if err != nil {
			var ee *EventError
			if !errors.As(err, &ee) {
				t.Fatalf("untyped error %T", err)
			}
			if ev.undecoded != nil && ev.undecoded.ResponseURL == "" {
				t.Fatal("an undecoded request without a ResponseURL is to be answered")
			}
			return
		}
		switch {
		case ev.request != nil:
			if ev.request.ResponseURL == "" {
				t.Fatal("a request without a ResponseURL was accepted")
			}
		case ev.invocation != nil:
			if ev.invocation.Manifest == nil || (ev.invocation.Action != "plan" && ev.invocation.Action != "apply") {
				t.Fatalf("invocation %+v", ev.invocation)
			}
		default:
			t.Fatal("neither form")
		}
	})
}

// FuzzPhysicalID: what parsePhysicalID accepts it gives back whole; and
// every id physicalID gives for a table name parses back to it.
func FuzzPhysicalID(f *testing.F) {
	f.Add("zae-limiter/Ab3dEf6hIjk/limits-provisioner")
	f.Add("failed")
	f.Add("a/b/c/limits-provisioner")
	f.Add("zae-limiter/Ab3dEf6hIjk/limits/tenant-stack/TenantLimits/0123456789ab")
	f.Add("a-table-name-longer-than-any-stack-name.with_dots_and_underscores")
	f.Fuzz(func(t *testing.T, id string) {
		r, ok := parsePhysicalID(id)
		if ok && r.String() != id {
			t.Fatalf("%q → %+v → %q", id, r, r.String())
		}
		if isTableName(id) {
			owner := provision.Owner{Stack: "tenant-stack", Name: "TenantLimits"}
			given := physicalID(id, "Ab3dEf6hIjk", owner, id)
			if r, ok := parsePhysicalID(given); !ok || r.table != id || r.ns != "Ab3dEf6hIjk" || r.owner.Key() != owner.Key() {
				t.Fatalf("%q does not parse back: %+v %v", given, r, ok)
			}
		}
	})
}
