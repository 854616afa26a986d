package limiter_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/config"
	"github.com/zae-limiter/zae-limiter-go/core/internal/capability"
	"github.com/zae-limiter/zae-limiter-go/core/limit"
	"github.com/zae-limiter/zae-limiter-go/core/limiter"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
)

// put writes an item as another client wrote it: keys plus attributes.
func (e *env) put(k schema.ItemKeys, a map[string]types.AttributeValue) {
	e.t.Helper()
	it := k.Item()
	for n, v := range a {
		it[n] = v
	}
	if _, err := e.tbl.DB.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(e.tbl.Name), Item: it}); err != nil {
		e.t.Fatal(err)
	}
}

// TestSessionOverrideGated: limits given to the call (WithLimits) holding
// a session quota pass the writer gate at 0.15.0 first (ADR-141): with
// the table's readers at 0.14.0 the acquire is refused, under
// on_unavailable=allow too, before any bucket is written; at 0.15.0 it
// opens the window and raises client_min_version, and a later acquire
// pays no second version read.
func TestSessionOverrideGated(t *testing.T) {
	e := newEnv(t, limiter.Options{OnUnavailable: config.OnUnavailableAllow})
	st := config.NewStore(e.tbl.DB, e.tbl.Name)
	if err := st.WriteVersion(context.Background(), config.VersionRecord{LambdaVersion: "0.14.0", ClientMinVersion: "0.12.0"}); err != nil {
		t.Fatal(err)
	}
	acquire := func() (*limiter.Lease, error) {
		return e.lim.Acquire(context.Background(), "u", "gpt-4", limiter.Consume{"session": 1},
			limiter.WithLimits(limit.PerMinute("rpm", 10), limit.Session("session", 10, time.Hour)), limiter.WithOnUnavailable(config.OnUnavailableAllow))
	}
	e.proxy.ResetStats()
	lease, err := acquire()
	var vm *config.VersionMismatchError
	if !errors.As(err, &vm) || !vm.Gate || vm.ClientMinVersion != config.SessionQuotaVersion || lease != nil || limiter.IsInfrastructureError(err) {
		t.Fatalf("%v, %v: want the gate's refusal at %s", lease, err, config.SessionQuotaVersion)
	}
	if w := e.proxy.Writes(); w != "" {
		t.Fatalf("a refused override wrote %s", w)
	}
	if err := st.WriteVersion(context.Background(), config.VersionRecord{LambdaVersion: "0.15.0", ClientMinVersion: "0.12.0"}); err != nil {
		t.Fatal(err)
	}
	if _, err := acquire(); err != nil {
		t.Fatal(err)
	}
	now := e.clk.Now().UnixMilli()
	e.want("opened", e.bucket("u", "gpt-4", 0), map[string]string{"b_session_ws": ms(now), "b_session_wa": ms(now), "b_session_rsa": "3600", "b_session_tk": "9000"})
	rec, _, err := st.ReadVersion(context.Background())
	if err != nil || rec.ClientMinVersion != config.SessionQuotaVersion {
		t.Fatalf("client_min_version %q (%v), want %s", rec.ClientMinVersion, err, config.SessionQuotaVersion)
	}
	e.proxy.ResetStats()
	if _, err := acquire(); err != nil {
		t.Fatal(err)
	}
	if n := e.calls("GetItem"); n != 0 {
		t.Fatalf("%d GetItem on a later acquire: the gate read the version again", n)
	}
}

