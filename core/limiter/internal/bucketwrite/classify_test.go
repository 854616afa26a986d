package bucketwrite

import (
	"errors"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/bucket"
	"github.com/zae-limiter/zae-limiter-go/core/bucketitem"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
)

type item = map[string]types.AttributeValue

func avBool(v bool) types.AttributeValue { return &types.AttributeValueMemberBOOL{Value: v} }

// lim is one limit of a test bucket: balance tk millitokens, capacity and
// refill 100 tokens per minute.
type lim struct {
	name string
	tk   int64
}

const (
	testCap   = 100_000
	testNowS  = testNow / 1000
	testRF    = testNow - 5_000
	wcuFullTk = bucket.WCUCapacity
)

// bucketItem is a bucket item in the shape the slow path's create writes
// (docs/design.md §2, §5): keys, identity, rf, shard_count, every limit
// with tk/cp/ra/rp/tc, and wcu at full.
func bucketItem(id schema.BucketID, limits ...lim) item {
	it := schema.BucketItemKeys(id.Namespace, id.Entity, id.Resource, id.Shard).Item()
	it[schema.AttrEntityID] = schema.Str(id.Entity)
	it[schema.AttrResource] = schema.Str(id.Resource)
	it[schema.AttrRF] = schema.Num(testRF)
	it[schema.AttrShardCount] = schema.Num(1)
	it[schema.AttrCascade] = avBool(false)
	for _, l := range append(slices.Clone(limits), lim{schema.WCULimit, wcuFullTk}) {
		cp, ra, rp := int64(testCap), int64(testCap), int64(60_000)
		if l.name == schema.WCULimit {
			cp, ra, rp = bucket.WCUCapacity, bucket.WCURefillAmount, bucket.WCURefillPeriod
		}
		it[schema.BucketAttr(l.name, schema.LimitTokens)] = schema.Num(l.tk)
		it[schema.BucketAttr(l.name, schema.LimitCapacity)] = schema.Num(cp)
		it[schema.BucketAttr(l.name, schema.LimitRefillAmount)] = schema.Num(ra)
		it[schema.BucketAttr(l.name, schema.LimitRefillPeriod)] = schema.Num(rp)
		it[schema.BucketAttr(l.name, schema.LimitConsumed)] = schema.Num(0)
	}
	return it
}

// mod changes a test item.
type mod func(item)

func set(attr string, v types.AttributeValue) mod { return func(it item) { it[attr] = v } }
func del(attrs ...string) mod {
	return func(it item) {
		for _, a := range attrs {
			delete(it, a)
		}
	}
}
func tk(limit string, v int64) mod {
	return set(schema.BucketAttr(limit, schema.LimitTokens), schema.Num(v))
}
func soft(limit string, v types.AttributeValue) mod {
	return set(schema.BucketAttr(limit, schema.LimitSoft), v)
}

var (
	disabled      = set(schema.AttrDisabled, avBool(true))
	bypassLive    = set(schema.AttrBypass, schema.Num(testNow+60_000))
	bypassExpired = set(schema.AttrBypass, schema.Num(testNow)) // live iff > now
	bypassBool    = set(schema.AttrBypass, avBool(true))
	vuPassed      = set(schema.AttrVU, schema.Num(testNow))
	vuZero        = set(schema.AttrVU, schema.Num(0))
	vuAhead       = set(schema.AttrVU, schema.Num(testNow+1))
	ttlPassed     = set(schema.AttrTTL, schema.Num(testNowS))
	ttlAhead      = set(schema.AttrTTL, schema.Num(testNowS+1))
	wcuShort      = tk(schema.WCULimit, bucket.WCUDebit-1)
	rpmShort      = tk("rpm", 999) // < 1 token
	tpmShort      = tk("tpm", -5_000)
	noWCU         = del(schema.BucketAttr(schema.WCULimit, schema.LimitTokens), schema.BucketAttr(schema.WCULimit, schema.LimitCapacity))
)

var classifyID = schema.BucketID{Namespace: "ns1", Entity: "user-1", Resource: "openai/gpt-4", Shard: 0}

// classifyBase holds rpm with 10 tokens and tpm with 1000.
func classifyBase() item { return bucketItem(classifyID, lim{"rpm", 10_000}, lim{"tpm", 1_000_000}) }

