package cli

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/zae-limiter/zae-limiter-go/cmd/zl/internal/chart"
	"github.com/zae-limiter/zae-limiter-go/cmd/zl/internal/lookback"
	"github.com/zae-limiter/zae-limiter-go/cmd/zl/internal/output"
	"github.com/zae-limiter/zae-limiter-go/core/bucket"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
	"github.com/zae-limiter/zae-limiter-go/core/usage"
)

// usageCommand is `zl usage`: the snapshots the aggregator wrote, their
// sums, a chart of them, a bucket's live state and a resource's top
// consumers, read with core/usage (docs/design.md §6, §16). It only reads.
func (a *App) usageCommand() *cobra.Command {
	var listSel, sumSel selectionFlags
	var plot bool
	var width int
	list := &cobra.Command{
		Use:   "list --resource R [--entity E] [--window hourly|daily|monthly] [--since D | --from T [--to T]] [--limit L]...",
		Short: "List usage snapshots: tokens per limit and window",
		Long: `List the usage snapshots the aggregator wrote: for each window, the whole
tokens each limit consumed in it (net of refunds), the soft limits' overdraws
and the count of events. --entity E --resource R lists one entity's windows;
--resource R alone lists every entity's, window by window.

Windows are selected by their start: --from T --to T (RFC 3339; --to defaults
to now) selects those starting in [T, T'); --since D (24h, 90m, 7d, 1d12h;
the default is 24h) those from the one that held the instant D ago up to now.
--limit keeps only the named limits. Rows are written as they are read, page
by page; the table, and CSV without --limit, wait for the last page to know
their columns.

--plot draws the selected limits over the windows instead, one line per limit
(summed over the entities of a resource), windows without a snapshot as 0; it
is as wide as the terminal (80 columns elsewhere, or --width).`,
		Example: `  zl usage list --entity alice --resource gpt-4
  zl usage list --resource gpt-4 --window daily --since 7d -o csv
  zl usage list --entity alice --resource gpt-4 --from 2026-02-01T00:00:00Z --to 2026-02-02T00:00:00Z --limit tpm --plot`,
		Args:        noArgs,
		Annotations: offersCSV(),
		RunE: a.Bind(func(ctx context.Context, cmd *cobra.Command, _ []string) error {
			return a.usageList(ctx, cmd, &listSel, plot, width)
		}),
	}
	listSel.register(list)
	list.Flags().BoolVar(&plot, "plot", false, "draw the limits over the windows instead of listing them")
	list.Flags().IntVar(&width, "width", 0, "the chart's width in columns (default: the terminal's, else 80)")

	summary := &cobra.Command{
		Use:   "summary --resource R [--entity E] [--window hourly|daily|monthly] [--since D | --from T [--to T]] [--limit L]...",
		Short: "Sum usage snapshots: per limit the total and the average per window",
		Long: `Sum the usage snapshots a selection selects (the flags of zl usage list): per
limit the total tokens, the average per window, the windows that carry it and
its overdraws; the first and last window, and the counts of windows, snapshots
and entities. The average is over the windows that have a snapshot: a window
without traffic has none and is not counted.`,
		Example: `  zl usage summary --entity alice --resource gpt-4 --since 7d
  zl usage summary --resource gpt-4 --window monthly --from 2026-01-01T00:00:00Z -o json`,
		Args:        noArgs,
		Annotations: offersCSV(),
		RunE: a.Bind(func(ctx context.Context, cmd *cobra.Command, _ []string) error {
			return a.usageSummary(ctx, cmd, &sumSel)
		}),
	}
	sumSel.register(summary)

	var topResource, topLimit string
	var topN int
	top := &cobra.Command{
		Use:   "top --resource R --limit L [-n N]",
		Short: "Rank a resource's entities by what their buckets consumed of a limit",
		Long: `Rank the entities of a resource by their buckets' consumption counter of a
limit (summed over the shards), the largest first, ties by entity id. A counter
counts since its bucket was created: a bucket that expired and came back starts
again from 0. It reads every bucket of the resource, whatever -n is; for
consumption over a period, zl usage summary sums the snapshots instead.`,
		Example: `  zl usage top --resource gpt-4 --limit tpm
  zl usage top --resource gpt-4 --limit rpm -n 3 -o yaml`,
		Args:        noArgs,
		Annotations: offersCSV(),
		RunE: a.Bind(func(ctx context.Context, cmd *cobra.Command, _ []string) error {
			return a.usageTop(ctx, cmd, topResource, topLimit, topN)
		}),
	}
	top.Flags().StringVar(&topResource, "resource", "", "the resource whose entities to rank")
	top.Flags().StringVar(&topLimit, "limit", "", "the limit whose consumption ranks them")
	top.Flags().IntVarP(&topN, "count", "n", 10, "how many entities to show")

	var showEntity, showResource string
	show := &cobra.Command{
		Use:   "show --entity E --resource R",
		Short: "Show an entity's bucket on a resource as it stands now",
		Long: `Show an entity's bucket on a resource: for each limit, the tokens remaining
(summed over the shards and projected to now by the bucket's own refill, or
a calendar quota's reset), the capacity and refill in force, the balance as
stored at the last write, and the consumption counter. A limit that cannot be
projected shows its stored balance, marked as not projected.`,
		Example: `  zl usage show --entity alice --resource gpt-4
  zl usage show --entity alice --resource gpt-4 -o json`,
		Args:        noArgs,
		Annotations: offersCSV(),
		RunE: a.Bind(func(ctx context.Context, cmd *cobra.Command, _ []string) error {
			return a.usageShow(ctx, cmd, showEntity, showResource)
		}),
	}
	show.Flags().StringVar(&showEntity, "entity", "", "the entity")
	show.Flags().StringVar(&showResource, "resource", "", "the resource")

	return group("usage", "Read usage: snapshots, their sums and chart, live buckets, top consumers",
		`Read what the namespace's entities consumed: the usage snapshots the stack's
aggregator writes per window (hourly, daily, monthly; docs/design.md §6), their
sums and a chart of them, the live state of a bucket, and the entities of a
resource ranked by consumption. Reads only.`,
		list, summary, top, show)
}