// TestSoftOverrideGated: limits given to the call holding a soft limit pass
// the writer gate at 0.17.0 first, as the config setters gate a stored soft
// limit (decisions P55): refused with the table's readers at 0.16.0, under
// on_unavailable=allow too, with nothing written; admitted at 0.17.0.
func TestSoftOverrideGated(t *testing.T) {
	e := newEnv(t, limiter.Options{})
	st := config.NewStore(e.tbl.DB, e.tbl.Name)
	if err := st.WriteVersion(context.Background(), config.VersionRecord{LambdaVersion: "0.16.0", ClientMinVersion: "0.12.0"}); err != nil {
		t.Fatal(err)
	}
	acquire := func() (*limiter.Lease, error) {
		return e.lim.Acquire(context.Background(), "u", "gpt-4", limiter.Consume{"rpm": 1},
			limiter.WithLimits(limit.PerMinute("rpm", 10).AsSoft()), limiter.WithOnUnavailable(config.OnUnavailableAllow))
	}
	e.proxy.ResetStats()
	lease, err := acquire()
	var vm *config.VersionMismatchError
	if !errors.As(err, &vm) || !vm.Gate || vm.ClientMinVersion != config.SoftBypassVersion || lease != nil {
		t.Fatalf("%v, %v: want the gate's refusal at %s", lease, err, config.SoftBypassVersion)
	}
	if w := e.proxy.Writes(); w != "" {
		t.Fatalf("a refused override wrote %s", w)
	}
	if err := st.WriteVersion(context.Background(), config.VersionRecord{LambdaVersion: "0.17.0", ClientMinVersion: "0.12.0"}); err != nil {
		t.Fatal(err)
	}
	if _, err := acquire(); err != nil {
		t.Fatal(err)
	}
	rec, _, err := st.ReadVersion(context.Background())
	if err != nil || rec.ClientMinVersion != config.SoftBypassVersion {
		t.Fatalf("client_min_version %q (%v), want %s", rec.ClientMinVersion, err, config.SoftBypassVersion)
	}
}

// pythonSession writes the resource level as the Python client of 0.15
// writes a session quota: 10,000 tokens a window of 5 hours from first
// use, under the hidden prefix (docs/design.md §7). A session quota never
// drips, so a shard's vu is its window's end.
func (e *env) pythonSession(resource string) {
	e.t.Helper()
	e.put(schema.ResourceConfigItemKeys(ns, resource), map[string]types.AttributeValue{
		"resource": schema.Str(resource), "config_version": schema.Num(1),
		"w_session_cp": schema.Num(10_000), "w_session_ra": schema.Num(0), "w_session_rp": schema.Num(1), "w_session_rsa": schema.Num(18_000),
	})
}

const sessionMs = 5 * 3_600_000 // the window of pythonSession, ms

// want checks attributes of an item as numbers ("" for an absent one).
func (e *env) want(what string, item map[string]types.AttributeValue, attrs map[string]string) {
	e.t.Helper()
	for attr, w := range attrs {
		got := ""
		if _, ok := item[attr]; ok {
			got = e.n(item, attr)
		}
		if got != w {
			e.t.Errorf("%s: %s = %q, want %q", what, attr, got, w)
		}
	}
}

func ms(v int64) string { return strconv.FormatInt(v, 10) }

