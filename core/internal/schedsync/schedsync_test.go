package schedsync

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/bucketitem"
	"github.com/zae-limiter/zae-limiter-go/core/internal/expr"
	"github.com/zae-limiter/zae-limiter-go/core/limit"
	"github.com/zae-limiter/zae-limiter-go/core/schedule"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
)

// What Write asks for, against a Python-stamped item: an item-level
// schedule and reset schedule in Tokyo, a per-limit override.
func TestWrite(t *testing.T) {
	item := map[string]types.AttributeValue{
		"sched": schema.Str("h9-17s500"), "rsched": schema.Str("m0h0"), "sched_tz": schema.Str("Asia/Tokyo"),
		"b_rpm_tk": schema.Num(1), "b_rpm_cp": schema.Num(1), "b_rpm_sched": schema.Str("-"),
		"b_tpd_tk": schema.Num(1), "b_tpd_cp": schema.Num(1), "b_tpd_rsched": schema.Str("m0h0D1"),
	}
	img, err := bucketitem.Decode(item)
	if err != nil {
		t.Fatal(err)
	}
	daily := schedule.Resets{schedule.MustParseCron("0 0 * * *")}
	half := schedule.Schedule{{Cron: schedule.MustParseCron("* 9-17 * * *"), ScalePerMille: 500}}
	for _, c := range []struct {
		name   string
		limits []limit.Limit
		want   map[string]string // attribute → value set ("" = removed)
	}{
		{"as configured: per-limit attributes, the zone kept, item-level ones removed",
			[]limit.Limit{limit.PerMinute("rpm", 1).WithSchedule(half, "Asia/Tokyo"), limit.Quota("tpd", 1, daily, "Asia/Tokyo")},
			map[string]string{"b_rpm_sched": "h9-17s500", "b_tpd_rsched": "m0h0", "sched": "", "rsched": ""}},
		{"nothing scheduled any more: every schedule attribute and the zone go",
			[]limit.Limit{limit.PerMinute("rpm", 1), limit.PerMinute("tpd", 1)},
			map[string]string{"b_rpm_sched": "", "b_tpd_rsched": "", "sched_tz": "", "sched": "", "rsched": ""}},
		{"another zone",
			[]limit.Limit{limit.Quota("tpd", 1, daily, "Europe/Paris")},
			map[string]string{"b_tpd_rsched": "m0h0", "sched_tz": "Europe/Paris", "sched": "", "rsched": ""}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var u expr.Builder
			Write(&u, &img, c.limits)
			in := u.UpdateInput("t", schema.Key{})
			got := map[string]string{}
			for alias, attr := range in.ExpressionAttributeNames {
				got[attr] = "?"
				_ = alias
			}
			for attr, v := range c.want {
				if _, ok := got[attr]; !ok {
					t.Errorf("%s not written (want %q)", attr, v)
				}
				delete(got, attr)
			}
			if len(got) != 0 {
				t.Errorf("also writes %v: %s", got, u.Update())
			}
			for _, v := range in.ExpressionAttributeValues {
				s, _ := v.(*types.AttributeValueMemberS)
				if s == nil {
					t.Errorf("a value that is not a string: %v", v)
				}
			}
		})
	}
	var u expr.Builder
	Write(&u, nil, []limit.Limit{limit.Quota("tpd", 1, daily, "Europe/Paris")})
	if got, want := u.Update(), "SET #a0 = :v0, #a1 = :v1"; got != want {
		t.Errorf("a new item: %q, want %q", got, want)
	}
}
