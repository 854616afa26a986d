package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/zae-limiter/zae-limiter-go/cmd/zl/internal/output"
	"github.com/zae-limiter/zae-limiter-go/core/config"
	"github.com/zae-limiter/zae-limiter-go/core/control"
	"github.com/zae-limiter/zae-limiter-go/core/manifest"
	"github.com/zae-limiter/zae-limiter-go/core/provision"
)

// manifestFlags are the flags of the commands that read a manifest.
type manifestFlags struct {
	file     string
	owner    string
	takeOver []string
	allowBy  []string
}

func (f *manifestFlags) register(cmd *cobra.Command, owners bool) {
	cmd.Flags().StringVarP(&f.file, "file", "f", "", "the limits manifest (YAML or JSON; - for stdin)")
	_ = cmd.MarkFlagFilename("file", "yaml", "yml", "json")
	if owners {
		cmd.Flags().StringVar(&f.owner, "owner", provision.DefaultManifestOwner, "the manifest owner: what it applied, a later apply of the same owner replaces or removes")
		cmd.Flags().StringSliceVar(&f.takeOver, "take-over-from", nil, "owners whose targets this manifest may take (each must consent): {stack}/{logical id}, manifest:{name} or legacy")
		cmd.Flags().StringSliceVar(&f.allowBy, "allow-take-over-by", nil, "owners this owner consents to hand its targets to: {stack}/{logical id} or manifest:{name}")
	}
}

// parseOwners reads owner names as TakeOverFrom and AllowTakeOverBy give
// them; legacy is reported apart.
func parseOwners(flag string, names []string) (owners []provision.Owner, legacy bool, err error) {
	for _, n := range names {
		o, isLegacy, err := provision.ParseOwner(strings.TrimSpace(n))
		if err != nil {
			return nil, false, &UsageError{Err: fmt.Errorf("--%s: %w", flag, err)}
		}
		if isLegacy {
			legacy = true
		} else {
			owners = append(owners, o)
		}
	}
	return owners, legacy, nil
}