// A session quota's window opens on the first admitted use, is spent on
// the fast path (one conditional UpdateItem), names its end when
// exhausted (a rejection writes nothing), and re-opens with a full share
// at the first use after it ended, while tc keeps climbing (ADR-139,
// docs/design.md §15).
func TestSessionWindowOpensOnFirstUse(t *testing.T) {
	e := newEnv(t, limiter.Options{})
	e.pythonSession("gpt-4")
	ctx := context.Background()
	t0 := e.clk.Now().UnixMilli()
	if _, err := e.lim.Acquire(ctx, "u", "gpt-4", limiter.Consume{"session": 3}); err != nil {
		t.Fatal(err)
	}
	// The new shard's vu stops at its recheck deadline, a minute on
	// (docs/design.md §8).
	e.want("opened", e.bucket("u", "gpt-4", 0), map[string]string{
		"b_session_ws": ms(t0), "b_session_wa": ms(t0), "b_session_rsa": "18000", "b_session_wtc": "",
		"b_session_tk": "9997000", "b_session_tc": "3000", "b_session_gc": "1", "b_session_ra": "0",
		"rf": ms(t0), "vu": ms(t0 + 60_000), "recheck": ms(t0 + 60_000),
	})

	// There, one refill pass checks the limits against config (one read)
	// and stamps the window's end.
	e.clk.Advance(time.Minute)
	e.proxy.ResetStats()
	if _, err := e.lim.Acquire(ctx, "u", "gpt-4", limiter.Consume{"session": 4}); err != nil {
		t.Fatal(err)
	}
	if e.calls("UpdateItem") != 1 || e.calls("BatchGetItem") != 1 || e.calls("GetItem") != 0 {
		t.Errorf("the created shard's check took %d UpdateItem, %d BatchGetItem, %d GetItem: want a read and a refill pass",
			e.calls("UpdateItem"), e.calls("BatchGetItem"), e.calls("GetItem"))
	}
	e.want("checked", e.bucket("u", "gpt-4", 0), map[string]string{"vu": ms(t0 + sessionMs), "recheck": ""})

	// Inside the window: the fast path, one call, no read.
	e.proxy.ResetStats()
	if _, err := e.lim.Acquire(ctx, "u", "gpt-4", limiter.Consume{"session": 0}); err != nil {
		t.Fatal(err)
	}
	if e.calls("UpdateItem") != 1 || e.calls("BatchGetItem") != 0 || e.calls("GetItem") != 0 {
		t.Errorf("a use inside the window took %d UpdateItem, %d BatchGetItem, %d GetItem: want the fast path's one write",
			e.calls("UpdateItem"), e.calls("BatchGetItem"), e.calls("GetItem"))
	}
	if _, err := e.lim.Acquire(ctx, "u", "gpt-4", limiter.Consume{"session": 9_993}); err != nil {
		t.Fatal(err)
	}
	before := e.bucket("u", "gpt-4", 0)
	e.clk.Advance(time.Hour)
	var rle *limiter.RateLimitExceeded
	if _, err := e.lim.Acquire(ctx, "u", "gpt-4", limiter.Consume{"session": 1}); !errors.As(err, &rle) {
		t.Fatalf("exhausted window: %v, want a rejection", err)
	}
	if d, never := rle.RetryAfter(); never || d != 4*time.Hour-time.Minute {
		t.Errorf("retry after %v (never %v), want the window's end, 3h59m from now", d, never)
	}
	if after := e.bucket("u", "gpt-4", 0); !reflect.DeepEqual(after, before) {
		t.Errorf("a rejection wrote:\n%v\n%v", before, after)
	}

	// The window ended at t0 + 5 h; the first use at t0 + 7 h opens the
	// next one there with the full share. A request above the share is
	// refused for ever and anchors nothing.
	e.clk.Set(time.UnixMilli(t0 + 7*3_600_000))
	t1 := e.clk.Now().UnixMilli()
	if _, err := e.lim.Acquire(ctx, "u", "gpt-4", limiter.Consume{"session": 10_001}); !errors.As(err, &rle) {
		t.Fatalf("above the share: %v, want a rejection", err)
	} else if _, never := rle.RetryAfter(); !never {
		t.Errorf("a request above the share is retryable: %v", rle)
	}
	e.want("not anchored by a rejection", e.bucket("u", "gpt-4", 0), map[string]string{"b_session_ws": ms(t0), "b_session_tk": "0"})
	if _, err := e.lim.Acquire(ctx, "u", "gpt-4", limiter.Consume{"session": 2}); err != nil {
		t.Fatal(err)
	}
	e.want("re-opened", e.bucket("u", "gpt-4", 0), map[string]string{
		"b_session_ws": ms(t1), "b_session_wa": ms(t1), "b_session_tk": "9998000", "b_session_tc": "10002000",
		"rf": ms(t1), "vu": ms(t1 + sessionMs),
	})
}

