package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/zae-limiter/zae-limiter-go/cmd/zl/internal/output"
	"github.com/zae-limiter/zae-limiter-go/core/config"
	"github.com/zae-limiter/zae-limiter-go/core/control"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
)

// namespaceCommand is `zl namespace`: register, list, show, delete and
// recover namespaces (docs/design.md §2, records R1 and R2).
func (a *App) namespaceCommand() *cobra.Command {
	register := &cobra.Command{
		Use:   "register NAME",
		Short: "Register a namespace and print its id",
		Long: `Register a namespace: its name is recorded with an id minted for it (11
characters), which every item of the namespace carries. Registering a name that
is already registered prints its id and changes nothing. The registration is
recorded in the namespace's audit trail.`,
		Example: `  zl namespace register tenant-alpha`,
		Args:    exactArgs("NAME"),
		RunE:    a.Bind(a.namespaceRegister),
	}
	var withDeleted bool
	list := &cobra.Command{
		Use:   "list",
		Short: "List the namespaces",
		Long: `List the table's namespaces with their ids, state and dates. Deleted
namespaces are left out unless --deleted is given; a deleted namespace keeps its
data and can be recovered (zl namespace recover).`,
		Example: `  zl namespace list
  zl namespace list --deleted -o json`,
		Args: noArgs,
		RunE: a.Bind(func(ctx context.Context, cmd *cobra.Command, args []string) error {
			return a.namespaceList(ctx, withDeleted)
		}),
	}
	list.Flags().BoolVar(&withDeleted, "deleted", false, "list deleted namespaces too")
	show := &cobra.Command{
		Use:   "show [NAME|ID]",
		Short: "Show a namespace: its registration and system settings",
		Long: `Show one namespace: its name, id, state and dates, and its system level (the
limits every resource falls back to, and on_unavailable). NAME defaults to
--namespace; a deleted namespace is shown too, by name or id.`,
		Example: `  zl namespace show tenant-alpha
  zl -N tenant-alpha namespace show -o yaml`,
		Args:              maxArgs("NAME|ID"),
		ValidArgsFunction: a.completeNamespaceArg(false),
		RunE:              a.Bind(a.namespaceShow),
	}
	del := &cobra.Command{
		Use:   "delete NAME",
		Short: "Delete a namespace (it can be recovered)",
		Long: `Delete a namespace: its name stops resolving, so services can no longer open
a limiter on it and the name may be registered again. The delete is soft: the
namespace's limits, entities, buckets and audit trail stay in the table, and
zl namespace recover brings it back as it was. Asks for confirmation on a
terminal; elsewhere it needs --yes. Recorded in the namespace's audit trail.`,
		Example: `  zl namespace delete tenant-alpha
  zl namespace delete tenant-alpha --yes`,
		Args:              exactArgs("NAME"),
		ValidArgsFunction: a.completeNamespaceArg(false),
		RunE:              a.Bind(a.namespaceDelete),
	}
	recover := &cobra.Command{
		Use:   "recover NAME|ID",
		Short: "Bring a deleted namespace back",
		Long: `Recover a deleted namespace with everything it held, under its old id. Give
its name, or its id when the name was deleted more than once (zl namespace list
--deleted shows them). A name registered again since the delete cannot be
recovered over. Recorded in the namespace's audit trail.`,
		Example: `  zl namespace recover tenant-alpha
  zl namespace recover Ab3dEf6hIj0`,
		Args:              exactArgs("NAME|ID"),
		ValidArgsFunction: a.completeNamespaceArg(true),
		RunE:              a.Bind(a.namespaceRecover),
	}
	return group("namespace", "Register, list, show, delete and recover namespaces",
		`A namespace is a tenant of the table: every limit, entity and bucket lives
under one. These commands manage their registrations.`,
		register, list, show, del, recover)
}

func (a *App) completeNamespaceArg(deleted bool) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, prefix string) ([]string, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return a.completeNamespaces(contextOf(cmd), prefix, deleted)
	}
}

func contextOf(cmd *cobra.Command) context.Context {
	if ctx := cmd.Context(); ctx != nil {
		return ctx
	}
	return context.Background()
}

// namespaceView is one registration as zl shows it.
type namespaceView struct {
	Name      string `json:"name"`
	ID        string `json:"id"`
	Status    string `json:"status"`
	CreatedAt string `json:"created_at"`
	DeletedAt string `json:"deleted_at"`
}

func viewNamespace(n config.Namespace) namespaceView {
	return namespaceView{Name: n.Name, ID: n.ID, Status: n.Status, CreatedAt: n.CreatedAt, DeletedAt: n.DeletedAt}
}

func namespaceColumns() []string { return []string{"NAME", "ID", "STATUS", "CREATED", "DELETED"} }

