package provision_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/zae-limiter/zae-limiter-go/core/control"
	"github.com/zae-limiter/zae-limiter-go/core/manifest"
	"github.com/zae-limiter/zae-limiter-go/core/provision"
	"github.com/zae-limiter/zae-limiter-go/internal/clock"
	"github.com/zae-limiter/zae-limiter-go/internal/ddbtest"
)

// exampleProvisioner returns a provisioner on a fresh DynamoDB Local table
// whose namespace "tenant-alpha" is registered (through core/control, the
// door of every operator write). The clock stands still, so the output is
// the same on every run.
func exampleProvisioner(name string) (*provision.Provisioner, func()) {
	tbl, drop := ddbtest.ExampleTable(name)
	clk := clock.NewManual(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))
	ops := control.New(tbl.DB, tbl.Name, control.Options{Clock: clk.Now})
	if _, err := ops.RegisterNamespace(context.Background(), "tenant-alpha", "ops@example.com"); err != nil {
		panic(err)
	}
	return provision.New(tbl.DB, tbl.Name, provision.Options{Clock: clk.Now, Logger: quietLogger()}), drop
}

func mustParse(doc string) *manifest.Manifest {
	m, err := manifest.Parse([]byte(doc))
	if err != nil {
		panic(err)
	}
	return m
}

// A team applies its manifest as the owner "platform-team": the plan says
// what an apply would change and writes nothing; the apply writes it and
// brings the buckets in use in line; applying the same manifest again
// writes nothing; a release gives back everything the owner held.
func Example() {
	p, drop := exampleProvisioner("provision.Example")
	defer drop()
	ctx := context.Background()

	m := mustParse(`
namespace: tenant-alpha
resources:
  gpt-4:
    limits:
      rpm: {capacity: 100}
  gpt-3.5: {disabled: true}
entities:
  api-key-1:
    resources:
      gpt-3.5: {disabled: false}   # a carve-out
`)
	ns, err := p.Store().ResolveNamespace(ctx, m.Namespace)
	if err != nil {
		panic(err)
	}
	owner, err := provision.ManifestOwner("platform-team")
	if err != nil {
		panic(err)
	}
	req := provision.Request{Owner: owner, Principal: "ci@example.com"}

	plan, err := p.Plan(ctx, ns, m, req)
	if err != nil {
		panic(err)
	}
	fmt.Println("plan:")
	for _, c := range plan.Changes {
		fmt.Println(" ", c)
	}
	res, err := p.ApplyPlan(ctx, plan)
	if err != nil {
		panic(err)
	}
	fmt.Printf("applied: %d created, %d updated, %d deleted\n", res.Created, res.Updated, res.Deleted)

	res, err = p.Apply(ctx, ns, m, req)
	if err != nil {
		panic(err)
	}
	fmt.Printf("the same manifest again: %d changes, anything written: %v\n", len(res.Changes), res.StateWritten)

	// The next version of the manifest raises gpt-4 and drops the kill
	// switch: the carve-out it no longer names goes too.
	m = mustParse(`
namespace: tenant-alpha
resources:
  gpt-4:
    limits:
      rpm: {capacity: 200}
`)
	if res, err = p.Apply(ctx, ns, m, req); err != nil {
		panic(err)
	}
	fmt.Println("apply of the next version:")
	for _, c := range res.Changes {
		fmt.Println(" ", c)
	}
	limits, err := p.Store().GetResourceLimits(ctx, ns, "gpt-4")
	if err != nil {
		panic(err)
	}
	fmt.Println("gpt-4 now:", limits)

	if res, err = p.Release(ctx, ns, req); err != nil {
		panic(err)
	}
	fmt.Printf("released: %d deleted\n", res.Deleted)
	if limits, err = p.Store().GetResourceLimits(ctx, ns, "gpt-4"); err != nil {
		panic(err)
	}
	fmt.Println("gpt-4 now:", limits)
	state, err := p.ReadState(ctx, ns, owner)
	if err != nil {
		panic(err)
	}
	fmt.Println("owner record left:", state.Found)
	// Output:
	// plan:
	//   create resource gpt-3.5 (disabled: inherit → disabled)
	//   create resource gpt-4 (limits)
	//   create entity api-key-1/gpt-3.5 (disabled: inherit → enforce)
	// applied: 3 created, 0 updated, 0 deleted
	// the same manifest again: 0 changes, anything written: false
	// apply of the next version:
	//   delete resource gpt-3.5 (disabled: disabled → inherit)
	//   update resource gpt-4 (limits)
	//   delete entity api-key-1/gpt-3.5 (disabled: enforce → inherit)
	// gpt-4 now: [rpm: 200/60s]
	// released: 1 deleted
	// gpt-4 now: []
	// owner record left: false
}

// Each target is held by one owner. A manifest naming a resource another
// owner holds is refused before anything is written, naming the holder.
func ExampleOwnershipError() {
	p, drop := exampleProvisioner("provision.ExampleOwnershipError")
	defer drop()
	ctx := context.Background()
	// A manifest file may be JSON too (YAML reads JSON).
	m := mustParse(`{"namespace": "tenant-alpha", "resources": {"gpt-4": {"limits": {"rpm": {"capacity": 100}}}}}`)
	ns, err := p.Store().ResolveNamespace(ctx, m.Namespace)
	if err != nil {
		panic(err)
	}
	platform, _ := provision.ManifestOwner("platform-team")
	if _, err := p.Apply(ctx, ns, m, provision.Request{Owner: platform}); err != nil {
		panic(err)
	}

	search, _ := provision.ManifestOwner("search-team")
	_, err = p.Apply(ctx, ns, m, provision.Request{Owner: search})
	var refused *provision.OwnershipError
	if errors.As(err, &refused) {
		for _, c := range refused.Conflicts {
			fmt.Printf("%s %s is held by %s\n", c.Target.Kind, c.Target, c.Holder)
		}
	}
	// Output:
	// resource gpt-4 is held by the manifest owner platform-team (applied outside CloudFormation)
}