// A window opened on one shard reaches the pair's others (docs/design.md
// §15): a new shard joins shard 0's live window with a grant moved off
// shard 0 (ADR-145, nothing minted); after the window ends, the first use
// on shard 0 opens the next and fans its start out (ws, rsa, wtc = tc,
// vu = 0, never tk); shard 1's next use rolls to its share less what it
// consumed since the snapshot.
func TestSessionWindowFanOutAndRoll(t *testing.T) {
	draw := 0
	e := newEnv(t, limiter.Options{Rand: func(n int) int { return min(draw, n-1) }})
	e.pythonSession("gpt-4")
	ctx := context.Background()
	t0 := e.clk.Now().UnixMilli()
	if _, err := e.lim.Acquire(ctx, "u", "gpt-4", limiter.Consume{"session": 1_000}); err != nil {
		t.Fatal(err)
	}
	// Another client doubled the pair; this one learns it on shard 0.
	e.update("u", "gpt-4", 0, "SET shard_count = :two", map[string]types.AttributeValue{":two": schema.Num(2)})
	e.clk.Advance(time.Minute)
	if _, err := e.lim.Acquire(ctx, "u", "gpt-4", limiter.Consume{"session": 0}); err != nil {
		t.Fatal(err)
	}
	draw = 1
	e.clk.Advance(time.Minute)
	tj := e.clk.Now().UnixMilli()
	if _, err := e.lim.Acquire(ctx, "u", "gpt-4", limiter.Consume{"session": 5}); err != nil {
		t.Fatal(err)
	}
	// Shard 1 joined t0's window; slot 1's share (5,000 of 10,000) moved
	// off shard 0, which covered every slot at gc 1.
	e.want("shard 0 after the move", e.bucket("u", "gpt-4", 0), map[string]string{"b_session_tk": "4000000", "b_session_gc": "1", "b_session_ws": ms(t0)})
	e.want("shard 1 joined", e.bucket("u", "gpt-4", 1), map[string]string{
		"b_session_ws": ms(t0), "b_session_wa": ms(t0), "b_session_rsa": "18000", "b_session_tk": "4995000", "b_session_tc": "5000",
		"b_session_gc": "2", "rf": ms(tj), "vu": ms(tj + 60_000), "recheck": ms(tj + 60_000), "shard_count": "2",
	}) // vu stops at the new shard's recheck deadline (docs/design.md §8)

	// Past the window's end: shard 0 opens the next window and fans it out.
	draw = 0
	e.clk.Set(time.UnixMilli(t0 + sessionMs + 30*60_000))
	t1 := e.clk.Now().UnixMilli()
	e.proxy.ResetStats()
	if _, err := e.lim.Acquire(ctx, "u", "gpt-4", limiter.Consume{"session": 1}); err != nil {
		t.Fatal(err)
	}
	e.want("shard 0 opened", e.bucket("u", "gpt-4", 0), map[string]string{
		"b_session_ws": ms(t1), "b_session_wa": ms(t1), "b_session_tk": "4999000", "b_session_gc": "2", "vu": ms(t1 + sessionMs),
	})
	e.want("shard 1 handed the start", e.bucket("u", "gpt-4", 1), map[string]string{
		"b_session_ws": ms(t1), "b_session_wa": ms(t0), "b_session_wtc": "5000", "b_session_tk": "4995000", "vu": "0", "rf": ms(tj),
	})
	// The fast path's failed write, the slow path's read and write, and
	// one fan-out write.
	if got := e.calls("UpdateItem"); got != 3 {
		t.Errorf("%d UpdateItem, want 3 (fast path, rf-locked write, fan-out)", got)
	}

	// Shard 1 used 2 more tokens by a bypassed pass before its next
	// enforced use (tc climbs past the snapshot); the roll subtracts them.
	e.update("u", "gpt-4", 1, "ADD b_session_tc :two", map[string]types.AttributeValue{":two": schema.Num(2_000)})
	draw = 1
	e.clk.Advance(time.Second)
	tr := e.clk.Now().UnixMilli()
	if _, err := e.lim.Acquire(ctx, "u", "gpt-4", limiter.Consume{"session": 3}); err != nil {
		t.Fatal(err)
	}
	e.want("shard 1 rolled", e.bucket("u", "gpt-4", 1), map[string]string{
		"b_session_ws": ms(t1), "b_session_wa": ms(t1), "b_session_wtc": "", "b_session_tk": "4995000", "b_session_tc": "10000",
		"b_session_gc": "2", "rf": ms(tr), "vu": ms(t1 + sessionMs),
	})
}

