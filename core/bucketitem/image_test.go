package bucketitem

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/bucket"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
)

type item = map[string]types.AttributeValue

func avNS(v string) types.AttributeValue         { return &types.AttributeValueMemberN{Value: v} }
func avBool(v bool) types.AttributeValue         { return &types.AttributeValueMemberBOOL{Value: v} }
func battr(l string, f schema.LimitField) string { return schema.BucketAttr(l, f) }

const imgNow = 1_700_000_000_000

// createdItem is a bucket as the slow path's create writes it (docs/design.md §5
// step 6): keys, identity, owner stamp, ttl, two user limits (tpm soft),
// wcu at full, plus attributes from a future writer.
func createdItem() item {
	it := schema.BucketItemKeys("ns1", "user-1", "openai/gpt-4", 2).Item()
	set := func(k string, v types.AttributeValue) { it[k] = v }
	set(schema.AttrEntityID, schema.Str("user-1"))
	set(schema.AttrResource, schema.Str("openai/gpt-4"))
	set(schema.AttrRF, schema.Num(imgNow-1500))
	set(schema.AttrShardCount, schema.Num(4))
	set(schema.AttrCascade, avBool(true))
	set(schema.AttrParentID, schema.Str("org-1"))
	set(schema.AttrPGen, schema.Num(7))
	set(schema.AttrTTL, schema.Num(imgNow/1000+3600))
	set(schema.AttrVU, schema.Num(imgNow+60_000))
	set(schema.AttrRecheck, schema.Num(imgNow+45_000))
	for _, l := range []struct {
		name           string
		tk, cp, ra, rp int64
	}{
		{"rpm", 25_000, 100_000, 100_000, 60_000},
		{"tpm", -4_000_000, 10_000_000, 10_000_000, 60_000},
		{schema.WCULimit, 999_000, bucket.WCUCapacity, bucket.WCURefillAmount, bucket.WCURefillPeriod},
	} {
		set(battr(l.name, schema.LimitTokens), schema.Num(l.tk))
		set(battr(l.name, schema.LimitCapacity), schema.Num(l.cp))
		set(battr(l.name, schema.LimitRefillAmount), schema.Num(l.ra))
		set(battr(l.name, schema.LimitRefillPeriod), schema.Num(l.rp))
		set(battr(l.name, schema.LimitConsumed), schema.Num(l.cp-l.tk))
	}
	set(battr("tpm", schema.LimitSoft), schema.Num(imgNow+30_000))
	// Unknown to this implementation: ignored, never an error.
	set("future_attr", &types.AttributeValueMemberM{Value: item{"x": schema.Num(1)}})
	set(battr("rpm", "zz"), &types.AttributeValueMemberL{})
	set("b_", schema.Str("odd"))
	set("b_bad#name_tk", schema.Str("ignored: # is never in a limit name"))
	return it
}