// selectionFlags are the flags that select snapshots (list, summary).
type selectionFlags struct {
	entity, resource, window string
	since, from, to          string
	limits                   []string
}

func (f *selectionFlags) register(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.StringVar(&f.entity, "entity", "", "one entity's snapshots (default: every entity of the resource)")
	fs.StringVar(&f.resource, "resource", "", "the resource (required)")
	fs.StringVar(&f.window, "window", string(usage.Hourly), "the window kind: hourly, daily or monthly")
	fs.StringVar(&f.since, "since", "", "windows from the one that held the instant this long ago: 24h, 90m, 7d, 1d12h (default 24h)")
	fs.StringVar(&f.from, "from", "", "the earliest window start, RFC 3339 (e.g. 2026-02-01T00:00:00Z)")
	fs.StringVar(&f.to, "to", "", "windows start before this instant, RFC 3339 (default: now)")
	fs.StringArrayVar(&f.limits, "limit", nil, "only this limit (repeat for more; default every limit)")
	_ = cmd.RegisterFlagCompletionFunc("window", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		var ws []string
		for _, w := range usage.Windows() {
			ws = append(ws, string(w))
		}
		return ws, cobra.ShellCompDirectiveNoFileComp
	})
}

// defaultSince is the range of a selection that gives none.
const defaultSince = 24 * time.Hour