// limitsCommand is `zl limits`: the declarative limits manifest of a
// namespace (docs/design.md §12), planned and applied by core/provision,
// the engine the stack's provisioner Lambda runs.
func (a *App) limitsCommand() *cobra.Command {
	var plan, diff, apply, tmpl manifestFlags
	planCmd := &cobra.Command{
		Use:   "plan -f MANIFEST",
		Short: "Show what applying a manifest would change; writes nothing",
		Long: `Plan a limits manifest against its namespace: for every target (the system
level, a resource, an entity on a resource) it names or that its owner applied
before, whether the apply would create, update or delete it, with the limits it
would leave. Nothing is written. A manifest with errors is refused with every
problem and its path.

The owner is the manifest owner given by --owner ("default"): what that owner
applied before and the manifest no longer names is deleted; targets another
owner holds are refused unless --take-over-from names it.`,
		Example: `  zl limits plan -f limits.yaml
  zl limits plan -f limits.yaml --owner team-a -o json`,
		Args: noArgs,
		RunE: a.Bind(func(ctx context.Context, _ *cobra.Command, _ []string) error { return a.limitsPlan(ctx, &plan, false) }),
	}
	plan.register(planCmd, true)
	diffCmd := &cobra.Command{
		Use:   "diff -f MANIFEST",
		Short: "Show the old and new limits of every target a manifest changes",
		Long: `Diff a limits manifest against what its namespace holds: for every target the
apply would change, each limit and setting (disabled, cascade, on_unavailable)
whose value differs, old beside new. Nothing is written.`,
		Example: `  zl limits diff -f limits.yaml
  zl limits diff -f limits.yaml -o yaml`,
		Args: noArgs,
		RunE: a.Bind(func(ctx context.Context, _ *cobra.Command, _ []string) error { return a.limitsPlan(ctx, &diff, true) }),
	}
	diff.register(diffCmd, true)
	applyCmd := &cobra.Command{
		Use:   "apply -f MANIFEST",
		Short: "Apply a manifest to its namespace, after showing the plan",
		Long: `Apply a limits manifest to its namespace: the plan is shown and, on a terminal,
confirmed before anything is written (off a terminal, --yes is needed). A
namespace that is not registered yet is registered first, after its own
confirmation. The apply records its intent, writes the config, records every
change in the audit trail and brings the buckets already in use in line before
it returns (docs/design.md §12): the same engine, in the same order, as the
stack's provisioner. An apply that stops part way is finished by applying again.`,
		Example: `  zl limits apply -f limits.yaml
  zl limits apply -f limits.yaml --yes -o json`,
		Args: noArgs,
		RunE: a.Bind(func(ctx context.Context, _ *cobra.Command, _ []string) error { return a.limitsApply(ctx, &apply) }),
	}
	apply.register(applyCmd, true)
	var stack, logicalID string
	tmplCmd := &cobra.Command{
		Use:   "cfn-template -f MANIFEST",
		Short: "Print a CloudFormation template that applies a manifest from a stack",
		Long: `Print a CloudFormation template (YAML; JSON with -o json) holding the manifest
as a Custom::ZaeLimiterLimits resource, served by the limiter stack's
provisioner: its ServiceToken and TableName are imported from the limiter
stack's exports ({stack}-ProvisionerArn, {stack}-TableName), the stack's name a
parameter that defaults to --stack (or the table's name: a limiter's table is
named after its stack). Deploying it makes the resource the owner of what the
manifest names; to take over targets applied with zl limits apply, pass
--take-over-from manifest:default, after that owner's consent (zl limits
allow-take-over --owner manifest:default --by {stack}/{logical id}). Nothing is
read or written here.`,
		Example: `  zl limits cfn-template -f limits.yaml --stack my-limiter > tenant-limits.yaml
  aws cloudformation deploy --template-file tenant-limits.yaml --stack-name tenant-alpha-limits`,
		Args: noArgs,
		RunE: a.Bind(func(ctx context.Context, _ *cobra.Command, _ []string) error {
			return a.limitsTemplate(&tmpl, stack, logicalID)
		}),
	}
	tmpl.register(tmplCmd, false)
	tmplCmd.Flags().StringSliceVar(&tmpl.takeOver, "take-over-from", nil, "owners whose targets the stack's resource takes over (its TakeOverFrom property)")
	tmplCmd.Flags().StringVar(&stack, "stack", "", "the limiter stack's name (default: the table's name)")
	tmplCmd.Flags().StringVar(&logicalID, "logical-id", "Limits", "the resource's logical id in the template")

	var owner string
	var by []string
	allowCmd := &cobra.Command{
		Use:   "allow-take-over --owner OWNER --by OWNER[,OWNER…]",
		Short: "Let owners take the targets another owner holds (its consent, given by an operator)",
		Long: `Record, on the owner record of --owner in the namespace of --namespace, its
consent that the owners of --by may take its targets: a later apply of one of
them that names --owner in TakeOverFrom (--take-over-from) moves them. An owner
gives the same consent itself with AllowTakeOverBy (--allow-take-over-by); this
is the operator's door for an owner that cannot apply again, such as a stack
that cannot be updated. The consent stays across that owner's own applies, and
is recorded in the namespace's audit trail. Owners are {stack}/{logical id} or
manifest:{name}.`,
		Example: `  zl -N tenant-alpha limits allow-take-over --owner alpha-limits/TenantLimits --by beta-limits/TenantLimits`,
		Args:    noArgs,
		RunE: a.Bind(func(ctx context.Context, _ *cobra.Command, _ []string) error {
			return a.limitsAllowTakeOver(ctx, owner, by)
		}),
	}
	allowCmd.Flags().StringVar(&owner, "owner", "", "the owner whose targets may be taken")
	allowCmd.Flags().StringSliceVar(&by, "by", nil, "the owners that may take them")
	var released string
	releaseCmd := &cobra.Command{
		Use:   "release --owner OWNER",
		Short: "Release what an owner holds, as its stack's Delete would",
		Long: `Release everything --owner holds in the namespace of --namespace, as a
CloudFormation Delete of its resource would: each target goes back to the config
it had before the owner took it (a target it created is deleted), a target it
took goes back to the owner it came from, and its owner record is deleted. Every
change is recorded in the audit trail and reaches the buckets in use. Use it for
a stack that no longer exists whose Delete never reached the provisioner: a new
stack of the same name is refused until then. Asks first (--yes off a
terminal).`,
		Example: `  zl -N tenant-alpha limits release --owner alpha-limits/TenantLimits --yes`,
		Args:    noArgs,
		RunE:    a.Bind(func(ctx context.Context, _ *cobra.Command, _ []string) error { return a.limitsRelease(ctx, released) }),
	}
	releaseCmd.Flags().StringVar(&released, "owner", "", "the owner to release: {stack}/{logical id} or manifest:{name}")

	return group("limits", "Plan, diff and apply limits manifests; write them as CloudFormation",
		`A limits manifest declares a namespace's limits and access settings
(docs/design.md §12). zl plans and applies it with the engine of the stack's
provisioner, or writes the CloudFormation template that has the stack apply it.`,
		planCmd, diffCmd, applyCmd, tmplCmd, allowCmd, releaseCmd)
}

