package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/zae-limiter/zae-limiter-go/cmd/zl/internal/output"
	"github.com/zae-limiter/zae-limiter-go/core/config"
	"github.com/zae-limiter/zae-limiter-go/core/control"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
)

// accessCommand is `zl access`: who may use a resource — disable it,
// re-admit an entity (a carve-out), bypass the limits, or clear the
// setting (docs/design.md §8).
func (a *App) accessCommand() *cobra.Command {
	modes := []struct {
		use, short, long string
		access           config.Access
	}{
		{"disable", "Disable a resource, or an entity on it", `Disable a resource (--resource alone), or one entity on it (--entity), or an
entity on every resource (--resource _default_): acquires are refused (403).`, config.AccessDisabled},
		{"enable", "Enable a resource, or carve an entity out of a disabled one", `Store "enabled" (false) on a resource, or on an entity: on an entity it is a
carve-out that re-admits it to a disabled resource.`, config.AccessEnforce},
		{"bypass", "Waive the limits of a resource, or of an entity on it", `Bypass the limits: acquires are admitted and their consumption counted, but no
balance is debited (the bucket's own write-capacity limit still binds). Needs
the table's readers at 0.17.0 or later.`, config.AccessBypass},
		{"inherit", "Clear the access setting: the next level decides", `Remove the access setting of the resource, or of the entity on it: the next
level (entity on the resource, entity default, resource) decides.`, config.AccessInherit},
	}
	var subs []*cobra.Command
	for _, m := range modes {
		var entity, resource string
		cmd := &cobra.Command{
			Use:   m.use + " --resource R [--entity E]",
			Short: m.short,
			Long: m.long + `

The setting is recorded in the audit trail (the entity's, else the
resource's), and every bucket in its scope is re-stamped before the command
returns: a bar shows them on a terminal, and the result counts them.`,
			Example: fmt.Sprintf(`  zl access %[1]s --resource gpt-4
  zl access %[1]s --resource gpt-4 --entity key-1`, m.use),
			Args: noArgs,
			RunE: a.Bind(func(ctx context.Context, cmd *cobra.Command, _ []string) error {
				return a.accessSet(ctx, cmd.CommandPath(), entity, resource, m.access)
			}),
		}
		cmd.Flags().StringVar(&resource, "resource", "", "the resource (_default_ with --entity: every resource)")
		cmd.Flags().StringVar(&entity, "entity", "", "the entity (default: the resource itself)")
		subs = append(subs, cmd)
	}
	return group("access", "Disable, enable, bypass or clear access to a resource",
		`Access says who may use a resource: the first explicit setting of the entity
on the resource, the entity on every resource, then the resource decides.
Soft limits, which overdraw instead of rejecting, are set with the limits
themselves (LIMIT:soft, e.g. zl resource set gpt-4 rpm:100/min:soft).`,
		subs...)
}

// accessChanged is what an access command did.
type accessChanged struct {
	Namespace string       `json:"namespace"`
	Entity    string       `json:"entity"`
	Resource  string       `json:"resource"`
	Access    string       `json:"access"`
	Buckets   bucketCounts `json:"buckets"`
}

func (v accessChanged) Tables() []output.Table {
	return []output.Table{{
		Title:   fmt.Sprintf("Access of %s (namespace %s)", targetName(v.Entity, v.Resource), v.Namespace),
		Columns: []string{"ENTITY", "RESOURCE", "ACCESS"},
		Rows:    [][]string{{dash(v.Entity), v.Resource, v.Access}},
		Caption: v.Buckets.caption(),
	}}
}

func (a *App) accessSet(ctx context.Context, path, entity, resource string, mode config.Access) error {
	if resource == "" {
		return usageErrorf("%s needs --resource R (with --entity E, _default_ is every resource)", path)
	}
	if entity == "" {
		if err := schema.ValidateResource(resource); err != nil {
			return err
		}
	} else {
		if err := schema.ValidateEntityID(entity); err != nil {
			return err
		}
		if err := schema.ValidateConfigScope(resource); err != nil {
			return err
		}
	}
	ctl, ns, err := a.Namespace(ctx)
	if err != nil {
		return err
	}
	counts, err := a.fanout(targetName(entity, resource), func() (control.Progress, error) {
		return ctl.SetAccess(ctx, ns, entity, resource, mode, a.Principal())
	})
	if err != nil {
		return err
	}
	return a.Render(accessChanged{Namespace: a.flags.namespace, Entity: entity, Resource: resource, Access: mode.String(), Buckets: counts})
}
