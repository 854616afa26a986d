package cli

import (
	"context"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/zae-limiter/zae-limiter-go/cmd/zl/internal/lookback"
	"github.com/zae-limiter/zae-limiter-go/cmd/zl/internal/output"
	"github.com/zae-limiter/zae-limiter-go/core/control"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
)

// auditCommand is `zl audit`: the namespace's audit trails, every operator
// change recorded by core/control (docs/design.md §8).
func (a *App) auditCommand() *cobra.Command {
	var q struct {
		entity, resource, since, page string
		system                        bool
		limit                         int
	}
	list := &cobra.Command{
		Use:   "list --entity E | --resource R | --system",
		Short: "List an audit trail, newest first",
		Long: `List one audit trail of the namespace, newest first: an entity's (the changes
of its settings, the resets and top-ups of its buckets), a resource's (the
changes of its own limits and settings), or the namespace's own (--system:
registration, system limits, on_unavailable). --since keeps the events of the
last duration (24h, 90m, 7d) or since an instant (RFC 3339); --limit pages,
and --page goes on from where a page ended.`,
		Example: `  zl audit list --entity key-1
  zl audit list --resource gpt-4 --since 24h
  zl audit list --system --since 2026-01-02T00:00:00Z --limit 20`,
		Args: noArgs,
		RunE: a.Bind(func(ctx context.Context, _ *cobra.Command, _ []string) error {
			return a.auditList(ctx, q.entity, q.resource, q.system, q.since, q.page, q.limit)
		}),
	}
	f := list.Flags()
	f.StringVar(&q.entity, "entity", "", "the entity's trail")
	f.StringVar(&q.resource, "resource", "", "the resource's trail")
	f.BoolVar(&q.system, "system", false, "the namespace's own trail")
	f.StringVar(&q.since, "since", "", "only events of the last duration (24h, 7d) or since an RFC 3339 instant")
	f.IntVar(&q.limit, "limit", 50, "the most events a page shows (0: all)")
	f.StringVar(&q.page, "page", "", "the page token a previous page printed")
	return group("audit", "Read the audit trails of operator changes",
		`Every operator change (limits, access, entities, resets, top-ups, namespaces)
is recorded in an audit trail with who made it and when.`, list)
}

// auditEventView is one event.
type auditEventView struct {
	Time      string            `json:"time"`
	EventID   string            `json:"event_id"`
	Action    string            `json:"action"`
	Principal string            `json:"principal"`
	Resource  string            `json:"resource"`
	Details   map[string]string `json:"details"`
}

// auditListView is `zl audit list`.
type auditListView struct {
	Namespace string           `json:"namespace"`
	Trail     string           `json:"trail"`
	Events    []auditEventView `json:"events"`
	// NextPage is the --page of the following page, "" at the end.
	NextPage string `json:"next_page"`
}

func (v auditListView) Tables() []output.Table {
	t := output.Table{Title: "Audit trail " + v.Trail + " (namespace " + v.Namespace + "), newest first",
		Columns: []string{"TIME", "ACTION", "PRINCIPAL", "RESOURCE", "DETAILS"}}
	for _, e := range v.Events {
		t.Rows = append(t.Rows, []string{e.Time, e.Action, dash(e.Principal), dash(e.Resource), detailsText(e.Details)})
	}
	switch {
	case v.NextPage != "":
		t.Caption = "More: --page " + v.NextPage
	case len(v.Events) == 0:
		t.Caption = "No events."
	}
	return []output.Table{t}
}

// detailsText lists details as k=v, one a line, sorted by key.
func detailsText(d map[string]string) string {
	keys := make([]string, 0, len(d))
	for k := range d {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	lines := make([]string, len(keys))
	for i, k := range keys {
		lines[i] = k + "=" + d[k]
	}
	return dash(strings.Join(lines, "\n"))
}

// parseSince reads --since: a duration back from now (24h, 90m, 7d, as
// lookback.Parse reads it) or an RFC 3339 instant.
func parseSince(s string, now time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	if d, err := lookback.Parse(s); err == nil {
		return now.Add(-d), nil
	}
	return time.Time{}, usageErrorf("--since %q: pass a duration back from now (24h, 90m, 7d) or an RFC 3339 instant (2026-01-02T00:00:00Z)", s)
}

func (a *App) auditList(ctx context.Context, entity, resource string, system bool, since, page string, limit int) error {
	var trail string
	n := 0
	if entity != "" {
		n++
		if err := schema.ValidateEntityID(entity); err != nil {
			return err
		}
		trail = entity
	}
	if resource != "" {
		n++
		if err := schema.ValidateResource(resource); err != nil {
			return err
		}
		trail = control.ResourceTrail(resource)
	}
	if system {
		n++
		trail = control.SystemTrail
	}
	if n != 1 {
		return usageErrorf("zl audit list needs one trail: --entity E, --resource R or --system")
	}
	if limit < 0 {
		return usageErrorf("--limit %d: pass 0 (all) or more", limit)
	}
	from, err := parseSince(since, a.Now())
	if err != nil {
		return err
	}
	ctl, ns, err := a.Namespace(ctx)
	if err != nil {
		return err
	}
	evs, next, err := ctl.AuditPage(ctx, ns, trail, control.AuditQuery{Since: from, Limit: limit, NewestFirst: true, After: page})
	if err != nil {
		if schema.IsValidationError(err) && page != "" {
			return usageErrorf("--page %q is not a page token zl audit list printed", page)
		}
		return err
	}
	v := auditListView{Namespace: a.flags.namespace, Trail: trail, Events: []auditEventView{}, NextPage: next}
	for _, e := range evs {
		d := e.Details
		if d == nil {
			d = map[string]string{}
		}
		v.Events = append(v.Events, auditEventView{Time: e.Timestamp.UTC().Format("2006-01-02T15:04:05.000Z"), EventID: e.EventID,
			Action: e.Action, Principal: e.Principal, Resource: e.Resource, Details: d})
	}
	return a.Render(v)
}
