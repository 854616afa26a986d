package provision_test

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/config"
	"github.com/zae-limiter/zae-limiter-go/core/limit"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
)

// A manifest declaring a session quota is planned like any other and
// applied past the version gate at 0.15.0 (ADR-141, docs/decisions.md
// P55): with the table's readers at 0.14.0 the apply is refused before
// anything is written (no owner record, no claim, no config); at 0.15.0 it
// writes the quota as the Python provisioner does (hidden w_ prefix, the
// window length in seconds) and raises client_min_version to 0.15.0.
func TestSessionQuotaApplyGated(t *testing.T) {
	e := newEnv(t)
	const doc = "namespace: tenant-alpha\nresources:\n  r:\n    limits:\n      rpm: {capacity: 10}\n" +
		"      tokens: {capacity: 10000, refill_amount: 0, reset_after_seconds: 18000}\n"
	m := e.parse(doc)
	pl, err := e.prov.Plan(e.ctx, e.ns, m, e.req)
	if err != nil {
		t.Fatal(err)
	}
	if len(pl.Changes) != 1 {
		t.Fatalf("changes %v", pl.Changes)
	}
	if got, ok := limit.Find(pl.Changes[0].After().Limits, "tokens"); !ok || got != limit.Session("tokens", 10_000, 5*time.Hour) {
		t.Fatalf("planned %+v", pl.Changes[0].After().Limits)
	}
	if err := e.store.WriteVersion(e.ctx, config.VersionRecord{LambdaVersion: "0.14.0", ClientMinVersion: "0.12.0"}); err != nil {
		t.Fatal(err)
	}
	e.proxy.ResetStats()
	var vm *config.VersionMismatchError
	if _, err := e.prov.ApplyPlan(e.ctx, pl); !errors.As(err, &vm) || vm.ClientMinVersion != config.SessionQuotaVersion {
		t.Fatalf("apply with readers at 0.14.0 = %v, want the gate's refusal at %s", err, config.SessionQuotaVersion)
	}
	if w := e.proxy.Writes(); w != "" {
		t.Fatalf("a refused apply wrote %s", w)
	}
	if st, err := e.prov.ReadState(e.ctx, e.ns, e.req.Owner); err != nil || st.Found {
		t.Fatalf("owner record after a refused apply: %+v %v", st, err)
	}

	if err := e.store.WriteVersion(e.ctx, config.VersionRecord{LambdaVersion: "0.15.0", ClientMinVersion: "0.12.0"}); err != nil {
		t.Fatal(err)
	}
	e.apply(doc)
	out, err := e.tbl.DB.GetItem(e.ctx, &dynamodb.GetItemInput{TableName: aws.String(e.tbl.Name),
		Key: schema.ResourceConfigItemKeys(e.ns, "r").Key.AttributeValues(), ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	for a, v := range map[string]types.AttributeValue{
		"w_tokens_cp": schema.Num(10_000), "w_tokens_ra": schema.Num(0), "w_tokens_rp": schema.Num(1), "w_tokens_rsa": schema.Num(18_000),
		"l_rpm_cp": schema.Num(10),
	} {
		if !reflect.DeepEqual(out.Item[a], v) {
			t.Errorf("%s = %v, want %v", a, out.Item[a], v)
		}
	}
	if _, ok := out.Item["l_tokens_cp"]; ok {
		t.Error("the session quota is stored under l_ too")
	}
	rec, _, err := e.store.ReadVersion(e.ctx)
	if err != nil || rec.ClientMinVersion != config.SessionQuotaVersion {
		t.Fatalf("client_min_version %q (%v), want %s", rec.ClientMinVersion, err, config.SessionQuotaVersion)
	}
}