// selection reads the flags as a selection at instant now. Every mistake
// is a usage error that names the accepted form.
func (f *selectionFlags) selection(cmd *cobra.Command, now time.Time) (usage.Selection, error) {
	path := cmd.CommandPath()
	if f.resource == "" {
		return usage.Selection{}, usageErrorf("%s needs --resource: --entity E --resource R for one entity, or --resource R for every entity of R", path)
	}
	w, err := usage.ParseWindow(f.window)
	if err != nil {
		return usage.Selection{}, usageErrorf("--window %q is not a window kind: pass hourly, daily or monthly", f.window)
	}
	var from, to time.Time
	switch {
	case f.since != "" && (f.from != "" || f.to != ""):
		return usage.Selection{}, usageErrorf("--since counts back from now: pass --since D alone, or --from T [--to T]")
	case f.to != "" && f.from == "":
		return usage.Selection{}, usageErrorf("--to needs --from: pass --from T --to T, or --since D")
	case f.from != "":
		if from, err = parseInstant("--from", f.from); err != nil {
			return usage.Selection{}, err
		}
		to = now
		if f.to != "" {
			if to, err = parseInstant("--to", f.to); err != nil {
				return usage.Selection{}, err
			}
		}
		if !from.Before(to) {
			return usage.Selection{}, usageErrorf("--from %s is not before --to %s: windows are selected by their start, in [--from, --to)",
				from.Format(time.RFC3339), to.Format(time.RFC3339))
		}
	default:
		d := defaultSince
		if f.since != "" {
			if d, err = lookback.Parse(f.since); err != nil {
				return usage.Selection{}, usageErrorf("--since %q: %v", f.since, err)
			}
		}
		from, to = w.Start(now.Add(-d)), now
	}
	sel := usage.ForResource(f.resource, w, from, to)
	if f.entity != "" {
		sel = usage.ForEntity(f.entity, f.resource, w, from, to)
	}
	sel = sel.WithLimits(f.limits...)
	if err := sel.Validate(); err != nil {
		return usage.Selection{}, &UsageError{Err: err}
	}
	return sel, nil
}

// parseInstant reads an RFC 3339 instant given to flag.
func parseInstant(flag, s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339, strings.TrimSpace(s))
	if err != nil {
		return time.Time{}, usageErrorf("%s %q is not an RFC 3339 time: pass e.g. 2026-02-01T00:00:00Z or 2026-02-01T09:30:00+01:00", flag, s)
	}
	return t.UTC(), nil
}

// offersCSV marks a command whose result reads as one table: it takes
// --output csv.
func offersCSV() map[string]string { return map[string]string{annotationCSV: "yes"} }

// usageReader returns the reader of the --namespace's usage.
func (a *App) usageReader(ctx context.Context) (*usage.Reader, error) {
	ctl, err := a.Controls(ctx)
	if err != nil {
		return nil, err
	}
	ns, err := a.NamespaceID(ctx, ctl, a.flags.namespace)
	if err != nil {
		return nil, err
	}
	table, db, err := a.tableDB(ctx)
	if err != nil {
		return nil, err
	}
	return usage.New(db, table, ns, usage.Options{Clock: a.env.Clock, Logger: a.logger()})
}

// selectionText says what sel selects: "hourly usage of alice on gpt-4,
// windows starting in [T, T')".
func selectionText(sel usage.Selection) string {
	who := "every entity"
	if !sel.ByResource() {
		who = sel.Entity()
	}
	return fmt.Sprintf("%s usage of %s on %s, windows starting in [%s, %s)", sel.Window(), who, sel.Resource(),
		sel.From().Format(time.RFC3339), sel.To().Format(time.RFC3339))
}

// snapshotView is one usage snapshot as zl shows it.
type snapshotView struct {
	WindowStart string           `json:"window_start"`
	Entity      string           `json:"entity"`
	Resource    string           `json:"resource"`
	Window      string           `json:"window"`
	Limits      []limitUsageView `json:"limits"`
	TotalEvents int64            `json:"total_events"`
}

// limitUsageView is one limit's count in a snapshot: whole tokens, and the
// overdraws of a soft limit (absent when the snapshot has no counter).
type limitUsageView struct {
	Name      string `json:"name"`
	Tokens    int64  `json:"tokens"`
	Overdraws *int64 `json:"overdraws,omitempty"`
}

func viewSnapshot(s usage.Snapshot) snapshotView {
	v := snapshotView{WindowStart: s.WindowStart.Format(time.RFC3339), Entity: s.Entity, Resource: s.Resource,
		Window: string(s.Window), Limits: []limitUsageView{}, TotalEvents: s.TotalEvents}
	for _, l := range s.Limits {
		lv := limitUsageView{Name: l.Name, Tokens: l.Tokens}
		if l.HasOverdraws {
			od := l.Overdraws
			lv.Overdraws = &od
		}
		v.Limits = append(v.Limits, lv)
	}
	return v
}

// listColumns are the columns of the table and CSV forms of a list: the
// window start, the entity of a resource selection, each limit's tokens
// and overdraws (in the table only when some snapshot has the counter),
// the events. keys are the CSV header: the limit names as they are, and
// `{limit}#od` for the overdraws, as the snapshot stores them.
type listColumns struct {
	byResource bool
	limits     []string
	overdraws  []bool
}