func TestDecodeImageCreatedItem(t *testing.T) {
	img, err := Decode(createdItem())
	if err != nil {
		t.Fatal(err)
	}
	if img.Entity != "user-1" || img.Resource != "openai/gpt-4" {
		t.Errorf("identity = %q, %q", img.Entity, img.Resource)
	}
	if !img.HasRF || img.RF != imgNow-1500 || !img.HasShardCount || img.ShardCount != 4 {
		t.Errorf("rf/shard_count = %+v", img)
	}
	if !img.HasCascade || !img.Cascade || !img.HasParent || img.ParentID != "org-1" || !img.HasPGen || img.PGen != 7 {
		t.Errorf("owner stamp = cascade %v/%v parent %v/%q pgen %v/%d",
			img.HasCascade, img.Cascade, img.HasParent, img.ParentID, img.HasPGen, img.PGen)
	}
	if !img.HasTTL || img.TTL != imgNow/1000+3600 || !img.HasVU || img.VU != imgNow+60_000 {
		t.Errorf("ttl/vu = %d/%d", img.TTL, img.VU)
	}
	if !img.HasRecheck || img.Recheck != imgNow+45_000 {
		t.Errorf("recheck = %v/%d", img.HasRecheck, img.Recheck)
	}
	if img.HasDisabled || img.Disabled || img.Bypass.Present {
		t.Errorf("disabled/bypass = %v/%v/%+v", img.HasDisabled, img.Disabled, img.Bypass)
	}
	if got := names(img.Limits); !slices.Equal(got, []string{"rpm", "tpm"}) {
		t.Fatalf("limits = %v, want [rpm tpm] (wcu kept apart)", got)
	}
	if len(img.Partial) != 0 {
		t.Errorf("partial = %v", names(img.Partial))
	}
	rpm := img.Limit("rpm")
	want := LimitImage{
		Name:   "rpm",
		Fields: FieldTokens | FieldCapacity | FieldRefillAmount | FieldRefillPeriod | FieldConsumed,
		Tokens: 25_000, Capacity: 100_000, RefillAmount: 100_000, RefillPeriod: 60_000, Consumed: 75_000,
	}
	if *rpm != want {
		t.Errorf("rpm = %+v\nwant %+v", *rpm, want)
	}
	tpm := img.Limit("tpm")
	if !tpm.Soft.Present || !tpm.Soft.Numeric || tpm.Soft.Deadline != imgNow+30_000 || !tpm.Fields.Has(FieldSoft) {
		t.Errorf("tpm soft = %+v", tpm.Soft)
	}
	if !tpm.Soft.Live(imgNow) || tpm.Soft.Live(imgNow+30_000) || !tpm.Soft.Expired(imgNow+30_000) {
		t.Error("soft stamp liveness: live iff deadline > now")
	}
	if !img.WCU.Present() || img.WCU.Tokens != 999_000 || img.WCU.Params() != bucket.WCUParams() {
		t.Errorf("wcu = %+v", img.WCU)
	}
	if img.Limit(schema.WCULimit) != &img.WCU || img.Lookup(schema.WCULimit) != &img.WCU {
		t.Error("Limit/Lookup(wcu) must return the WCU field")
	}
	if p, ok := img.Params("tpm"); !ok || p != (bucket.Params{Capacity: 10_000_000, RefillAmount: 10_000_000, RefillPeriod: 60_000}) {
		t.Errorf("Params(tpm) = %+v, %v", p, ok)
	}
	if _, ok := img.Params("nope"); ok {
		t.Error("Params of an absent limit")
	}
	if img.Phase2() || img.HasSchedule() {
		t.Error("a dripping, unscheduled item is phase 1")
	}
}

func TestDecodeImageDefaultsAndPartial(t *testing.T) {
	it := item{
		schema.AttrPK: schema.Str("ns/BUCKET#e#r#0"),
		schema.AttrSK: schema.Str(schema.SKState),
		// A name with `_`, `.` and `-`, split on the last `_`.
		battr("my_limit.v-2", schema.LimitTokens):   schema.Num(-1500),
		battr("my_limit.v-2", schema.LimitCapacity): schema.Num(5000),
		// Partial limits: not present by the discovery rule.
		battr("only_tc", schema.LimitConsumed): schema.Num(3000),
		battr("only_tk", schema.LimitTokens):   schema.Num(1),
		battr("only_cp", schema.LimitCapacity): schema.Num(1),
		battr("soft_only", schema.LimitSoft):   avBool(true),
		// A design-era BOOL bypass: present, never live.
		schema.AttrBypass:   avBool(true),
		schema.AttrDisabled: avBool(true),
	}
	img, err := Decode(it)
	if err != nil {
		t.Fatal(err)
	}
	if img.HasShardCount || img.ShardCount != 1 {
		t.Errorf("missing shard_count must decode as 1, got %d (has %v)", img.ShardCount, img.HasShardCount)
	}
	if img.HasRF || img.HasTTL || img.HasVU || img.HasCascade || img.HasParent || img.HasPGen {
		t.Errorf("absent attributes flagged present: %+v", img)
	}
	if !img.HasDisabled || !img.Disabled {
		t.Error("disabled = true")
	}
	if !img.Bypass.Present || img.Bypass.Numeric || img.Bypass.Live(0) || !img.Bypass.Expired(imgNow) {
		t.Errorf("BOOL bypass must be present and expired: %+v", img.Bypass)
	}
	if got := names(img.Limits); !slices.Equal(got, []string{"my_limit.v-2"}) {
		t.Errorf("limits = %v", got)
	}
	if got := names(img.Partial); !slices.Equal(got, []string{"only_cp", "only_tc", "only_tk", "soft_only"}) {
		t.Errorf("partial = %v", got)
	}
	if l := img.Limit("only_tc"); l != nil {
		t.Error("Limit must not return a partial limit")
	}
	if l := img.Lookup("only_tc"); l == nil || l.Present() || l.Consumed != 3000 {
		t.Errorf("Lookup(only_tc) = %+v", l)
	}
	if l := img.Lookup("soft_only"); l == nil || !l.Soft.Present || l.Soft.Numeric {
		t.Errorf("Lookup(soft_only) = %+v", l)
	}
	if img.Lookup("absent") != nil || img.Lookup(schema.WCULimit) != nil || img.Limit(schema.WCULimit) != nil {
		t.Error("Lookup of absent names must be nil")
	}
	if l := img.Limit("my_limit.v-2"); l.Tokens != -1500 || bucket.Available(l.Tokens) != -2 {
		t.Errorf("indebted limit = %+v", l)
	}
	// A present limit without ra is a zero-rate limit: phase 2.
	if !img.Phase2() {
		t.Error("a limit without ra must be phase 2")
	}
}

