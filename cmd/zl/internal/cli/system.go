package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/zae-limiter/zae-limiter-go/cmd/zl/internal/output"
	"github.com/zae-limiter/zae-limiter-go/core/config"
	"github.com/zae-limiter/zae-limiter-go/core/control"
)

// limitSyntaxHelp is the limit syntax as the set commands' help shows it.
const limitSyntaxHelp = `A limit is NAME:RATE/PERIOD[:BURST][:soft]: RATE tokens every PERIOD (sec, min,
hour, day or s, m, h, d, optionally with a count: 10/30s), holding up to BURST
(default RATE); soft limits overdraw instead of rejecting. A calendar quota is
NAME:AMOUNT@RESET[:soft]: AMOUNT tokens, back in full at every RESET (hourly,
daily, weekly on Monday, monthly on the 1st, yearly on 1 January, at 00:00, or
a five-field cron; several joined by |), read in --zone (default UTC).`

// systemCommand is `zl system`: the namespace's system level, the limits
// every resource falls back to, and on_unavailable (docs/design.md §7, §8).
func (a *App) systemCommand() *cobra.Command {
	get := &cobra.Command{
		Use:   "get",
		Short: "Show the system limits and on_unavailable",
		Long: `Show the namespace's system level: the limits of every entity and resource
that no other level gives limits to, and on_unavailable, what an acquire does
when DynamoDB cannot answer.`,
		Example: `  zl -N tenant-alpha system get`,
		Args:    noArgs,
		RunE:    a.Bind(a.systemGet),
	}
	var lim limitInput
	var onUnavailable string
	set := &cobra.Command{
		Use:   "set LIMIT...",
		Short: "Replace the system limits",
		Long: `Replace the namespace's system limits with the ones given (every limit not
given is removed), recorded in the namespace's audit trail. Every bucket in use
that resolves its limits from the system level is brought to the new ones
before the command returns: a lowered capacity clamps its balance, a raise
grants nothing at once, a new rate applies from now.

` + limitSyntaxHelp,
		Example: `  zl system set rpm:1000/min tpm:1000000/min:1500000
  zl system set --limit rpm:100/min --on-unavailable block
  zl system set tokens:100000@daily --zone America/New_York`,
		RunE: a.Bind(func(ctx context.Context, _ *cobra.Command, args []string) error {
			return a.systemSet(ctx, &lim, onUnavailable, args)
		}),
	}
	lim.register(set)
	set.Flags().StringVar(&onUnavailable, "on-unavailable", "", "also set on_unavailable: allow or block")
	del := &cobra.Command{
		Use:   "delete",
		Short: "Delete the system limits (asks first)",
		Long: `Delete the namespace's system limits: an acquire by an entity on a resource
with no limits of its own at any level is then refused as misconfigured (no
limits configured), and the buckets in use that resolved from the system level
drop those limits before the command returns (their counters stay).
on_unavailable stays. Asks for confirmation on a terminal; elsewhere it needs
--yes.`,
		Example: `  zl system delete --yes`,
		Args:    noArgs,
		RunE:    a.Bind(a.systemDelete),
	}
	onUn := &cobra.Command{
		Use:   "set-on-unavailable allow|block|unset",
		Short: "Set what acquires do when DynamoDB cannot answer",
		Long: `Set the namespace's on_unavailable: allow admits acquires while DynamoDB
cannot answer, block refuses them; unset leaves it to each limiter's own
option. The system limits are kept. Recorded in the namespace's audit trail.`,
		Example:   `  zl system set-on-unavailable block`,
		Args:      exactArgs("allow|block|unset"),
		ValidArgs: []string{"allow", "block", "unset"},
		RunE:      a.Bind(a.systemSetOnUnavailable),
	}
	return group("system", "Show and change the namespace's system limits and on_unavailable",
		`The system level holds the limits every entity and resource falls back to
when no other level gives them limits, and on_unavailable.`,
		get, set, del, onUn)
}

// systemLevelView is `zl system get` and what set, delete and
// set-on-unavailable leave.
type systemLevelView struct {
	Namespace     string      `json:"namespace"`
	OnUnavailable string      `json:"on_unavailable"`
	Limits        []limitView `json:"limits"`
}