// A bypassed pass never opens, joins or rolls a window (ADR-151 decision
// 6): it counts tc and leaves the window to the next enforced pass.
func TestSessionBypassNeverOpens(t *testing.T) {
	e := newEnv(t, limiter.Options{})
	e.pythonSession("gpt-4")
	ctx := context.Background()
	w := e.lim.Store().Writer(capability.ConfigWrite{})
	if err := w.SetAccess(ctx, ns, "u", "gpt-4", config.AccessBypass); err != nil {
		t.Fatal(err)
	}
	lease, err := e.lim.Acquire(ctx, "u", "gpt-4", limiter.Consume{"session": 4})
	if err != nil || !lease.Bypassed() {
		t.Fatalf("bypassed acquire: %v", err)
	}
	t0 := e.clk.Now().UnixMilli()
	e.want("bypassed create", e.bucket("u", "gpt-4", 0), map[string]string{
		"b_session_ws": "", "b_session_wa": "", "b_session_rsa": "18000", "b_session_tk": "10000000", "b_session_tc": "4000", "vu": ms(t0),
	})
	if err := w.SetAccess(ctx, ns, "u", "gpt-4", config.AccessInherit); err != nil {
		t.Fatal(err)
	}
	e.clk.Advance(61 * time.Second) // the bypass stamp lapses
	t1 := e.clk.Now().UnixMilli()
	if _, err := e.lim.Acquire(ctx, "u", "gpt-4", limiter.Consume{"session": 1}); err != nil {
		t.Fatal(err)
	}
	e.want("opened by the enforced pass", e.bucket("u", "gpt-4", 0), map[string]string{
		"b_session_ws": ms(t1), "b_session_wa": ms(t1), "b_session_tk": "9999000", "b_session_tc": "5000",
	})
}

// A shard the Python client left with a window pending — another shard
// opened it and fanned it out (ws > wa, wtc the snapshot, vu = 0) — rolls
// at this client's next use to share − max(0, tc − wtc), and a shard whose
// unapplied window already ended opens a new one instead of rolling it.
func TestSessionPythonPendingShard(t *testing.T) {
	e := newEnv(t, limiter.Options{})
	e.pythonSession("gpt-4")
	now := e.clk.Now().UnixMilli()
	for _, c := range []struct {
		entity       string
		ws, wa       int64
		want         map[string]string
		wantWindowAt int64
	}{
		{"live", now - 600_000, now - sessionMs - 3_600_000, map[string]string{"b_session_tk": "4989000", "b_session_wa": ms(now - 600_000)}, now - 600_000},
		{"dead", now - sessionMs - 60_000, now - 2*sessionMs, map[string]string{"b_session_tk": "4999000", "b_session_wa": ms(now)}, now},
	} {
		for shard := range 2 {
			a := map[string]types.AttributeValue{
				"entity_id": schema.Str(c.entity), "resource": schema.Str("gpt-4"), "rf": schema.Num(now - 3_600_000), "shard_count": schema.Num(2), "vu": schema.Num(0),
				"b_session_tk": schema.Num(1_000), "b_session_cp": schema.Num(10_000_000), "b_session_ra": schema.Num(0), "b_session_rp": schema.Num(1000),
				"b_session_tc": schema.Num(20_000), "b_session_ws": schema.Num(c.ws), "b_session_rsa": schema.Num(18_000), "b_session_wa": schema.Num(c.wa),
				"b_session_wtc": schema.Num(10_000), "b_session_gc": schema.Num(2),
				"b_wcu_tk": schema.Num(1_000_000), "b_wcu_cp": schema.Num(1_000_000), "b_wcu_ra": schema.Num(1_000_000), "b_wcu_rp": schema.Num(1000), "b_wcu_tc": schema.Num(0),
			}
			e.put(schema.BucketItemKeys(ns, c.entity, "gpt-4", shard), a)
		}
		if _, err := e.lim.Acquire(context.Background(), c.entity, "gpt-4", limiter.Consume{"session": 1}); err != nil {
			t.Fatalf("%s: %v", c.entity, err)
		}
		want := map[string]string{"b_session_ws": ms(c.wantWindowAt), "b_session_wtc": "", "b_session_tc": "21000", "b_session_gc": "2",
			"rf": ms(now), "vu": ms(c.wantWindowAt + sessionMs)}
		for k, v := range c.want {
			want[k] = v
		}
		e.want(c.entity, e.bucket(c.entity, "gpt-4", 0), want)
	}
}

