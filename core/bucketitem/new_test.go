package bucketitem

import (
	"testing"

	"github.com/zae-limiter/zae-limiter-go/core/bucket"
	"github.com/zae-limiter/zae-limiter-go/core/schedule"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
	"github.com/zae-limiter/zae-limiter-go/internal/ddbtest"
)

// A new shard's item decodes back to what was asked for: every field, the
// reserved wcu limit at full, the optional stamps present only when set.
func TestNewItemDecodesBack(t *testing.T) {
	rpm := bucket.Params{Capacity: 100_000, RefillAmount: 100_000, RefillPeriod: 60_000}
	tpm := bucket.Params{Capacity: 10_000_000, RefillAmount: 10_000_000, RefillPeriod: 60_000}
	n := New{
		ID: schema.BucketID{Namespace: "ns1", Entity: "user-1", Resource: "openai/gpt-4", Shard: 2},
		RF: imgNow, ShardCount: 4, Cascade: true, PGen: 7, ParentID: "org-1",
		TTL: imgNow/1000 + 3600, Bypass: imgNow + 30_000, VU: imgNow + 60_000, Recheck: imgNow + 45_000,
		Limits: []NewLimit{
			{Name: "tpm", Tokens: 2_000_000, Consumed: 500_000, Params: tpm, Soft: imgNow + 30_000},
			{Name: "rpm", Tokens: 24_000, Consumed: 1_000, Params: rpm},
		},
	}
	it := n.Item()
	if got, want := it[schema.AttrPK], schema.BucketItemKeys("ns1", "user-1", "openai/gpt-4", 2).Item()[schema.AttrPK]; ddbtest.Render(got) != ddbtest.Render(want) {
		t.Errorf("PK = %s, want %s", ddbtest.Render(got), ddbtest.Render(want))
	}
	img, err := Decode(it)
	if err != nil {
		t.Fatal(err)
	}
	if img.Entity != "user-1" || img.Resource != "openai/gpt-4" || img.RF != imgNow || img.ShardCount != 4 ||
		!img.Cascade || img.PGen != 7 || img.ParentID != "org-1" || img.TTL != n.TTL ||
		!img.Bypass.Live(imgNow) || img.Bypass.Deadline != n.Bypass || !img.HasVU || img.VU != n.VU || img.HasDisabled ||
		!img.HasRecheck || img.Recheck != n.Recheck {
		t.Errorf("decoded %+v", img)
	}
	if got := names(img.Limits); len(got) != 2 || got[0] != "rpm" || got[1] != "tpm" {
		t.Fatalf("limits %v", got)
	}
	if l := img.Limit("rpm"); l.Tokens != 24_000 || l.Consumed != 1_000 || l.Params() != rpm || l.Soft.Present {
		t.Errorf("rpm %+v", *l)
	}
	if l := img.Limit("tpm"); l.Tokens != 2_000_000 || l.Consumed != 500_000 || l.Params() != tpm || l.Soft.Deadline != imgNow+30_000 {
		t.Errorf("tpm %+v", *l)
	}
	if !img.WCU.Present() || img.WCU.Tokens != bucket.WCUCapacity || img.WCU.Params() != bucket.WCUParams() || img.WCU.Consumed != 0 {
		t.Errorf("wcu %+v", img.WCU)
	}

	// The optional attributes are left off when zero.
	bare := New{ID: n.ID, RF: imgNow, ShardCount: 1}
	it = bare.Item()
	for _, a := range []string{schema.AttrParentID, schema.AttrTTL, schema.AttrBypass, schema.AttrVU, schema.AttrRecheck, schema.AttrDisabled, schema.AttrSchedTZ} {
		if _, ok := it[a]; ok {
			t.Errorf("%s written for a zero value", a)
		}
	}
	if img, err = Decode(it); err != nil || len(img.Limits) != 0 || !img.WCU.Present() {
		t.Errorf("bare: %+v, %v", img, err)
	}
}