var declRpmTpm = []Declared{{"rpm", 1}, {"tpm", 1}}

type classifyCase struct {
	name        string
	mods        []mod
	missing     bool // no item at all
	shape       Shape
	declared    []Declared
	reason      Reason
	short       []string
	missingLims []string
	bypassStamp bool
	action      Action
}

func classifyCases() []classifyCase {
	E, B := ShapeEnforce, ShapeBypass
	d := declRpmTpm
	return []classifyCase{
		// Row 1.
		{name: "missing enforce", missing: true, shape: E, declared: d, reason: ReasonBucketMissing, action: ActionReadThenWrite},
		{name: "missing bypass", missing: true, shape: B, declared: d, reason: ReasonBucketMissing, action: ActionReadThenWrite},
		// Row 2: beats every later row.
		{name: "disabled", mods: []mod{disabled}, shape: E, declared: d, reason: ReasonDisabled, action: ActionRaiseDisabled},
		{name: "disabled beats all", mods: []mod{disabled, vuPassed, ttlPassed, wcuShort, rpmShort, soft("rpm", schema.Num(1)), del("b_tpm_cp")},
			shape: E, declared: d, reason: ReasonDisabled, short: []string{"rpm"}, missingLims: []string{"tpm"}, action: ActionRaiseDisabled},
		{name: "disabled beats bypass cleared", mods: []mod{disabled, ttlPassed}, shape: B, declared: d, reason: ReasonDisabled, action: ActionRaiseDisabled},
		{name: "disabled with live bypass", mods: []mod{disabled, bypassLive}, shape: B, declared: d, reason: ReasonDisabled, action: ActionRaiseDisabled},
		{name: "disabled false is no verdict", mods: []mod{set(schema.AttrDisabled, avBool(false))}, shape: E, declared: d,
			reason: ReasonUnexplained, action: ActionReadThenWrite},
		// Row 3: bypass shape only.
		{name: "bypass absent", shape: B, declared: d, reason: ReasonBypassCleared, action: ActionRetryEnforce},
		{name: "bypass expired", mods: []mod{bypassExpired}, shape: B, declared: d, reason: ReasonBypassCleared, bypassStamp: true, action: ActionReadThenWrite},
		{name: "bypass BOOL", mods: []mod{bypassBool}, shape: B, declared: d, reason: ReasonBypassCleared, bypassStamp: true, action: ActionReadThenWrite},
		{name: "bypass cleared beats ttl and wcu", mods: []mod{ttlPassed, wcuShort, vuPassed}, shape: B, declared: d,
			reason: ReasonBypassCleared, action: ActionRetryEnforce},
		{name: "enforce never bypass cleared", mods: []mod{bypassExpired, rpmShort}, shape: E, declared: d,
			reason: ReasonStampExpired, short: []string{"rpm"}, action: ActionReadThenWrite},
		// Row 4: enforce shape only.
		{name: "vu passed", mods: []mod{vuPassed}, shape: E, declared: d, reason: ReasonScheduleBoundary, action: ActionReadThenWrite},
		{name: "vu zero", mods: []mod{vuZero}, shape: E, declared: d, reason: ReasonScheduleBoundary, action: ActionReadThenWrite},
		{name: "vu beats ttl stamp wcu seed short", mods: []mod{vuPassed, ttlPassed, wcuShort, rpmShort, soft("rpm", schema.Num(1)), del("b_tpm_tk")},
			shape: E, declared: d, reason: ReasonScheduleBoundary, short: []string{"rpm"}, missingLims: []string{"tpm"}, action: ActionReadThenWrite},
		{name: "vu ahead", mods: []mod{vuAhead, rpmShort}, shape: E, declared: d, reason: ReasonAppLimitExhausted, short: []string{"rpm"}, action: ActionShardRetryOrReject},
		{name: "bypass shape ignores vu", mods: []mod{bypassLive, vuPassed, wcuShort}, shape: B, declared: d, reason: ReasonWCUExhausted, action: ActionDouble},
		// Row 5.
		{name: "ttl passed", mods: []mod{ttlPassed}, shape: E, declared: d, reason: ReasonExpired, action: ActionReadThenWrite},
		{name: "ttl ahead", mods: []mod{ttlAhead, wcuShort}, shape: E, declared: d, reason: ReasonWCUExhausted, action: ActionDouble},
		{name: "ttl beats stamp and wcu", mods: []mod{ttlPassed, wcuShort, rpmShort, soft("rpm", schema.Num(testNow))}, shape: E, declared: d,
			reason: ReasonExpired, short: []string{"rpm"}, action: ActionReadThenWrite},
		{name: "ttl passed bypass shape", mods: []mod{bypassLive, ttlPassed}, shape: B, declared: d, reason: ReasonExpired, action: ActionReadThenWrite},
		// Row 6.
		{name: "soft expired on short", mods: []mod{rpmShort, soft("rpm", schema.Num(testNow))}, shape: E, declared: d,
			reason: ReasonStampExpired, short: []string{"rpm"}, action: ActionReadThenWrite},
		{name: "soft BOOL on short", mods: []mod{rpmShort, soft("rpm", avBool(true))}, shape: E, declared: d,
			reason: ReasonStampExpired, short: []string{"rpm"}, action: ActionReadThenWrite},
		{name: "bypass expired on short", mods: []mod{tpmShort, bypassExpired}, shape: E, declared: d,
			reason: ReasonStampExpired, short: []string{"tpm"}, action: ActionReadThenWrite},
		{name: "stamp expired beats wcu and seed", mods: []mod{rpmShort, soft("rpm", schema.Num(1)), wcuShort, del("b_tpm_cp")}, shape: E, declared: d,
			reason: ReasonStampExpired, short: []string{"rpm"}, missingLims: []string{"tpm"}, action: ActionReadThenWrite},
		{name: "expired soft on a covered limit", mods: []mod{soft("rpm", schema.Num(1)), tpmShort}, shape: E, declared: d,
			reason: ReasonAppLimitExhausted, short: []string{"tpm"}, action: ActionShardRetryOrReject},
		{name: "expired soft on an undeclared limit", mods: []mod{soft("tpm", schema.Num(1)), rpmShort}, shape: E, declared: d[:1],
			reason: ReasonAppLimitExhausted, short: []string{"rpm"}, action: ActionShardRetryOrReject},
		{name: "missing limit under an expired bypass", mods: []mod{bypassExpired}, shape: E, declared: []Declared{{"rpd", 1}},
			reason: ReasonStampExpired, missingLims: []string{"rpd"}, action: ActionReadThenWrite},
		{name: "live soft excuses short", mods: []mod{rpmShort, soft("rpm", schema.Num(testNow+1))}, shape: E, declared: d,
			reason: ReasonUnexplained, action: ActionReadThenWrite},
		{name: "live soft short and wcu", mods: []mod{rpmShort, soft("rpm", schema.Num(testNow+1)), wcuShort}, shape: E, declared: d,
			reason: ReasonWCUExhausted, action: ActionDouble},
		{name: "live bypass excuses short", mods: []mod{rpmShort, tpmShort, bypassLive, wcuShort}, shape: E, declared: d,
			reason: ReasonWCUExhausted, action: ActionDouble},
		// Row 7.
		{name: "wcu short", mods: []mod{wcuShort}, shape: E, declared: d, reason: ReasonWCUExhausted, action: ActionDouble},
		{name: "wcu negative", mods: []mod{tk(schema.WCULimit, -3)}, shape: E, declared: d, reason: ReasonWCUExhausted, action: ActionDouble},
		{name: "both", mods: []mod{wcuShort, tpmShort, rpmShort}, shape: E, declared: d, reason: ReasonBothExhausted,
			short: []string{"rpm", "tpm"}, action: ActionDouble},
		{name: "wcu beats seed", mods: []mod{wcuShort}, shape: E, declared: []Declared{{"rpd", 1}, {"rpm", 1}},
			reason: ReasonWCUExhausted, missingLims: []string{"rpd"}, action: ActionDouble},
		{name: "bypass shape never both", mods: []mod{bypassLive, wcuShort, rpmShort}, shape: B, declared: d,
			reason: ReasonWCUExhausted, action: ActionDouble},
		{name: "wcu exactly one token", mods: []mod{tk(schema.WCULimit, bucket.WCUDebit), rpmShort}, shape: E, declared: d,
			reason: ReasonAppLimitExhausted, short: []string{"rpm"}, action: ActionShardRetryOrReject},
		// Row 8.
		{name: "seed", shape: E, declared: []Declared{{"rpm", 1}, {"rpd", 1}}, reason: ReasonSeed, missingLims: []string{"rpd"}, action: ActionReadThenWrite},
		{name: "seed beats short", mods: []mod{rpmShort}, shape: E, declared: []Declared{{"rpm", 1}, {"rpd", 0}},
			reason: ReasonSeed, short: []string{"rpm"}, missingLims: []string{"rpd"}, action: ActionReadThenWrite},
		{name: "seed lone tc", mods: []mod{set("b_rpd_tc", schema.Num(5000))}, shape: E, declared: []Declared{{"rpd", 1}},
			reason: ReasonSeed, missingLims: []string{"rpd"}, action: ActionReadThenWrite},
		{name: "seed tk without cp", mods: []mod{del("b_rpm_cp"), tpmShort}, shape: E, declared: d,
			reason: ReasonSeed, short: []string{"tpm"}, missingLims: []string{"rpm"}, action: ActionReadThenWrite},
		{name: "seed no wcu", mods: []mod{noWCU}, shape: E, declared: d, reason: ReasonSeed, action: ActionReadThenWrite},
		{name: "seed no wcu bypass", mods: []mod{noWCU, bypassLive}, shape: B, declared: d, reason: ReasonSeed, action: ActionReadThenWrite},
		{name: "live bypass excuses a missing limit", mods: []mod{bypassLive}, shape: E, declared: []Declared{{"rpd", 1}, {"rpm", 100}},
			reason: ReasonUnexplained, missingLims: []string{"rpd"}, action: ActionReadThenWrite},
		{name: "live soft excuses a missing limit", mods: []mod{soft("rpd", schema.Num(testNow+1))}, shape: E, declared: []Declared{{"rpd", 1}},
			reason: ReasonUnexplained, missingLims: []string{"rpd"}, action: ActionReadThenWrite},
		{name: "covered tk without cp passes", mods: []mod{del("b_rpm_cp")}, shape: E, declared: d,
			reason: ReasonUnexplained, missingLims: []string{"rpm"}, action: ActionReadThenWrite},
		{name: "bypass shape ignores missing limits", mods: []mod{bypassLive}, shape: B, declared: []Declared{{"rpd", 1}},
			reason: ReasonUnexplained, action: ActionReadThenWrite},
		// Row 9.
		{name: "app short", mods: []mod{rpmShort}, shape: E, declared: d, reason: ReasonAppLimitExhausted, short: []string{"rpm"}, action: ActionShardRetryOrReject},
		{name: "app both short in order", mods: []mod{rpmShort, tpmShort}, shape: E, declared: []Declared{{"tpm", 1}, {"rpm", 1}},
			reason: ReasonAppLimitExhausted, short: []string{"tpm", "rpm"}, action: ActionShardRetryOrReject},
		{name: "app amount above balance", shape: E, declared: []Declared{{"rpm", 11}}, reason: ReasonAppLimitExhausted,
			short: []string{"rpm"}, action: ActionShardRetryOrReject},
		{name: "exact balance passes", shape: E, declared: []Declared{{"rpm", 10}}, reason: ReasonUnexplained, action: ActionReadThenWrite},
		{name: "amount 0 on debt", mods: []mod{tk("rpm", -1)}, shape: E, declared: []Declared{{"rpm", 0}},
			reason: ReasonAppLimitExhausted, short: []string{"rpm"}, action: ActionShardRetryOrReject},
		{name: "amount 0 on zero", mods: []mod{tk("rpm", 0)}, shape: E, declared: []Declared{{"rpm", 0}}, reason: ReasonUnexplained, action: ActionReadThenWrite},
		// Nothing fails.
		{name: "unexplained enforce", shape: E, declared: d, reason: ReasonUnexplained, action: ActionReadThenWrite},
		{name: "unexplained bypass", mods: []mod{bypassLive}, shape: B, declared: d, reason: ReasonUnexplained, action: ActionReadThenWrite},
	}
}

