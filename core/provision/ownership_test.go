package provision_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/control"
	"github.com/zae-limiter/zae-limiter-go/core/internal/capability"
	"github.com/zae-limiter/zae-limiter-go/core/limit"
	"github.com/zae-limiter/zae-limiter-go/core/provision"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
	"github.com/zae-limiter/zae-limiter-go/internal/faultproxy"
)

// resource is the request of a CloudFormation resource: its stack and
// logical id, and the physical id of its incarnation.
func resource(stack, logical string) provision.Request {
	o := provision.Owner{Stack: stack, Name: logical, StackID: "arn:aws:cloudformation:us-east-1:123456789012:stack/" + stack + "/guid"}
	return provision.Request{Owner: o, PhysicalID: "T/NS/limits/" + stack + "/" + logical + "/000000000000", Principal: "cfn:" + stack}
}

func (e *env) applyAs(req provision.Request, doc string) (*provision.Result, error) {
	e.t.Helper()
	return e.prov.Apply(e.ctx, e.ns, e.parse(doc), req)
}

func (e *env) mustApplyAs(req provision.Request, doc string) *provision.Result {
	e.t.Helper()
	res, err := e.applyAs(req, doc)
	if err != nil {
		e.t.Fatalf("apply as %s: %v", req.Owner.Key(), err)
	}
	if len(res.Errors) > 0 {
		e.t.Fatalf("apply as %s: %v", req.Owner.Key(), res.Errors)
	}
	return res
}

func (e *env) release(req provision.Request) *provision.Result {
	e.t.Helper()
	res, err := e.prov.Release(e.ctx, e.ns, req)
	if err != nil {
		e.t.Fatalf("release %s: %v", req.Owner.Key(), err)
	}
	return res
}

func (e *env) rpm(k schema.Key) string {
	e.t.Helper()
	it := e.item(k)
	if it == nil {
		return "absent"
	}
	v, ok := it[schema.ConfigAttr("rpm", schema.LimitCapacity)].(*types.AttributeValueMemberN)
	if !ok {
		return "none"
	}
	return v.Value
}

func (e *env) held(req provision.Request) string {
	e.t.Helper()
	st, err := e.prov.ReadState(e.ctx, e.ns, req.Owner)
	if err != nil {
		e.t.Fatal(err)
	}
	return targets(st.Targets)
}

// Two resources of different stacks naming one namespace hold disjoint
// targets: an overlap is refused before any write, naming the holder; each
// one's release removes only its own.
func TestOwnersHoldDisjointTargets(t *testing.T) {
	e := newEnv(t)
	a, b := resource("stack-a", "Limits"), resource("stack-b", "Limits")
	e.mustApplyAs(a, "namespace: tenant-alpha\nresources: {r1: {limits: {rpm: {capacity: 10}}}}\nentities: {u: {resources: {r1: {limits: {rpm: {capacity: 1}}}}}}")

	e.proxy.ResetStats()
	_, err := e.applyAs(b, "namespace: tenant-alpha\nresources: {r1: {limits: {rpm: {capacity: 99}}}, r2: {limits: {rpm: {capacity: 20}}}}")
	var oe *provision.OwnershipError
	if !errors.As(err, &oe) || len(oe.Conflicts) != 1 || oe.Conflicts[0].Target.String() != "r1" ||
		!strings.Contains(err.Error(), "stack stack-a, logical id Limits") {
		t.Fatalf("overlap: %v", err)
	}
	if w := e.proxy.Writes(); w != "" {
		t.Fatalf("the refused apply wrote %s", w)
	}
	if got := e.rpm(schema.ResourceConfigKey(e.ns, "r1")); got != "10" {
		t.Fatalf("r1 %s", got)
	}
	// A refused request's rollback (the release of its incarnation)
	// changes nothing.
	e.proxy.ResetStats()
	if res := e.release(b); !res.Skipped {
		t.Fatalf("release of a refused create: %+v", res)
	}
	if w := e.proxy.Writes(); w != "" {
		t.Fatalf("the rollback wrote %s", w)
	}

	e.mustApplyAs(b, "namespace: tenant-alpha\nresources: {r2: {limits: {rpm: {capacity: 20}}}}")
	if got := e.held(a) + " | " + e.held(b); got != "r1; u/r1 | r2" {
		t.Fatalf("held %s", got)
	}
	e.release(a)
	if e.rpm(schema.ResourceConfigKey(e.ns, "r1")) != "absent" || e.rpm(schema.ResourceConfigKey(e.ns, "r2")) != "20" {
		t.Fatal("a's release touched b's target or left its own")
	}
	e.release(b)
	if e.rpm(schema.ResourceConfigKey(e.ns, "r2")) != "absent" {
		t.Fatal("b's release left r2")
	}
}

