package shard

import (
	"github.com/zae-limiter/zae-limiter-go/core/bucketitem"
	"github.com/zae-limiter/zae-limiter-go/core/limit"
	"github.com/zae-limiter/zae-limiter-go/core/schedule"
)

// Drift says how a shard differs from the limits its config resolves;
// the zero value is a shard in line.
type Drift struct {
	// Changed are the limits the shard carries whose parameters, schedules,
	// zone, window length or soft-ness differ from their configuration.
	Changed []string
	// Extra are the limits the shard carries that the config no longer
	// resolves.
	Extra []string
	// Missing are the configured limits the shard does not carry: the
	// first acquire that names one seeds it.
	Missing []string
	// TTL reports an expiry that does not follow where the limits come
	// from (an entity's own limits keep their shard; others expire).
	TTL bool
	// Unchecked reports a shard whose limits no config read has confirmed
	// since it was created (recheck).
	Unchecked bool
}

// InLine reports a shard whose limits need no write: nothing changed or
// extra, and its expiry follows the rule. Missing limits do not count
// (their seed is the first acquire's), nor does a recheck stamp (a
// client's next pass clears it).
func (d Drift) InLine() bool {
	return len(d.Changed) == 0 && len(d.Extra) == 0 && !d.TTL
}

// Compare tells how the shard img differs from limits, the limits a config
// read resolved for its pair (entityLevel: from the entity's own config),
// for a writer whose bucket TTL multiplier is mult (≤ 0: no expiry).
func Compare(img *bucketitem.Image, limits []limit.Limit, entityLevel bool, mult int64) Drift {
	var d Drift
	for i := range img.Limits {
		li := &img.Limits[i]
		cfg, ok := limit.Find(limits, li.Name)
		if !ok {
			d.Extra = append(d.Extra, li.Name)
			continue
		}
		if !Matches(img, li, cfg) {
			d.Changed = append(d.Changed, li.Name)
		}
	}
	for _, l := range limits {
		if img.Limit(l.Name) == nil {
			d.Missing = append(d.Missing, l.Name)
		}
	}
	wantTTL := mult > 0 && !entityLevel
	d.TTL = wantTTL != img.HasTTL
	d.Unchecked = img.HasRecheck
	return d
}

// Matches reports whether limit li as the shard img carries it is cfg:
// the same parameters (cp, ra, rp), the same parameter and reset schedule
// (the limit's own, or the item's default it inherits), the same zone
// where it is scheduled, the same window length for a session quota (and
// none for another limit), and a soft stamp exactly when cfg is soft (a
// stamp's deadline is renewed by every slow pass, not compared here).
func Matches(img *bucketitem.Image, li *bucketitem.LimitImage, cfg limit.Limit) bool {
	p := cfg.Params()
	if li.Capacity != p.Capacity || li.RefillAmount != p.RefillAmount || li.RefillPeriod != p.RefillPeriod {
		return false
	}
	if li.Soft.Present != cfg.Soft {
		return false
	}
	if cfg.IsSession() != li.HasWindow() || (cfg.IsSession() && li.ResetAfter != cfg.ResetAfterSeconds()) {
		return false
	}
	sched, rsched := storedSchedules(img, li)
	if sched != cfg.Schedule || rsched != cfg.ResetSchedule {
		return false
	}
	if sched != "" || rsched != "" {
		return zoneName(img.SchedTZ) == zoneName(cfg.Zone)
	}
	return true
}

// storedSchedules are the schedule texts limit li of img reads: its own
// where it stores one, else the item's default; the stored None reads "".
func storedSchedules(img *bucketitem.Image, li *bucketitem.LimitImage) (sched, rsched string) {
	sched, rsched = img.Sched, img.ResetSched
	if li.Fields.Has(bucketitem.FieldSchedule) {
		sched = li.Schedule
	}
	if li.Fields.Has(bucketitem.FieldResetSchedule) {
		rsched = li.ResetSchedule
	}
	if sched == schedule.None {
		sched = ""
	}
	if rsched == schedule.None {
		rsched = ""
	}
	return sched, rsched
}

// zoneName reads a stored or configured zone, "" being UTC.
func zoneName(z string) string {
	if z == "" {
		return "UTC"
	}
	return z
}
