package bucketitem

import (
	"time"

	"github.com/zae-limiter/zae-limiter-go/core/schedule"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
)

// Schedules returns the parameter schedule and the reset schedule of the
// limit named name on img, and the time zone they read the clock in
// (docs/design.md §14): a limit's own b_{n}_sched and b_{n}_rsched take the
// place of the item's sched and rsched, and the stored None ("-") in them
// means the limit has none beside limits that do; sched_tz is the zone,
// UTC when absent. The reserved `wcu` limit never has one. Both schedules
// are empty, and the zone UTC, for an unscheduled limit.
//
// A stored schedule that does not decode is a *schedule.EncodingError,
// an unknown zone a *schedule.ZoneError: the client answers such a bucket
// as unavailable, and the aggregator leaves it alone.
func (img *Image) Schedules(name string) (schedule.Schedule, schedule.Resets, *time.Location, error) {
	if name == schema.WCULimit {
		return nil, nil, time.UTC, nil
	}
	sched, rsched := img.Sched, img.ResetSched
	if l := img.Lookup(name); l != nil {
		if l.Fields.Has(FieldSchedule) {
			sched = l.Schedule
		}
		if l.Fields.Has(FieldResetSchedule) {
			rsched = l.ResetSchedule
		}
	}
	if sched == "" && rsched == "" {
		return nil, nil, time.UTC, nil
	}
	loc, err := schedule.Zone(img.SchedTZ)
	if err != nil {
		return nil, nil, nil, err
	}
	s, err := schedule.Decode(sched)
	if err != nil {
		return nil, nil, nil, err
	}
	r, err := schedule.DecodeResets(rsched)
	if err != nil {
		return nil, nil, nil, err
	}
	return s, r, loc, nil
}

// ParamSchedules decodes the parameter schedules of every limit on img,
// present and partial, each stored text once: the schedule by limit name
// (limits with none left out; `wcu` never has one) and the zone they read
// the clock in. The rules and errors are those of Schedules; a nil map
// means no limit is scheduled. It serves a reader that needs them all, as
// the aggregator's refill does.
func (img *Image) ParamSchedules() (map[string]schedule.Schedule, *time.Location, error) {
	if !img.HasSched && !img.anyLimit(func(l *LimitImage) bool { return l.Fields.Has(FieldSchedule) }) {
		return nil, time.UTC, nil
	}
	loc, err := schedule.Zone(img.SchedTZ)
	if err != nil {
		return nil, nil, err
	}
	item, err := schedule.Decode(img.Sched)
	if err != nil {
		return nil, nil, err
	}
	var out map[string]schedule.Schedule
	add := func(l *LimitImage) error {
		s := item
		if l.Fields.Has(FieldSchedule) {
			if s, err = schedule.Decode(l.Schedule); err != nil {
				return err
			}
		}
		if len(s) > 0 {
			if out == nil {
				out = make(map[string]schedule.Schedule, len(img.Limits))
			}
			out[l.Name] = s
		}
		return nil
	}
	for i := range img.Limits {
		if err := add(&img.Limits[i]); err != nil {
			return nil, nil, err
		}
	}
	for i := range img.Partial {
		if err := add(&img.Partial[i]); err != nil {
			return nil, nil, err
		}
	}
	if img.WCU.Fields.Has(FieldSchedule) {
		return nil, nil, &schedule.EncodingError{Text: img.WCU.Schedule, Reason: "the reserved wcu limit never has a schedule"}
	}
	return out, loc, nil
}