func TestDecodeImagePhase2Markers(t *testing.T) {
	base := func() item {
		return item{
			battr("rpm", schema.LimitTokens):       schema.Num(1),
			battr("rpm", schema.LimitCapacity):     schema.Num(1000),
			battr("rpm", schema.LimitRefillAmount): schema.Num(1000),
			battr("rpm", schema.LimitRefillPeriod): schema.Num(1000),
		}
	}
	img, err := Decode(base())
	if err != nil || img.Phase2() || img.HasSchedule() || img.Windowed() {
		t.Fatalf("base: %v %v %v %v", err, img.Phase2(), img.HasSchedule(), img.Windowed())
	}
	for _, c := range []struct {
		attr          string
		v             types.AttributeValue
		sched, window bool
	}{
		{schema.AttrSched, schema.Str("x"), true, false},
		{schema.AttrRSched, schema.Str("0 0 * * *"), true, false},
		{schema.AttrSchedTZ, schema.Str("UTC"), true, false},
		{battr("rpm", schema.LimitSchedule), schema.Str("x"), true, false},
		{battr("rpm", schema.LimitResetSchedule), schema.Str("x"), true, false},
		{battr("other", schema.LimitResetSchedule), schema.Str("x"), true, false}, // on a partial limit
		{battr(schema.WCULimit, schema.LimitSchedule), schema.Str("x"), true, false},
		{battr("rpm", schema.LimitGrantShards), schema.Num(2), false, false},
		{battr("rpm", schema.LimitTopUp), schema.Num(2), false, false},
		{battr("rpm", schema.LimitWindowStart), schema.Num(2), false, true},
		{battr("rpm", schema.LimitResetAfter), schema.Num(2), false, true},
		{battr("rpm", schema.LimitWindowAnchor), schema.Num(2), false, true},
		{battr("rpm", schema.LimitWindowConsumed), schema.Num(2), false, true},
		{battr("other", schema.LimitWindowStart), schema.Num(2), false, true}, // on a partial limit
		{battr("rpm", schema.LimitRefillAmount), schema.Num(0), false, false}, // quota
	} {
		it := base()
		it[c.attr] = c.v
		img, err := Decode(it)
		if err != nil {
			t.Fatalf("%s: %v", c.attr, err)
		}
		if !img.Phase2() || img.HasSchedule() != c.sched || img.Windowed() != c.window {
			t.Errorf("%s: Phase2 %v HasSchedule %v Windowed %v", c.attr, img.Phase2(), img.HasSchedule(), img.Windowed())
		}
	}
	it := base()
	it[battr("rpm", schema.LimitWindowStart)] = schema.Num(imgNow)
	it[battr("rpm", schema.LimitResetAfter)] = schema.Num(3600)
	it[battr("rpm", schema.LimitWindowAnchor)] = schema.Num(imgNow - 1)
	it[battr("rpm", schema.LimitWindowConsumed)] = schema.Num(5)
	it[battr("rpm", schema.LimitGrantShards)] = schema.Num(4)
	it[battr("rpm", schema.LimitTopUp)] = schema.Num(6)
	it[battr("rpm", schema.LimitSchedule)] = schema.Str("s")
	it[battr("rpm", schema.LimitResetSchedule)] = schema.Str("r")
	it[schema.AttrSched], it[schema.AttrRSched], it[schema.AttrSchedTZ] = schema.Str("S"), schema.Str("R"), schema.Str("Z")
	img, err = Decode(it)
	if err != nil {
		t.Fatal(err)
	}
	l := img.Limit("rpm")
	if l.WindowStart != imgNow || l.ResetAfter != 3600 || l.WindowAnchor != imgNow-1 || l.WindowConsumed != 5 ||
		l.GrantShards != 4 || l.TopUp != 6 || l.Schedule != "s" || l.ResetSchedule != "r" ||
		!l.Fields.Has(Phase2Fields) {
		t.Errorf("phase-2 fields = %+v", l)
	}
	if p := l.Params(); p.GrantShards != 4 || p.TopUp != 6 {
		t.Errorf("Params = %+v", p)
	}
	if img.Sched != "S" || img.ResetSched != "R" || img.SchedTZ != "Z" {
		t.Errorf("item schedules = %q %q %q", img.Sched, img.ResetSched, img.SchedTZ)
	}
}