// A release of an incarnation the owner record does not name (a
// replacement's old id, a stale retry) changes nothing.
func TestStaleReleaseChangesNothing(t *testing.T) {
	e := newEnv(t)
	a := resource("stack-a", "Limits")
	e.mustApplyAs(a, "namespace: tenant-alpha\nresources: {r1: {limits: {rpm: {capacity: 10}}}}")
	stale := a
	stale.PhysicalID = "T/NS/limits/stack-a/Limits/111111111111"
	e.proxy.ResetStats()
	if res := e.release(stale); !res.Skipped {
		t.Fatalf("stale release %+v", res)
	}
	if w := e.proxy.Writes(); w != "" {
		t.Fatalf("wrote %s", w)
	}
	if e.rpm(schema.ResourceConfigKey(e.ns, "r1")) != "10" {
		t.Fatal("r1 lost")
	}
}

// A logical id renamed within a stack: CloudFormation creates the new
// resource, which takes over what the old one held, then deletes the old
// one, which releases nothing it handed over. If the update rolls back
// instead (the new resource is deleted first), the targets go back to the
// old resource as they were.
func TestRenameWithinAStack(t *testing.T) {
	const old = "namespace: tenant-alpha\nresources: {r1: {limits: {rpm: {capacity: 10}}}}\nentities: {u: {resources: {r1: {limits: {rpm: {capacity: 1}}}}}}"
	const renamed = "namespace: tenant-alpha\nresources: {r1: {limits: {rpm: {capacity: 30}}}, r3: {limits: {rpm: {capacity: 3}}}}\nentities: {u: {resources: {r1: {limits: {rpm: {capacity: 1}}}}}}"
	for _, rollback := range []bool{false, true} {
		t.Run(fmt.Sprintf("rollback=%v", rollback), func(t *testing.T) {
			e := newEnv(t)
			a, b := resource("stack-a", "OldLimits"), resource("stack-a", "NewLimits")
			// r1 was there before either resource: the first adopts it.
			if err := e.store.Writer(capability.ConfigWrite{}).SetResourceLimits(e.ctx, e.ns, "r1", []limit.Limit{limit.PerMinute("rpm", 7)}); err != nil {
				t.Fatal(err)
			}
			e.mustApplyAs(a, old)
			res := e.mustApplyAs(b, renamed)
			if res.TakenOver != 2 || e.rpm(schema.ResourceConfigKey(e.ns, "r1")) != "30" {
				t.Fatalf("takeover %+v", res)
			}
			if got := e.held(a) + " | " + e.held(b); got != " | r1; r3; u/r1" {
				t.Fatalf("held %q", got)
			}
			if !rollback {
				e.release(a) // the old resource's Delete
				if got := e.rpm(schema.ResourceConfigKey(e.ns, "r1")) + " " + e.rpm(schema.EntityConfigKey(e.ns, "u", "r1")); got != "30 1" {
					t.Fatalf("after the old resource's delete: %s", got)
				}
				// The handover is confirmed: deleting the new resource
				// now removes what the two wrote, and r1 is as it was
				// before either.
				e.release(b)
				for _, k := range []schema.Key{schema.ResourceConfigKey(e.ns, "r3"), schema.EntityConfigKey(e.ns, "u", "r1")} {
					if e.item(k) != nil {
						t.Fatalf("%v left", k)
					}
				}
				if got := e.rpm(schema.ResourceConfigKey(e.ns, "r1")); got != "7" {
					t.Fatalf("r1 %s after both releases, want the 7 it had before", got)
				}
				return
			}
			e.release(b) // the rollback deletes the new resource
			if got := e.rpm(schema.ResourceConfigKey(e.ns, "r1")) + " " + e.rpm(schema.ResourceConfigKey(e.ns, "r3")) + " " + e.rpm(schema.EntityConfigKey(e.ns, "u", "r1")); got != "10 absent 1" {
				t.Fatalf("after the rollback: %s", got)
			}
			if got := e.held(a); got != "r1; u/r1" {
				t.Fatalf("a holds %q after the rollback", got)
			}
			// And the old resource, still in force, manages them.
			e.mustApplyAs(a, strings.Replace(old, "capacity: 10", "capacity: 11", 1))
			if e.rpm(schema.ResourceConfigKey(e.ns, "r1")) != "11" {
				t.Fatal("a no longer manages r1")
			}
			e.release(a)
			if got := e.rpm(schema.ResourceConfigKey(e.ns, "r1")); got != "7" {
				t.Fatalf("r1 %s after a's release, want the 7 it had before", got)
			}
		})
	}
}