func (c classifyCase) item() item {
	if c.missing {
		return nil
	}
	it := classifyBase()
	for _, m := range c.mods {
		m(it)
	}
	return it
}

func (c classifyCase) check(t *testing.T, got Classification) {
	t.Helper()
	if got.Reason != c.reason || !slices.Equal(got.Short, c.short) || !slices.Equal(got.Missing, c.missingLims) ||
		got.BypassStamp != c.bypassStamp || got.Action() != c.action {
		t.Errorf("%s: got %s short %v missing %v stamp %v action %s\n want %s short %v missing %v stamp %v action %s",
			c.name, got.Reason, got.Short, got.Missing, got.BypassStamp, got.Action(),
			c.reason, c.short, c.missingLims, c.bypassStamp, c.action)
	}
}

func TestClassify(t *testing.T) {
	seen := map[Reason]bool{}
	for _, c := range classifyCases() {
		got, img, err := ClassifyItem(c.item(), c.shape, c.declared, testNow)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if (img == nil) != c.missing {
			t.Errorf("%s: image %v", c.name, img)
		}
		c.check(t, got)
		seen[got.Reason] = true
	}
	for r := ReasonBucketMissing; r <= ReasonUnexplained; r++ {
		if !seen[r] {
			t.Errorf("no case for %s", r)
		}
	}
}