func TestDecodeImageCorrupt(t *testing.T) {
	for _, c := range []struct {
		attr string
		v    types.AttributeValue
	}{
		{schema.AttrRF, schema.Str("1")},
		{schema.AttrRF, avNS("1.5")},
		{schema.AttrRF, avNS("9223372036854775808")},
		{schema.AttrRF, avNS("-9223372036854775809")},
		{schema.AttrRF, avNS("1e3")},
		{schema.AttrRF, &types.AttributeValueMemberNULL{Value: true}},
		{schema.AttrRF, nil},
		{schema.AttrShardCount, schema.Num(0)},
		{schema.AttrShardCount, schema.Num(-2)},
		{schema.AttrShardCount, schema.Str("2")},
		{schema.AttrEntityID, schema.Num(1)},
		{schema.AttrResource, avBool(true)},
		{schema.AttrCascade, schema.Str("true")},
		{schema.AttrParentID, schema.Num(1)},
		{schema.AttrPGen, schema.Str("1")},
		{schema.AttrDisabled, schema.Str("bypass")},
		{schema.AttrBypass, schema.Str("1")},
		{schema.AttrBypass, avNS("x")},
		{schema.AttrVU, avBool(false)},
		{schema.AttrTTL, &types.AttributeValueMemberNS{Value: []string{"1"}}},
		{schema.AttrSched, schema.Num(1)},
		{schema.AttrRSched, schema.Num(1)},
		{schema.AttrSchedTZ, schema.Num(1)},
		{battr("rpm", schema.LimitTokens), schema.Str("1")},
		{battr("rpm", schema.LimitCapacity), avNS("")},
		{battr("rpm", schema.LimitRefillAmount), avNS("99999999999999999999")},
		{battr("rpm", schema.LimitRefillPeriod), &types.AttributeValueMemberB{Value: []byte{1}}},
		{battr("rpm", schema.LimitConsumed), &types.AttributeValueMemberL{}},
		{battr("rpm", schema.LimitGrantShards), schema.Str("1")},
		{battr("rpm", schema.LimitTopUp), schema.Str("1")},
		{battr("rpm", schema.LimitWindowStart), schema.Str("1")},
		{battr("rpm", schema.LimitResetAfter), schema.Str("1")},
		{battr("rpm", schema.LimitWindowAnchor), schema.Str("1")},
		{battr("rpm", schema.LimitWindowConsumed), schema.Str("1")},
		{battr("rpm", schema.LimitSchedule), schema.Num(1)},
		{battr("rpm", schema.LimitResetSchedule), schema.Num(1)},
		{battr("rpm", schema.LimitSoft), schema.Str("1")},
		{battr("rpm", schema.LimitSoft), &types.AttributeValueMemberM{}},
		{battr(schema.WCULimit, schema.LimitTokens), schema.Str("1")},
		{battr("x_y", schema.LimitTokens), avNS("0x10")},
	} {
		it := createdItem()
		it[c.attr] = c.v
		_, err := Decode(it)
		var ce *CorruptItemError
		if !errors.As(err, &ce) {
			t.Errorf("%s = %#v: err = %v, want *CorruptItemError", c.attr, c.v, err)
			continue
		}
		if ce.Attribute != c.attr || ce.Reason == "" || !strings.Contains(ce.Error(), strconv.Quote(c.attr)) {
			t.Errorf("%s: error %+v / %q", c.attr, ce, ce.Error())
		}
	}
}