// What opening a window costs (docs/costs.md "Session quotas"): on a pair
// of 4 shards whose window ended, the first use on shard 0 pays the fast
// path's failed write, the slow path's reads and its write, and one
// conditional write per sibling (3); each sibling's next use then pays one
// slow pass to roll the window in; a use inside the window is the fast
// path's one write.
func TestSessionOpenCost(t *testing.T) {
	draw := 0
	e := newEnv(t, limiter.Options{Rand: func(n int) int { return min(draw, n-1) }})
	e.pythonSession("gpt-4")
	ctx := context.Background()
	now := e.clk.Now().UnixMilli()
	ended := now - sessionMs - 60_000
	for shard := range 4 {
		e.put(schema.BucketItemKeys(ns, "u", "gpt-4", shard), map[string]types.AttributeValue{
			"entity_id": schema.Str("u"), "resource": schema.Str("gpt-4"), "rf": schema.Num(ended + 1), "shard_count": schema.Num(4), "vu": schema.Num(ended + sessionMs),
			"b_session_tk": schema.Num(0), "b_session_cp": schema.Num(10_000_000), "b_session_ra": schema.Num(0), "b_session_rp": schema.Num(1000),
			"b_session_tc": schema.Num(10_000_000), "b_session_ws": schema.Num(ended), "b_session_rsa": schema.Num(18_000), "b_session_wa": schema.Num(ended),
			"b_session_gc": schema.Num(4),
			"b_wcu_tk":     schema.Num(1_000_000), "b_wcu_cp": schema.Num(1_000_000), "b_wcu_ra": schema.Num(1_000_000), "b_wcu_rp": schema.Num(1000), "b_wcu_tc": schema.Num(0),
		})
	}
	type cost map[string]int
	measure := func(what string, shard int, want cost) {
		t.Helper()
		draw = shard
		e.proxy.ResetStats()
		if _, err := e.lim.Acquire(ctx, "u", "gpt-4", limiter.Consume{"session": 1}); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		for _, op := range []string{"UpdateItem", "BatchGetItem", "GetItem", "TransactWriteItems", "PutItem"} {
			if got := e.calls(op); got != want[op] {
				t.Errorf("%s: %d %s, want %d", what, got, op, want[op])
			}
		}
	}
	measure("the opener", 0, cost{"UpdateItem": 5, "BatchGetItem": 3})
	for shard := 1; shard < 4; shard++ {
		e.want(fmt.Sprintf("shard %d", shard), e.bucket("u", "gpt-4", shard), map[string]string{"b_session_ws": ms(now), "vu": "0", "b_session_wtc": "10000000"})
	}
	e.clk.Advance(time.Second)
	measure("a sibling's roll", 2, cost{"UpdateItem": 2, "BatchGetItem": 2, "GetItem": 1})
	measure("a use inside the window", 0, cost{"UpdateItem": 1})
}

