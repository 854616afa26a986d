package cli

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/zae-limiter/zae-limiter-go/cmd/zl/internal/output"
	"github.com/zae-limiter/zae-limiter-go/core/config"
	"github.com/zae-limiter/zae-limiter-go/core/control"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
)

// entityCommand is `zl entity`: the entities of the namespace (whoever
// acquires: an API key, a user, a tenant), their parents, and their own
// limits on a resource or on every resource (docs/design.md §2, §7, §8).
func (a *App) entityCommand() *cobra.Command {
	var opts struct {
		parent, name string
		cascade      bool
		meta         []string
	}
	create := &cobra.Command{
		Use:   "create ENTITY",
		Short: "Record an entity, optionally under a parent",
		Long: `Record an entity. An entity need not be recorded to acquire or to carry
limits: recording one gives it a parent (which must exist), a display name,
metadata and whether its acquires cascade to the parent by default. Recorded
in the entity's audit trail.`,
		Example: `  zl entity create org-acme
  zl entity create key-1 --parent org-acme --cascade --meta tier=gold`,
		Args: exactArgs("ENTITY"),
		RunE: a.Bind(func(ctx context.Context, _ *cobra.Command, args []string) error {
			md := map[string]string{}
			for _, kv := range opts.meta {
				k, v, ok := strings.Cut(kv, "=")
				if !ok || k == "" {
					return usageErrorf("--meta %q: pass KEY=VALUE", kv)
				}
				md[k] = v
			}
			return a.entityCreate(ctx, args[0], config.EntityOptions{ParentID: opts.parent, Name: opts.name, Cascade: opts.cascade, Metadata: md})
		}),
	}
	create.Flags().StringVar(&opts.parent, "parent", "", "the parent entity (recorded already)")
	create.Flags().BoolVar(&opts.cascade, "cascade", false, "its acquires also debit the parent's bucket, unless a resource's cascade policy says otherwise")
	create.Flags().StringVar(&opts.name, "name", "", "a display name (default: the id)")
	create.Flags().StringArrayVar(&opts.meta, "meta", nil, "metadata KEY=VALUE (repeatable)")

	show := &cobra.Command{
		Use:   "show ENTITY",
		Short: "Show an entity: its record, parent, children and config per resource",
		Long: `Show a recorded entity: its name, parent, cascade default, metadata and
creation time, its children, and its own config on each resource (and on every
resource): limits, access and cascade settings.`,
		Example: `  zl entity show key-1`,
		Args:    exactArgs("ENTITY"),
		RunE:    a.Bind(a.entityShow),
	}
	var listOpts struct {
		parent, after string
		limit         int
	}
	list := &cobra.Command{
		Use:   "list",
		Short: "List the recorded entities, or a parent's children",
		Long: `List the namespace's recorded entities in id order, a page at a time
(--limit, then --after the last id shown), or with --parent the children of one
entity.`,
		Example: `  zl entity list
  zl entity list --parent org-acme
  zl entity list --limit 100 --after key-0999`,
		Args: noArgs,
		RunE: a.Bind(func(ctx context.Context, _ *cobra.Command, _ []string) error {
			return a.entityList(ctx, listOpts.parent, listOpts.after, listOpts.limit)
		}),
	}
	list.Flags().StringVar(&listOpts.parent, "parent", "", "list this entity's children")
	list.Flags().StringVar(&listOpts.after, "after", "", "start after this entity id (the last of the previous page)")
	list.Flags().IntVar(&listOpts.limit, "limit", 100, "the most entities a page shows (0: all)")

	del := &cobra.Command{
		Use:   "delete ENTITY",
		Short: "Delete an entity with its config and buckets (asks first)",
		Long: `Delete a recorded entity with everything it owns: its limits and settings on
every resource, its buckets, usage snapshots and operation records. Its audit
trail stays; its children keep their parent id. Asks for confirmation on a
terminal; elsewhere it needs --yes.`,
		Example: `  zl entity delete key-1 --yes`,
		Args:    exactArgs("ENTITY"),
		RunE:    a.Bind(a.entityDelete),
	}

	var getScope scopeFlags
	get := &cobra.Command{
		Use:   "get ENTITY --resource R|--default",
		Short: "Show an entity's own limits and settings on a resource",
		Long: `Show an entity's own config on one resource (--resource), or its default for
every resource (--default): limits, access and cascade. It does not resolve
through the levels: an entity without limits of its own gets the resource's.`,
		Example: `  zl entity get key-1 --resource gpt-4
  zl entity get key-1 --default`,
		Args: exactArgs("ENTITY"),
		RunE: a.Bind(func(ctx context.Context, _ *cobra.Command, args []string) error {
			return a.entityGet(ctx, args[0], &getScope)
		}),
	}
	getScope.register(get)

	var setScope scopeFlags
	var lim limitInput
	set := &cobra.Command{
		Use:   "set ENTITY --resource R|--default LIMIT...",
		Short: "Replace an entity's limits on a resource, or on every resource",
		Long: `Replace an entity's own limits on a resource (--resource), or its default for
every resource (--default), with the ones given; recorded in the entity's audit
trail. The entity's buckets in that scope are brought to the new limits before
the command returns (a bar shows them on a terminal). The entity need not be
recorded.

` + limitSyntaxHelp,
		Example: `  zl entity set key-1 --resource gpt-4 rpm:10/min tpm:10000/min
  zl entity set key-1 --default rpm:5/min
  zl entity set key-1 --resource gpt-4 tokens:50000@daily --zone America/New_York`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageErrorf("%s needs ENTITY: %s", cmd.CommandPath(), cmd.UseLine())
			}
			return nil
		},
		RunE: a.Bind(func(ctx context.Context, _ *cobra.Command, args []string) error {
			return a.entitySet(ctx, args[0], &setScope, &lim, args[1:])
		}),
	}
	setScope.register(set)
	lim.register(set)

	var delScope scopeFlags
	delLimits := &cobra.Command{
		Use:   "delete-limits ENTITY --resource R|--default",
		Short: "Delete an entity's limits on a resource, or on every resource (asks first)",
		Long: `Delete an entity's own limits on a resource (--resource), or its default for
every resource (--default): its buckets fall back to the next level with
limits, and are brought in line before the command returns. Its access and
cascade settings stay. Asks for confirmation on a terminal; elsewhere it needs
--yes.`,
		Example: `  zl entity delete-limits key-1 --resource gpt-4 --yes`,
		Args:    exactArgs("ENTITY"),
		RunE: a.Bind(func(ctx context.Context, _ *cobra.Command, args []string) error {
			return a.entityDeleteLimits(ctx, args[0], &delScope)
		}),
	}
	delScope.register(delLimits)

	return group("entity", "Create, show, list and delete entities; their own limits",
		`An entity is whoever acquires: an API key, a user, a tenant. Recording one
gives it a parent; any entity can carry limits of its own on a resource, or on
every resource, which win over the resource's and the system's.`,
		create, show, list, del, get, set, delLimits)
}

