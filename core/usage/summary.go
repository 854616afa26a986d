package usage

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/zae-limiter/zae-limiter-go/core/bucket"
)

// Summary sums a selection of snapshots (Reader.Summary, Summarize).
type Summary struct {
	// Windows is the number of distinct window starts that have a
	// snapshot; Snapshots the number of snapshots (one per window and
	// entity: equal to Windows for an entity selection); Entities the
	// number of distinct entities.
	Windows, Snapshots, Entities int
	// First and Last are the earliest and the latest window start seen;
	// zero when there is no snapshot.
	First, Last time.Time
	// TotalEvents sums the snapshots' total_events.
	TotalEvents int64
	// Limits are the per-limit sums, sorted by name.
	Limits []LimitSummary
}

// LimitSummary is one limit's part of a Summary.
type LimitSummary struct {
	Name string
	// Total is the whole tokens of every snapshot, summed (saturating at
	// the int64 bounds, as every sum of the Summary).
	Total int64
	// Overdraws sums the overdraw counts.
	Overdraws int64
	// Windows is the number of distinct window starts whose snapshots
	// carry the limit.
	Windows int
	// PerWindow is Total over the summary's Windows: the average per window
	// that has a snapshot (windows with no snapshot at all are not
	// counted); 0 when there is none.
	PerWindow float64
}

// Summarize sums snaps (any order). Reader.Summary does the same over a
// selection without holding its snapshots in memory.
func Summarize(snaps []Snapshot) Summary {
	var t tally
	for i := range snaps {
		t.add(&snaps[i])
	}
	return t.summary()
}

// Summary reads every snapshot sel selects and sums them: one Query per
// page as Snapshots reads them (docs/costs.md).
func (r *Reader) Summary(ctx context.Context, sel Selection) (Summary, error) {
	var t tally
	for s, err := range r.Snapshots(ctx, sel) {
		if err != nil {
			return Summary{}, err
		}
		t.add(&s)
	}
	return t.summary(), nil
}

// tally accumulates a Summary.
type tally struct {
	snapshots   int
	totalEvents int64
	first, last time.Time
	windows     map[int64]bool // window starts, Unix seconds
	entities    map[string]bool
	limits      map[string]*limitTally
}

type limitTally struct {
	total, overdraws int64
	windows          map[int64]bool
}

func (t *tally) add(s *Snapshot) {
	if t.windows == nil {
		t.windows, t.entities, t.limits = map[int64]bool{}, map[string]bool{}, map[string]*limitTally{}
	}
	at := s.WindowStart.Unix()
	if t.snapshots == 0 || s.WindowStart.Before(t.first) {
		t.first = s.WindowStart
	}
	if t.snapshots == 0 || s.WindowStart.After(t.last) {
		t.last = s.WindowStart
	}
	t.snapshots++
	t.totalEvents = bucket.AddSat(t.totalEvents, s.TotalEvents)
	t.windows[at] = true
	t.entities[s.Entity] = true
	for _, l := range s.Limits {
		lt := t.limits[l.Name]
		if lt == nil {
			lt = &limitTally{windows: map[int64]bool{}}
			t.limits[l.Name] = lt
		}
		lt.total = bucket.AddSat(lt.total, l.Tokens)
		lt.overdraws = bucket.AddSat(lt.overdraws, l.Overdraws)
		lt.windows[at] = true
	}
}

func (t *tally) summary() Summary {
	s := Summary{Windows: len(t.windows), Snapshots: t.snapshots, Entities: len(t.entities),
		First: t.first, Last: t.last, TotalEvents: t.totalEvents}
	for name, lt := range t.limits {
		ls := LimitSummary{Name: name, Total: lt.total, Overdraws: lt.overdraws, Windows: len(lt.windows)}
		if s.Windows > 0 {
			ls.PerWindow = float64(lt.total) / float64(s.Windows)
		}
		s.Limits = append(s.Limits, ls)
	}
	slices.SortFunc(s.Limits, func(a, b LimitSummary) int { return strings.Compare(a.Name, b.Name) })
	return s
}