// readManifest reads and validates the manifest of f.file: a missing -f
// and a bad manifest are usage errors (every problem with its path).
func (a *App) readManifest(f *manifestFlags) (*manifest.Manifest, error) {
	if f.file == "" {
		return nil, usageErrorf("no manifest: pass -f FILE (the limits manifest, YAML or JSON)")
	}
	var raw []byte
	var err error
	if f.file == "-" {
		var b bytes.Buffer
		_, err = b.ReadFrom(a.env.Stdin)
		raw = b.Bytes()
	} else {
		raw, err = os.ReadFile(f.file)
	}
	if err != nil {
		return nil, &UsageError{Err: fmt.Errorf("read the manifest: %w", err)}
	}
	m, err := manifest.Parse(raw)
	if err != nil {
		return nil, err
	}
	if a.flags.namespaceSet && a.flags.namespace != m.Namespace {
		return nil, usageErrorf("the manifest is for namespace %q, and --namespace says %q: a manifest applies to the namespace it names", m.Namespace, a.flags.namespace)
	}
	return m, nil
}

// request is the provision request of f: its owner, who may be taken
// over, and the principal the audit trail records.
func (a *App) request(f *manifestFlags) (provision.Request, error) {
	owner, err := provision.ManifestOwner(f.owner)
	if err != nil {
		return provision.Request{}, &UsageError{Err: fmt.Errorf("--owner: %w", err)}
	}
	req := provision.Request{Owner: owner, Principal: a.Principal()}
	if req.TakeOverFrom, req.AdoptLegacy, err = parseOwners("take-over-from", f.takeOver); err != nil {
		return provision.Request{}, err
	}
	var legacy bool
	if req.AllowTakeOverBy, legacy, err = parseOwners("allow-take-over-by", f.allowBy); err != nil {
		return provision.Request{}, err
	}
	if legacy {
		return provision.Request{}, usageErrorf("--allow-take-over-by: legacy names no owner that could take over")
	}
	return req, nil
}

// manifestSetup reads what the manifest commands start from: the manifest
// and the provisioner request of f, the provisioner and the operator door.
func (a *App) manifestSetup(ctx context.Context, f *manifestFlags) (*manifest.Manifest, provision.Request, *provision.Provisioner, *control.Controls, error) {
	m, err := a.readManifest(f)
	if err != nil {
		return nil, provision.Request{}, nil, nil, err
	}
	req, err := a.request(f)
	if err != nil {
		return nil, provision.Request{}, nil, nil, err
	}
	p, err := a.Provisioner(ctx)
	if err != nil {
		return nil, provision.Request{}, nil, nil, err
	}
	ctl, err := a.Controls(ctx)
	if err != nil {
		return nil, provision.Request{}, nil, nil, err
	}
	return m, req, p, ctl, nil
}

func (a *App) limitsPlan(ctx context.Context, f *manifestFlags, diff bool) error {
	m, req, p, ctl, err := a.manifestSetup(ctx, f)
	if err != nil {
		return err
	}
	ns, err := a.NamespaceID(ctx, ctl, m.Namespace)
	var nf *config.NamespaceNotFoundError
	if errors.As(err, &nf) {
		return withHint(fmt.Errorf("namespace %q is not registered, so there is nothing to compare with", m.Namespace),
			"zl namespace register %s, or zl limits apply, which registers it after asking", m.Namespace)
	}
	if err != nil {
		return err
	}
	pl, err := p.Plan(ctx, ns, m, req)
	if err != nil {
		return explainPlan(err)
	}
	if diff {
		return a.Render(viewDiff(m, pl))
	}
	return a.Render(viewPlan(m, pl))
}