// scopeFlags are --resource R and --default: the resource an entity's
// config is on, or every resource (`_default_`).
type scopeFlags struct {
	resource string
	all      bool
}

func (s *scopeFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&s.resource, "resource", "", "the resource")
	cmd.Flags().BoolVar(&s.all, "default", false, "the entity's default for every resource (_default_)")
}

// scope returns the resource, or `_default_`; neither or both is a usage
// error.
func (s *scopeFlags) scope(cmdPath string) (string, error) {
	switch {
	case s.all && s.resource != "" && s.resource != schema.DefaultResource:
		return "", usageErrorf("%s takes --resource or --default, not both", cmdPath)
	case s.all:
		return schema.DefaultResource, nil
	case s.resource == "":
		return "", usageErrorf("%s needs --resource R (or --default, for every resource)", cmdPath)
	}
	if err := schema.ValidateConfigScope(s.resource); err != nil {
		return "", err
	}
	return s.resource, nil
}

// entityScope validates the entity id, then returns the scope as scope
// does.
func (s *scopeFlags) entityScope(id, cmdPath string) (string, error) {
	if err := schema.ValidateEntityID(id); err != nil {
		return "", err
	}
	return s.scope(cmdPath)
}

// entityView is an entity's record.
type entityView struct {
	ID        string            `json:"id"`
	Name      string            `json:"name"`
	Parent    string            `json:"parent"`
	Cascade   bool              `json:"cascade"`
	Metadata  map[string]string `json:"metadata"`
	CreatedAt string            `json:"created_at"`
}

func viewEntity(e config.Entity) entityView {
	v := entityView{ID: e.ID, Name: e.Name, Parent: e.ParentID, Cascade: e.Cascade, Metadata: e.Metadata}
	if v.Metadata == nil {
		v.Metadata = map[string]string{}
	}
	if !e.CreatedAt.IsZero() {
		v.CreatedAt = e.CreatedAt.UTC().Format(time.RFC3339)
	}
	return v
}

func entityColumns() []string { return []string{"ID", "NAME", "PARENT", "CASCADE", "CREATED"} }

func (e entityView) row() []string {
	return []string{e.ID, e.Name, dash(e.Parent), yesNo(e.Cascade), dash(e.CreatedAt)}
}

// metadataText lists metadata as k=v, sorted by key.
func metadataText(md map[string]string) string {
	keys := make([]string, 0, len(md))
	for k := range md {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + md[k]
	}
	return dash(strings.Join(parts, ", "))
}

