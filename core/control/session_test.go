package control_test

import (
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/bucketitem"
	"github.com/zae-limiter/zae-limiter-go/core/config"
	"github.com/zae-limiter/zae-limiter-go/core/control"
	"github.com/zae-limiter/zae-limiter-go/core/limit"
	"github.com/zae-limiter/zae-limiter-go/core/limiter"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
)

// TestSessionQuotaSettersGated: every limit setter stores a set holding a
// session quota only past the version gate at 0.15.0: with the table's
// readers at 0.14.0 each is refused with a *config.VersionMismatchError and
// writes nothing, no config, no audit event, no fan-out; with readers at
// 0.15.0 each writes the config and its audit event (docs/decisions.md
// P55).
func TestSessionQuotaSettersGated(t *testing.T) {
	e := newEnv(t)
	set := []limit.Limit{limit.PerMinute("rpm", 10), limit.Session("session", 10_000, 5*time.Hour)}
	store := config.NewStore(e.tbl.DB, e.tbl.Name)
	if err := store.WriteVersion(e.ctx, config.VersionRecord{LambdaVersion: "0.14.0", ClientMinVersion: "0.12.0"}); err != nil {
		t.Fatal(err)
	}
	calls := map[string]func() error{
		"system": func() error {
			_, err := e.ctl.SetSystemLimits(e.ctx, e.ns, set, config.SystemOptions{}, "ops")
			return err
		},
		"resource": func() error { _, err := e.ctl.SetResourceLimits(e.ctx, e.ns, "r", set, "ops"); return err },
		"entity":   func() error { _, err := e.ctl.SetEntityLimits(e.ctx, e.ns, "u", "r", set, "ops"); return err },
		"default": func() error {
			_, err := e.ctl.SetEntityLimits(e.ctx, e.ns, "u", schema.DefaultResource, set, "ops")
			return err
		},
	}
	e.proxy.ResetStats()
	for what, call := range calls {
		var vm *config.VersionMismatchError
		if err := call(); !errors.As(err, &vm) || vm.ClientMinVersion != config.SessionQuotaVersion {
			t.Errorf("%s: %v, want the gate's refusal at %s", what, err, config.SessionQuotaVersion)
		}
	}
	if w := e.proxy.Writes(); w != "" {
		t.Fatalf("refused setters wrote %s", w)
	}
	if err := store.WriteVersion(e.ctx, config.VersionRecord{LambdaVersion: "0.15.0", ClientMinVersion: "0.12.0"}); err != nil {
		t.Fatal(err)
	}
	for what, call := range calls {
		if err := call(); err != nil {
			t.Errorf("%s: %v", what, err)
		}
	}
	if got, err := store.GetResourceLimits(e.ctx, e.ns, "r"); err != nil || !reflect.DeepEqual(got, set) {
		t.Fatalf("resource limits %v, %v", got, err)
	}
}

// sessionShard is a shard's session quota of 10,000 tokens a 5-hour
// window: tk, the window start ws and applied start wa (0 leaves each
// off), gc and the fan-out's snapshot wtc (0 leaves it off).
func sessionShard(tk, ws, wa, gc, wtc int64) bucketitem.NewLimit {
	return bucketitem.NewLimit{Name: "session", Tokens: tk, Consumed: 7_000, Params: limit.Session("session", 10_000, 5*time.Hour).Params(),
		GrantShards: gc, ResetAfter: 18_000, WindowStart: ws, WindowAnchor: wa, WindowConsumed: wtc}
}