// Moving limits to another stack: the old stack's resource consents
// (AllowTakeOverBy), the new stack's resource names it in TakeOverFrom;
// after that, the old stack's Delete removes nothing that moved.
func TestTakeOverFromAnotherStack(t *testing.T) {
	e := newEnv(t)
	a, b := resource("stack-a", "Limits"), resource("stack-b", "Limits")
	a.AllowTakeOverBy = []provision.Owner{b.Owner}
	e.mustApplyAs(a, "namespace: tenant-alpha\nresources: {r1: {limits: {rpm: {capacity: 10}}}, r2: {limits: {rpm: {capacity: 20}}}}")
	b.TakeOverFrom = []provision.Owner{a.Owner}
	e.mustApplyAs(b, "namespace: tenant-alpha\nresources: {r1: {limits: {rpm: {capacity: 10}}}}")
	e.release(a)
	if got := e.rpm(schema.ResourceConfigKey(e.ns, "r1")) + " " + e.rpm(schema.ResourceConfigKey(e.ns, "r2")); got != "10 absent" {
		t.Fatalf("after the move: %s", got)
	}
	if got := e.held(b); got != "r1" {
		t.Fatalf("b holds %q", got)
	}
}

// TestTakeOverNeedsConsent: naming an owner in TakeOverFrom is not enough
// (an unrelated stack could name any owner): its owner must consent, by
// its own AllowTakeOverBy or an operator's AllowTakeOver (audited). A
// refused take-over writes nothing.
func TestTakeOverNeedsConsent(t *testing.T) {
	e := newEnv(t)
	a, b, c := resource("alpha-limits", "TenantLimits"), resource("stranger", "Limits"), resource("stack-c", "Limits")
	e.mustApplyAs(a, "namespace: tenant-alpha\nresources: {gpt-4: {limits: {rpm: {capacity: 10}}}}")
	b.TakeOverFrom = []provision.Owner{a.Owner}
	const grab = "namespace: tenant-alpha\nresources: {gpt-4: {disabled: true}}"
	e.proxy.ResetStats()
	_, err := e.applyAs(b, grab)
	var oe *provision.OwnershipError
	if !errors.As(err, &oe) || len(oe.Conflicts) != 1 || !strings.Contains(err.Error(), "has not consented") ||
		!strings.Contains(err.Error(), "add stranger/Limits to the AllowTakeOverBy") {
		t.Fatalf("a take-over without consent: %v", err)
	}
	if w := e.proxy.Writes(); w != "" {
		t.Fatalf("the refused take-over wrote %s", w)
	}
	if got := e.held(a); got != "gpt-4" {
		t.Fatalf("a holds %q", got)
	}
	// The operator consents for a; the audit trail says so.
	if err := e.prov.AllowTakeOver(e.ctx, e.ns, a.Owner, []provision.Owner{b.Owner}, "ops"); err != nil {
		t.Fatal(err)
	}
	evs, err := control.New(e.tbl.DB, e.tbl.Name, control.Options{}).AuditEvents(e.ctx, e.ns, control.SystemTrail)
	if err != nil || !slices.ContainsFunc(evs, func(ev control.AuditEvent) bool {
		return ev.Action == "limits_take_over_allowed" && ev.Principal == "ops" && ev.Details["allowed"] == b.Owner.Key()
	}) {
		t.Fatalf("the consent is not in the audit trail: %v, %v", evs, err)
	}
	// a applies again without naming b: the operator's consent stays.
	e.mustApplyAs(a, "namespace: tenant-alpha\nresources: {gpt-4: {limits: {rpm: {capacity: 10}}}}\nsystem: {limits: {rpm: {capacity: 90}}}")
	e.mustApplyAs(b, grab)
	if got := e.held(a) + " | " + e.held(b); got != "system | gpt-4" {
		t.Fatalf("held %q", got)
	}
	if err := e.prov.AllowTakeOver(e.ctx, e.ns, c.Owner, []provision.Owner{a.Owner}, "ops"); !errors.As(err, new(*provision.OwnerNotFoundError)) {
		t.Fatalf("consent for an owner with no record: %v", err)
	}
	// b's Delete before a's hands gpt-4 back to a, as it was.
	e.release(b)
	if got := e.held(a) + " " + e.rpm(schema.ResourceConfigKey(e.ns, "gpt-4")); got != "system; gpt-4 10" {
		t.Fatalf("after b's release: %q", got)
	}
}

