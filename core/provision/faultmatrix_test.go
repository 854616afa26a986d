package provision_test

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/config"
	"github.com/zae-limiter/zae-limiter-go/core/internal/capability"
	"github.com/zae-limiter/zae-limiter-go/core/limit"
	"github.com/zae-limiter/zae-limiter-go/core/limiter"
	"github.com/zae-limiter/zae-limiter-go/core/provision"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
	"github.com/zae-limiter/zae-limiter-go/internal/ddbtest"
	"github.com/zae-limiter/zae-limiter-go/internal/faultproxy"
)

// snapshot is the namespace's items an apply and its rollback concern:
// config, registries, the provisioner's records and the buckets, without
// the audit trail (it only grows) and a bucket's state that a limits sync
// moves on from the instant of the change (docs/design.md §8): its `vu`,
// `rf` and `recheck` stamps and its balances (b_*_tk), which balances()
// reads apart.
//
// Generation counters of the provisioner's records only count applies, and
// are left out too. With params false, so are a bucket's limit parameters.
func (e *env) snapshot(params bool) map[string]string {
	e.t.Helper()
	out := map[string]string{}
	in := &dynamodb.QueryInput{
		TableName: aws.String(e.tbl.Name), IndexName: aws.String(schema.GSI4),
		KeyConditionExpression:    aws.String("#0 = :0"),
		ExpressionAttributeNames:  map[string]string{"#0": schema.AttrGSI4PK},
		ExpressionAttributeValues: map[string]types.AttributeValue{":0": schema.Str(e.ns)},
	}
	var keys []schema.Key
	for {
		page, err := e.tbl.DB.Query(e.ctx, in)
		if err != nil {
			e.t.Fatal(err)
		}
		for _, it := range page.Items {
			keys = append(keys, schema.Key{PK: str(it["PK"]), SK: str(it["SK"])})
		}
		if len(page.LastEvaluatedKey) == 0 {
			break
		}
		in.ExclusiveStartKey = page.LastEvaluatedKey
	}
	items, err := e.store.ReadItems(e.ctx, keys)
	if err != nil {
		e.t.Fatal(err)
	}
	for k, it := range items {
		if strings.Contains(k.PK, "/AUDIT#") {
			continue
		}
		delete(it, "vu")
		delete(it, "gen")
		delete(it, "committed_gen")
		if strings.Contains(k.PK, "/BUCKET#") {
			delete(it, schema.AttrRF)
			delete(it, schema.AttrRecheck)
			for a := range it {
				if strings.HasPrefix(a, "b_") && strings.HasSuffix(a, "_tk") {
					delete(it, a)
				}
			}
		}
		if !params {
			for a := range it {
				if strings.HasPrefix(a, "b_") && (strings.HasSuffix(a, "_cp") || strings.HasSuffix(a, "_ra") || strings.HasSuffix(a, "_rp")) {
					delete(it, a)
				}
			}
		}
		var parts []string
		for _, a := range slices.Sorted(maps.Keys(it)) {
			parts = append(parts, a+"="+ddbtest.Render(it[a]))
		}
		key := k.PK + " " + k.SK
		out[strings.ReplaceAll(key, e.ns, "NS")] = strings.ReplaceAll(strings.Join(parts, " "), e.ns, "NS")
	}
	return out
}

// balances are the namespace's bucket balances, millitokens, by bucket
// and limit ("NS/BUCKET#u#r1#0 rpm"), wcu's left out (its refill credit
// follows the clock, not the apply).
func (e *env) balances() map[string]int64 {
	e.t.Helper()
	out := map[string]int64{}
	in := &dynamodb.ScanInput{TableName: aws.String(e.tbl.Name)}
	for {
		page, err := e.tbl.DB.Scan(e.ctx, in)
		if err != nil {
			e.t.Fatal(err)
		}
		for _, it := range page.Items {
			pk := str(it["PK"])
			if !strings.HasPrefix(pk, e.ns+"/BUCKET#") {
				continue
			}
			for a, v := range it {
				name, f, ok := schema.ParseBucketAttr(a)
				if !ok || f != schema.LimitTokens || name == schema.WCULimit {
					continue
				}
				n, _ := v.(*types.AttributeValueMemberN)
				if n == nil {
					continue
				}
				var x int64
				if _, err := fmt.Sscan(n.Value, &x); err != nil {
					e.t.Fatal(err)
				}
				out[strings.ReplaceAll(pk, e.ns, "NS")+" "+name] = x
			}
		}
		if len(page.LastEvaluatedKey) == 0 {
			return out
		}
		in.ExclusiveStartKey = page.LastEvaluatedKey
	}
}

