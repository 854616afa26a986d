package cli

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/zae-limiter/zae-limiter-go/cmd/zl/internal/output"
	"github.com/zae-limiter/zae-limiter-go/core/config"
	"github.com/zae-limiter/zae-limiter-go/core/control"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
)

// resourceCommand is `zl resource`: the resources of the namespace and the
// limits of each, which every entity without limits of its own on the
// resource gets (docs/design.md §7, §8).
func (a *App) resourceCommand() *cobra.Command {
	list := &cobra.Command{
		Use:   "list",
		Short: "List the resources with config",
		Long: `List the resources the namespace's registries name: those with a config of
their own (limits or settings), and those entities have config on, with how
many. One read, whatever the namespace holds.`,
		Example: `  zl resource list -o json`,
		Args:    noArgs,
		RunE:    a.Bind(a.resourceList),
	}
	get := &cobra.Command{
		Use:   "get RESOURCE",
		Short: "Show a resource's limits and settings",
		Long: `Show a resource's own config: its limits (every entity without limits of its
own on the resource gets them), its access setting (zl access) and its cascade
policy. A resource without limits falls back to the system limits.`,
		Example: `  zl resource get gpt-4`,
		Args:    exactArgs("RESOURCE"),
		RunE:    a.Bind(a.resourceGet),
	}
	var lim limitInput
	set := &cobra.Command{
		Use:   "set RESOURCE LIMIT...",
		Short: "Replace a resource's limits",
		Long: `Replace a resource's limits with the ones given (every limit not given is
removed), recorded in the resource's audit trail. Every bucket in use that
resolves its limits from the resource is brought to the new ones before the
command returns: a lowered capacity clamps its balance, a raise grants
nothing at once, a new rate applies from now.

` + limitSyntaxHelp,
		Example: `  zl resource set gpt-4 rpm:100/min tpm:100000/min:150000
  zl resource set gpt-4 --limit tokens:1000000@monthly --zone Europe/Paris`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageErrorf("%s needs RESOURCE: %s", cmd.CommandPath(), cmd.UseLine())
			}
			return nil
		},
		RunE: a.Bind(func(ctx context.Context, _ *cobra.Command, args []string) error {
			return a.resourceSet(ctx, &lim, args[0], args[1:])
		}),
	}
	lim.register(set)
	del := &cobra.Command{
		Use:   "delete RESOURCE",
		Short: "Delete a resource's limits (asks first)",
		Long: `Delete a resource's limits: its entities without limits of their own fall
back to the system limits, and their buckets in use are brought to them
before the command returns. Its access and cascade settings stay. Asks for
confirmation on a terminal; elsewhere it needs --yes.`,
		Example: `  zl resource delete gpt-4 --yes`,
		Args:    exactArgs("RESOURCE"),
		RunE:    a.Bind(a.resourceDelete),
	}
	return group("resource", "List resources; show, set and delete a resource's limits",
		`A resource is what entities acquire (a model, an API): its limits are those of
every entity on it that has none of its own.`,
		list, get, set, del)
}

// levelView is one resource's config, or an entity's on one resource (or
// on every resource, `_default_`): `zl resource get`, `zl entity get`.
type levelView struct {
	Namespace string      `json:"namespace"`
	Entity    string      `json:"entity"`
	Resource  string      `json:"resource"`
	Limits    []limitView `json:"limits"`
	Access    string      `json:"access"`
	Cascade   string      `json:"cascade"`
}

func viewLevel(namespace, entity, resource string, c config.Config) levelView {
	return levelView{Namespace: namespace, Entity: entity, Resource: resource, Limits: viewLimits(c.Limits),
		Access: c.Disabled.String(), Cascade: c.Cascade.String()}
}

// target names the level for a person: "resource gpt-4", "entity k on
// gpt-4", "entity k on every resource".
func (v levelView) target() string {
	return targetName(v.Entity, v.Resource)
}

func targetName(entity, resource string) string {
	switch {
	case entity == "":
		return "resource " + resource
	case resource == schema.DefaultResource:
		return "entity " + entity + " on every resource"
	}
	return "entity " + entity + " on " + resource
}

func (v levelView) Tables() []output.Table {
	return []output.Table{limitsTable(fmt.Sprintf("Limits of %s (namespace %s)", v.target(), v.Namespace), v.Limits,
		fmt.Sprintf("access: %s; cascade: %s", v.Access, v.Cascade))}
}

// levelChanged is what a set or delete of a level's limits did.
type levelChanged struct {
	levelView
	Action  string       `json:"action"`
	Buckets bucketCounts `json:"buckets"`
	// Replaces are, for an entity's limits, the limits of the levels below
	// that no longer apply to the entity (control.ReplacedLimits).
	Replaces []replacedView `json:"replaces,omitempty"`
}

// replacedView is one control.Replaced.
type replacedView struct {
	Resource string   `json:"resource,omitempty"`
	Level    string   `json:"level"`
	Limits   []string `json:"limits"`
}

func replacedViews(rs []control.Replaced) []replacedView {
	var out []replacedView
	for _, r := range rs {
		out = append(out, replacedView{Resource: r.Resource, Level: r.Level.String(), Limits: r.Limits})
	}
	return out
}