// explainPlan adds what to do to a refused plan.
func explainPlan(err error) error {
	var oe *provision.OwnershipError
	if errors.As(err, &oe) {
		var from []string
		for _, c := range oe.Conflicts {
			name := strings.TrimPrefix(c.Owner, "cfn:")
			if !slices.Contains(from, name) {
				from = append(from, name)
			}
		}
		if strings.Contains(err.Error(), "has not consented") {
			return withHint(err, "the owner consents with --allow-take-over-by (AllowTakeOverBy in a stack), or an operator runs zl limits allow-take-over --owner %s --by %s", from[0], "OWNER")
		}
		return withHint(err, "in zl, pass --take-over-from %s to take them over", strings.Join(from, ","))
	}
	return err
}

func (a *App) limitsApply(ctx context.Context, f *manifestFlags) error {
	m, req, p, ctl, err := a.manifestSetup(ctx, f)
	if err != nil {
		return err
	}
	out := applyView{Namespace: m.Namespace, Owner: req.Owner.Key()}
	ns, err := a.NamespaceID(ctx, ctl, m.Namespace)
	var nf *config.NamespaceNotFoundError
	if errors.As(err, &nf) {
		ns, err = a.registerForApply(ctx, ctl, m.Namespace)
		out.Registered = err == nil
	}
	if err != nil {
		return err
	}
	out.NamespaceID = ns
	pl, err := p.Plan(ctx, ns, m, req)
	if err != nil {
		return explainPlan(err)
	}
	if pl.Empty() {
		out.fill(pl)
		return a.Render(out)
	}
	if a.Prompting() {
		if err := output.WriteTables(a.env.Stderr, viewPlan(m, pl).Tables()); err != nil {
			return err
		}
	}
	if err := a.Confirm("limits apply", fmt.Sprintf("Apply %s to namespace %s?", countChanges(pl.Changes), m.Namespace)); err != nil {
		return err
	}
	// What is applied is planned again now, and must be what was shown:
	// the namespace may have changed while the operator read the plan.
	again, err := p.Plan(ctx, ns, m, req)
	if err != nil {
		return explainPlan(err)
	}
	if !samePlan(pl, again) {
		return withHint(errors.New("the namespace changed since the plan was shown; nothing was written"), "run zl limits apply again to see the new plan")
	}
	done := a.Progress("applying to " + m.Namespace)
	res, err := p.ApplyPlan(ctx, again)
	done.Done()
	if err != nil {
		return err
	}
	out.fill(again)
	out.Applied = res.StateWritten
	out.Created, out.Updated, out.Deleted, out.TakenOver = res.Created, res.Updated, res.Deleted, res.TakenOver
	out.Errors = append([]string{}, res.Errors...)
	if err := a.Render(out); err != nil {
		return err
	}
	if len(res.Errors) > 0 {
		return withHint(fmt.Errorf("%d problem(s) after the config was written: %s", len(res.Errors), strings.Join(res.Errors, "; ")),
			"the config is in place; apply again to finish bringing the buckets in line")
	}
	return nil
}

// registerForApply registers the namespace an apply names, after asking.
func (a *App) registerForApply(ctx context.Context, ctl *control.Controls, name string) (string, error) {
	if err := a.Confirm("registering namespace "+name, fmt.Sprintf("Namespace %s is not registered. Register it?", name)); err != nil {
		return "", err
	}
	id, err := ctl.RegisterNamespace(ctx, name, a.Principal())
	if err != nil {
		return "", err
	}
	a.Infof("Registered namespace %s (id %s).", name, id)
	return id, nil
}

func samePlan(a, b *provision.Plan) bool {
	if len(a.Changes) != len(b.Changes) || len(a.TakenOver) != len(b.TakenOver) {
		return false
	}
	for i := range a.Changes {
		if a.Changes[i].String() != b.Changes[i].String() ||
			!slices.Equal(a.Changes[i].After().Limits, b.Changes[i].After().Limits) {
			return false
		}
	}
	return true
}