// entityCreated is what `zl entity create` did.
type entityCreated struct {
	Namespace string `json:"namespace"`
	entityView
}

func (v entityCreated) Tables() []output.Table {
	return []output.Table{{Title: "Entity created in namespace " + v.Namespace, Columns: entityColumns(), Rows: [][]string{v.row()}}}
}

// entityDetail is `zl entity show`.
type entityDetail struct {
	Namespace string `json:"namespace"`
	entityView
	Children []string          `json:"children"`
	Configs  []entityConfigRow `json:"configs"`
}

// entityConfigRow is the entity's config on one resource.
type entityConfigRow struct {
	Resource string      `json:"resource"`
	Limits   []limitView `json:"limits"`
	Access   string      `json:"access"`
	Cascade  string      `json:"cascade"`
}

func (d entityDetail) Tables() []output.Table {
	rec := output.Table{Title: fmt.Sprintf("Entity %s (namespace %s)", d.ID, d.Namespace), Columns: []string{"FIELD", "VALUE"}, Rows: [][]string{
		{"id", d.ID}, {"name", d.Name}, {"parent", dash(d.Parent)}, {"cascade", yesNo(d.Cascade)},
		{"metadata", metadataText(d.Metadata)}, {"created", dash(d.CreatedAt)}, {"children", dash(strings.Join(d.Children, ", "))},
	}}
	cfg := output.Table{Title: "Config per resource", Columns: []string{"RESOURCE", "LIMITS", "ACCESS", "CASCADE"}}
	for _, c := range d.Configs {
		cfg.Rows = append(cfg.Rows, []string{c.Resource, limitsCell(c.Limits), c.Access, c.Cascade})
	}
	if len(d.Configs) == 0 {
		cfg.Caption = "No config of its own: the resources' and the system's limits apply."
	}
	return []output.Table{rec, cfg}
}

// entityListView is `zl entity list`.
type entityListView struct {
	Namespace string       `json:"namespace"`
	Parent    string       `json:"parent"`
	Entities  []entityView `json:"entities"`
	// Next is the --after of the next page, "" at the end.
	Next string `json:"next"`
}

func (v entityListView) Tables() []output.Table {
	title := "Entities of namespace " + v.Namespace
	if v.Parent != "" {
		title = fmt.Sprintf("Children of %s (namespace %s)", v.Parent, v.Namespace)
	}
	t := output.Table{Title: title, Columns: entityColumns()}
	for _, e := range v.Entities {
		t.Rows = append(t.Rows, e.row())
	}
	switch {
	case v.Next != "":
		t.Caption = "More: --after " + v.Next
	case len(v.Entities) == 0 && v.Parent != "":
		t.Caption = "No children."
	case len(v.Entities) == 0:
		t.Caption = "No recorded entities: zl entity create ENTITY"
	}
	return []output.Table{t}
}

// entityDeleted is what `zl entity delete` did.
type entityDeleted struct {
	Namespace string `json:"namespace"`
	ID        string `json:"id"`
	Status    string `json:"status"`
}

func (v entityDeleted) Tables() []output.Table {
	return []output.Table{{Columns: []string{"ENTITY", "NAMESPACE", "STATUS"}, Rows: [][]string{{v.ID, v.Namespace, v.Status}}}}
}

func (a *App) entityCreate(ctx context.Context, id string, opts config.EntityOptions) error {
	if err := schema.ValidateEntityID(id); err != nil {
		return err
	}
	ctl, ns, err := a.Namespace(ctx)
	if err != nil {
		return err
	}
	e, err := ctl.CreateEntity(ctx, ns, id, opts, a.Principal())
	if err != nil {
		return err
	}
	return a.Render(entityCreated{Namespace: a.flags.namespace, entityView: viewEntity(e)})
}

func (a *App) entityShow(ctx context.Context, _ *cobra.Command, args []string) error {
	id := args[0]
	if err := schema.ValidateEntityID(id); err != nil {
		return err
	}
	ctl, ns, err := a.Namespace(ctx)
	if err != nil {
		return err
	}
	e, err := ctl.Store().GetEntity(ctx, ns, id)
	if err != nil {
		return err
	}
	kids, err := ctl.Store().Children(ctx, ns, id)
	if err != nil {
		return err
	}
	cfgs, err := ctl.Store().EntityConfigs(ctx, ns, id)
	if err != nil {
		return err
	}
	d := entityDetail{Namespace: a.flags.namespace, entityView: viewEntity(e), Children: []string{}, Configs: []entityConfigRow{}}
	for _, k := range kids {
		d.Children = append(d.Children, k.ID)
	}
	for _, c := range cfgs {
		d.Configs = append(d.Configs, entityConfigRow{Resource: c.Resource, Limits: viewLimits(c.Limits), Access: c.Disabled.String(), Cascade: c.Cascade.String()})
	}
	return a.Render(d)
}