func (c listColumns) table() output.Table {
	t := output.Table{Columns: []string{"WINDOW START"}, Keys: []string{"window_start"}}
	if c.byResource {
		t.Columns, t.Keys = append(t.Columns, "ENTITY"), append(t.Keys, "entity")
	}
	for i, l := range c.limits {
		t.Columns, t.Keys = append(t.Columns, l), append(t.Keys, l)
		if c.overdraws[i] {
			t.Columns, t.Keys = append(t.Columns, l+" overdraws"), append(t.Keys, l+"#od")
		}
	}
	t.Columns, t.Keys = append(t.Columns, "EVENTS"), append(t.Keys, "total_events")
	return t
}

// row is s under the columns; absent counts are empty in CSV and "-" in
// a table.
func (c listColumns) row(s usage.Snapshot, absent string) []string {
	r := []string{s.WindowStart.Format(time.RFC3339)}
	if c.byResource {
		r = append(r, s.Entity)
	}
	for i, name := range c.limits {
		l, ok := s.Limit(name)
		if ok {
			r = append(r, strconv.FormatInt(l.Tokens, 10))
		} else {
			r = append(r, absent)
		}
		if c.overdraws[i] {
			if ok && l.HasOverdraws {
				r = append(r, strconv.FormatInt(l.Overdraws, 10))
			} else {
				r = append(r, absent)
			}
		}
	}
	return append(r, strconv.FormatInt(s.TotalEvents, 10))
}

func (a *App) usageList(ctx context.Context, cmd *cobra.Command, f *selectionFlags, plot bool, width int) error {
	sel, err := f.selection(cmd, a.Now())
	if err != nil {
		return err
	}
	format := a.Format()
	if plot {
		if a.flags.outputSet && format != output.FormatTable {
			return usageErrorf("--plot draws a chart: leave out --output %s, or drop --plot", format)
		}
		if width < 0 || (width > 0 && width < chart.MinWidth) {
			return usageErrorf("--width %d: pass at least %d columns", width, chart.MinWidth)
		}
		if _, err := chartWindows(sel); err != nil {
			return err
		}
	} else if cmd.Flags().Changed("width") {
		return usageErrorf("--width sizes the chart: pass it with --plot")
	}
	r, err := a.usageReader(ctx)
	if err != nil {
		return err
	}
	if plot {
		return a.usagePlot(ctx, r, sel, width)
	}
	out := a.env.Stdout
	switch {
	case format == output.FormatJSON || format == output.FormatYAML:
		lw := output.NewListWriter(out, format, output.Table{})
		for s, err := range r.Snapshots(ctx, sel) {
			if err != nil {
				return err
			}
			if err := lw.Add(viewSnapshot(s), nil); err != nil {
				return err
			}
		}
		return lw.Close("")
	case format == output.FormatCSV && len(sel.Limits()) > 0:
		// The columns are known: every row is written as it is read.
		cols := listColumns{byResource: sel.ByResource(), limits: sel.Limits(), overdraws: make([]bool, len(sel.Limits()))}
		for i := range cols.overdraws {
			cols.overdraws[i] = true
		}
		lw := output.NewListWriter(out, format, cols.table())
		for s, err := range r.Snapshots(ctx, sel) {
			if err != nil {
				return err
			}
			if err := lw.Add(nil, cols.row(s, "")); err != nil {
				return err
			}
		}
		return lw.Close("")
	}
	// A table, or CSV of every limit: the columns are the limits the
	// snapshots carry, known at the last page.
	var snaps []usage.Snapshot
	names := slices.Clone(sel.Limits())
	soft := map[string]bool{}
	for s, err := range r.Snapshots(ctx, sel) {
		if err != nil {
			return err
		}
		snaps = append(snaps, s)
		for _, l := range s.Limits {
			if !slices.Contains(names, l.Name) {
				names = append(names, l.Name)
			}
			soft[l.Name] = soft[l.Name] || l.HasOverdraws
		}
	}
	slices.Sort(names)
	cols := listColumns{byResource: sel.ByResource(), limits: names, overdraws: make([]bool, len(names))}
	for i, n := range names {
		cols.overdraws[i] = soft[n] || format == output.FormatCSV
	}
	t := cols.table()
	absent := ""
	if format == output.FormatTable {
		if len(snaps) == 0 {
			_, err := fmt.Fprintf(out, "No %s.\n", selectionText(sel))
			return err
		}
		t.Title, absent = sentence(selectionText(sel)), "-"
	}
	lw := output.NewListWriter(out, format, t)
	for _, s := range snaps {
		if err := lw.Add(nil, cols.row(s, absent)); err != nil {
			return err
		}
	}
	return lw.Close(fmt.Sprintf("%d snapshot(s); whole tokens consumed in the window, net of refunds.", len(snaps)))
}