func (v levelChanged) Tables() []output.Table {
	t := v.levelView.Tables()[0]
	t.Title = fmt.Sprintf("Limits of %s %s (namespace %s)", v.target(), v.Action, v.Namespace)
	for _, r := range v.Replaces {
		from, where := "the system level", " on every resource without limits of its own"
		switch r.Level {
		case "resource":
			from = "resource " + r.Resource
		case "entity_default":
			from = "its limits for every resource"
		}
		if r.Resource != "" {
			where = " on " + r.Resource
		}
		t.Caption += fmt.Sprintf("\n%s (from %s) no longer %s to %s%s: an entity's own limits replace the levels below, never add to them; an acquire that names %s is refused.",
			strings.Join(r.Limits, ", "), from, pluralApply(len(r.Limits)), v.Entity, where, pluralThem(len(r.Limits)))
	}
	t.Caption += "\n" + v.Buckets.caption()
	return []output.Table{t}
}

// pluralThem is "it" or "one of them".
func pluralThem(n int) string {
	if n == 1 {
		return "it"
	}
	return "one of them"
}

// pluralApply is "applies" or "apply".
func pluralApply(n int) string {
	if n == 1 {
		return "applies"
	}
	return "apply"
}

// resourceListView is `zl resource list`.
type resourceListView struct {
	Namespace string             `json:"namespace"`
	Resources []resourceListItem `json:"resources"`
}

type resourceListItem struct {
	Name          string `json:"name"`
	OwnConfig     bool   `json:"own_config"`
	EntityConfigs int64  `json:"entity_configs"`
}

func (v resourceListView) Tables() []output.Table {
	t := output.Table{Title: "Resources of namespace " + v.Namespace, Columns: []string{"RESOURCE", "OWN CONFIG", "ENTITY CONFIGS"}}
	for _, r := range v.Resources {
		t.Rows = append(t.Rows, []string{r.Name, yesNo(r.OwnConfig), strconv.FormatInt(r.EntityConfigs, 10)})
	}
	if len(v.Resources) == 0 {
		t.Caption = "No resources with config: zl resource set RESOURCE LIMIT..."
	}
	return []output.Table{t}
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func (a *App) resourceList(ctx context.Context, _ *cobra.Command, _ []string) error {
	ctl, ns, err := a.Namespace(ctx)
	if err != nil {
		return err
	}
	rs, err := ctl.Store().ListResources(ctx, ns)
	if err != nil {
		return err
	}
	v := resourceListView{Namespace: a.flags.namespace, Resources: []resourceListItem{}}
	for _, r := range rs {
		v.Resources = append(v.Resources, resourceListItem{Name: r.Name, OwnConfig: r.OwnConfig, EntityConfigs: r.EntityConfigs})
	}
	return a.Render(v)
}

func (a *App) resourceView(ctx context.Context, ctl *control.Controls, ns, resource string) (levelView, error) {
	c, err := ctl.Store().GetResourceConfig(ctx, ns, resource)
	if err != nil {
		return levelView{}, err
	}
	return viewLevel(a.flags.namespace, "", resource, c), nil
}

func (a *App) resourceGet(ctx context.Context, _ *cobra.Command, args []string) error {
	if err := schema.ValidateResource(args[0]); err != nil {
		return err
	}
	ctl, ns, err := a.Namespace(ctx)
	if err != nil {
		return err
	}
	v, err := a.resourceView(ctx, ctl, ns, args[0])
	if err != nil {
		return err
	}
	return a.Render(v)
}

func (a *App) resourceSet(ctx context.Context, lim *limitInput, resource string, args []string) error {
	if err := schema.ValidateResource(resource); err != nil {
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
	counts, err := a.fanout("resource "+resource, func() (control.Progress, error) {
		return ctl.SetResourceLimits(ctx, ns, resource, ls, a.Principal())
	})
	if err != nil {
		return err
	}
	v, err := a.resourceView(ctx, ctl, ns, resource)
	if err != nil {
		return err
	}
	return a.Render(levelChanged{levelView: v, Action: "set", Buckets: counts})
}

func (a *App) resourceDelete(ctx context.Context, _ *cobra.Command, args []string) error {
	resource := args[0]
	if err := schema.ValidateResource(resource); err != nil {
		return err
	}
	ctl, ns, err := a.Namespace(ctx)
	if err != nil {
		return err
	}
	if err := a.Confirm("resource delete", fmt.Sprintf("Delete the limits of resource %s in namespace %s? Its entities without limits of their own fall back to the system limits.", resource, a.flags.namespace)); err != nil {
		return err
	}
	counts, err := a.fanout("resource "+resource, func() (control.Progress, error) {
		return ctl.DeleteResourceLimits(ctx, ns, resource, a.Principal())
	})
	if err != nil {
		return err
	}
	v, err := a.resourceView(ctx, ctl, ns, resource)
	if err != nil {
		return err
	}
	return a.Render(levelChanged{levelView: v, Action: "deleted", Buckets: counts})
}