func (a *App) entityList(ctx context.Context, parent, after string, limit int) error {
	if limit < 0 {
		return usageErrorf("--limit %d: pass 0 (all) or more", limit)
	}
	if parent != "" {
		if err := schema.ValidateParentID(parent); err != nil {
			return err
		}
	}
	ctl, ns, err := a.Namespace(ctx)
	if err != nil {
		return err
	}
	v := entityListView{Namespace: a.flags.namespace, Parent: parent, Entities: []entityView{}}
	var es []config.Entity
	if parent != "" {
		if _, err := ctl.Store().GetEntity(ctx, ns, parent); err != nil {
			return err
		}
		es, err = ctl.Store().Children(ctx, ns, parent)
	} else {
		es, v.Next, err = ctl.Store().ListEntities(ctx, ns, after, limit)
	}
	if err != nil {
		return err
	}
	for _, e := range es {
		v.Entities = append(v.Entities, viewEntity(e))
	}
	return a.Render(v)
}

func (a *App) entityDelete(ctx context.Context, _ *cobra.Command, args []string) error {
	id := args[0]
	if err := schema.ValidateEntityID(id); err != nil {
		return err
	}
	ctl, ns, err := a.Namespace(ctx)
	if err != nil {
		return err
	}
	if _, err := ctl.Store().GetEntity(ctx, ns, id); err != nil {
		return err
	}
	if err := a.Confirm("entity delete", fmt.Sprintf("Delete entity %s of namespace %s with its config, buckets and usage? Its audit trail stays.", id, a.flags.namespace)); err != nil {
		return err
	}
	done := a.Progress("deleting entity " + id)
	err = ctl.DeleteEntity(ctx, ns, id, a.Principal())
	done.Done()
	if err != nil {
		return err
	}
	return a.Render(entityDeleted{Namespace: a.flags.namespace, ID: id, Status: "deleted"})
}

func (a *App) entityLevel(ctx context.Context, ctl *control.Controls, ns, id, resource string) (levelView, error) {
	c, err := ctl.Store().GetEntityConfig(ctx, ns, id, resource)
	if err != nil {
		return levelView{}, err
	}
	return viewLevel(a.flags.namespace, id, resource, c), nil
}

func (a *App) entityGet(ctx context.Context, id string, sf *scopeFlags) error {
	resource, err := sf.entityScope(id, "zl entity get")
	if err != nil {
		return err
	}
	ctl, ns, err := a.Namespace(ctx)
	if err != nil {
		return err
	}
	v, err := a.entityLevel(ctx, ctl, ns, id, resource)
	if err != nil {
		return err
	}
	return a.Render(v)
}

func (a *App) entitySet(ctx context.Context, id string, sf *scopeFlags, lim *limitInput, args []string) error {
	resource, err := sf.entityScope(id, "zl entity set")
	if err != nil {
		return err
	}
	ls, err := lim.read(args)
	if err != nil {
		return err
	}
	ctl, ns, err := a.Namespace(ctx)
	if err != nil {
		return err
	}
	replaced, err := ctl.ReplacedLimits(ctx, ns, id, resource, ls)
	if err != nil {
		return err
	}
	counts, err := a.fanout(targetName(id, resource), func() (control.Progress, error) {
		return ctl.SetEntityLimits(ctx, ns, id, resource, ls, a.Principal())
	})
	if err != nil {
		return err
	}
	v, err := a.entityLevel(ctx, ctl, ns, id, resource)
	if err != nil {
		return err
	}
	return a.Render(levelChanged{levelView: v, Action: "set", Buckets: counts, Replaces: replacedViews(replaced)})
}

func (a *App) entityDeleteLimits(ctx context.Context, id string, sf *scopeFlags) error {
	resource, err := sf.entityScope(id, "zl entity delete-limits")
	if err != nil {
		return err
	}
	ctl, ns, err := a.Namespace(ctx)
	if err != nil {
		return err
	}
	if err := a.Confirm("entity delete-limits", fmt.Sprintf("Delete the limits of %s (namespace %s)? Its buckets fall back to the next level with limits.", targetName(id, resource), a.flags.namespace)); err != nil {
		return err
	}
	counts, err := a.fanout(targetName(id, resource), func() (control.Progress, error) {
		return ctl.DeleteEntityLimits(ctx, ns, id, resource, a.Principal())
	})
	if err != nil {
		return err
	}
	v, err := a.entityLevel(ctx, ctl, ns, id, resource)
	if err != nil {
		return err
	}
	return a.Render(levelChanged{levelView: v, Action: "deleted", Buckets: counts})
}