func TestClassifyWCUFlags(t *testing.T) {
	for _, c := range []struct {
		mods           []mod
		short, missing bool
	}{
		{nil, false, false},
		{[]mod{wcuShort}, true, false},
		{[]mod{noWCU}, false, true},
		{[]mod{del(schema.BucketAttr(schema.WCULimit, schema.LimitCapacity))}, false, false}, // tk alone is what the condition reads
	} {
		it := classifyBase()
		for _, m := range c.mods {
			m(it)
		}
		got, _, err := ClassifyItem(it, ShapeEnforce, declRpmTpm, testNow)
		if err != nil || got.WCUShort != c.short || got.WCUMissing != c.missing {
			t.Errorf("%+v: %+v %v", c, got, err)
		}
	}
}

func TestClassifyItemCorrupt(t *testing.T) {
	it := classifyBase()
	it[schema.AttrVU] = schema.Str("soon")
	_, img, err := ClassifyItem(it, ShapeEnforce, declRpmTpm, testNow)
	var ce *bucketitem.CorruptItemError
	if !errors.As(err, &ce) || ce.Attribute != schema.AttrVU || img != nil {
		t.Errorf("err = %v, img = %v", err, img)
	}
	if c, img, err := ClassifyItem(item{}, ShapeBypass, nil, testNow); err != nil || img != nil || c.Reason != ReasonBucketMissing {
		t.Errorf("empty item: %+v %v %v", c, img, err)
	}
}