func countChanges(cs []provision.Change) string {
	if len(cs) == 0 {
		return "the owed fan-outs"
	}
	if len(cs) == 1 {
		return "1 change"
	}
	return strconv.Itoa(len(cs)) + " changes"
}

// changeView is one planned change of a target.
type changeView struct {
	Action string      `json:"action"`
	Kind   string      `json:"kind"`
	Target string      `json:"target"`
	What   []string    `json:"what"`
	Limits []limitView `json:"limits"`
}

func viewChanges(cs []provision.Change) []changeView {
	out := make([]changeView, 0, len(cs))
	for _, c := range cs {
		out = append(out, changeView{
			Action: string(c.Action), Kind: string(c.Target.Kind), Target: c.Target.String(),
			What: append([]string{}, c.What...), Limits: viewLimits(c.After().Limits),
		})
	}
	return out
}

func changesTable(cs []changeView) output.Table {
	t := output.Table{Columns: []string{"ACTION", "KIND", "TARGET", "LIMITS AFTER", "WHAT CHANGES"}}
	for _, c := range cs {
		t.Rows = append(t.Rows, []string{c.Action, c.Kind, c.Target, limitsCell(c.Limits), dash(strings.Join(c.What, "\n"))})
	}
	return t
}

// takenView is a target taken from another owner.
type takenView struct {
	Target string `json:"target"`
	From   string `json:"from"`
}

// planView is `zl limits plan`.
type planView struct {
	Namespace    string       `json:"namespace"`
	NamespaceID  string       `json:"namespace_id"`
	Owner        string       `json:"owner"`
	ManifestHash string       `json:"manifest_hash"`
	Changes      []changeView `json:"changes"`
	Unchanged    int          `json:"unchanged"`
	TakenOver    []takenView  `json:"taken_over"`
}

func viewPlan(m *manifest.Manifest, pl *provision.Plan) planView {
	v := planView{Namespace: m.Namespace, NamespaceID: pl.Namespace, Owner: pl.Request.Owner.Key(), ManifestHash: pl.Hash,
		Changes: viewChanges(pl.Changes), Unchanged: pl.Unchanged, TakenOver: []takenView{}}
	for _, t := range pl.TakenOver {
		v.TakenOver = append(v.TakenOver, takenView{Target: targetLabel(string(t.Target.Kind), t.Target.String()), From: t.Holder})
	}
	return v
}

func (v planView) Tables() []output.Table {
	t := changesTable(v.Changes)
	t.Title = fmt.Sprintf("Plan for namespace %s (owner %s): %s", v.Namespace, v.Owner, tally(v.Changes))
	switch {
	case len(v.Changes) == 0:
		t.Caption = fmt.Sprintf("No changes: %d target(s) already match the manifest.", v.Unchanged)
	case v.Unchanged > 0:
		t.Caption = fmt.Sprintf("%d target(s) unchanged.", v.Unchanged)
	}
	ts := []output.Table{t}
	if len(v.TakenOver) > 0 {
		to := output.Table{Title: "Taken over", Columns: []string{"TARGET", "FROM"}}
		for _, x := range v.TakenOver {
			to.Rows = append(to.Rows, []string{x.Target, x.From})
		}
		ts = append(ts, to)
	}
	return ts
}

// targetLabel names a target for a person: "system", "resource gpt-4",
// "entity key-1/gpt-4".
func targetLabel(kind, target string) string {
	if kind == string(manifest.KindSystem) {
		return target
	}
	return kind + " " + target
}

func tally(cs []changeView) string {
	n := map[string]int{}
	for _, c := range cs {
		n[c.Action]++
	}
	return fmt.Sprintf("%d to create, %d to update, %d to delete", n["create"], n["update"], n["delete"])
}

// diffView is `zl limits diff`.
type diffView struct {
	Namespace   string           `json:"namespace"`
	NamespaceID string           `json:"namespace_id"`
	Owner       string           `json:"owner"`
	Targets     []targetDiffView `json:"targets"`
}