// TestOwnerIsItsStack: an owner is its stack (StackId), not only its name.
// A request with the same stack name and logical id from another stack —
// a Create, an Update, a Delete — changes nothing: an apply is refused
// naming the recorded stack, a Delete is answered as done with nothing
// released. Renaming a logical id within the stack still takes over
// without naming it; a namesake stack does not.
func TestOwnerIsItsStack(t *testing.T) {
	e := newEnv(t)
	a := resource("alpha-limits", "TenantLimits")
	e.mustApplyAs(a, "namespace: tenant-alpha\nsystem: {limits: {rpm: {capacity: 100}}}\nresources: {gpt-4: {limits: {rpm: {capacity: 10}}}}\nentities: {u: {resources: {gpt-4: {limits: {rpm: {capacity: 1}}}}}, v: {resources: {gpt-4: {limits: {rpm: {capacity: 2}}}}}}")
	impostor := a
	impostor.Owner.StackID = "arn:aws:cloudformation:us-east-1:999999999999:stack/alpha-limits/other"
	e.proxy.ResetStats()
	_, err := e.applyAs(impostor, "namespace: tenant-alpha\nresources: {gpt-4: {limits: {rpm: {capacity: 1000}}}}")
	var sm *provision.StackMismatchError
	if !errors.As(err, &sm) || sm.Recorded != a.Owner.StackID || !strings.Contains(err.Error(), "zl limits release --owner alpha-limits/TenantLimits") {
		t.Fatalf("an apply from a namesake stack: %v", err)
	}
	if res := e.release(impostor); !res.Skipped {
		t.Fatalf("a Delete from a namesake stack: %+v", res)
	}
	if w := e.proxy.Writes(); w != "" {
		t.Fatalf("the namesake's requests wrote %s", w)
	}
	if got := e.held(a); got != "system; gpt-4; u/gpt-4; v/gpt-4" {
		t.Fatalf("a holds %q", got)
	}
	renamed := resource("alpha-limits", "Renamed")
	renamed.Owner.StackID = impostor.Owner.StackID
	if _, err := e.applyAs(renamed, "namespace: tenant-alpha\nresources: {gpt-4: {limits: {rpm: {capacity: 1000}}}}"); !errors.As(err, new(*provision.OwnershipError)) {
		t.Fatalf("a namesake stack's other resource took a's targets: %v", err)
	}
	// The real stack's own rename takes over.
	renamed.Owner.StackID = a.Owner.StackID
	if res := e.mustApplyAs(renamed, "namespace: tenant-alpha\nresources: {gpt-4: {limits: {rpm: {capacity: 12}}}}"); res.TakenOver != 1 {
		t.Fatalf("a rename within the stack: %+v", res)
	}
	// The recorded stack is gone without its Delete: an operator releases
	// it (zl limits release --owner), then the new stack of that name may
	// apply.
	res, err := e.prov.Release(e.ctx, e.ns, provision.Request{Owner: provision.Owner{Stack: "alpha-limits", Name: "TenantLimits"}, Principal: "ops"})
	if err != nil || res.Skipped {
		t.Fatalf("the operator's release: %+v, %v", res, err)
	}
	e.mustApplyAs(impostor, "namespace: tenant-alpha\nsystem: {limits: {rpm: {capacity: 50}}}")
}

