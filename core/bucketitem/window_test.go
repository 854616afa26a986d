package bucketitem

import (
	"math"
	"reflect"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/bucket"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
)

// Session windows as the worked examples use them: a quota of 10 tokens for
// five hours from first use, opened at t0 on one shard; the next window
// opens at t1, after t0's has ended.
const (
	t0       = imgNow
	fiveH    = 5 * 3600 // rsa, seconds
	fiveHMs  = fiveH * 1000
	t1       = t0 + fiveHMs + 1_000
	session  = "session"
	sessionQ = 10_000 // cp, millitokens
)

// pythonSessionShard is shard 1 of a two-shard pair as the Python client
// of the 0.17 generation leaves it after shard 0 opened window t1 and fanned
// it out (ADR-139, ADR-140): the fan-out wrote ws, rsa, wtc (its snapshot
// of tc) and vu = 0, never tk, and left wa at the window the balance still
// reflects, t0. Attribute names and units are upstream's: ws and wa epoch
// ms, rsa seconds, tk, cp, tc and wtc millitokens, rp milliseconds.
func pythonSessionShard() item {
	return item{
		schema.AttrPK:         schema.Str("ns1/BUCKET#u#gpt-4#1"),
		schema.AttrSK:         schema.Str("#STATE"),
		schema.AttrEntityID:   schema.Str("u"),
		schema.AttrResource:   schema.Str("gpt-4"),
		schema.AttrRF:         avNS("1700000001000"),
		schema.AttrShardCount: avNS("2"),
		schema.AttrVU:         avNS("0"),
		"b_session_tk":        avNS("3000"),
		"b_session_cp":        avNS("10000"),
		"b_session_ra":        avNS("0"),
		"b_session_rp":        avNS("1000"),
		"b_session_tc":        avNS("2000"),
		"b_session_gc":        avNS("2"),
		"b_session_ws":        avNS("1700018001000"),
		"b_session_rsa":       avNS("18000"),
		"b_session_wa":        avNS("1700000000000"),
		"b_session_wtc":       avNS("2000"),
		"b_wcu_tk":            avNS("1000000"),
		"b_wcu_cp":            avNS("1000000"),
		"b_wcu_ra":            avNS("1000000"),
		"b_wcu_rp":            avNS("1000"),
		"b_wcu_tc":            avNS("3000"),
	}
}

// TestDecodePythonSessionShard pins the stored form of a session window
// (docs/design.md §2) on a shard a Python client wrote: every attribute is
// read in its unit, the window is recognised, and the predicates read it as
// the fan-out left it: t1 is live but not applied, so the shard is not in
// the current period until its next materialising pass resets it.
func TestDecodePythonSessionShard(t *testing.T) {
	img, err := Decode(pythonSessionShard())
	if err != nil {
		t.Fatal(err)
	}
	l := img.Limit(session)
	if l == nil {
		t.Fatal("the session limit is not present")
	}
	if l.Tokens != 3000 || l.Capacity != sessionQ || l.RefillAmount != 0 || l.RefillPeriod != 1000 || l.Consumed != 2000 ||
		l.GrantShards != 2 || l.WindowStart != t1 || l.ResetAfter != fiveH || l.WindowAnchor != t0 || l.WindowConsumed != 2000 {
		t.Fatalf("session = %+v", *l)
	}
	if !img.Windowed() || !img.Phase2() || !l.HasWindow() || !l.Params().IsQuota() {
		t.Fatalf("Windowed %v Phase2 %v HasWindow %v quota %v", img.Windowed(), img.Phase2(), l.HasWindow(), l.Params().IsQuota())
	}
	if end, ok := l.WindowEnd(); !ok || end != t1+fiveHMs {
		t.Fatalf("WindowEnd = %d %v, want %d", end, ok, t1+fiveHMs)
	}
	now := int64(t1 + 60_000)
	if !l.WindowLive(now) || !l.WindowPending(img.RF) || l.WindowCurrent(img.RF, now) {
		t.Fatalf("at t1+1m: live %v pending %v current %v, want true true false",
			l.WindowLive(now), l.WindowPending(img.RF), l.WindowCurrent(img.RF, now))
	}
	// The shard applies t1 (wa = ws): current until the window ends.
	applied := pythonSessionShard()
	applied["b_session_wa"] = avNS("1700018001000")
	if img, err = Decode(applied); err != nil {
		t.Fatal(err)
	}
	l = img.Limit(session)
	if !l.WindowCurrent(img.RF, now) || l.WindowCurrent(img.RF, t1+fiveHMs) || !l.WindowCurrent(img.RF, t1+fiveHMs-1) {
		t.Fatal("an applied window is current exactly while it is live")
	}
}

