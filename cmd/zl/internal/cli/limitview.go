package cli

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/zae-limiter/zae-limiter-go/cmd/zl/internal/limitspec"
	"github.com/zae-limiter/zae-limiter-go/cmd/zl/internal/output"
	"github.com/zae-limiter/zae-limiter-go/core/config"
	"github.com/zae-limiter/zae-limiter-go/core/limit"
	"github.com/zae-limiter/zae-limiter-go/core/schedule"
)

// limitView is one limit as zl shows it: whole tokens and seconds, the
// manifest's field names, schedules as crons.
type limitView struct {
	Name                string              `json:"name"`
	Capacity            int64               `json:"capacity"`
	RefillAmount        int64               `json:"refill_amount"`
	RefillPeriodSeconds int64               `json:"refill_period_seconds"`
	Soft                bool                `json:"soft"`
	Schedule            []scheduleEntryView `json:"schedule"`
	ResetSchedule       []string            `json:"reset_schedule"`
	ResetAfterSeconds   int64               `json:"reset_after_seconds"`
	TZ                  string              `json:"tz"`
}

// scheduleEntryView is one entry of a parameter schedule: a scale, or
// absolute parameters (0: the limit's own).
type scheduleEntryView struct {
	Cron                string  `json:"cron"`
	Scale               float64 `json:"scale"`
	Capacity            int64   `json:"capacity"`
	RefillAmount        int64   `json:"refill_amount"`
	RefillPeriodSeconds int64   `json:"refill_period_seconds"`
}

func viewLimits(ls []limit.Limit) []limitView {
	out := make([]limitView, 0, len(ls))
	for _, l := range ls {
		out = append(out, viewLimit(l))
	}
	return out
}

func viewLimit(l limit.Limit) limitView {
	v := limitView{
		Name: l.Name, Capacity: l.Capacity, RefillAmount: l.RefillAmount,
		RefillPeriodSeconds: int64(l.RefillPeriod / time.Second), Soft: l.Soft, TZ: l.Zone, ResetAfterSeconds: l.ResetAfterSeconds(),
		Schedule: []scheduleEntryView{}, ResetSchedule: []string{},
	}
	if l.Schedule != "" {
		if s, err := schedule.Decode(l.Schedule); err == nil {
			for _, e := range s {
				v.Schedule = append(v.Schedule, scheduleEntryView{
					Cron: e.Cron.String(), Scale: float64(e.ScalePerMille) / 1000,
					Capacity: e.Capacity, RefillAmount: e.RefillAmount, RefillPeriodSeconds: e.RefillPeriodSeconds,
				})
			}
		} else {
			v.Schedule = append(v.Schedule, scheduleEntryView{Cron: "(stored as " + l.Schedule + ")"})
		}
	}
	if l.ResetSchedule != "" {
		if r, err := schedule.DecodeResets(l.ResetSchedule); err == nil {
			for _, c := range r {
				v.ResetSchedule = append(v.ResetSchedule, c.String())
			}
		} else {
			v.ResetSchedule = append(v.ResetSchedule, "(stored as "+l.ResetSchedule+")")
		}
	}
	return v
}

func limitColumns() []string {
	return []string{"LIMIT", "CAPACITY", "REFILL", "SOFT", "SCHEDULE"}
}

func (l limitView) row() []string {
	soft := "no"
	if l.Soft {
		soft = "yes"
	}
	return []string{l.Name, strconv.FormatInt(l.Capacity, 10), l.refill(), soft, l.schedules()}
}

// refill reads "100 per minute", "resets 0 0 1 * *" for a calendar
// quota, or "resets 5h after first use" for a session quota.
func (l limitView) refill() string {
	if l.ResetAfterSeconds > 0 {
		return "resets " + window(l.ResetAfterSeconds) + " after first use"
	}
	if len(l.ResetSchedule) > 0 {
		s := "resets " + strings.Join(l.ResetSchedule, " | ")
		if l.TZ != "" && len(l.Schedule) == 0 { // else the schedule column names the zone
			s += " (" + l.TZ + ")"
		}
		return s
	}
	return strconv.FormatInt(l.RefillAmount, 10) + " " + per(l.RefillPeriodSeconds)
}

// schedules reads the parameter schedule, "-" for none.
func (l limitView) schedules() string {
	if len(l.Schedule) == 0 {
		return "-"
	}
	parts := make([]string, 0, len(l.Schedule))
	for _, e := range l.Schedule {
		parts = append(parts, e.String())
	}
	s := strings.Join(parts, "; ")
	if l.TZ != "" {
		s += " (" + l.TZ + ")"
	}
	return s
}

