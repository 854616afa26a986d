package control_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/zae-limiter/zae-limiter-go/core/config"
	"github.com/zae-limiter/zae-limiter-go/core/control"
	"github.com/zae-limiter/zae-limiter-go/core/limit"
	"github.com/zae-limiter/zae-limiter-go/core/limiter"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
	"github.com/zae-limiter/zae-limiter-go/internal/ddbtest"
)

// TestDeleteAndRecoverNamespace: a delete is soft and audited — the name
// stops resolving (limiter.Open refuses it), its reverse record says
// deleted with the time, everything the namespace held stays — and a
// recover brings it back with the same id and its limits; a name
// registered again meanwhile blocks the recover (docs/design.md §2).
func TestDeleteAndRecoverNamespace(t *testing.T) {
	tbl := ddbtest.NewTable(t)
	ctx := context.Background()
	now := time.Date(2028, 2, 29, 23, 59, 30, 0, time.UTC)
	ctl := control.New(tbl.DB, tbl.Name, control.Options{Clock: func() time.Time { return now }})
	st := ctl.Store()

	id, err := ctl.RegisterNamespace(ctx, "tenant", "ops")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ctl.SetResourceLimits(ctx, id, "gpt", []limit.Limit{limit.PerMinute("rpm", 10)}, "ops"); err != nil {
		t.Fatal(err)
	}

	got, err := ctl.DeleteNamespace(ctx, "tenant", "ops")
	if err != nil || got != id {
		t.Fatalf("delete = %q, %v; want %q", got, err, id)
	}
	var nf *config.NamespaceNotFoundError
	if _, err := st.ResolveNamespace(ctx, "tenant"); !errors.As(err, &nf) {
		t.Fatalf("resolve after delete: %v, want NamespaceNotFoundError", err)
	}
	if _, err := limiter.Open(ctx, tbl.DB, tbl.Name, "tenant", limiter.Options{}); err == nil {
		t.Fatal("limiter.Open of a deleted namespace succeeded")
	}
	fwd, err := tbl.DB.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(tbl.Name), Key: schema.NamespaceForwardKey("tenant").AttributeValues(), ConsistentRead: aws.Bool(true)})
	if err != nil || fwd.Item != nil {
		t.Fatalf("forward record after delete: %v %v, want none", fwd.Item, err)
	}
	ns, err := st.GetNamespace(ctx, id)
	if err != nil || ns.Status != config.NamespaceDeleted || ns.DeletedAt != "2028-02-29T23:59:30Z" || ns.Name != "tenant" {
		t.Fatalf("reverse record after delete: %+v %v", ns, err)
	}
	var se *config.NamespaceStateError
	if _, err := st.NamespaceName(ctx, id); !errors.As(err, &se) {
		t.Fatalf("NamespaceName of a deleted id: %v", err)
	}
	if lims, err := st.GetResourceLimits(ctx, id, "gpt"); err != nil || len(lims) != 1 {
		t.Fatalf("limits after delete: %v %v, want kept", lims, err)
	}
	if _, err := ctl.DeleteNamespace(ctx, "tenant", "ops"); !errors.As(err, &nf) {
		t.Fatalf("second delete: %v, want NamespaceNotFoundError", err)
	}

	// Recover: same id, limits back, the reverse record active again.
	name, err := ctl.RecoverNamespace(ctx, id, "ops")
	if err != nil || name != "tenant" {
		t.Fatalf("recover = %q, %v", name, err)
	}
	if again, err := st.ResolveNamespace(ctx, "tenant"); err != nil || again != id {
		t.Fatalf("resolve after recover = %q, %v; want %q", again, err, id)
	}
	if ns, err := st.GetNamespace(ctx, id); err != nil || ns.Status != config.NamespaceActive || ns.DeletedAt != "" || ns.CreatedAt == "" {
		t.Fatalf("reverse record after recover: %+v %v", ns, err)
	}
	if _, err := ctl.RecoverNamespace(ctx, id, "ops"); !errors.As(err, &se) || se.State != config.NamespaceActive {
		t.Fatalf("recover of a live namespace: %v, want NamespaceStateError active", err)
	}
	if _, err := ctl.RecoverNamespace(ctx, "AAAAAAAAAAA", "ops"); !errors.As(err, &nf) {
		t.Fatalf("recover of an unknown id: %v", err)
	}

	// Deleted, then the name registered again: the old id cannot come back.
	if _, err := ctl.DeleteNamespace(ctx, "tenant", "ops"); err != nil {
		t.Fatal(err)
	}
	fresh, err := ctl.RegisterNamespace(ctx, "tenant", "ops")
	if err != nil || fresh == id {
		t.Fatalf("re-register = %q, %v", fresh, err)
	}
	var taken *config.NamespaceNameTakenError
	if _, err := ctl.RecoverNamespace(ctx, id, "ops"); !errors.As(err, &taken) || taken.HolderID != fresh {
		t.Fatalf("recover over a re-registered name: %v", err)
	}
	if ns, err := st.GetNamespace(ctx, id); err != nil || ns.Status != config.NamespaceDeleted {
		t.Fatalf("refused recover wrote: %+v %v", ns, err)
	}

	// Both registrations are listed, by name then id.
	all, err := st.ListNamespaces(ctx)
	if err != nil || len(all) != 2 {
		t.Fatalf("list: %+v %v", all, err)
	}
	states := map[string]string{}
	for _, n := range all {
		states[n.ID] = n.Status
	}
	if states[id] != config.NamespaceDeleted || states[fresh] != config.NamespaceActive {
		t.Fatalf("list states %v", states)
	}

	// Every change is in the namespace's own trail.
	var actions []string
	evs, err := ctl.AuditEvents(ctx, id, control.SystemTrail)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs {
		actions = append(actions, ev.Action)
	}
	want := []string{"namespace_registered", "namespace_deleted", "namespace_recovered", "namespace_deleted"}
	if !slices.Equal(actions, want) {
		t.Fatalf("audit actions %v, want %v", actions, want)
	}
}