// An item that exists when nobody holds it is adopted with its prior
// image: a failed Create's rollback, and any later release, restores it as
// it was.
func TestAdoptedItemIsRestoredOnRollback(t *testing.T) {
	e := newEnv(t)
	if err := e.store.Writer(capability.ConfigWrite{}).SetResourceLimits(e.ctx, e.ns, "r1", []limit.Limit{limit.PerMinute("rpm", 7)}); err != nil {
		t.Fatal(err)
	}
	a := resource("stack-a", "Limits")
	cut := e.proxy.Add(faultproxy.Rule{Operation: "PutItem", Fault: faultproxy.InternalServerError(),
		Match: func(_ string, body []byte) bool {
			return strings.Contains(string(body), "#OWNER#") && strings.Contains(string(body), `"applied"`)
		}})
	if _, err := e.applyAs(a, "namespace: tenant-alpha\nresources: {r1: {limits: {rpm: {capacity: 10}}}}"); err == nil {
		t.Fatal("the commit was cut: the apply must fail")
	}
	if e.rpm(schema.ResourceConfigKey(e.ns, "r1")) != "10" {
		t.Fatal("the apply did not write r1")
	}
	e.proxy.Remove(cut)
	e.release(a)
	if got := e.rpm(schema.ResourceConfigKey(e.ns, "r1")); got != "7" {
		t.Fatalf("after the rollback r1 is %s, want the adopted 7", got)
	}
	// Committed this time: the release still gives it back as it was
	// (the owner releases only what it wrote).
	e.mustApplyAs(a, "namespace: tenant-alpha\nresources: {r1: {limits: {rpm: {capacity: 10}}}}")
	e.release(a)
	if got := e.rpm(schema.ResourceConfigKey(e.ns, "r1")); got != "7" {
		t.Fatalf("r1 %s after the release of a committed adoption, want 7", got)
	}
}

// An earlier provisioner's state record (R10) is legacy state: its targets
// are held by the legacy owner (an overlap is refused, naming it) until a
// request adopts it; the adopting apply removes what its manifest no
// longer names and deletes R10.
func TestLegacyStateIsAdopted(t *testing.T) {
	e := newEnv(t)
	for _, r := range []string{"r1", "r2"} {
		if err := e.store.Writer(capability.ConfigWrite{}).SetResourceLimits(e.ctx, e.ns, r, []limit.Limit{limit.PerMinute("rpm", 5)}); err != nil {
			t.Fatal(err)
		}
	}
	it := schema.ProvisionerStateItemKeys(e.ns).Item()
	it["managed_system"] = &types.AttributeValueMemberBOOL{Value: false}
	it["managed_resources"] = &types.AttributeValueMemberL{Value: []types.AttributeValue{schema.Str("r1"), schema.Str("r2")}}
	it["managed_entities"] = &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{}}
	if _, err := e.tbl.DB.PutItem(e.ctx, &dynamodb.PutItemInput{TableName: aws.String(e.tbl.Name), Item: it}); err != nil {
		t.Fatal(err)
	}
	a := resource("stack-a", "Limits")
	_, err := e.applyAs(a, "namespace: tenant-alpha\nresources: {r1: {limits: {rpm: {capacity: 10}}}}")
	var oe *provision.OwnershipError
	if !errors.As(err, &oe) || !strings.Contains(err.Error(), "R10") {
		t.Fatalf("legacy overlap: %v", err)
	}
	a.AdoptLegacy = true
	res := e.mustApplyAs(a, "namespace: tenant-alpha\nresources: {r1: {limits: {rpm: {capacity: 10}}}}")
	if res.Updated != 1 || res.Deleted != 1 {
		t.Fatalf("adoption %+v", res)
	}
	if got := e.rpm(schema.ResourceConfigKey(e.ns, "r1")) + " " + e.rpm(schema.ResourceConfigKey(e.ns, "r2")); got != "10 absent" {
		t.Fatalf("after the adoption: %s", got)
	}
	if e.item(schema.ProvisionerStateKey(e.ns)) != nil {
		t.Fatal("R10 survived its adoption")
	}
	if got := e.held(a); got != "r1" {
		t.Fatalf("held %q", got)
	}
}
