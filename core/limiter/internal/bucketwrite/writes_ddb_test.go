package bucketwrite

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/bucket"
	"github.com/zae-limiter/zae-limiter-go/core/bucketitem"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
	"github.com/zae-limiter/zae-limiter-go/internal/ddbtest"
)

// Integration tests: the built writes against DynamoDB Local, on items of
// the shape docs/design.md §2 describes.

type ddb struct {
	t   *testing.T
	tbl *ddbtest.Table
	w   *Writes
}

func newDDB(t *testing.T) *ddb {
	tbl := ddbtest.NewTable(t)
	return &ddb{t: t, tbl: tbl, w: NewWrites(tbl.Name)}
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

func (d *ddb) put(it item) {
	d.t.Helper()
	if _, err := d.tbl.DB.PutItem(ctx(d.t), &dynamodb.PutItemInput{TableName: aws.String(d.tbl.Name), Item: it}); err != nil {
		d.t.Fatal(err)
	}
}

func (d *ddb) get(id schema.BucketID) item {
	d.t.Helper()
	out, err := d.tbl.DB.GetItem(ctx(d.t), &dynamodb.GetItemInput{
		TableName: aws.String(d.tbl.Name), Key: id.Key().AttributeValues(), ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		d.t.Fatal(err)
	}
	return out.Item
}

// send issues a built UpdateItem. On a condition failure it returns the
// ALL_OLD item and ok = false; any other error fails the test.
func (d *ddb) send(in *dynamodb.UpdateItemInput, err error) (attrs item, ok bool) {
	d.t.Helper()
	if err != nil {
		d.t.Fatal(err)
	}
	out, err := d.tbl.DB.UpdateItem(ctx(d.t), in)
	var ccf *types.ConditionalCheckFailedException
	switch {
	case errors.As(err, &ccf):
		return ccf.Item, false
	case err != nil:
		d.t.Fatalf("UpdateItem: %v\nupdate %s\ncondition %s", err, aws.ToString(in.UpdateExpression), aws.ToString(in.ConditionExpression))
	}
	return out.Attributes, true
}

func (d *ddb) fast(id schema.BucketID, shape Shape, declared []Declared, now int64) (item, bool) {
	d.t.Helper()
	return d.send(d.w.Speculative(id, shape, declared, now))
}

func numAttr(t *testing.T, it item, attr string) int64 {
	t.Helper()
	m, ok := it[attr].(*types.AttributeValueMemberN)
	if !ok {
		t.Fatalf("%s = %#v, want N", attr, it[attr])
	}
	n, err := strconv.ParseInt(m.Value, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func tkOf(t *testing.T, it item, l string) int64 {
	return numAttr(t, it, schema.BucketAttr(l, schema.LimitTokens))
}
func tcOf(t *testing.T, it item, l string) int64 {
	return numAttr(t, it, schema.BucketAttr(l, schema.LimitConsumed))
}

func caseID(i int, name string) schema.BucketID {
	return schema.BucketID{Namespace: "ns1", Entity: fmt.Sprintf("e%d-%s", i, "x"), Resource: "openai/gpt-4", Shard: i % 3}
}

// Every row of the classification table, sent for real: the write fails
// exactly when Classify says something explains a failure, and the ALL_OLD
// image DynamoDB returns classifies as the table says.
func TestFastPathClassificationRowsDDB(t *testing.T) {
	d := newDDB(t)
	for i, c := range classifyCases() {
		id := caseID(i, c.name)
		if !c.missing {
			it := bucketItem(id, lim{"rpm", 10_000}, lim{"tpm", 1_000_000})
			for _, m := range c.mods {
				m(it)
			}
			d.put(it)
		}
		old, ok := d.fast(id, c.shape, c.declared, testNow)
		// Rows 1–9 fail the write; UNEXPLAINED passes it, except for the
		// values no writer stores (disabled = false).
		wantOK := c.reason == ReasonUnexplained && c.name != "disabled false is no verdict"
		if ok != wantOK {
			t.Errorf("%s: write succeeded = %v, want %v", c.name, ok, wantOK)
			continue
		}
		if ok {
			continue
		}
		got, img, err := ClassifyItem(old, c.shape, c.declared, testNow)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if c.missing != (img == nil) {
			t.Errorf("%s: ALL_OLD = %v", c.name, old)
		}
		c.check(t, got)
	}
}

// The enforce write debits tk and adds tc for every declared limit
// (amount 0 included) and debits wcu by one token; nothing else changes.
func TestFastPathEnforceSuccessDDB(t *testing.T) {
	d := newDDB(t)
	id := caseID(0, "")
	before := bucketItem(id, lim{"rpm", 10_000}, lim{"tpm", 1_000_000}, lim{"rpd", 0})
	before[schema.AttrTTL] = schema.Num(testNowS + 3600)
	before[schema.AttrVU] = schema.Num(testNow + 1)
	before["future_attr"] = schema.Str("kept")
	d.put(before)
	after, ok := d.fast(id, ShapeEnforce, []Declared{{"rpm", 3}, {"tpm", 1000}, {"rpd", 0}}, testNow)
	if !ok {
		t.Fatal("write failed")
	}
	for _, c := range []struct {
		l      string
		tk, tc int64
	}{{"rpm", 7_000, 3_000}, {"tpm", 0, 1_000_000}, {"rpd", 0, 0}, {schema.WCULimit, wcuFullTk - 1000, 1000}} {
		if got := tkOf(t, after, c.l); got != c.tk {
			t.Errorf("%s tk = %d, want %d", c.l, got, c.tk)
		}
		if got := tcOf(t, after, c.l); got != c.tc {
			t.Errorf("%s tc = %d, want %d", c.l, got, c.tc)
		}
	}
	// ALL_NEW is the stored item, and only tk/tc moved.
	stored := d.get(id)
	for k, v := range before {
		if _, f, ok := schema.ParseBucketAttr(k); ok && (f == schema.LimitTokens || f == schema.LimitConsumed) {
			continue
		}
		if fmt.Sprint(stored[k]) != fmt.Sprint(v) {
			t.Errorf("%s changed: %v → %v", k, v, stored[k])
		}
	}
	if len(stored) != len(before) || len(after) != len(before) {
		t.Errorf("attribute count %d/%d, want %d", len(stored), len(after), len(before))
	}
	img, err := bucketitem.Decode(after)
	if err != nil || !slices.Equal(names(img.Limits), []string{"rpd", "rpm", "tpm"}) {
		t.Errorf("ALL_NEW decodes to %v, %v", names(img.Limits), err)
	}
}

func names(ls []bucketitem.LimitImage) []string {
	var out []string
	for _, l := range ls {
		out = append(out, l.Name)
	}
	return out
}

// docs/design.md §5, 27: a live soft stamp admits a short limit and the write
// still debits it, into debt; an expired one does not admit (34).
func TestFastPathSoftDDB(t *testing.T) {
	d := newDDB(t)
	id := caseID(0, "")
	it := bucketItem(id, lim{"rpm", 999}, lim{"tpm", 1_000_000})
	it[schema.BucketAttr("rpm", schema.LimitSoft)] = schema.Num(testNow + 1)
	d.put(it)
	after, ok := d.fast(id, ShapeEnforce, []Declared{{"rpm", 5}, {"tpm", 1}}, testNow)
	if !ok {
		t.Fatal("live soft must admit")
	}
	if tkOf(t, after, "rpm") != 999-5000 || tcOf(t, after, "rpm") != 5000 {
		t.Errorf("soft rpm tk %d tc %d", tkOf(t, after, "rpm"), tcOf(t, after, "rpm"))
	}
	// At the deadline the stamp has expired: STAMP_EXPIRED, not a 429.
	old, ok := d.fast(id, ShapeEnforce, []Declared{{"rpm", 5}, {"tpm", 1}}, testNow+1)
	if ok {
		t.Fatal("expired soft must not admit")
	}
	c, _, err := ClassifyItem(old, ShapeEnforce, []Declared{{"rpm", 5}, {"tpm", 1}}, testNow+1)
	if err != nil || c.Reason != ReasonStampExpired || c.Action() != ActionReadThenWrite {
		t.Errorf("classification %+v %v", c, err)
	}
}

// A live bypass stamp admits an enforce-shaped write, which debits tk (the
// limiter refunds it, docs/design.md §5); the refund is the AdjustTokens write.
// docs/design.md §5: tk net unchanged, tc increased once.
func TestFastPathEnforceOnBypassedDDB(t *testing.T) {
	d := newDDB(t)
	id := caseID(0, "")
	it := bucketItem(id, lim{"rpm", 0}, lim{"tpm", 1_000_000})
	it[schema.AttrBypass] = schema.Num(testNow + 60_000)
	d.put(it)
	declared := []Declared{{"rpm", 2}, {"tpm", 10}}
	after, ok := d.fast(id, ShapeEnforce, declared, testNow)
	if !ok {
		t.Fatal("live bypass must admit the enforce shape")
	}
	if tkOf(t, after, "rpm") != -2000 || tkOf(t, after, "tpm") != 990_000 {
		t.Errorf("enforce on bypass must debit: %d %d", tkOf(t, after, "rpm"), tkOf(t, after, "tpm"))
	}
	img, _ := bucketitem.Decode(after)
	if !img.Bypass.Live(testNow) {
		t.Fatal("ALL_NEW must show the live bypass")
	}
	refund := []Declared{{"rpm", -2}, {"tpm", -10}}
	if _, ok := d.send(d.w.Adjust(id, AdjustTokens, refund, false, testNow)); !ok {
		t.Fatal("refund failed")
	}
	got := d.get(id)
	if tkOf(t, got, "rpm") != 0 || tkOf(t, got, "tpm") != 1_000_000 || tcOf(t, got, "rpm") != 2000 || tcOf(t, got, "tpm") != 10_000 {
		t.Errorf("after refund: %v", got)
	}
}

// docs/design.md §5, 29: the bypass shape never debits tk, adds tc and debits
// wcu; it fails on b_wcu_tk < 1000 and on an expired or absent stamp.
func TestFastPathBypassDDB(t *testing.T) {
	d := newDDB(t)
	id := caseID(0, "")
	it := bucketItem(id, lim{"rpm", 0}, lim{"tpm", -7})
	it[schema.AttrBypass] = schema.Num(testNow + 60_000)
	it[schema.AttrVU] = schema.Num(0) // no vu guard in the bypass shape
	it[schema.BucketAttr(schema.WCULimit, schema.LimitTokens)] = schema.Num(3 * bucket.WCUDebit)
	d.put(it)
	declared := []Declared{{"rpm", 4}, {"tpm", 1000}, {"rpd", 1}} // rpd is not on the item
	for range 3 {
		if _, ok := d.fast(id, ShapeBypass, declared, testNow); !ok {
			t.Fatal("bypass write failed")
		}
	}
	got := d.get(id)
	if tkOf(t, got, "rpm") != 0 || tkOf(t, got, "tpm") != -7 {
		t.Errorf("bypass debited tk: %d %d", tkOf(t, got, "rpm"), tkOf(t, got, "tpm"))
	}
	if tcOf(t, got, "rpm") != 12_000 || tcOf(t, got, "tpm") != 3_000_000 || tcOf(t, got, "rpd") != 3000 {
		t.Errorf("tc: %d %d %d", tcOf(t, got, "rpm"), tcOf(t, got, "tpm"), tcOf(t, got, "rpd"))
	}
	if tkOf(t, got, schema.WCULimit) != 0 || tcOf(t, got, schema.WCULimit) != 3000 {
		t.Errorf("wcu: %d %d", tkOf(t, got, schema.WCULimit), tcOf(t, got, schema.WCULimit))
	}
	// wcu is now 0 < 1000: the fourth write fails and asks for doubling.
	old, ok := d.fast(id, ShapeBypass, declared, testNow)
	if ok {
		t.Fatal("bypass with wcu exhausted must fail")
	}
	if c, _, _ := ClassifyItem(old, ShapeBypass, declared, testNow); c.Reason != ReasonWCUExhausted {
		t.Errorf("classification %s", c.Reason)
	}
	// The stamp expires at its deadline.
	if _, ok := d.send(d.w.Adjust(id, AdjustBoth, []Declared{{"rpm", 0}}, false, testNow)); !ok {
		t.Fatal("adjust")
	}
	d.put(func() item {
		it[schema.BucketAttr(schema.WCULimit, schema.LimitTokens)] = schema.Num(wcuFullTk)
		return it
	}())
	old, ok = d.fast(id, ShapeBypass, declared, testNow+60_000)
	if ok {
		t.Fatal("expired bypass must fail")
	}
	if c, _, _ := ClassifyItem(old, ShapeBypass, declared, testNow+60_000); c.Reason != ReasonBypassCleared || !c.BypassStamp {
		t.Errorf("classification %+v", c)
	}
}

// Limit names with `.`, `-` and `_` and a resource with `/` work end to end.
func TestFastPathAwkwardNamesDDB(t *testing.T) {
	d := newDDB(t)
	id := schema.BucketID{Namespace: "ns1", Entity: "ent.ity-1", Resource: "openai/gpt-4", Shard: 1}
	d.put(bucketItem(id, lim{"a.b", 5000}, lim{"x-y", 5000}, lim{"my_limit", 5000}))
	declared := []Declared{{"a.b", 1}, {"x-y", 2}, {"my_limit", 3}}
	after, ok := d.fast(id, ShapeEnforce, declared, testNow)
	if !ok {
		t.Fatal("write failed")
	}
	for _, c := range []struct {
		l      string
		tk, tc int64
	}{{"a.b", 4000, 1000}, {"x-y", 3000, 2000}, {"my_limit", 2000, 3000}} {
		if tkOf(t, after, c.l) != c.tk || tcOf(t, after, c.l) != c.tc {
			t.Errorf("%s: tk %d tc %d", c.l, tkOf(t, after, c.l), tcOf(t, after, c.l))
		}
	}
	if _, ok := after["b_my_tk"]; ok {
		t.Error("my_limit split at the wrong `_`")
	}
	old, ok := d.fast(id, ShapeEnforce, []Declared{{"a.b", 1}, {"x-y", 4}, {"my_limit", 2}}, testNow)
	if ok {
		t.Fatal("x-y is short")
	}
	c, _, err := ClassifyItem(old, ShapeEnforce, []Declared{{"a.b", 1}, {"x-y", 4}, {"my_limit", 2}}, testNow)
	if err != nil || c.Reason != ReasonAppLimitExhausted || !slices.Equal(c.Short, []string{"x-y"}) {
		t.Errorf("classification %+v %v", c, err)
	}
	if _, ok := d.send(d.w.Adjust(id, AdjustBoth, []Declared{{"a.b", -1}, {"my_limit", 1}}, true, testNow)); !ok {
		t.Fatal("adjust")
	}
	got := d.get(id)
	if tkOf(t, got, "a.b") != 5000 || tcOf(t, got, "a.b") != 0 || tkOf(t, got, "my_limit") != 1000 || numAttr(t, got, schema.AttrVU) != testNow {
		t.Errorf("after adjust: %v", got)
	}
}

func TestAdjustDDB(t *testing.T) {
	d := newDDB(t)
	id := caseID(0, "")
	it := bucketItem(id, lim{"rpm", 10_000}, lim{"tpm", 1_000_000})
	it[schema.AttrVU] = schema.Num(testNow + 60_000)
	it[schema.AttrRF] = schema.Num(testRF)
	d.put(it)
	// Lease exit: post-enter deltas of either sign, no condition (may go negative).
	if _, ok := d.send(d.w.Adjust(id, AdjustBoth, []Declared{{"rpm", 15}, {"tpm", -250}}, false, testNow)); !ok {
		t.Fatal("adjust failed")
	}
	got := d.get(id)
	if tkOf(t, got, "rpm") != -5000 || tcOf(t, got, "rpm") != 15_000 || tkOf(t, got, "tpm") != 1_250_000 || tcOf(t, got, "tpm") != -250_000 {
		t.Errorf("adjust both: %v", got)
	}
	if numAttr(t, got, schema.AttrVU) != testNow+60_000 || numAttr(t, got, schema.AttrRF) != testRF {
		t.Error("adjust must not move vu or rf")
	}
	// A bypassed lease's release: tc only.
	if _, ok := d.send(d.w.Adjust(id, AdjustConsumed, []Declared{{"rpm", -15}}, false, testNow)); !ok {
		t.Fatal("adjust consumed failed")
	}
	got = d.get(id)
	if tkOf(t, got, "rpm") != -5000 || tcOf(t, got, "rpm") != 0 {
		t.Errorf("adjust consumed: %v", got)
	}
	// A credit with a forced pass: SET vu = now (docs/decisions.md P25).
	if _, ok := d.send(d.w.Adjust(id, AdjustTokens, []Declared{{"rpm", -5}}, true, testNow)); !ok {
		t.Fatal("adjust tokens failed")
	}
	got = d.get(id)
	if tkOf(t, got, "rpm") != 0 || tcOf(t, got, "rpm") != 0 || numAttr(t, got, schema.AttrVU) != testNow {
		t.Errorf("adjust tokens + force pass: %v", got)
	}
	// The forced pass: the next fast path fails with SCHEDULE_BOUNDARY.
	old, ok := d.fast(id, ShapeEnforce, []Declared{{"tpm", 1}}, testNow)
	if c, _, _ := ClassifyItem(old, ShapeEnforce, []Declared{{"tpm", 1}}, testNow); ok || c.Reason != ReasonScheduleBoundary {
		t.Errorf("after vu = now: ok %v, %s", ok, c.Reason)
	}
}

func TestRetryDDB(t *testing.T) {
	d := newDDB(t)
	id := caseID(0, "")
	it := bucketItem(id, lim{"rpm", 2000}, lim{"tpm", -1000})
	it[schema.AttrVU] = schema.Num(testNow + 1) // Retry has the fast path's vu guard
	d.put(it)
	// tpm is soft here: short but not conditioned.
	limits := []RetryLimit{{"rpm", 2, true}, {"tpm", 5, false}}
	after, ok := d.send(d.w.Retry(id, limits, testNow))
	if !ok {
		t.Fatal("retry failed")
	}
	if tkOf(t, after, "rpm") != 0 || tcOf(t, after, "rpm") != 2000 || tkOf(t, after, "tpm") != -6000 || tcOf(t, after, "tpm") != 5000 {
		t.Errorf("retry: %v", after)
	}
	if tkOf(t, after, schema.WCULimit) != wcuFullTk {
		t.Error("retry must not debit wcu")
	}
	// rpm is now empty: a hard retry fails with the old image, unchanged.
	old, ok := d.send(d.w.Retry(id, []RetryLimit{{"rpm", 1, true}, {"tpm", 1, false}}, testNow))
	if ok || tkOf(t, old, "rpm") != 0 || tkOf(t, old, "tpm") != -6000 {
		t.Errorf("short retry: ok %v old %v", ok, old)
	}
	// A zero amount on a hard limit in debt is not conditioned.
	if _, ok := d.send(d.w.Retry(id, []RetryLimit{{"tpm", 0, true}, {"rpm", 0, true}}, testNow)); !ok {
		t.Error("retry of nothing must pass")
	}
	// Past vu the retry fails whatever the balance: a debit that moves no
	// rf is only exact before vu (docs/decisions.md P25).
	if old, ok := d.send(d.w.Retry(id, []RetryLimit{{"tpm", 0, true}}, testNow+1)); ok || numAttr(t, old, schema.AttrVU) != testNow+1 {
		t.Errorf("retry at vu: ok %v old %v", ok, old)
	}
	// No item: the retry fails and creates nothing.
	missing := caseID(1, "")
	if old, ok := d.send(d.w.Retry(missing, []RetryLimit{{"rpm", 0, false}}, testNow)); ok || len(old) != 0 {
		t.Errorf("retry on a missing bucket: ok %v old %v", ok, old)
	}
	if got := d.get(missing); len(got) != 0 {
		t.Errorf("retry created %v", got)
	}
}

func TestDoubleDDB(t *testing.T) {
	d := newDDB(t)
	shard0 := func(e string) schema.BucketID {
		return schema.BucketID{Namespace: "ns1", Entity: e, Resource: "openai/gpt-4", Shard: 0}
	}
	// 1 → 2 → 4; a stale doubler fails and reads the current count.
	d.put(bucketItem(shard0("a"), lim{"rpm", 1}))
	if _, ok := d.send(d.w.Double("ns1", "a", "openai/gpt-4", 1)); !ok {
		t.Fatal("1 → 2 failed")
	}
	old, ok := d.send(d.w.Double("ns1", "a", "openai/gpt-4", 1))
	if ok || numAttr(t, old, schema.AttrShardCount) != 2 {
		t.Errorf("stale doubling: ok %v old %v", ok, old[schema.AttrShardCount])
	}
	if _, ok := d.send(d.w.Double("ns1", "a", "openai/gpt-4", 2)); !ok {
		t.Fatal("2 → 4 failed")
	}
	if got := numAttr(t, d.get(shard0("a")), schema.AttrShardCount); got != 4 {
		t.Errorf("shard_count = %d", got)
	}
	// An item without shard_count reads as 1.
	it := bucketItem(shard0("b"), lim{"rpm", 1})
	delete(it, schema.AttrShardCount)
	d.put(it)
	if _, ok := d.send(d.w.Double("ns1", "b", "openai/gpt-4", 1)); !ok {
		t.Fatal("absent → 2 failed")
	}
	if got := numAttr(t, d.get(shard0("b")), schema.AttrShardCount); got != 2 {
		t.Errorf("shard_count = %d", got)
	}
	// No shard 0: nothing is created.
	if _, ok := d.send(d.w.Double("ns1", "c", "openai/gpt-4", 1)); ok {
		t.Error("doubling a missing bucket must fail")
	}
	if _, ok := d.send(d.w.Double("ns1", "c", "openai/gpt-4", 2)); ok {
		t.Error("doubling a missing bucket must fail")
	}
	if got := d.get(shard0("c")); len(got) != 0 {
		t.Errorf("doubling created %v", got)
	}
}

// A random differential test: for random item states, shapes and declared
// limits, the write succeeds exactly when Classify finds nothing that fails
// on the pre-image (UNEXPLAINED), and a failure's ALL_OLD classifies like
// the pre-image.
func TestFastPathMatchesClassifyDDB(t *testing.T) {
	d := newDDB(t)
	r := rand.New(rand.NewPCG(0xfa57, 0x9a7))
	pick := func(vs ...int64) int64 { return vs[r.IntN(len(vs))] }
	stamp := func() types.AttributeValue {
		switch r.IntN(5) {
		case 0:
			return avBool(true)
		case 1, 2:
			return schema.Num(testNow + pick(-1000, 0, 1, 60_000))
		}
		return nil
	}
	for i := range 400 {
		id := schema.BucketID{Namespace: "ns1", Entity: "r" + strconv.Itoa(i), Resource: "openai/gpt-4", Shard: 0}
		var limits []lim
		for _, n := range []string{"rpm", "tpm", "a.b"} {
			if r.IntN(5) > 0 {
				limits = append(limits, lim{n, pick(-2000, 0, 999, 1000, 3000, 100_000)})
			}
		}
		it := bucketItem(id, limits...)
		if r.IntN(4) == 0 {
			it[schema.BucketAttr(schema.WCULimit, schema.LimitTokens)] = schema.Num(pick(0, 999, 1000))
		}
		if s := stamp(); s != nil {
			it[schema.AttrBypass] = s
		}
		for _, l := range limits {
			if s := stamp(); s != nil {
				it[schema.BucketAttr(l.name, schema.LimitSoft)] = s
			}
		}
		if r.IntN(6) == 0 {
			it[schema.AttrDisabled] = avBool(true)
		}
		if r.IntN(4) == 0 {
			it[schema.AttrVU] = schema.Num(testNow + pick(-1, 0, 1))
		}
		if r.IntN(4) == 0 {
			it[schema.AttrTTL] = schema.Num(testNowS + pick(-1, 0, 1))
		}
		if r.IntN(10) == 0 {
			it[schema.BucketAttr("rpd", schema.LimitConsumed)] = schema.Num(1) // a lone tc
		}
		missing := r.IntN(15) == 0
		if !missing {
			d.put(it)
		}
		var declared []Declared
		for _, n := range []string{"rpm", "tpm", "a.b", "rpd"} {
			if r.IntN(3) > 0 {
				declared = append(declared, Declared{n, pick(0, 1, 3)})
			}
		}
		shape := Shape(r.IntN(2))
		var pre Classification
		if missing {
			pre = Classify(nil, shape, declared, testNow)
		} else {
			img, err := bucketitem.Decode(it)
			if err != nil {
				t.Fatal(err)
			}
			pre = Classify(&img, shape, declared, testNow)
		}
		old, ok := d.fast(id, shape, declared, testNow)
		if ok != (pre.Reason == ReasonUnexplained) {
			t.Errorf("case %d (%s, %v): write ok = %v, pre-image classifies %s\nitem %v", i, shape, declared, ok, pre.Reason, it)
			continue
		}
		if ok {
			continue
		}
		post, _, err := ClassifyItem(old, shape, declared, testNow)
		if err != nil {
			t.Fatal(err)
		}
		if post.Reason != pre.Reason || !slices.Equal(post.Short, pre.Short) || !slices.Equal(post.Missing, pre.Missing) {
			t.Errorf("case %d: ALL_OLD classifies %+v, pre-image %+v", i, post, pre)
		}
	}
}