// TestNewItemWindow pins what a writer stores for a session window: b_{n}_ws,
// b_{n}_rsa, b_{n}_wa and b_{n}_wtc as N attributes in upstream's units,
// each left off when zero, and the item decodes back to them.
func TestNewItemWindow(t *testing.T) {
	q := bucket.Params{Capacity: sessionQ, RefillPeriod: 1000}
	n := New{
		ID: schema.BucketID{Namespace: "ns1", Entity: "u", Resource: "gpt-4"}, RF: t0, ShardCount: 1,
		Limits: []NewLimit{{Name: session, Tokens: 9000, Consumed: 1000, Params: q, GrantShards: 1,
			WindowStart: t0, ResetAfter: fiveH, WindowAnchor: t0, WindowConsumed: 500}},
	}
	it := n.Item()
	want := map[string]types.AttributeValue{
		"b_session_ws": avNS("1700000000000"), "b_session_rsa": avNS("18000"),
		"b_session_wa": avNS("1700000000000"), "b_session_wtc": avNS("500"),
	}
	for a, v := range want {
		if !reflect.DeepEqual(it[a], v) {
			t.Errorf("%s = %#v, want %#v", a, it[a], v)
		}
	}
	img, err := Decode(it)
	if err != nil {
		t.Fatal(err)
	}
	l := img.Limit(session)
	if l == nil || l.WindowStart != t0 || l.ResetAfter != fiveH || l.WindowAnchor != t0 || l.WindowConsumed != 500 ||
		!l.Fields.Has(WindowFields) || !img.Windowed() {
		t.Fatalf("decoded %+v", l)
	}
	// A limit without a window carries none of them.
	n.Limits[0] = NewLimit{Name: "rpm", Tokens: 1, Params: bucket.Params{Capacity: 1000, RefillAmount: 1000, RefillPeriod: 1000}}
	for a := range n.Item() {
		if _, f, ok := schema.ParseBucketAttr(a); ok && fieldBit(f)&WindowFields != 0 {
			t.Errorf("%s written for a limit without a window", a)
		}
	}
}

// TestWindowPredicates are the worked examples of the window rules
// (ADR-139, ADR-140): when a window ends, when a shard's balance does not
// reflect its start yet, and when it belongs to the current period.
func TestWindowPredicates(t *testing.T) {
	type w struct{ ws, rsa, wa int64 }
	const none = -1 // the attribute is absent
	lim := func(x w) *LimitImage {
		l := &LimitImage{Name: session}
		for _, f := range []struct {
			v   int64
			bit LimitFields
			dst *int64
		}{{x.ws, FieldWindowStart, &l.WindowStart}, {x.rsa, FieldResetAfter, &l.ResetAfter}, {x.wa, FieldWindowAnchor, &l.WindowAnchor}} {
			if f.v != none {
				*f.dst, l.Fields = f.v, l.Fields|f.bit
			}
		}
		return l
	}
	for _, c := range []struct {
		name      string
		w         w
		rf, now   int64
		end       int64 // -1: no end
		live      bool
		pending   bool
		current   bool
		hasWindow bool
	}{
		{"opened and applied", w{t0, fiveH, t0}, t0, t0 + 1, t0 + fiveHMs, true, false, true, true},
		{"the last millisecond", w{t0, fiveH, t0}, t0, t0 + fiveHMs - 1, t0 + fiveHMs, true, false, true, true},
		{"ended at its end", w{t0, fiveH, t0}, t0, t0 + fiveHMs, t0 + fiveHMs, false, false, false, true},
		// An item written before wa: rf says what the balance reflects.
		{"unmarked, rf before ws: pending", w{200, fiveH, none}, 100, 300, 200 + fiveHMs, true, true, false, true},
		{"unmarked, rf at ws: applied", w{100, fiveH, none}, 100, 300, 100 + fiveHMs, true, false, true, true},
		// wa wins over rf either way an old writer moved rf.
		{"marked, backward rf: no second roll", w{200, fiveH, 200}, 100, 300, 200 + fiveHMs, true, false, true, true},
		{"marked, forward rf: the roll still happens", w{300, fiveH, 200}, 400, 500, 300 + fiveHMs, true, true, false, true},
		{"no start: nothing to roll, no end", w{none, fiveH, 50}, 100, 100, -1, false, false, false, true},
		{"no length: no window", w{t0, none, t0}, t0, t0 + 1, -1, false, false, false, false},
		{"zero length: unreadable", w{t0, 0, t0}, t0, t0, -1, false, false, false, true},
		{"negative length: unreadable", w{t0, -5, t0}, t0, t0, -1, false, false, false, true},
		{"an end past int64 saturates", w{math.MaxInt64 - 10, fiveH, math.MaxInt64 - 10}, 0, 0, math.MaxInt64, true, false, true, true},
		{"a length past int64 ms saturates", w{0, math.MaxInt64 / 100, 0}, 0, 0, math.MaxInt64, true, false, true, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			l := lim(c.w)
			end, ok := l.WindowEnd()
			if (c.end < 0) == ok || (ok && end != c.end) {
				t.Errorf("WindowEnd = %d %v, want %d", end, ok, c.end)
			}
			if l.WindowLive(c.now) != c.live || l.WindowPending(c.rf) != c.pending ||
				l.WindowCurrent(c.rf, c.now) != c.current || l.HasWindow() != c.hasWindow {
				t.Errorf("live %v pending %v current %v window %v, want %v %v %v %v",
					l.WindowLive(c.now), l.WindowPending(c.rf), l.WindowCurrent(c.rf, c.now), l.HasWindow(),
					c.live, c.pending, c.current, c.hasWindow)
			}
		})
	}
}