func (n namespaceView) row() []string {
	return []string{n.Name, n.ID, n.Status, n.CreatedAt, dash(n.DeletedAt)}
}

// namespaceList is `zl namespace list`.
type namespaceList struct {
	Namespaces []namespaceView `json:"namespaces"`
}

func (l namespaceList) Tables() []output.Table {
	t := output.Table{Columns: namespaceColumns()}
	for _, n := range l.Namespaces {
		t.Rows = append(t.Rows, n.row())
	}
	if len(l.Namespaces) == 0 {
		t.Caption = "No namespaces: zl namespace register NAME"
	}
	return []output.Table{t}
}

// registered is what `zl namespace register` did.
type registered struct {
	Name    string `json:"name"`
	ID      string `json:"id"`
	Created bool   `json:"created"`
}

func (r registered) Tables() []output.Table {
	state := "registered"
	if !r.Created {
		state = "already registered"
	}
	return []output.Table{{Columns: []string{"NAME", "ID", "RESULT"}, Rows: [][]string{{r.Name, r.ID, state}}}}
}

// namespaceChanged is what delete and recover did.
type namespaceChanged struct {
	Name   string `json:"name"`
	ID     string `json:"id"`
	Status string `json:"status"`
}

func (r namespaceChanged) Tables() []output.Table {
	return []output.Table{{Columns: []string{"NAME", "ID", "STATUS"}, Rows: [][]string{{r.Name, r.ID, r.Status}}}}
}

// namespaceDetail is `zl namespace show`.
type namespaceDetail struct {
	namespaceView
	System systemView `json:"system"`
}

type systemView struct {
	OnUnavailable string      `json:"on_unavailable"`
	Limits        []limitView `json:"limits"`
}

func (d namespaceDetail) Tables() []output.Table {
	reg := output.Table{Title: "Namespace " + d.Name, Columns: []string{"FIELD", "VALUE"}, Rows: [][]string{
		{"name", d.Name}, {"id", d.ID}, {"status", d.Status}, {"created", d.CreatedAt}, {"deleted", dash(d.DeletedAt)},
		{"on_unavailable", orText(d.System.OnUnavailable, "unset (each limiter's own option)")},
	}}
	lim := output.Table{Title: "System limits", Columns: limitColumns()}
	for _, l := range d.System.Limits {
		lim.Rows = append(lim.Rows, l.row())
	}
	if len(d.System.Limits) == 0 {
		lim.Caption = "No system limits."
	}
	return []output.Table{reg, lim}
}

func (a *App) namespaceRegister(ctx context.Context, _ *cobra.Command, args []string) error {
	name := args[0]
	if err := schema.ValidateNamespaceName(name); err != nil {
		return err
	}
	ctl, err := a.Controls(ctx)
	if err != nil {
		return err
	}
	_, err = ctl.Store().ResolveNamespace(ctx, name)
	var nf *config.NamespaceNotFoundError
	created := errors.As(err, &nf)
	if err != nil && !created {
		return err
	}
	id, err := ctl.RegisterNamespace(ctx, name, a.Principal())
	if err != nil {
		return err
	}
	return a.Render(registered{Name: name, ID: id, Created: created})
}

func (a *App) namespaceList(ctx context.Context, withDeleted bool) error {
	ctl, err := a.Controls(ctx)
	if err != nil {
		return err
	}
	all, err := ctl.Store().ListNamespaces(ctx)
	if err != nil {
		return err
	}
	out := namespaceList{Namespaces: []namespaceView{}}
	for _, n := range all {
		if n.Status == config.NamespaceActive || withDeleted {
			out.Namespaces = append(out.Namespaces, viewNamespace(n))
		}
	}
	return a.Render(out)
}

func (a *App) namespaceShow(ctx context.Context, _ *cobra.Command, args []string) error {
	ref := a.flags.namespace
	if len(args) == 1 {
		ref = args[0]
	}
	ctl, err := a.Controls(ctx)
	if err != nil {
		return err
	}
	n, err := a.findNamespace(ctx, ctl, ref, false)
	if err != nil {
		return err
	}
	lims, on, err := ctl.Store().GetSystemLimits(ctx, n.ID)
	if err != nil {
		return err
	}
	return a.Render(namespaceDetail{namespaceView: viewNamespace(n), System: systemView{OnUnavailable: string(on), Limits: viewLimits(lims)}})
}

