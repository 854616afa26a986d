package control_test

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/zae-limiter/zae-limiter-go/core/config"
	"github.com/zae-limiter/zae-limiter-go/core/control"
	"github.com/zae-limiter/zae-limiter-go/core/limit"
	"github.com/zae-limiter/zae-limiter-go/core/limiter"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
)

// calls renders the proxy's per-operation request counts since the last
// reset: "BatchGetItem 1, GetItem 2, …".
func (e *env) calls() string {
	var parts []string
	stats := e.proxy.Stats()
	for _, op := range slices.Sorted(maps.Keys(stats)) {
		if n := stats[op].Forwarded; n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", op, n))
		}
	}
	return strings.Join(parts, ", ")
}

// TestOperatorCosts pins the DynamoDB calls of each operator call
// (docs/costs.md, "Operator calls"): a resource-wide disable over 3
// buckets, the same for a bypass (the version gate and ratchet on top), an
// entity limit change syncing 2 buckets, a reset and a top-up of a
// 1-shard and a 4-shard bucket.
func TestOperatorCosts(t *testing.T) {
	e := newEnv(t)
	if _, err := e.ctl.SetSystemLimits(e.ctx, e.ns, []limit.Limit{limit.PerMinute("rpm", 40)}, config.SystemOptions{}, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := e.ctl.SetResourceLimits(e.ctx, e.ns, "r", []limit.Limit{limit.PerMinute("rpm", 40)}, ""); err != nil {
		t.Fatal(err)
	}
	for _, ent := range []string{"a", "b", "c"} {
		e.acquire(ent, "r")
	}
	measure := func(what, want string, f func() error) {
		t.Helper()
		e.proxy.ResetStats()
		if err := f(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if got := e.calls(); got != want {
			t.Errorf("%s costs\n  %s\nwant\n  %s", what, got, want)
		}
	}
	// Config: read + update of the existing item; audit put; two GSI2
	// discovery queries; one walk per pair (3); one write per bucket (3).
	measure("disable a resource with 3 buckets", "BatchGetItem 3, GetItem 1, PutItem 1, Query 2, UpdateItem 4", func() error {
		_, err := e.ctl.SetAccess(e.ctx, e.ns, "", "r", config.AccessDisabled, "")
		return err
	})
	// + the gate's read of the version record, the ratchet's read and write.
	measure("bypass a resource with 3 buckets", "BatchGetItem 3, GetItem 3, PutItem 1, Query 2, UpdateItem 5", func() error {
		_, err := e.ctl.SetAccess(e.ctx, e.ns, "", "r", config.AccessBypass, "")
		return err
	})
	e.set("", "r", config.AccessInherit)
	// Entity limits: the config write (a new item: a transaction with the
	// registry), audit; two GSI3 queries; the buckets in one read, their
	// pairs' config in another, and one write per bucket out of line.
	e.acquire("a", "r2")
	measure("entity limits syncing 2 buckets", "BatchGetItem 2, GetItem 1, PutItem 1, Query 2, TransactWriteItems 1, UpdateItem 2", func() error {
		_, err := e.ctl.SetEntityLimits(e.ctx, e.ns, "a", schema.DefaultResource, []limit.Limit{limit.PerMinute("rpm", 20)}, "")
		return err
	})
	// Reset of a 1-shard bucket: META, the walk, the shard discovery, the
	// shard, the walk again (after the shard: docs/decisions.md P58), one
	// 3-item transaction (shard, record, audit).
	measure("reset of 1 shard", "BatchGetItem 2, GetItem 2, Query 1, TransactWriteItems 1", func() error {
		_, err := e.ctl.Reset(e.ctx, e.ns, "b", "r", nil, control.OperationOptions{})
		return err
	})
	// With an idempotency key: + the record's read.
	measure("top-up of 1 shard with a key", "BatchGetItem 2, GetItem 3, Query 1, TransactWriteItems 1", func() error {
		_, err := e.ctl.TopUp(e.ctx, e.ns, "b", "r", map[string]int64{"rpm": 1}, control.OperationOptions{OperationID: "k1"})
		return err
	})
	measure("a replay of the committed key", "BatchGetItem 1, GetItem 2", func() error {
		op, err := e.ctl.TopUp(e.ctx, e.ns, "b", "r", map[string]int64{"rpm": 1}, control.OperationOptions{OperationID: "k1"})
		if err == nil && !op.Replayed {
			err = fmt.Errorf("not a replay: %+v", op)
		}
		return err
	})
	lim4, err := limiter.New(e.tbl.DB, e.tbl.Name, e.ns, limiter.Options{Clock: e.clk.Now, Rand: rotate()})
	if err != nil {
		t.Fatal(err)
	}
	e.bumpShards("c", "r", 4)
	for range 8 {
		if _, err := lim4.Acquire(e.ctx, "c", "r", limiter.Consume{"rpm": 1}); err != nil {
			t.Fatal(err)
		}
	}
	measure("reset of 4 shards", "BatchGetItem 2, GetItem 5, Query 1, TransactWriteItems 1", func() error {
		_, err := e.ctl.Reset(e.ctx, e.ns, "c", "r", nil, control.OperationOptions{})
		return err
	})
}