func (e scheduleEntryView) String() string {
	if e.Scale != 0 {
		return e.Cron + " ×" + strconv.FormatFloat(e.Scale, 'f', -1, 64)
	}
	var set []string
	if e.Capacity != 0 {
		set = append(set, "capacity "+strconv.FormatInt(e.Capacity, 10))
	}
	if e.RefillAmount != 0 || e.RefillPeriodSeconds != 0 {
		set = append(set, "refill "+strconv.FormatInt(e.RefillAmount, 10)+" "+per(e.RefillPeriodSeconds))
	}
	return e.Cron + " " + strings.Join(set, ", ")
}

// summary is the limit on one line, for the cells of a plan or a diff:
// "100 per minute", "10000 per minute, burst 20000", "1000000, reset at
// 0 0 1 * *", "10000 per 5h window from first use", then soft, the
// schedule and the zone.
func (l limitView) summary() string {
	var s string
	switch {
	case l.ResetAfterSeconds > 0:
		s = strconv.FormatInt(l.Capacity, 10) + " per " + window(l.ResetAfterSeconds) + " window from first use"
	case len(l.ResetSchedule) > 0:
		s = strconv.FormatInt(l.Capacity, 10) + ", reset at " + strings.Join(l.ResetSchedule, " | ")
	case l.Capacity == l.RefillAmount:
		s = strconv.FormatInt(l.RefillAmount, 10) + " " + per(l.RefillPeriodSeconds)
	default:
		s = strconv.FormatInt(l.RefillAmount, 10) + " " + per(l.RefillPeriodSeconds) + ", burst " + strconv.FormatInt(l.Capacity, 10)
	}
	if l.Soft {
		s += ", soft"
	}
	if len(l.Schedule) > 0 {
		s += ", schedule " + l.schedules()
	} else if l.TZ != "" {
		s += " (" + l.TZ + ")"
	}
	return s
}

// window writes a session window's length in its largest whole unit:
// 5h, 90m, 2d, 45s.
func window(seconds int64) string {
	for _, u := range []struct {
		s    int64
		unit string
	}{{86400, "d"}, {3600, "h"}, {60, "m"}} {
		if seconds%u.s == 0 {
			return strconv.FormatInt(seconds/u.s, 10) + u.unit
		}
	}
	return strconv.FormatInt(seconds, 10) + "s"
}

func per(seconds int64) string {
	switch seconds {
	case 0:
		return "per period"
	case 1:
		return "per second"
	case 60:
		return "per minute"
	case 3600:
		return "per hour"
	case 86400:
		return "per day"
	}
	return fmt.Sprintf("per %ds", seconds)
}

// configView is a target's config: its limits and settings.
type configView struct {
	Limits        []limitView `json:"limits"`
	Disabled      string      `json:"disabled"`
	Cascade       string      `json:"cascade"`
	OnUnavailable string      `json:"on_unavailable"`
}

func viewConfig(c config.Config) configView {
	return configView{
		Limits: viewLimits(c.Limits), Disabled: c.Disabled.String(), Cascade: c.Cascade.String(),
		OnUnavailable: orText(string(c.OnUnavailable), "unset"),
	}
}

// limitsCell lists limits one a line, "-" for none.
func limitsCell(ls []limitView) string {
	if len(ls) == 0 {
		return "-"
	}
	lines := make([]string, len(ls))
	for i, l := range ls {
		lines[i] = l.Name + ": " + l.summary()
	}
	return strings.Join(lines, "\n")
}

// limitInput is the limits a command takes: arguments in the limit
// syntax, --limit for more of the same, --zone for quotas' resets.
type limitInput struct {
	flags []string
	zone  string
}

// register adds --limit and --zone to cmd.
func (l *limitInput) register(cmd *cobra.Command) {
	cmd.Flags().StringArrayVar(&l.flags, "limit", nil, "a limit, "+limitspec.Syntax+" (repeatable; the same as an argument)")
	cmd.Flags().StringVar(&l.zone, "zone", "", "the IANA time zone quotas reset in (default UTC), e.g. America/New_York")
}

// read reads the limits of args and --limit; a malformed one, or none, is
// a usage error that shows the syntax.
func (l *limitInput) read(args []string) ([]limit.Limit, error) {
	specs := append(append([]string{}, args...), l.flags...)
	if len(specs) == 0 {
		return nil, usageErrorf("no limits given: pass one or more LIMIT (or --limit), %s, e.g. %s", limitspec.Syntax, limitspec.Examples)
	}
	ls, err := limitspec.Parse(specs, l.zone)
	var se *limitspec.SyntaxError
	if errors.As(err, &se) {
		return nil, &UsageError{Err: err}
	}
	return ls, err
}

// limitsTable lists limits under title, with caption below; "No limits."
// when there are none.
func limitsTable(title string, ls []limitView, caption string) output.Table {
	t := output.Table{Title: title, Columns: limitColumns(), Caption: caption}
	for _, l := range ls {
		t.Rows = append(t.Rows, l.row())
	}
	if len(ls) == 0 {
		t.Caption = strings.TrimSpace("No limits. " + caption)
	}
	return t
}