func (a *App) namespaceDelete(ctx context.Context, _ *cobra.Command, args []string) error {
	name := args[0]
	ctl, err := a.Controls(ctx)
	if err != nil {
		return err
	}
	id, err := a.NamespaceID(ctx, ctl, name)
	if err != nil {
		return err
	}
	q := fmt.Sprintf("Delete namespace %s (id %s)? Services can no longer open it; its data stays and zl namespace recover %s brings it back.", name, id, name)
	if err := a.Confirm("namespace delete", q); err != nil {
		return err
	}
	if _, err := ctl.DeleteNamespace(ctx, name, a.Principal()); err != nil {
		return err
	}
	return a.Render(namespaceChanged{Name: name, ID: id, Status: config.NamespaceDeleted})
}

func (a *App) namespaceRecover(ctx context.Context, _ *cobra.Command, args []string) error {
	ctl, err := a.Controls(ctx)
	if err != nil {
		return err
	}
	n, err := a.findNamespace(ctx, ctl, args[0], true)
	if err != nil {
		return err
	}
	name, err := ctl.RecoverNamespace(ctx, n.ID, a.Principal())
	var taken *config.NamespaceNameTakenError
	var se *config.NamespaceStateError
	switch {
	case errors.As(err, &taken):
		return withHint(err, "delete the new registration first (zl namespace delete %s), then recover %s", taken.Name, taken.ID)
	case errors.As(err, &se) && se.State == config.NamespaceActive:
		return withHint(err, "it is not deleted: nothing to recover")
	case err != nil:
		return err
	}
	return a.Render(namespaceChanged{Name: name, ID: n.ID, Status: config.NamespaceActive})
}

// NamespaceID resolves the live namespace name to its id, with what to do
// when it is not registered or is deleted.
func (a *App) NamespaceID(ctx context.Context, ctl *control.Controls, name string) (string, error) {
	id, err := ctl.Store().ResolveNamespace(ctx, name)
	var nf *config.NamespaceNotFoundError
	var se *config.NamespaceStateError
	switch {
	case errors.As(err, &nf):
		if dead, derr := a.deletedNamed(ctx, ctl, name); derr == nil && len(dead) > 0 {
			return "", withHint(fmt.Errorf("namespace %q is deleted", name), "zl namespace recover %s", recoverRef(name, dead))
		}
		return "", withHint(err, "zl namespace register %s", name)
	case errors.As(err, &se) && se.State == config.NamespaceDeleted:
		return "", withHint(err, "zl namespace recover %s", name)
	}
	return id, err
}

// deletedNamed lists the deleted registrations of name.
func (a *App) deletedNamed(ctx context.Context, ctl *control.Controls, name string) ([]config.Namespace, error) {
	all, err := ctl.Store().ListNamespaces(ctx)
	if err != nil {
		return nil, err
	}
	var out []config.Namespace
	for _, n := range all {
		if n.Name == name && n.Status == config.NamespaceDeleted {
			out = append(out, n)
		}
	}
	return out, nil
}

// recoverRef is what to pass to recover: the name when one deleted
// registration has it, else the latest one's id.
func recoverRef(name string, dead []config.Namespace) string {
	if len(dead) == 1 {
		return name
	}
	latest := dead[0]
	for _, n := range dead[1:] {
		if n.DeletedAt > latest.DeletedAt {
			latest = n
		}
	}
	return latest.ID
}

// findNamespace finds a registration by name or id: the live one of a
// name, else (or with deleted, first) its one deleted registration; an id
// in any state.
func (a *App) findNamespace(ctx context.Context, ctl *control.Controls, ref string, deleted bool) (config.Namespace, error) {
	all, err := ctl.Store().ListNamespaces(ctx)
	if err != nil {
		return config.Namespace{}, err
	}
	var live, dead []config.Namespace
	for _, n := range all {
		switch {
		case n.Name == ref && n.Status == config.NamespaceDeleted:
			dead = append(dead, n)
		case n.Name == ref:
			live = append(live, n)
		}
	}
	if deleted {
		live, dead = dead, live
	}
	switch {
	case len(live) == 1:
		return live[0], nil
	case len(live) > 1:
		return config.Namespace{}, usageErrorf("%d registrations are named %q: give the id (zl namespace list --deleted shows them)", len(live), ref)
	case len(dead) == 1 && !deleted:
		return dead[0], nil
	}
	if schema.ValidateNamespaceID(ref) == nil {
		for _, n := range all {
			if n.ID == ref {
				return n, nil
			}
		}
	}
	if deleted {
		if len(dead) > 0 {
			return config.Namespace{}, withHint(fmt.Errorf("namespace %q is not deleted", ref), "nothing to recover")
		}
		return config.Namespace{}, withHint(fmt.Errorf("no deleted namespace is named %q, nor has that id", ref), "zl namespace list --deleted shows the deleted ones")
	}
	return config.Namespace{}, withHint(&config.NamespaceNotFoundError{Name: ref}, "zl namespace register %s", ref)
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func orText(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