func (v systemLevelView) Tables() []output.Table {
	return []output.Table{limitsTable("System limits of namespace "+v.Namespace, v.Limits,
		"on_unavailable: "+orText(v.OnUnavailable, "unset (each limiter's own option)"))}
}

// systemChanged is what `zl system set` and `zl system delete` did.
type systemChanged struct {
	systemLevelView
	Action  string       `json:"action"`
	Buckets bucketCounts `json:"buckets"`
}

func (v systemChanged) Tables() []output.Table {
	t := v.systemLevelView.Tables()[0]
	t.Title = fmt.Sprintf("System limits of namespace %s %s", v.Namespace, v.Action)
	t.Caption += "\n" + v.Buckets.caption()
	return []output.Table{t}
}

func (a *App) systemView(ctx context.Context, ctl *control.Controls, ns string) (systemLevelView, error) {
	lims, on, err := ctl.Store().GetSystemLimits(ctx, ns)
	if err != nil {
		return systemLevelView{}, err
	}
	return systemLevelView{Namespace: a.flags.namespace, OnUnavailable: string(on), Limits: viewLimits(lims)}, nil
}

func (a *App) systemGet(ctx context.Context, _ *cobra.Command, _ []string) error {
	ctl, ns, err := a.Namespace(ctx)
	if err != nil {
		return err
	}
	v, err := a.systemView(ctx, ctl, ns)
	if err != nil {
		return err
	}
	return a.Render(v)
}

// parseOnUnavailable reads allow, block or unset ("" then).
func parseOnUnavailable(s string) (config.OnUnavailable, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "allow":
		return config.OnUnavailableAllow, nil
	case "block":
		return config.OnUnavailableBlock, nil
	case "unset":
		return "", nil
	}
	return "", usageErrorf("on_unavailable %q is not allow, block or unset", s)
}

func (a *App) systemSet(ctx context.Context, lim *limitInput, onUnavailable string, args []string) error {
	ls, err := lim.read(args)
	if err != nil {
		return err
	}
	var opts config.SystemOptions
	if onUnavailable != "" {
		on, err := parseOnUnavailable(onUnavailable)
		if err != nil || on == "" {
			return usageErrorf("--on-unavailable %q: pass allow or block (zl system set-on-unavailable unset removes it)", onUnavailable)
		}
		opts.OnUnavailable = on
	}
	ctl, ns, err := a.Namespace(ctx)
	if err != nil {
		return err
	}
	counts, err := a.fanout("system limits", func() (control.Progress, error) {
		return ctl.SetSystemLimits(ctx, ns, ls, opts, a.Principal())
	})
	if err != nil {
		return err
	}
	v, err := a.systemView(ctx, ctl, ns)
	if err != nil {
		return err
	}
	return a.Render(systemChanged{systemLevelView: v, Action: "set", Buckets: counts})
}

func (a *App) systemDelete(ctx context.Context, _ *cobra.Command, _ []string) error {
	ctl, ns, err := a.Namespace(ctx)
	if err != nil {
		return err
	}
	if err := a.Confirm("system delete", fmt.Sprintf("Delete the system limits of namespace %s? Entities and resources with no limits of their own will not be limited.", a.flags.namespace)); err != nil {
		return err
	}
	counts, err := a.fanout("system limits", func() (control.Progress, error) {
		return ctl.DeleteSystemLimits(ctx, ns, a.Principal())
	})
	if err != nil {
		return err
	}
	v, err := a.systemView(ctx, ctl, ns)
	if err != nil {
		return err
	}
	return a.Render(systemChanged{systemLevelView: v, Action: "deleted", Buckets: counts})
}

func (a *App) systemSetOnUnavailable(ctx context.Context, _ *cobra.Command, args []string) error {
	on, err := parseOnUnavailable(args[0])
	if err != nil {
		return err
	}
	ctl, ns, err := a.Namespace(ctx)
	if err != nil {
		return err
	}
	if err := ctl.SetOnUnavailable(ctx, ns, on, a.Principal()); err != nil {
		return err
	}
	v, err := a.systemView(ctx, ctl, ns)
	if err != nil {
		return err
	}
	return a.Render(v)
}