// balanceDiff explains how after's balances depart from before's: none
// may be added or removed, and none may grow (a limits sync only clamps;
// a rollback that raises a limit again grants nothing, docs/design.md
// §8); with exact, none may move at all.
func balanceDiff(before, after map[string]int64, exact bool) string {
	var d []string
	for _, k := range slices.Sorted(maps.Keys(before)) {
		a, ok := after[k]
		switch {
		case !ok:
			d = append(d, k+": gone")
		case a > before[k] || (exact && a != before[k]):
			d = append(d, fmt.Sprintf("%s: %d, before %d", k, a, before[k]))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(after)) {
		if _, ok := before[k]; !ok {
			d = append(d, k+": new")
		}
	}
	return strings.Join(d, "\n")
}

func str(v types.AttributeValue) string {
	if s, ok := v.(*types.AttributeValueMemberS); ok {
		return s.Value
	}
	return ""
}

func diffSnapshots(before, after map[string]string) string {
	var d []string
	for _, k := range slices.Sorted(maps.Keys(before)) {
		if after[k] != before[k] {
			d = append(d, fmt.Sprintf("%s:\n  before %s\n  after  %s", k, before[k], after[k]))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(after)) {
		if _, ok := before[k]; !ok {
			d = append(d, fmt.Sprintf("%s: new %s", k, after[k]))
		}
	}
	return strings.Join(d, "\n")
}

// The fault matrix: DynamoDB is cut after N requests, for every N the
// request makes (the intent, config writes, audit, each fan-out, the
// commit); the apply fails; then either CloudFormation's rollback is
// replayed — the Release of a failed Create, the previous manifest applied
// again after a failed Update — and the namespace's items equal their
// snapshot from before the request, or the same request is retried and
// the items equal those of an apply that never failed.
func TestFaultMatrix(t *testing.T) {
	const before = `
namespace: tenant-alpha
system: {limits: {rpm: {capacity: 100}}}
resources: {r1: {limits: {rpm: {capacity: 10}}}, r2: {disabled: true}}
entities: {u: {resources: {r1: {limits: {rpm: {capacity: 1}}}}}}
`
	const after = `
namespace: tenant-alpha
system: {limits: {rpm: {capacity: 200}}}
resources: {r1: {limits: {rpm: {capacity: 20, soft: true}}, cascade: true}, r3: {disabled: bypass}}
entities: {u: {resources: {r1: {disabled: false}, _default_: {limits: {rpm: {capacity: 2}}}}}, v: {resources: {r3: {disabled: false}}}}
`
	type scenario struct {
		name   string
		setup  string // applied first ("" for a Create)
		retry  bool
		replay func(e *env, req provision.Request)
	}
	rollbackCreate := func(e *env, req provision.Request) { e.release(req) }
	rollbackUpdate := func(e *env, req provision.Request) { e.mustApplyAs(req, before) }
	scenarios := []scenario{
		{"create/rollback", "", false, rollbackCreate},
		{"create/retry", "", true, nil},
		{"update/rollback", before, false, rollbackUpdate},
		{"update/retry", before, true, nil},
	}
	// prepare builds the namespace a request starts from: buckets for the
	// fan-outs to reach, and the previous manifest for an Update.
	prepare := func(e *env, name, setup string) provision.Request {
		e.freshNamespace(name)
		req := resource("stack-a", "Limits")
		if setup != "" {
			e.mustApplyAs(req, setup)
		} else {
			// An unmanaged system level the Create adopts.
			if err := e.store.Writer(capability.ConfigWrite{}).SetSystemLimits(e.ctx, e.ns, []limit.Limit{limit.PerMinute("rpm", 100)}, config.SystemOptions{}); err != nil {
				e.t.Fatal(err)
			}
		}
		for _, p := range [][2]string{{"u", "r1"}, {"u", "r3"}, {"v", "r3"}, {"w", "r1"}} {
			e.acquire(p[0], p[1])
		}
		return req
	}
	// clean runs the request once without faults: the phase of each of its
	// calls, and what it leaves.
	clean := func(e *env, setup string) ([]string, map[string]string, map[string]int64) {
		req := prepare(e, "clean", setup)
		var (
			mu     sync.Mutex
			phases []string
		)
		rec := e.proxy.Add(faultproxy.Rule{Fault: faultproxy.InternalServerError(), Match: func(op string, body []byte) bool {
			mu.Lock()
			defer mu.Unlock()
			phases = append(phases, phaseOf(op, string(body)))
			return false
		}})
		e.mustApplyAs(req, after)
		e.proxy.Remove(rec)
		return phases, e.snapshot(false), e.balances()
	}
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			phases, cleanSnapshot, cleanBalances := clean(e, sc.setup)
			cuts := cutPoints(phases)
			t.Logf("%d calls; cut after %v", len(phases), cuts)
			for i, n := range cuts {
				req := prepare(e, fmt.Sprintf("cut-%d", i), sc.setup)
				want, wantBalances := e.snapshot(!sc.retry), e.balances()
				if sc.retry {
					want, wantBalances = cleanSnapshot, cleanBalances
				}
				cut := e.proxy.Add(faultproxy.Rule{Fault: faultproxy.InternalServerError(), After: n})
				res, err := e.applyAs(req, after)
				e.proxy.Remove(cut)
				if err == nil && len(res.Errors) == 0 && n < len(phases)-1 {
					t.Fatalf("cut after %d of %d calls: the apply succeeded", n, len(phases))
				}
				if sc.retry {
					// A committed apply with owed fan-outs finishes them
					// here too.
					e.mustApplyAs(req, after)
				} else {
					sc.replay(e, req)
				}
				got := e.snapshot(!sc.retry)
				if d := diffSnapshots(want, got); d != "" {
					t.Fatalf("cut after %d of %d calls (%s; %v): the namespace differs:\n%s", n, len(phases), phaseAt(phases, n), err, d)
				}
				// A retry ends where a clean apply does; a rollback never
				// gives a bucket more than it had.
				if d := balanceDiff(wantBalances, e.balances(), sc.retry); d != "" {
					t.Fatalf("cut after %d of %d calls (%s; %v): the balances differ:\n%s", n, len(phases), phaseAt(phases, n), err, d)
				}
			}
		})
	}
}