// A new shard carrying a calendar quota writes its reset schedule, grant
// and top-up, and the zone its schedules read; a disabled stamp when
// asked. Decoded back, the quota's schedules are the ones written and its
// parameters carry gc and tu.
func TestNewQuotaItemDecodesBack(t *testing.T) {
	daily := schedule.Resets{schedule.MustParseCron("0 0 * * *")}
	half := schedule.Schedule{{Cron: schedule.MustParseCron("* 9-17 * * 1-5"), ScalePerMille: 500}}
	tpd := bucket.Params{Capacity: 1_000_000, RefillPeriod: 1000}
	rpm := bucket.Params{Capacity: 60_000, RefillAmount: 60_000, RefillPeriod: 60_000}
	n := New{
		ID: schema.BucketID{Namespace: "ns1", Entity: "user-1", Resource: "openai/gpt-4"},
		RF: imgNow, ShardCount: 1, VU: imgNow, Disabled: true, Zone: "America/New_York",
		Limits: []NewLimit{
			{Name: "tpd", Tokens: 1_250_000, Params: tpd, ResetSchedule: daily.Encode(), GrantShards: 1, TopUp: 250_000},
			{Name: "rpm", Tokens: 60_000, Params: rpm, Schedule: half.Encode()},
		},
	}
	it := n.Item()
	img, err := Decode(it)
	if err != nil {
		t.Fatal(err)
	}
	if !img.Disabled || !img.HasDisabled || img.SchedTZ != "America/New_York" || img.VU != imgNow {
		t.Errorf("decoded %+v", img)
	}
	q := img.Limit("tpd")
	if q == nil || q.Tokens != 1_250_000 || !q.Fields.Has(FieldGrantShards|FieldTopUp|FieldResetSchedule) ||
		q.Params() != (bucket.Params{Capacity: 1_000_000, RefillPeriod: 1000, GrantShards: 1, TopUp: 250_000}) {
		t.Fatalf("tpd %+v", q)
	}
	s, r, loc, err := img.Schedules("tpd")
	if err != nil || len(s) != 0 || r.Encode() != daily.Encode() || loc.String() != "America/New_York" {
		t.Errorf("tpd schedules %v %v %v %v", s, r, loc, err)
	}
	d := img.Limit("rpm")
	if d.Fields&(FieldGrantShards|FieldTopUp|FieldResetSchedule) != 0 || d.Schedule != half.Encode() {
		t.Errorf("rpm %+v: a dripping limit carries no grant, top-up or reset schedule", d)
	}
	if s, r, _, err := img.Schedules("rpm"); err != nil || s.Encode() != half.Encode() || len(r) != 0 {
		t.Errorf("rpm schedules %v %v %v", s, r, err)
	}
	// Not disabled: no attribute at all (the fast path's guard is
	// attribute_not_exists).
	n.Disabled = false
	if _, ok := n.Item()[schema.AttrDisabled]; ok {
		t.Error("disabled written for a pair that is not")
	}
}

// A clone decodes as a fresh shard of the new count: the clone's keys and
// shard_count, each limit at its share of capacity with no consumption,
// no top-up, vu pulled back to rf, everything else shard 0's.
func TestCloneDecodesAsAFreshShard(t *testing.T) {
	src := createdItem()
	src[battr("rpm", schema.LimitTopUp)] = schema.Num(5_000)
	img, err := Decode(src)
	if err != nil {
		t.Fatal(err)
	}
	dst := schema.BucketID{Namespace: "ns1", Entity: "user-1", Resource: "openai/gpt-4", Shard: 5}
	out := Clone(src, &img, dst, 8)
	if ddbtest.Render(out[schema.AttrPK]) != ddbtest.Render(schema.BucketItemKeys("ns1", "user-1", "openai/gpt-4", 5).Item()[schema.AttrPK]) {
		t.Errorf("PK %s", ddbtest.Render(out[schema.AttrPK]))
	}
	c, err := Decode(out)
	if err != nil {
		t.Fatal(err)
	}
	if c.ShardCount != 8 || c.RF != img.RF || c.VU != img.RF || c.PGen != img.PGen || c.ParentID != img.ParentID || c.TTL != img.TTL {
		t.Errorf("clone %+v", c)
	}
	for _, l := range c.Limits {
		if l.Tokens != bucket.FloorDiv(l.Capacity, 8) || l.Consumed != 0 || l.Fields.Has(FieldTopUp) {
			t.Errorf("limit %+v", l)
		}
	}
	if c.WCU.Tokens != bucket.WCUCapacity || c.WCU.Consumed != 0 {
		t.Errorf("wcu %+v", c.WCU)
	}
	if l := c.Limit("tpm"); !l.Soft.Present || l.Soft != img.Limit("tpm").Soft {
		t.Errorf("soft stamp not copied: %+v", l.Soft)
	}
	if _, ok := src[battr("rpm", schema.LimitTopUp)]; !ok || ddbtest.Render(src[schema.AttrShardCount]) != "N:4" {
		t.Error("source modified")
	}
}