// An exhausted session window is refused from what DynamoDB already said:
// the failed write's image (one call), then the rejection cache (no call),
// each naming the window's end; at the window's end the cached state is
// never trusted and the request goes to DynamoDB, which opens the next
// window (docs/design.md §10, §15).
func TestSessionExhaustedRejectionsAreCheap(t *testing.T) {
	e := newEnv(t, limiter.Options{})
	e.pythonSession("gpt-4")
	ctx := context.Background()
	t0 := e.clk.Now()
	if _, err := e.lim.Acquire(ctx, "k", "gpt-4", limiter.Consume{"session": 9_999}); err != nil {
		t.Fatal(err)
	}
	// The new shard's one check of its limits, at its recheck deadline
	// (docs/design.md §8).
	e.clk.Set(t0.Add(time.Minute))
	if _, err := e.lim.Acquire(ctx, "k", "gpt-4", limiter.Consume{"session": 1}); err != nil {
		t.Fatal(err)
	}
	e.clk.Set(t0.Add(5*time.Hour - 2*time.Second))
	e.proxy.ResetStats()
	var rle *limiter.RateLimitExceeded
	if _, err := e.lim.Acquire(ctx, "k", "gpt-4", limiter.Consume{"session": 1}); !errors.As(err, &rle) {
		t.Fatalf("exhausted: %v", err)
	}
	if n := e.totalCalls(); n != 1 {
		t.Errorf("the first 429 took %d calls, want 1 (the failed write's image decides)", n)
	}
	if d, _ := rle.RetryAfter(); d != 2*time.Second {
		t.Errorf("retry after %v, want the 2 s to the window's end", d)
	}
	e.proxy.ResetStats()
	if _, err := e.lim.Acquire(ctx, "k", "gpt-4", limiter.Consume{"session": 1}); !errors.As(err, &rle) {
		t.Fatalf("exhausted again: %v", err)
	}
	if n := e.totalCalls(); n != 0 {
		t.Errorf("the second 429 took %d calls, want 0 (the rejection cache)", n)
	}
	if d, _ := rle.RetryAfter(); d != 2*time.Second {
		t.Errorf("the cached 429's retry after %v, want the window's end", d)
	}
	e.clk.Set(t0.Add(5 * time.Hour))
	if _, err := e.lim.Acquire(ctx, "k", "gpt-4", limiter.Consume{"session": 1}); err != nil {
		t.Fatalf("at the window's end: %v", err)
	}
	e.want("the next window", e.bucket("k", "gpt-4", 0), map[string]string{"b_session_ws": ms(t0.Add(5 * time.Hour).UnixMilli()), "b_session_tk": "9999000"})
	if st := e.lim.Stats(); st.LocalRejections != 1 {
		t.Errorf("stats %+v, want one local rejection", st)
	}
}

// A cascade's parent and child anchor their windows independently
// (ADR-139): the first use of a child opens the child's window and, in the
// same transaction, the parent's if it has none live; a second child an
// hour later opens its own window while the parent's runs on from the
// first use.
func TestSessionCascadeAnchorsIndependently(t *testing.T) {
	e := newEnv(t, limiter.Options{})
	e.pythonSession("gpt-4")
	ctx := context.Background()
	w := e.lim.Store().Writer(capability.ConfigWrite{})
	if _, err := w.CreateEntity(ctx, ns, "org", config.EntityOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"key-1", "key-2"} {
		if _, err := w.CreateEntity(ctx, ns, k, config.EntityOptions{ParentID: "org", Cascade: true}); err != nil {
			t.Fatal(err)
		}
	}
	t0 := e.clk.Now().UnixMilli()
	if _, err := e.lim.Acquire(ctx, "key-1", "gpt-4", limiter.Consume{"session": 10}); err != nil {
		t.Fatal(err)
	}
	e.clk.Advance(time.Hour)
	t1 := e.clk.Now().UnixMilli()
	if _, err := e.lim.Acquire(ctx, "key-2", "gpt-4", limiter.Consume{"session": 20}); err != nil {
		t.Fatal(err)
	}
	e.want("key-1", e.bucket("key-1", "gpt-4", 0), map[string]string{"b_session_ws": ms(t0), "b_session_tk": "9990000"})
	e.want("key-2", e.bucket("key-2", "gpt-4", 0), map[string]string{"b_session_ws": ms(t1), "b_session_tk": "9980000"})
	e.want("org", e.bucket("org", "gpt-4", 0), map[string]string{"b_session_ws": ms(t0), "b_session_tk": "9970000", "b_session_tc": "30000"})
}