// FuzzNewItemWindow: whatever window a writer stores on a new shard, the
// item decodes back to it, and the predicates agree with the stored values.
func FuzzNewItemWindow(f *testing.F) {
	f.Add(int64(t0), int64(fiveH), int64(t0), int64(0), int64(t0+1))
	f.Add(int64(t1), int64(fiveH), int64(t0), int64(2000), int64(t1+60_000))
	f.Add(int64(math.MaxInt64), int64(math.MaxInt64), int64(math.MinInt64), int64(-1), int64(0))
	f.Add(int64(0), int64(-1), int64(1), int64(1), int64(1))
	f.Fuzz(func(t *testing.T, ws, rsa, wa, wtc, now int64) {
		n := New{ID: schema.BucketID{Namespace: "ns1", Entity: "u", Resource: "r"}, RF: t0, ShardCount: 1,
			Limits: []NewLimit{{Name: session, Tokens: 1, Params: bucket.Params{Capacity: 1000, RefillPeriod: 1000},
				WindowStart: ws, ResetAfter: rsa, WindowAnchor: wa, WindowConsumed: wtc}}}
		img, err := Decode(n.Item())
		if err != nil {
			t.Fatal(err)
		}
		l := img.Limit(session)
		if l.WindowStart != ws || l.ResetAfter != rsa || l.WindowAnchor != wa || l.WindowConsumed != wtc {
			t.Fatalf("decoded %+v", *l)
		}
		for _, c := range []struct {
			v   int64
			bit LimitFields
		}{{ws, FieldWindowStart}, {rsa, FieldResetAfter}, {wa, FieldWindowAnchor}, {wtc, FieldWindowConsumed}} {
			if l.Fields.Has(c.bit) != (c.v != 0) {
				t.Fatalf("field %b present %v for value %d", c.bit, l.Fields.Has(c.bit), c.v)
			}
		}
		if img.Windowed() != (ws != 0 || rsa != 0 || wa != 0 || wtc != 0) {
			t.Fatal("Windowed disagrees with the stored window")
		}
		checkWindow(t, l, img.RF, now)
	})
}

// checkWindow checks the window predicates of l against its stored
// values: an end only with a start and a positive length, never before the
// start; current only when live and not pending.
func checkWindow(t *testing.T, l *LimitImage, rf, now int64) {
	t.Helper()
	end, ok := l.WindowEnd()
	hasBoth := l.Fields.Has(FieldWindowStart | FieldResetAfter)
	if ok != (hasBoth && l.ResetAfter > 0) {
		t.Fatalf("WindowEnd ok %v with fields %b and rsa %d", ok, l.Fields, l.ResetAfter)
	}
	if ok && (end < l.WindowStart || end-l.WindowStart < min(l.ResetAfter, math.MaxInt64/1000)*1000 && end != math.MaxInt64) {
		t.Fatalf("WindowEnd %d for ws %d rsa %d", end, l.WindowStart, l.ResetAfter)
	}
	if l.WindowLive(now) != (ok && end > now) {
		t.Fatal("WindowLive disagrees with WindowEnd")
	}
	if l.WindowPending(rf) && !l.Fields.Has(FieldWindowStart) {
		t.Fatal("a roll pending without a start")
	}
	if l.WindowCurrent(rf, now) != (l.WindowLive(now) && !l.WindowPending(rf)) {
		t.Fatal("WindowCurrent is not live and applied")
	}
}