// sentence is s with its first letter upper case.
func sentence(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// maxChartWindows is the most windows a chart spans.
const maxChartWindows = 20_000

// chartWindows lists the window starts sel spans: every window of its kind
// that starts in [From, To), with or without a snapshot.
func chartWindows(sel usage.Selection) ([]time.Time, error) {
	w := sel.Window()
	t := w.Start(sel.From())
	if t.Before(sel.From()) {
		t = w.Next(t)
	}
	var starts []time.Time
	for ; t.Before(sel.To()); t = w.Next(t) {
		if len(starts) == maxChartWindows {
			return nil, usageErrorf("--plot draws at most %d windows, and %s spans more: narrow the range or pass a coarser --window", maxChartWindows, selectionText(sel))
		}
		starts = append(starts, t)
	}
	return starts, nil
}

// windowLabel is how the chart's x axis names a window start.
func windowLabel(w usage.Window, t time.Time) string {
	switch w {
	case usage.Hourly:
		return t.Format("01-02 15:04")
	case usage.Daily:
		return t.Format("2006-01-02")
	}
	return t.Format("2006-01")
}

// usagePlot draws the limits of sel over its windows: each limit's tokens
// per window, summed over the entities of a resource selection, 0 where a
// window has no snapshot.
func (a *App) usagePlot(ctx context.Context, r *usage.Reader, sel usage.Selection, width int) error {
	starts, err := chartWindows(sel)
	if err != nil {
		return err
	}
	index := make(map[time.Time]int, len(starts))
	for i, t := range starts {
		index[t] = i
	}
	values := map[string][]float64{}
	for _, n := range sel.Limits() {
		values[n] = make([]float64, len(starts))
	}
	seen := make([]bool, len(starts))
	for s, err := range r.Snapshots(ctx, sel) {
		if err != nil {
			return err
		}
		i, ok := index[s.WindowStart]
		if !ok {
			continue
		}
		seen[i] = true
		for _, l := range s.Limits {
			if values[l.Name] == nil {
				values[l.Name] = make([]float64, len(starts))
			}
			values[l.Name][i] += float64(l.Tokens)
		}
	}
	title := sentence(selectionText(sel))
	out := a.env.Stdout
	if len(values) == 0 || len(starts) == 0 {
		_, err := fmt.Fprintf(out, "%s\nNo snapshots: nothing to draw.\n", title)
		return err
	}
	names := make([]string, 0, len(values))
	for n := range values {
		names = append(names, n)
	}
	slices.Sort(names)
	series := make([]chart.Series, len(names))
	for i, n := range names {
		series[i] = chart.Series{Name: n, Values: values[n]}
	}
	if width == 0 && a.env.StdoutTerminal && a.env.TerminalWidth != nil {
		width = a.env.TerminalWidth()
	}
	text, err := chart.Render(series, chart.Options{
		Width: width,
		Color: a.env.StdoutTerminal && a.env.Getenv("NO_COLOR") == "",
		Edge: func(i int) string {
			if i == len(starts) {
				return windowLabel(sel.Window(), sel.Window().Next(starts[i-1]))
			}
			return windowLabel(sel.Window(), starts[i])
		},
	})
	if err != nil {
		return err
	}
	empty := 0
	for _, s := range seen {
		if !s {
			empty++
		}
	}
	_, err = fmt.Fprintf(out, "%s\nTokens per window: %d window(s), %d without a snapshot (drawn as 0).\n%s", title, len(starts), empty, text)
	return err
}

// summaryView is `zl usage summary`: a selection's snapshots summed.
type summaryView struct {
	Resource string `json:"resource"`
	// Entity is "" for every entity of the resource.
	Entity      string             `json:"entity"`
	Window      string             `json:"window"`
	From        string             `json:"from"`
	To          string             `json:"to"`
	Windows     int                `json:"windows"`
	Snapshots   int                `json:"snapshots"`
	Entities    int                `json:"entities"`
	FirstWindow string             `json:"first_window"`
	LastWindow  string             `json:"last_window"`
	TotalEvents int64              `json:"total_events"`
	Limits      []limitSummaryView `json:"limits"`
}

// limitSummaryView is one limit's sums: whole tokens, the average over the
// windows that have a snapshot.
type limitSummaryView struct {
	Name      string  `json:"name"`
	Total     int64   `json:"total"`
	PerWindow float64 `json:"per_window"`
	Windows   int     `json:"windows"`
	Overdraws int64   `json:"overdraws"`
}

func viewSummary(sel usage.Selection, s usage.Summary) summaryView {
	v := summaryView{Resource: sel.Resource(), Entity: sel.Entity(), Window: string(sel.Window()),
		From: sel.From().Format(time.RFC3339), To: sel.To().Format(time.RFC3339),
		Windows: s.Windows, Snapshots: s.Snapshots, Entities: s.Entities, TotalEvents: s.TotalEvents,
		Limits: []limitSummaryView{}}
	if s.Windows > 0 {
		v.FirstWindow, v.LastWindow = s.First.Format(time.RFC3339), s.Last.Format(time.RFC3339)
	}
	for _, l := range s.Limits {
		v.Limits = append(v.Limits, limitSummaryView{Name: l.Name, Total: l.Total, PerWindow: l.PerWindow, Windows: l.Windows, Overdraws: l.Overdraws})
	}
	return v
}

func (a *App) usageSummary(ctx context.Context, cmd *cobra.Command, f *selectionFlags) error {
	sel, err := f.selection(cmd, a.Now())
	if err != nil {
		return err
	}
	r, err := a.usageReader(ctx)
	if err != nil {
		return err
	}
	s, err := r.Summary(ctx, sel)
	if err != nil {
		return err
	}
	return a.Render(viewSummary(sel, s))
}

// Tables implements output.Tabler: the counts, then the limits.
func (v summaryView) Tables() []output.Table {
	who := v.Entity
	if who == "" {
		who = "every entity"
	}
	head := output.Table{
		Title:   sentence(fmt.Sprintf("%s usage of %s on %s, windows starting in [%s, %s)", v.Window, who, v.Resource, v.From, v.To)),
		Columns: []string{"FIELD", "VALUE"},
		Rows: [][]string{
			{"windows", strconv.Itoa(v.Windows)}, {"snapshots", strconv.Itoa(v.Snapshots)}, {"entities", strconv.Itoa(v.Entities)},
			{"first window", dash(v.FirstWindow)}, {"last window", dash(v.LastWindow)}, {"events", strconv.FormatInt(v.TotalEvents, 10)},
		},
	}
	lims := output.Table{Title: "Limits", Columns: []string{"LIMIT", "TOTAL", "PER WINDOW", "WINDOWS", "OVERDRAWS"},
		Caption: "Whole tokens, net of refunds; PER WINDOW averages over the windows that have a snapshot."}
	for _, l := range v.Limits {
		lims.Rows = append(lims.Rows, []string{l.Name, strconv.FormatInt(l.Total, 10), strconv.FormatFloat(l.PerWindow, 'f', 2, 64),
			strconv.Itoa(l.Windows), strconv.FormatInt(l.Overdraws, 10)})
	}
	if len(v.Limits) == 0 {
		lims.Caption = "No snapshots in the range."
	}
	return []output.Table{head, lims}
}

// CSVTable implements output.CSVTabler: a row per limit, the selection's
// counts repeated on each.
func (v summaryView) CSVTable() output.Table {
	t := output.Table{Columns: []string{"limit", "total", "per_window", "windows", "overdraws", "first_window", "last_window", "snapshots", "entities", "total_events"}}
	for _, l := range v.Limits {
		t.Rows = append(t.Rows, []string{l.Name, strconv.FormatInt(l.Total, 10), strconv.FormatFloat(l.PerWindow, 'f', -1, 64),
			strconv.Itoa(l.Windows), strconv.FormatInt(l.Overdraws, 10), v.FirstWindow, v.LastWindow,
			strconv.Itoa(v.Snapshots), strconv.Itoa(v.Entities), strconv.FormatInt(v.TotalEvents, 10)})
	}
	return t
}

// topView is `zl usage top`: a resource's entities ranked.
type topView struct {
	Resource string          `json:"resource"`
	Limit    string          `json:"limit"`
	Entities []topEntityView `json:"entities"`
}

// topEntityView is one entity's consumption counter of the limit, summed
// over its shards: whole tokens, and the millitokens as stored.
type topEntityView struct {
	Rank                int    `json:"rank"`
	Entity              string `json:"entity"`
	Consumed            int64  `json:"consumed"`
	ConsumedMillitokens int64  `json:"consumed_millitokens"`
	Shards              int    `json:"shards"`
}

func (a *App) usageTop(ctx context.Context, cmd *cobra.Command, resource, limit string, n int) error {
	switch {
	case resource == "" || limit == "":
		return usageErrorf("%s needs --resource R --limit L: the resource whose entities to rank and the limit that ranks them", cmd.CommandPath())
	case n < 1:
		return usageErrorf("-n %d: pass how many entities to show, at least 1", n)
	}
	if err := schema.ValidateResource(resource); err != nil {
		return &UsageError{Err: err}
	}
	if err := schema.ValidateLimitName(limit); err != nil {
		return &UsageError{Err: err}
	}
	r, err := a.usageReader(ctx)
	if err != nil {
		return err
	}
	top, err := r.Top(ctx, resource, limit, n)
	if err != nil {
		return err
	}
	v := topView{Resource: resource, Limit: limit, Entities: []topEntityView{}}
	for i, e := range top {
		v.Entities = append(v.Entities, topEntityView{Rank: i + 1, Entity: e.Entity, Consumed: e.ConsumedTokens(), ConsumedMillitokens: e.Consumed, Shards: e.Shards})
	}
	return a.Render(v)
}

// Tables implements output.Tabler.
func (v topView) Tables() []output.Table {
	t := output.Table{
		Title:   fmt.Sprintf("Entities of %s by %s consumed", v.Resource, v.Limit),
		Columns: []string{"RANK", "ENTITY", "CONSUMED", "SHARDS"},
		Caption: "Whole tokens, net of refunds, since each bucket was created.",
	}
	for _, e := range v.Entities {
		t.Rows = append(t.Rows, []string{strconv.Itoa(e.Rank), e.Entity, strconv.FormatInt(e.Consumed, 10), strconv.Itoa(e.Shards)})
	}
	if len(v.Entities) == 0 {
		t.Caption = "No bucket of " + v.Resource + " counts " + v.Limit + "."
	}
	return []output.Table{t}
}

// CSVTable implements output.CSVTabler: a row per entity.
func (v topView) CSVTable() output.Table {
	t := output.Table{Columns: []string{"rank", "entity", "consumed", "consumed_millitokens", "shards"}}
	for _, e := range v.Entities {
		t.Rows = append(t.Rows, []string{strconv.Itoa(e.Rank), e.Entity, strconv.FormatInt(e.Consumed, 10),
			strconv.FormatInt(e.ConsumedMillitokens, 10), strconv.Itoa(e.Shards)})
	}
	return t
}

// bucketView is `zl usage show`: an entity's bucket on a resource, summed
// over its shards.
type bucketView struct {
	Entity     string `json:"entity"`
	Resource   string `json:"resource"`
	ShardCount int    `json:"shard_count"`
	Shards     int    `json:"shards"`
	// Projected says every limit's remaining is projected to ProjectedAt.
	Projected   bool            `json:"projected"`
	ProjectedAt string          `json:"projected_at"`
	Limits      []limitLiveView `json:"limits"`
}

// limitLiveView is one limit of a bucket: whole tokens (rounded down) and
// the millitokens as stored.
type limitLiveView struct {
	Name                 string `json:"name"`
	Remaining            int64  `json:"remaining"`
	RemainingMillitokens int64  `json:"remaining_millitokens"`
	Projected            bool   `json:"projected"`
	Capacity             int64  `json:"capacity"`
	RefillAmount         int64  `json:"refill_amount"`
	RefillPeriodSeconds  int64  `json:"refill_period_seconds"`
	Stored               int64  `json:"stored"`
	Consumed             int64  `json:"consumed"`
}

func (a *App) usageShow(ctx context.Context, cmd *cobra.Command, entity, resource string) error {
	if entity == "" || resource == "" {
		return usageErrorf("%s needs --entity E --resource R: the entity whose bucket on R to show", cmd.CommandPath())
	}
	if err := schema.ValidateEntityID(entity); err != nil {
		return &UsageError{Err: err}
	}
	if err := schema.ValidateResource(resource); err != nil {
		return &UsageError{Err: err}
	}
	r, err := a.usageReader(ctx)
	if err != nil {
		return err
	}
	b, err := r.Bucket(ctx, entity, resource)
	if errors.Is(err, usage.ErrNoBucket) {
		return withHint(fmt.Errorf("%s has no bucket on %s", entity, resource),
			"it has not acquired there, or its idle bucket expired (zl usage list shows its past windows)")
	}
	if err != nil {
		return err
	}
	v := bucketView{Entity: b.Entity, Resource: b.Resource, ShardCount: b.ShardCount, Shards: b.Shards,
		Projected: b.Projected, ProjectedAt: b.ProjectedAt.UTC().Format(time.RFC3339), Limits: []limitLiveView{}}
	for _, l := range b.Limits {
		v.Limits = append(v.Limits, limitLiveView{
			Name: l.Name, Remaining: l.RemainingTokens(), RemainingMillitokens: l.Remaining, Projected: l.Projected,
			Capacity: tokens(l.Capacity), RefillAmount: tokens(l.RefillAmount), RefillPeriodSeconds: int64(l.RefillPeriod / time.Second),
			Stored: tokens(l.Stored), Consumed: tokens(l.Consumed),
		})
	}
	return a.Render(v)
}

// tokens is millitokens in whole tokens, rounded down (docs/design.md §3).
func tokens(milli int64) int64 {
	t := milli / bucket.MilliPerToken
	if milli%bucket.MilliPerToken < 0 {
		t--
	}
	return t
}

// Tables implements output.Tabler.
func (v bucketView) Tables() []output.Table {
	t := output.Table{
		Title: fmt.Sprintf("Bucket of %s on %s: %d shard(s) of %d read, remaining projected to %s",
			v.Entity, v.Resource, v.Shards, v.ShardCount, v.ProjectedAt),
		Columns: []string{"LIMIT", "REMAINING", "PROJECTED", "CAPACITY", "REFILL", "STORED", "CONSUMED"},
		Caption: "Whole tokens, summed over the shards. STORED is the balance at each shard's last write; CONSUMED counts since the bucket was created.",
	}
	for _, l := range v.Limits {
		t.Rows = append(t.Rows, []string{l.Name, strconv.FormatInt(l.Remaining, 10), yesNo(l.Projected),
			strconv.FormatInt(l.Capacity, 10), l.refill(), strconv.FormatInt(l.Stored, 10), strconv.FormatInt(l.Consumed, 10)})
	}
	return []output.Table{t}
}

// CSVTable implements output.CSVTabler: a row per limit, the bucket's
// fields repeated on each.
func (v bucketView) CSVTable() output.Table {
	t := output.Table{Columns: []string{"entity", "resource", "limit", "remaining", "remaining_millitokens", "projected", "projected_at",
		"capacity", "refill_amount", "refill_period_seconds", "stored", "consumed", "shards", "shard_count"}}
	for _, l := range v.Limits {
		t.Rows = append(t.Rows, []string{v.Entity, v.Resource, l.Name, strconv.FormatInt(l.Remaining, 10), strconv.FormatInt(l.RemainingMillitokens, 10),
			strconv.FormatBool(l.Projected), v.ProjectedAt, strconv.FormatInt(l.Capacity, 10), strconv.FormatInt(l.RefillAmount, 10),
			strconv.FormatInt(l.RefillPeriodSeconds, 10), strconv.FormatInt(l.Stored, 10), strconv.FormatInt(l.Consumed, 10),
			strconv.Itoa(v.Shards), strconv.Itoa(v.ShardCount)})
	}
	return t
}

// refill reads "100 per minute", or "resets" for a calendar quota.
func (l limitLiveView) refill() string {
	if l.RefillAmount == 0 {
		return "resets (quota)"
	}
	return strconv.FormatInt(l.RefillAmount, 10) + " " + per(l.RefillPeriodSeconds)
}