// TestSessionResetAndTopUp: the operator's reset and top-up of a session
// quota the Python client configured (ADR-149's session rows, docs/design.md
// §8): a reset marks every shard's window ended and applied (ws = wa =
// now − 5 h, the next use opens a new window with a full share), restores
// the share at S and wipes the top-up; a top-up with no live window opens
// one at its instant on every shard without one, with the share at S, and
// adds exactly the amount; a pending window (opened on another shard) is
// rolled in by the same pass. vu = 0 on every shard written.
func TestSessionResetAndTopUp(t *testing.T) {
	e := newEnv(t)
	k := schema.ResourceConfigItemKeys(e.ns, "r")
	it := k.Item()
	for a, v := range map[string]types.AttributeValue{
		"resource": schema.Str("r"), "config_version": schema.Num(1),
		"w_session_cp": schema.Num(10_000), "w_session_ra": schema.Num(0), "w_session_rp": schema.Num(1), "w_session_rsa": schema.Num(18_000),
	} {
		it[a] = v
	}
	if _, err := e.tbl.DB.PutItem(e.ctx, &dynamodb.PutItemInput{TableName: aws.String(e.tbl.Name), Item: it}); err != nil {
		t.Fatal(err)
	}
	now := e.clk.Now().UnixMilli()
	hour := int64(3_600_000)
	rf := e.clk.Now().Add(-10 * time.Minute)
	// Shard 0 opened a window an hour ago and fanned it out; shard 1 has
	// not rolled it in yet (its own window ended before, wtc 5,000).
	e.putShard("a", 0, 2, rf, sessionShard(1_000_000, now-hour, now-hour, 2, 0))
	e.putShard("a", 1, 2, rf, sessionShard(300_000, now-hour, now-7*hour, 2, 5_000))

	if _, err := e.ctl.Reset(e.ctx, e.ns, "a", "r", []string{"session"}, control.OperationOptions{}); err != nil {
		t.Fatal(err)
	}
	ended := ms(now - 5*hour)
	for shard := range 2 {
		e.want(fmt.Sprintf("reset shard %d", shard), e.shardOf("a", shard), map[string]string{
			"b_session_ws": ended, "b_session_wa": ended, "b_session_wtc": "", "b_session_tk": "5000000", "b_session_gc": "2",
			"b_session_tc": "7000", "vu": "0", "rf": ms(now),
		})
	}
	// The next use opens a new window at its own instant.
	e.clk.Advance(time.Minute)
	if _, err := e.lim.Acquire(e.ctx, "a", "r", limiter.Consume{"session": 1}); err != nil {
		t.Fatal(err)
	}
	e.want("opened after the reset", e.shardOf("a", 0), map[string]string{
		"b_session_ws": ms(now + 60_000), "b_session_wa": ms(now + 60_000), "b_session_tk": "4999000",
	})

	// Entity b: shard 0 holds an ended window, shard 1 never opened one.
	e.putShard("b", 0, 2, rf, sessionShard(-2_000, now-6*hour, now-6*hour, 2, 0))
	e.putShard("b", 1, 2, rf, sessionShard(40_000, 0, 0, 1, 0))
	op, err := e.ctl.TopUp(e.ctx, e.ns, "b", "r", map[string]int64{"session": 3}, control.OperationOptions{OperationID: "buy-1"})
	if err != nil {
		t.Fatal(err)
	}
	if op.Granted["session"] != 3 {
		t.Fatalf("granted %v, want exactly the 3 tokens bought", op.Granted)
	}
	at := ms(now + 60_000)
	for shard, tk := range map[int]string{0: "5001500", 1: "5001500"} {
		e.want(fmt.Sprintf("top-up shard %d", shard), e.shardOf("b", shard), map[string]string{
			"b_session_ws": at, "b_session_wa": at, "b_session_tk": tk, "b_session_gc": "2", "vu": "0",
		})
	}
	// Equal weights at gc 2: 1,500 millitokens of the top-up each, in tk
	// and tu.
	e.want("top-up shard 0", e.shardOf("b", 0), map[string]string{"b_session_tu": "1500"})
	e.want("top-up shard 1", e.shardOf("b", 1), map[string]string{"b_session_tu": "1500"})

	// Entity c: shard 0 opened a window an hour ago; shard 1 has it
	// pending with 2,000 consumed since the snapshot. The top-up rolls
	// shard 1 to 5,000,000 − 2,000 and adds to the live window.
	e.putShard("c", 0, 2, rf, sessionShard(1_000_000, now-hour, now-hour, 2, 0))
	e.putShard("c", 1, 2, rf, sessionShard(300_000, now-hour, now-7*hour, 2, 5_000))
	if _, err := e.ctl.TopUp(e.ctx, e.ns, "c", "r", map[string]int64{"session": 2}, control.OperationOptions{OperationID: "buy-2"}); err != nil {
		t.Fatal(err)
	}
	e.want("live shard 0", e.shardOf("c", 0), map[string]string{"b_session_ws": ms(now - hour), "b_session_wa": ms(now - hour), "b_session_tk": "1001000", "b_session_tu": "1000"})
	e.want("rolled shard 1", e.shardOf("c", 1), map[string]string{
		"b_session_ws": ms(now - hour), "b_session_wa": ms(now - hour), "b_session_wtc": "", "b_session_tk": "4999000", "b_session_tu": "1000", "b_session_gc": "2",
	})
}

// want checks attributes of an item as numbers ("" for an absent one).
func (e *env) want(what string, item map[string]types.AttributeValue, attrs map[string]string) {
	e.t.Helper()
	for attr, w := range attrs {
		got := ""
		if v, ok := num(item, attr); ok {
			got = strconv.FormatInt(v, 10)
		} else if _, present := item[attr]; present {
			got = "?"
		}
		if got != w {
			e.t.Errorf("%s: %s = %q, want %q", what, attr, got, w)
		}
	}
}

func ms(v int64) string { return strconv.FormatInt(v, 10) }