func TestDecodeImageExtremeNumbers(t *testing.T) {
	it := item{
		battr("a", schema.LimitTokens):   avNS("-9223372036854775808"),
		battr("a", schema.LimitCapacity): avNS("9223372036854775807"),
		schema.AttrBypass:                avNS("+5"),
		schema.AttrVU:                    avNS("-0"),
	}
	img, err := Decode(it)
	if err != nil {
		t.Fatal(err)
	}
	if l := img.Limit("a"); l.Tokens != math.MinInt64 || l.Capacity != math.MaxInt64 {
		t.Errorf("extremes = %+v", l)
	}
	if img.Bypass.Deadline != 5 || img.VU != 0 || !img.HasVU {
		t.Errorf("bypass %+v vu %d", img.Bypass, img.VU)
	}
}

func TestDecodeImageEmpty(t *testing.T) {
	for _, it := range []item{nil, {}} {
		img, err := Decode(it)
		if err != nil || len(img.Limits) != 0 || img.ShardCount != 1 || img.WCU.Fields != 0 {
			t.Errorf("empty: %+v, %v", img, err)
		}
	}
}

func TestImageLimitForWouldRefillSatisfy(t *testing.T) {
	it := createdItem()
	img, err := Decode(it)
	if err != nil {
		t.Fatal(err)
	}
	now := int64(imgNow)
	// rpm: 25 tokens stored + 1.5 s of 100_000/60 s ÷ 4 shards.
	limits := []bucket.ImageLimit{
		img.ImageLimit("rpm", 25, now),
		img.ImageLimit("tpm", 5000, now), // indebted but soft (live stamp): skipped
	}
	if !limits[0].Present || limits[0].Soft || limits[0].Tokens != 25_000 || limits[0].Amount != 25 {
		t.Errorf("rpm = %+v", limits[0])
	}
	if !limits[1].Soft {
		t.Errorf("tpm with a live soft stamp must be Soft: %+v", limits[1])
	}
	ok, st := bucket.WouldRefillSatisfy(nil, limits, img.RF, img.ShardCount, now)
	if !ok || st[0].Exceeded || st[1].Exceeded {
		t.Errorf("would satisfy = %v %+v", ok, st)
	}
	// The soft stamp has expired at its deadline: tpm is hard and short.
	limits[1] = img.ImageLimit("tpm", 5000, imgNow+30_000)
	if limits[1].Soft {
		t.Error("expired soft stamp must not skip")
	}
	if ok, _ := bucket.WouldRefillSatisfy(nil, limits[1:], img.RF, img.ShardCount, imgNow+30_000); ok {
		t.Error("indebted hard tpm must be rejected")
	}
	// A live bypass skips every limit.
	it[schema.AttrBypass] = schema.Num(now + 1)
	img, _ = Decode(it)
	if l := img.ImageLimit("rpm", 1_000_000, now); !l.Soft {
		t.Error("live bypass must skip")
	}
	// A declared limit the item lacks is not present: slow path.
	if l := img.ImageLimit("absent", 1, now); l.Present || l.Amount != 1 {
		t.Errorf("absent = %+v", l)
	}
	if ok, _ := bucket.WouldRefillSatisfy(nil, []bucket.ImageLimit{img.ImageLimit("absent", 1, now)}, img.RF, 1, now); !ok {
		t.Error("absent limit must take the slow path")
	}
}