// targetDiffView is one changed target's config before and after.
type targetDiffView struct {
	Action string     `json:"action"`
	Kind   string     `json:"kind"`
	Target string     `json:"target"`
	Before configView `json:"before"`
	After  configView `json:"after"`
}

func viewDiff(m *manifest.Manifest, pl *provision.Plan) diffView {
	v := diffView{Namespace: m.Namespace, NamespaceID: pl.Namespace, Owner: pl.Request.Owner.Key(), Targets: []targetDiffView{}}
	for _, c := range pl.Changes {
		v.Targets = append(v.Targets, targetDiffView{
			Action: string(c.Action), Kind: string(c.Target.Kind), Target: c.Target.String(),
			Before: viewConfig(c.Before()), After: viewConfig(c.After()),
		})
	}
	return v
}

func (v diffView) Tables() []output.Table {
	t := output.Table{
		Title:   fmt.Sprintf("Diff for namespace %s (owner %s)", v.Namespace, v.Owner),
		Columns: []string{"TARGET", "ACTION", "SETTING", "OLD", "NEW"},
	}
	for _, d := range v.Targets {
		target := targetLabel(d.Kind, d.Target)
		rows := d.rows()
		if len(rows) == 0 {
			rows = [][]string{{"-", "-", "-"}}
		}
		for _, r := range rows {
			t.Rows = append(t.Rows, append([]string{target, d.Action}, r...))
		}
	}
	if len(v.Targets) == 0 {
		t.Caption = "No differences: the namespace already matches the manifest."
	}
	return []output.Table{t}
}

// rows lists what differs: each limit by name, then the settings.
func (d targetDiffView) rows() [][]string {
	before, after := map[string]limitView{}, map[string]limitView{}
	var names []string
	for _, l := range d.Before.Limits {
		before[l.Name] = l
		names = append(names, l.Name)
	}
	for _, l := range d.After.Limits {
		after[l.Name] = l
		if _, ok := before[l.Name]; !ok {
			names = append(names, l.Name)
		}
	}
	slices.Sort(names)
	var rows [][]string
	for _, n := range names {
		b, hasB := before[n]
		x, hasA := after[n]
		old, nu := "-", "-"
		if hasB {
			old = b.summary()
		}
		if hasA {
			nu = x.summary()
		}
		if old != nu {
			rows = append(rows, []string{"limit " + n, old, nu})
		}
	}
	for _, s := range [][3]string{
		{"disabled", d.Before.Disabled, d.After.Disabled},
		{"cascade", d.Before.Cascade, d.After.Cascade},
		{"on_unavailable", d.Before.OnUnavailable, d.After.OnUnavailable},
	} {
		if s[1] != s[2] {
			rows = append(rows, []string{s[0], s[1], s[2]})
		}
	}
	return rows
}

// applyView is `zl limits apply`.
type applyView struct {
	Namespace    string       `json:"namespace"`
	NamespaceID  string       `json:"namespace_id"`
	Owner        string       `json:"owner"`
	Registered   bool         `json:"registered"`
	Applied      bool         `json:"applied"`
	ManifestHash string       `json:"manifest_hash"`
	Changes      []changeView `json:"changes"`
	Created      int          `json:"created"`
	Updated      int          `json:"updated"`
	Deleted      int          `json:"deleted"`
	TakenOver    int          `json:"taken_over"`
	Errors       []string     `json:"errors"`
}

func (v *applyView) fill(pl *provision.Plan) {
	v.ManifestHash = pl.Hash
	v.Changes = viewChanges(pl.Changes)
	if v.Errors == nil {
		v.Errors = []string{}
	}
}

func (v applyView) Tables() []output.Table {
	t := changesTable(v.Changes)
	verb := "Applied to"
	if !v.Applied {
		verb = "Nothing to apply to"
	}
	t.Title = fmt.Sprintf("%s namespace %s (owner %s): %d created, %d updated, %d deleted", verb, v.Namespace, v.Owner, v.Created, v.Updated, v.Deleted)
	if v.Registered {
		t.Caption = "The namespace was registered first (id " + v.NamespaceID + ")."
	}
	if len(v.Changes) == 0 {
		t.Caption = strings.TrimSpace(t.Caption + " No changes: the namespace already matches the manifest.")
	}
	ts := []output.Table{t}
	if len(v.Errors) > 0 {
		e := output.Table{Title: "Problems after the config was written", Columns: []string{"PROBLEM"}}
		for _, x := range v.Errors {
			e.Rows = append(e.Rows, []string{x})
		}
		ts = append(ts, e)
	}
	return ts
}

