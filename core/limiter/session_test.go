package limiter_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/config"
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

// refused checks that an acquire was refused as a configuration the client
// must not use, never as an outage that on_unavailable=allow would turn
// into an admission. (The speculative write an acquire starts with, before
// any config is read, is conditioned on a live bucket; the callers check
// that it changed nothing.)
func (e *env) refused(what string, lease *limiter.Lease, err error, is error) {
	e.t.Helper()
	if err == nil || lease != nil || limiter.IsInfrastructureError(err) || (is != nil && !errors.Is(err, is)) {
		e.t.Fatalf("%s: lease %v, err %v: want a refusal", what, lease, err)
	}
	for _, op := range []string{"PutItem", "TransactWriteItems", "DeleteItem", "BatchWriteItem"} {
		if n := e.calls(op); n != 0 {
			e.t.Fatalf("%s: a refused acquire sent %d %s", what, n, op)
		}
	}
}

// TestSessionConfigRefused: a resource level the Python client wrote with
// a session quota beside rpm is not enforced in part: an acquire of either
// limit is refused, under on_unavailable=allow too, and writes nothing,
// as before this version modelled session quotas (docs/decisions.md P53):
// no bucket is created.
func TestSessionConfigRefused(t *testing.T) {
	e := newEnv(t, limiter.Options{OnUnavailable: config.OnUnavailableAllow, ConfigCacheTTL: -1})
	e.put(schema.ResourceConfigItemKeys(ns, "gpt-4"), map[string]types.AttributeValue{
		"resource": schema.Str("gpt-4"), "config_version": schema.Num(1),
		"l_rpm_cp": schema.Num(100), "l_rpm_ra": schema.Num(100), "l_rpm_rp": schema.Num(60),
		"w_session_cp": schema.Num(10_000), "w_session_ra": schema.Num(0), "w_session_rp": schema.Num(1), "w_session_rsa": schema.Num(18_000),
	})
	ctx := context.Background()
	e.proxy.ResetStats()
	for _, c := range []limiter.Consume{{"rpm": 1}, {"session": 1}, {"rpm": 1, "session": 5}} {
		lease, err := e.lim.Acquire(ctx, "u", "gpt-4", c, limiter.WithOnUnavailable(config.OnUnavailableAllow))
		var ue *config.UnsupportedConfigError
		if !errors.As(err, &ue) || ue.Attribute != "w_session_rsa" {
			t.Fatalf("%v: %v, want the session config refused", c, err)
		}
		e.refused("config", lease, err, limit.ErrSessionQuotaUnsupported)
	}
	if it := e.bucket("u", "gpt-4", 0); it != nil {
		t.Fatalf("a bucket was created: %v", it)
	}
}

// TestSessionOverrideRefused: limits given to the call (WithLimits) holding
// a session quota are refused with the typed validation error, under
// on_unavailable=allow too, before anything is read or written.
func TestSessionOverrideRefused(t *testing.T) {
	e := newEnv(t, limiter.Options{OnUnavailable: config.OnUnavailableAllow})
	e.proxy.ResetStats()
	lease, err := e.lim.Acquire(context.Background(), "u", "gpt-4", limiter.Consume{"session": 1},
		limiter.WithLimits(limit.PerMinute("rpm", 10), limit.Session("session", 10, time.Hour)), limiter.WithOnUnavailable(config.OnUnavailableAllow))
	var ue *limit.UnsupportedError
	if !errors.As(err, &ue) || !limiter.IsValidationError(err) {
		t.Fatalf("%v, want an *limit.UnsupportedError", err)
	}
	e.refused("override", lease, err, limit.ErrSessionQuotaUnsupported)
	if w := e.proxy.Writes(); w != "" {
		t.Fatalf("a refused override wrote %s", w)
	}
}

// TestWindowedBucketRefused: a bucket the Python client left carrying a
// session window (its config since replaced by a level of rpm alone, the
// window's vu = 0 marker still there) is never materialised by this
// version: the acquire is refused, under allow too, and the item is left as
// it was.
func TestWindowedBucketRefused(t *testing.T) {
	e := newEnv(t, limiter.Options{OnUnavailable: config.OnUnavailableAllow, ConfigCacheTTL: -1})
	e.setResourceLimits("gpt-4", limit.PerMinute("rpm", 100))
	now := e.clk.Now().UnixMilli()
	k := schema.BucketItemKeys(ns, "u", "gpt-4", 0)
	e.put(k, map[string]types.AttributeValue{
		"entity_id": schema.Str("u"), "resource": schema.Str("gpt-4"), "rf": schema.Num(now - 60_000), "shard_count": schema.Num(1), "vu": schema.Num(0),
		"b_rpm_tk": schema.Num(50_000), "b_rpm_cp": schema.Num(100_000), "b_rpm_ra": schema.Num(100_000), "b_rpm_rp": schema.Num(60_000), "b_rpm_tc": schema.Num(50_000),
		"b_session_tk": schema.Num(3_000), "b_session_cp": schema.Num(10_000), "b_session_ra": schema.Num(0), "b_session_rp": schema.Num(1000),
		"b_session_tc": schema.Num(7_000), "b_session_ws": schema.Num(now - 60_000), "b_session_rsa": schema.Num(18_000), "b_session_wa": schema.Num(now - 60_000),
		"b_wcu_tk": schema.Num(1_000_000), "b_wcu_cp": schema.Num(1_000_000), "b_wcu_ra": schema.Num(1_000_000), "b_wcu_rp": schema.Num(1000), "b_wcu_tc": schema.Num(0),
	})
	before := e.bucket("u", "gpt-4", 0)
	e.proxy.ResetStats()
	lease, err := e.lim.Acquire(context.Background(), "u", "gpt-4", limiter.Consume{"rpm": 1}, limiter.WithOnUnavailable(config.OnUnavailableAllow))
	e.refused("windowed bucket", lease, err, nil)
	if !strings.Contains(err.Error(), "session window") {
		t.Fatalf("refused for another reason: %v", err)
	}
	if after := e.bucket("u", "gpt-4", 0); !reflect.DeepEqual(after, before) {
		t.Fatalf("the bucket changed:\n%v\n%v", before, after)
	}
}