// A shard a Python client's fan-out reached before the shard carried the
// quota (its condition does not ask for the quota) holds the window's
// attributes without the quota, a partial limit. This client's seed of the
// quota there pins that start and replaces it with shard 0's live window,
// instead of failing on it for ever.
func TestSessionSeedOverAPartialWindow(t *testing.T) {
	e := newEnv(t, limiter.Options{Rand: func(n int) int { return n - 1 }})
	e.pythonSession("gpt-4")
	now := e.clk.Now().UnixMilli()
	ws := now - 600_000
	common := map[string]types.AttributeValue{
		"entity_id": schema.Str("u"), "resource": schema.Str("gpt-4"), "rf": schema.Num(now - 3_600_000), "shard_count": schema.Num(2),
		"b_wcu_tk": schema.Num(1_000_000), "b_wcu_cp": schema.Num(1_000_000), "b_wcu_ra": schema.Num(1_000_000), "b_wcu_rp": schema.Num(1000), "b_wcu_tc": schema.Num(0),
	}
	shard0 := map[string]types.AttributeValue{"vu": schema.Num(ws + sessionMs),
		"b_session_tk": schema.Num(5_000_000), "b_session_cp": schema.Num(10_000_000), "b_session_ra": schema.Num(0), "b_session_rp": schema.Num(1000),
		"b_session_tc": schema.Num(0), "b_session_ws": schema.Num(ws), "b_session_rsa": schema.Num(18_000), "b_session_wa": schema.Num(ws), "b_session_gc": schema.Num(2)}
	shard1 := map[string]types.AttributeValue{"vu": schema.Num(0),
		"b_session_ws": schema.Num(ws), "b_session_rsa": schema.Num(18_000), "b_session_wtc": schema.Num(0)}
	for shard, a := range []map[string]types.AttributeValue{shard0, shard1} {
		for k, v := range common {
			a[k] = v
		}
		e.put(schema.BucketItemKeys(ns, "u", "gpt-4", shard), a)
	}
	ctx := context.Background()
	// The first acquire learns the count on shard 0; the second draws
	// shard 1 and seeds the quota there.
	for range 2 {
		if _, err := e.lim.Acquire(ctx, "u", "gpt-4", limiter.Consume{"session": 1}); err != nil {
			t.Fatal(err)
		}
	}
	e.want("shard 1 seeded", e.bucket("u", "gpt-4", 1), map[string]string{
		"b_session_ws": ms(ws), "b_session_wa": ms(ws), "b_session_wtc": "", "b_session_tk": "4999000", "b_session_gc": "2", "vu": ms(ws + sessionMs),
	})
}

// Estimate, then settle, on a session quota: the credit of a Commit that
// gives tokens back sets vu to its instant, and the next acquire is one
// refill pass from the credit's image (one UpdateItem, no read), inside
// the live window; the credit's tokens are there to spend again.
func TestSessionAcquireAfterACredit(t *testing.T) {
	e := newEnv(t, limiter.Options{})
	e.pythonSession("gpt-4")
	ctx := context.Background()
	t0 := e.clk.Now().UnixMilli()
	if _, err := e.lim.Acquire(ctx, "u", "gpt-4", limiter.Consume{"session": 0}); err != nil {
		t.Fatal(err)
	}
	// The new shard's one check of its limits, at its recheck deadline
	// (docs/design.md §8).
	e.clk.Advance(time.Minute)
	if _, err := e.lim.Acquire(ctx, "u", "gpt-4", limiter.Consume{"session": 0}); err != nil {
		t.Fatal(err)
	}
	lease, err := e.lim.Acquire(ctx, "u", "gpt-4", limiter.Consume{"session": 100})
	if err != nil {
		t.Fatal(err)
	}
	if err := lease.Adjust("session", -40); err != nil {
		t.Fatal(err)
	}
	if err := lease.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	e.clk.Advance(time.Minute)
	e.proxy.ResetStats()
	if _, err := e.lim.Acquire(ctx, "u", "gpt-4", limiter.Consume{"session": 5}); err != nil {
		t.Fatal(err)
	}
	if n, u := e.totalCalls(), e.calls("UpdateItem"); n != 1 || u != 1 {
		t.Errorf("the acquire after a credit took %d calls (%d UpdateItem), want one refill pass", n, u)
	}
	e.want("after the refill pass", e.bucket("u", "gpt-4", 0), map[string]string{
		"b_session_tk": "9935000", "b_session_tc": "65000", "b_session_ws": ms(t0), "vu": ms(t0 + sessionMs),
	})
}
