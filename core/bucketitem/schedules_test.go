package bucketitem

import (
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/schedule"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
)

// scheduledItem is a bucket as a Python client stamps a scheduled pair:
// the item's default schedule from its first scheduled limit, a limit
// with none marked "-", a calendar quota with its own reset schedule.
func scheduledItem() item {
	it := createdItem()
	it[schema.AttrSched] = schema.Str("h9-17w1-5s500;h0-6c2000")
	it[schema.AttrSchedTZ] = schema.Str("America/New_York")
	it[battr("tpm", schema.LimitSchedule)] = schema.Str(schedule.None)
	for f, v := range map[schema.LimitField]int64{schema.LimitTokens: 5_000, schema.LimitCapacity: 100_000, schema.LimitRefillAmount: 0, schema.LimitRefillPeriod: 86_400_000, schema.LimitConsumed: 0} {
		it[battr("rpd", f)] = schema.Num(v)
	}
	it[battr("rpd", schema.LimitResetSchedule)] = schema.Str("1m0h0")
	it[battr("rpd", schema.LimitSchedule)] = schema.Str(schedule.None)
	return it
}

func TestSchedules(t *testing.T) {
	img, err := Decode(scheduledItem())
	if err != nil {
		t.Fatal(err)
	}
	tue10 := time.Date(2026, 9, 15, 14, 0, 0, 0, time.UTC) // 10:00 EDT, a Tuesday
	// rpm inherits the item's schedule: halved in business hours.
	s, r, loc, err := img.Schedules("rpm")
	if err != nil || len(s) != 2 || r != nil || loc.String() != "America/New_York" {
		t.Fatalf("rpm: %v %v %v %v", s, r, loc, err)
	}
	if p := s.Effective(img.Limit("rpm").Params(), tue10, loc); p.Capacity != 50_000 {
		t.Errorf("rpm effective at 10:00 EDT: %+v", p)
	}
	// tpm is marked as having none.
	if s, r, _, err := img.Schedules("tpm"); err != nil || s != nil || r != nil {
		t.Errorf("tpm: %v %v %v", s, r, err)
	}
	// rpd: a calendar quota resetting at midnight New York time, read from
	// a versioned reset schedule.
	s, r, loc, err = img.Schedules("rpd")
	if err != nil || s != nil || len(r) != 1 {
		t.Fatalf("rpd: %v %v %v", s, r, err)
	}
	if e, ok := r.PrevEdge(tue10, loc); !ok || !e.Equal(time.Date(2026, 9, 15, 4, 0, 0, 0, time.UTC)) {
		t.Errorf("rpd PrevEdge = %v, %v", e, ok)
	}
	// A limit the item does not carry takes the item's defaults; wcu none.
	if s, _, _, err := img.Schedules("absent"); err != nil || len(s) != 2 {
		t.Errorf("absent: %v %v", s, err)
	}
	if s, r, loc, err := img.Schedules(schema.WCULimit); err != nil || s != nil || r != nil || loc != time.UTC {
		t.Errorf("wcu: %v %v %v %v", s, r, loc, err)
	}
	// An unscheduled item: nothing, UTC.
	plain, err := Decode(createdItem())
	if err != nil {
		t.Fatal(err)
	}
	if s, r, loc, err := plain.Schedules("rpm"); err != nil || s != nil || r != nil || loc != time.UTC {
		t.Errorf("unscheduled: %v %v %v %v", s, r, loc, err)
	}
}

func TestSchedulesUndecodable(t *testing.T) {
	for _, tc := range []struct {
		attr string
		v    types.AttributeValue
		want any
	}{
		{schema.AttrSched, schema.Str("h99s500"), new(*schedule.EncodingError)},
		{schema.AttrSched, schema.Str("2h9s500"), new(*schedule.EncodingError)},
		{battr("rpm", schema.LimitResetSchedule), schema.Str("m0h0s5"), new(*schedule.EncodingError)},
		{schema.AttrSchedTZ, schema.Str("Mars/Olympus_Mons"), new(*schedule.ZoneError)},
	} {
		it := scheduledItem()
		it[tc.attr] = tc.v
		img, err := Decode(it)
		if err != nil {
			t.Fatal(err)
		}
		_, _, _, err = img.Schedules("rpm")
		if err == nil || !errors.As(err, tc.want) {
			t.Errorf("%s = %v: err %v", tc.attr, tc.v, err)
		}
	}
}

// ParamSchedules gives every limit's parameter schedule at once, by the
// rules of Schedules.
func TestParamSchedules(t *testing.T) {
	img, err := Decode(scheduledItem())
	if err != nil {
		t.Fatal(err)
	}
	by, loc, err := img.ParamSchedules()
	if err != nil || loc.String() != "America/New_York" {
		t.Fatalf("ParamSchedules: %v %v", loc, err)
	}
	if len(by) != 1 || len(by["rpm"]) != 2 {
		t.Errorf("ParamSchedules = %v, want rpm's two entries only (tpm and rpd are marked as having none)", by)
	}
	for name := range by {
		s, _, _, err := img.Schedules(name)
		if err != nil || s.Encode() != by[name].Encode() {
			t.Errorf("%s: ParamSchedules %q, Schedules %q (%v)", name, by[name].Encode(), s.Encode(), err)
		}
	}
	plain, _ := Decode(createdItem())
	if by, loc, err := plain.ParamSchedules(); by != nil || loc != time.UTC || err != nil {
		t.Errorf("unscheduled: %v %v %v", by, loc, err)
	}
	for attr, v := range map[string]string{battr("tpm", schema.LimitSchedule): "h99s5", battr(schema.WCULimit, schema.LimitSchedule): "s500", schema.AttrSched: "x"} {
		it := scheduledItem()
		it[attr] = schema.Str(v)
		img, err := Decode(it)
		if err != nil {
			t.Fatal(err)
		}
		var ee *schedule.EncodingError
		if _, _, err := img.ParamSchedules(); !errors.As(err, &ee) {
			t.Errorf("%s = %q: err %v, want an *EncodingError", attr, v, err)
		}
	}
}