func TestReasonAndActionStrings(t *testing.T) {
	want := []string{"BUCKET_MISSING", "DISABLED", "BYPASS_CLEARED", "SCHEDULE_BOUNDARY", "EXPIRED", "STAMP_EXPIRED",
		"WCU_EXHAUSTED", "BOTH_EXHAUSTED", "SEED", "APP_LIMIT_EXHAUSTED", "UNEXPLAINED"}
	for i, w := range want {
		if got := Reason(i + 1).String(); got != w {
			t.Errorf("Reason(%d) = %s, want %s", i+1, got, w)
		}
	}
	if Reason(0).String() != "Reason(0)" || Reason(99).String() != "Reason(99)" {
		t.Error("unknown reasons")
	}
	for a := ActionReadThenWrite; a <= ActionShardRetryOrReject; a++ {
		if s := a.String(); s == "" || s[0] == 'A' {
			t.Errorf("Action(%d) = %q", a, s)
		}
	}
	if Action(0).String() != "Action(0)" || ShapeEnforce.String() != "enforce" || ShapeBypass.String() != "bypass" || Shape(5).String() != "Shape(5)" {
		t.Error("strings")
	}
	if ShapeFor(true) != ShapeBypass || ShapeFor(false) != ShapeEnforce {
		t.Error("ShapeFor")
	}
}

// Classify allocates nothing unless it reports names.
func TestClassifyAllocs(t *testing.T) {
	img, err := bucketitem.Decode(bucketItem(classifyID, lim{"rpm", 10_000}, lim{"tpm", 10_000}))
	if err != nil {
		t.Fatal(err)
	}
	img.HasVU, img.VU = true, 0
	if a := testing.AllocsPerRun(100, func() { Classify(&img, ShapeEnforce, declRpmTpm, testNow) }); a != 0 {
		t.Errorf("%v allocs", a)
	}
}
