// Package schedsync brings a bucket item's stored schedules in line with
// the limits a config read resolved (docs/design.md §14, §15): the one
// rule for the client's rf-locked write and the operator's entity sync.
package schedsync

import (
	"github.com/zae-limiter/zae-limiter-go/core/bucketitem"
	"github.com/zae-limiter/zae-limiter-go/core/internal/expr"
	"github.com/zae-limiter/zae-limiter-go/core/limit"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
)

// Write adds to u the SET and REMOVE clauses that bring img's schedule
// attributes in line with limits: each limit's b_{n}_sched and
// b_{n}_rsched set to its own (when it differs) or removed (when it has
// none), sched_tz set to the zone of the scheduled limits or removed when
// none is scheduled or the zone is UTC, and an item-level sched or rsched
// removed, since every limit written says its own. Attributes of limits
// not in limits are left alone. img may be nil (a new item: every
// schedule is set).
func Write(u *expr.Builder, img *bucketitem.Image, limits []limit.Limit) {
	zone, scheduled := "", false
	for _, l := range limits {
		var li *bucketitem.LimitImage
		if img != nil {
			li = img.Lookup(l.Name)
		}
		for _, f := range [...]struct {
			field  schema.LimitField
			bit    bucketitem.LimitFields
			want   string
			stored func(*bucketitem.LimitImage) string
		}{
			{schema.LimitSchedule, bucketitem.FieldSchedule, l.Schedule, func(s *bucketitem.LimitImage) string { return s.Schedule }},
			{schema.LimitResetSchedule, bucketitem.FieldResetSchedule, l.ResetSchedule, func(s *bucketitem.LimitImage) string { return s.ResetSchedule }},
		} {
			attr := schema.BucketAttr(l.Name, f.field)
			has := li != nil && li.Fields.Has(f.bit)
			switch {
			case f.want != "":
				zone, scheduled = l.Zone, true
				if !has || f.stored(li) != f.want {
					u.Set(attr, schema.Str(f.want))
				}
			case has:
				u.Remove(attr)
			}
		}
	}
	var storedZone string
	var hasZone, hasSched, hasRSched bool
	if img != nil {
		storedZone, hasZone, hasSched, hasRSched = img.SchedTZ, img.HasSchedTZ, img.HasSched, img.HasResetSched
	}
	switch {
	case scheduled && zone != "" && (!hasZone || storedZone != zone):
		u.Set(schema.AttrSchedTZ, schema.Str(zone))
	case (!scheduled || zone == "") && hasZone:
		u.Remove(schema.AttrSchedTZ)
	}
	if hasSched {
		u.Remove(schema.AttrSched)
	}
	if hasRSched {
		u.Remove(schema.AttrRSched)
	}
}