// ownerFlag reads the one owner an --owner flag names.
func ownerFlag(name string) (provision.Owner, error) {
	if name == "" {
		return provision.Owner{}, usageErrorf("no owner: pass --owner {stack}/{logical id} or manifest:{name}")
	}
	os, legacy, err := parseOwners("owner", []string{name})
	if err != nil {
		return provision.Owner{}, err
	}
	if legacy {
		return provision.Owner{}, usageErrorf("--owner: legacy is an earlier provisioner's record, not an owner")
	}
	return os[0], nil
}

// ownerChanged is what allow-take-over and release did.
type ownerChanged struct {
	Namespace string   `json:"namespace"`
	Owner     string   `json:"owner"`
	Allowed   []string `json:"allowed,omitempty"`
	Released  bool     `json:"released,omitempty"`
	Deleted   int      `json:"deleted,omitempty"`
	Restored  int      `json:"restored,omitempty"`
}

func (v ownerChanged) Tables() []output.Table {
	if v.Released {
		return []output.Table{{Title: fmt.Sprintf("Released %s in namespace %s: %d target(s) deleted, %d restored or handed back", v.Owner, v.Namespace, v.Deleted, v.Restored)}}
	}
	return []output.Table{{Title: fmt.Sprintf("%s in namespace %s may now be taken over by %s", v.Owner, v.Namespace, strings.Join(v.Allowed, ", "))}}
}

// namespaceProvisioner is the id of the namespace --namespace names and
// the provisioner.
func (a *App) namespaceProvisioner(ctx context.Context) (string, *provision.Provisioner, error) {
	_, ns, err := a.Namespace(ctx)
	if err != nil {
		return "", nil, err
	}
	p, err := a.Provisioner(ctx)
	return ns, p, err
}

func (a *App) limitsAllowTakeOver(ctx context.Context, ownerName string, byNames []string) error {
	owner, err := ownerFlag(ownerName)
	if err != nil {
		return err
	}
	by, legacy, err := parseOwners("by", byNames)
	if err != nil {
		return err
	}
	if len(by) == 0 || legacy {
		return usageErrorf("--by: name the owners that may take over: {stack}/{logical id} or manifest:{name}")
	}
	ns, p, err := a.namespaceProvisioner(ctx)
	if err != nil {
		return err
	}
	if err := p.AllowTakeOver(ctx, ns, owner, by, a.Principal()); err != nil {
		return err
	}
	v := ownerChanged{Namespace: a.flags.namespace, Owner: owner.Key()}
	for _, o := range by {
		v.Allowed = append(v.Allowed, o.Key())
	}
	return a.Render(v)
}

func (a *App) limitsRelease(ctx context.Context, ownerName string) error {
	owner, err := ownerFlag(ownerName)
	if err != nil {
		return err
	}
	ns, p, err := a.namespaceProvisioner(ctx)
	if err != nil {
		return err
	}
	if err := a.Confirm("limits release", fmt.Sprintf("Release everything %s holds in namespace %s?", owner.Key(), a.flags.namespace)); err != nil {
		return err
	}
	res, err := p.Release(ctx, ns, provision.Request{Owner: owner, Principal: a.Principal()})
	if err != nil {
		return err
	}
	if res.Skipped {
		return withHint(fmt.Errorf("%s holds nothing in namespace %s", owner.Key(), a.flags.namespace), "zl namespace show %s lists the owners", a.flags.namespace)
	}
	if err := a.Render(ownerChanged{Namespace: a.flags.namespace, Owner: owner.Key(), Released: true, Deleted: res.Deleted, Restored: res.Updated}); err != nil {
		return err
	}
	if len(res.Errors) > 0 {
		return withHint(fmt.Errorf("%d problem(s) after the config was written: %s", len(res.Errors), strings.Join(res.Errors, "; ")),
			"run zl limits apply for the owners that hold these targets now to finish bringing the buckets in line")
	}
	return nil
}