func TestImageDecodeReuse(t *testing.T) {
	it := createdItem()
	it[battr("partial", schema.LimitConsumed)] = schema.Num(1)
	var img Image
	if err := img.Decode(it); err != nil {
		t.Fatal(err)
	}
	allocs := testing.AllocsPerRun(200, func() {
		if err := img.Decode(it); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("reused Decode: %v allocs/op, want 0", allocs)
	}
	if got := names(img.Limits); !slices.Equal(got, []string{"rpm", "tpm"}) || len(img.Partial) != 1 {
		t.Errorf("after reuse: limits %v partial %v", got, names(img.Partial))
	}
	// A smaller item reuses the storage and leaves nothing behind.
	if err := img.Decode(item{battr("z", schema.LimitTokens): schema.Num(1), battr("z", schema.LimitCapacity): schema.Num(1)}); err != nil {
		t.Fatal(err)
	}
	if got := names(img.Limits); !slices.Equal(got, []string{"z"}) || len(img.Partial) != 0 || img.HasRF || img.WCU.Fields != 0 {
		t.Errorf("after shrink: %+v", img)
	}
	// A corrupt item, then a good one: storage survives the error.
	bad := createdItem()
	bad[schema.AttrRF] = schema.Str("x")
	if err := img.Decode(bad); err == nil {
		t.Fatal("want error")
	}
	if err := img.Decode(it); err != nil || len(img.Limits) != 2 {
		t.Fatalf("after error: %v %v", err, names(img.Limits))
	}
}

func BenchmarkDecodeImage(b *testing.B) {
	it := createdItem()
	b.Run("fresh", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Decode(it); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("reused", func(b *testing.B) {
		b.ReportAllocs()
		var img Image
		for b.Loop() {
			if err := img.Decode(it); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func names(ls []LimitImage) []string {
	out := make([]string, len(ls))
	for i := range ls {
		out[i] = ls[i].Name
	}
	return out
}

// FuzzDecodeImage builds attribute maps from the input: each record picks an
// attribute name (a known item attribute, a per-limit attribute of a few
// awkward limit names, or raw bytes) and a typed value. Decoding never
// panics; on success the decoded state agrees with the map and the discovery
// rule; on failure the error names a known attribute that is corrupt.
func FuzzDecodeImage(f *testing.F) {
	f.Add([]byte{0, 1, '5', 0, 20, 1, '9', 0, 21, 1, '9'})
	f.Add([]byte{3, 3, 0, 4, 0, 7, 1, 'x', 0, 22, 1, '1', 5, 1, 0})
	f.Add([]byte{2, 1, '0', 1, 30, 4, 'a', 'b', 'c'})
	f.Add([]byte{40, 1, '1', 0, 41, 1, '2', 0, 42, 2, '1', 0, 43, 1, '1', 0})
	// A session window on rpm: ws 100, rsa 60, wa 50, wtc 7, rf 90.
	f.Add([]byte{69, 0, 3, '1', '0', '0', 76, 0, 2, '6', '0', 83, 0, 2, '5', '0', 90, 0, 1, '7', 0, 0, 2, '9', '0'})
	// rsa 0 and a negative ws beside a partial limit's window.
	f.Add([]byte{76, 0, 1, '0', 69, 0, 2, '-', '5', 77, 0, 1, '9'})
	f.Fuzz(func(t *testing.T, data []byte) {
		it := fuzzItem(data)
		img, err := Decode(it)
		if err != nil {
			var ce *CorruptItemError
			if !errors.As(err, &ce) {
				t.Fatalf("error %v is not a *CorruptItemError", err)
			}
			if _, ok := it[ce.Attribute]; !ok {
				t.Fatalf("error names %q, not an attribute of the item", ce.Attribute)
			}
			return
		}
		checkDecoded(t, it, &img)
	})
}

var fuzzItemAttrs = [...]string{
	schema.AttrRF, schema.AttrShardCount, schema.AttrCascade, schema.AttrParentID, schema.AttrPGen,
	schema.AttrDisabled, schema.AttrBypass, schema.AttrVU, schema.AttrTTL, schema.AttrRecheck, schema.AttrEntityID,
	schema.AttrResource, schema.AttrSched, schema.AttrRSched, schema.AttrSchedTZ, schema.AttrPK,
	schema.AttrSK, "unknown", "b_", "b_x", "b__tk",
}

var fuzzLimitNames = [...]string{"rpm", "my_limit", "a.b", "x-y", schema.WCULimit, "tk", "soft_tk"}

var fuzzFields = [...]schema.LimitField{
	schema.LimitTokens, schema.LimitCapacity, schema.LimitRefillAmount, schema.LimitRefillPeriod,
	schema.LimitConsumed, schema.LimitGrantShards, schema.LimitTopUp, schema.LimitWindowStart,
	schema.LimitResetAfter, schema.LimitWindowAnchor, schema.LimitWindowConsumed,
	schema.LimitSchedule, schema.LimitResetSchedule, schema.LimitSoft, "zz",
}

// fuzzItem decodes records of: name selector, value type, length, value bytes.
func fuzzItem(data []byte) item {
	it := item{}
	next := func() byte {
		if len(data) == 0 {
			return 0
		}
		b := data[0]
		data = data[1:]
		return b
	}
	for len(data) > 0 {
		sel := int(next())
		var name string
		switch {
		case sel < len(fuzzItemAttrs):
			name = fuzzItemAttrs[sel]
		case sel < 200:
			k := sel - len(fuzzItemAttrs)
			name = battr(fuzzLimitNames[k%len(fuzzLimitNames)], fuzzFields[(k/len(fuzzLimitNames))%len(fuzzFields)])
		default:
			n := min(int(next())%16, len(data))
			name, data = string(data[:n]), data[n:]
		}
		typ := next() % 8
		n := min(int(next())%24, len(data))
		raw := string(data[:n])
		data = data[n:]
		var v types.AttributeValue
		switch typ {
		case 0, 1, 2: // N, mostly well-formed
			v = avNS(raw)
			if typ == 1 && raw != "" {
				var x int64
				for _, c := range []byte(raw) {
					x = x*31 + int64(c)
				}
				v = schema.Num(x - int64(len(raw))<<40)
			}
		case 3:
			v = schema.Str(raw)
		case 4:
			v = avBool(n%2 == 0)
		case 5:
			v = &types.AttributeValueMemberNULL{Value: true}
		case 6:
			v = &types.AttributeValueMemberL{}
		default:
			v = &types.AttributeValueMemberB{Value: []byte(raw)}
		}
		it[name] = v
	}
	return it
}

func checkDecoded(t *testing.T, it item, img *Image) {
	t.Helper()
	seen := map[string]bool{}
	for _, group := range [][]LimitImage{img.Limits, img.Partial} {
		if !slices.IsSortedFunc(group, func(a, b LimitImage) int { return strings.Compare(a.Name, b.Name) }) {
			t.Fatalf("limits not sorted: %v", names(group))
		}
	}
	for i := range img.Limits {
		l := &img.Limits[i]
		if !l.Present() {
			t.Fatalf("limit %q breaks the discovery rule: %b", l.Name, l.Fields)
		}
		if _, ok := it[battr(l.Name, schema.LimitTokens)]; !ok {
			t.Fatalf("limit %q without b_tk", l.Name)
		}
		if _, ok := it[battr(l.Name, schema.LimitCapacity)]; !ok {
			t.Fatalf("limit %q without b_cp", l.Name)
		}
	}
	for i := range img.Partial {
		if img.Partial[i].Present() {
			t.Fatalf("partial limit %q is present", img.Partial[i].Name)
		}
	}
	for _, l := range append(slices.Clone(img.Limits), img.Partial...) {
		if l.Name == schema.WCULimit || seen[l.Name] {
			t.Fatalf("limit %q is wcu or duplicated", l.Name)
		}
		seen[l.Name] = true
	}
	// Every recognised per-limit N attribute decoded to its value.
	for k, v := range it {
		name, f, ok := schema.ParseBucketAttr(k)
		if !ok || fieldBit(f) == 0 {
			continue
		}
		l := img.Lookup(name)
		if l == nil || !l.Fields.Has(fieldBit(f)) {
			t.Fatalf("attribute %q not decoded", k)
		}
		if present := l.Present(); present != (img.Limit(name) != nil) {
			t.Fatalf("Limit(%q) disagrees with Present", name)
		}
		if m, isN := v.(*types.AttributeValueMemberN); isN && f != schema.LimitSoft &&
			f != schema.LimitSchedule && f != schema.LimitResetSchedule {
			want, _ := strconv.ParseInt(m.Value, 10, 64)
			if got := *l.numField(fieldBit(f)); got != want {
				t.Fatalf("%s = %d, want %d", k, got, want)
			}
		}
	}
	// The window predicates agree with whatever window attributes decoded.
	for _, group := range [][]LimitImage{img.Limits, img.Partial, {img.WCU}} {
		for i := range group {
			checkWindow(t, &group[i], img.RF, imgNow)
		}
	}
	if img.ShardCount < 1 {
		t.Fatalf("shard_count %d", img.ShardCount)
	}
	if _, ok := it[schema.AttrShardCount]; !ok && img.ShardCount != 1 {
		t.Fatal("missing shard_count must be 1")
	}
}

// smallInt agrees with strconv.ParseInt on everything it accepts, and
// accepts every int64 of at most 18 digits.
func FuzzSmallInt(f *testing.F) {
	for _, s := range []string{"0", "-0", "007", "-999999999999999999", "999999999999999999", "1000000000000000000", "+5", "-", "", "1e3", "1.0", " 1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, ok := smallInt(s)
		want, err := strconv.ParseInt(s, 10, 64)
		if ok && (err != nil || n != want) {
			t.Fatalf("smallInt(%q) = %d, ParseInt = %d, %v", s, n, want, err)
		}
		if !ok && err == nil && len(strconv.FormatInt(want, 10)) <= 18 && strconv.FormatInt(want, 10) == s {
			t.Fatalf("smallInt(%q) refused a canonical int64 of at most 18 digits", s)
		}
	})
}

// TestCascades: an image cascades when its owner stamp says so and names
// its parent; a nil image does not.
func TestCascades(t *testing.T) {
	for _, c := range []struct {
		name string
		img  *Image
		want bool
	}{
		{"nil", nil, false},
		{"no stamp", &Image{}, false},
		{"cascade, a parent", &Image{HasCascade: true, Cascade: true, ParentID: "org"}, true},
		{"cascade, no parent", &Image{HasCascade: true, Cascade: true}, false},
		{"cascade false", &Image{HasCascade: true, ParentID: "org"}, false},
		{"a parent, no cascade stamp", &Image{Cascade: true, ParentID: "org"}, false},
	} {
		if got := c.img.Cascades(); got != c.want {
			t.Errorf("%s: Cascades() = %v, want %v", c.name, got, c.want)
		}
	}
}

// TestAttrs: each field's attribute is the one decoding reads into it, and
// Attrs lists those of the mask the image holds.
func TestAttrs(t *testing.T) {
	for i, f := range fieldAttrs {
		if got := fieldBit(f); got != LimitFields(1)<<i {
			t.Errorf("fieldAttrs[%d] = %s decodes into field %b, want %b", i, f, got, LimitFields(1)<<i)
		}
	}
	l := LimitImage{Name: "rpm", Fields: FieldTokens | FieldConsumed | FieldWindowStart | FieldWindowAnchor}
	if got := fmt.Sprint(l.Attrs(WindowFields)); got != "[b_rpm_ws b_rpm_wa]" {
		t.Errorf("window attrs %s", got)
	}
	if got := fmt.Sprint(l.Attrs(^FieldConsumed)); got != "[b_rpm_tk b_rpm_ws b_rpm_wa]" {
		t.Errorf("all but tc %s", got)
	}
}