// freshNamespace switches the env to a new namespace of its table, with
// its own limiter.
func (e *env) freshNamespace(name string) {
	e.t.Helper()
	ns, _, err := e.store.Writer(capability.ConfigWrite{}).RegisterNamespace(e.ctx, name)
	if err != nil {
		e.t.Fatal(err)
	}
	lim, err := limiter.New(e.tbl.DB, e.tbl.Name, ns, limiter.Options{Clock: e.clk.Now, Rand: func(int) int { return 0 }, ConfigCacheTTL: -1, RejectionCacheTTL: -1})
	if err != nil {
		e.t.Fatal(err)
	}
	e.ns, e.lim = ns, lim
}

// phaseOf names the phase of the apply a call belongs to (docs/design.md
// §12) from what it writes; a read ("") belongs to the phase it is part of.
func phaseOf(op, body string) string {
	switch {
	case op == "GetItem" || op == "BatchGetItem" || op == "Query":
		return ""
	case strings.Contains(body, "#OWNER#"):
		return "owner record"
	case strings.Contains(body, "#CLAIM#"):
		return "claims"
	case strings.Contains(body, "/AUDIT#"):
		return "audit"
	case strings.Contains(body, "#VERSION"):
		return "version ratchet"
	case !strings.Contains(body, "BUCKET#"):
		return "config writes"
	case strings.Contains(body, "parent_id"), strings.Contains(body, `"cascade"`):
		return "cascade fan-out"
	case strings.Contains(body, `"vu"`):
		return "limits sync"
	}
	return "access fan-out"
}

// cutPoints are the cuts that reach every phase: its first call fails,
// and its last; and no cut at all. Reads take the phase of the write
// before them.
func cutPoints(phases []string) []int {
	label := slices.Clone(phases)
	for i := range label {
		if label[i] == "" {
			label[i] = "plan"
			if i > 0 {
				label[i] = label[i-1]
			}
		}
	}
	set := map[int]bool{len(phases): true}
	for i := range label {
		if i == 0 || label[i] != label[i-1] {
			set[i] = true
		}
		if i == len(label)-1 || label[i] != label[i+1] {
			set[i] = true
		}
	}
	return slices.Sorted(maps.Keys(set))
}

func phaseAt(phases []string, n int) string {
	for ; n < len(phases); n-- {
		if n < 0 {
			return "cut in the plan"
		}
		if phases[n] != "" {
			return "cut in " + phases[n]
		}
	}
	return "no cut"
}
