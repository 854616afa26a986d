// Package handler is the provisioner function's handler (docs/design.md §12):
// it decodes a Lambda payload, answers CloudFormation requests for limits
// resources and the version stamp through internal/customresource, and
// plans or applies direct invocations with core/provision. The function's
// main wires it; the command line and `make run` call RunEvent and
// RunManifest, the same code the -event and -manifest flags run.
package handler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/cfn"

	"github.com/zae-limiter/zae-limiter-go/core/config"
	"github.com/zae-limiter/zae-limiter-go/core/manifest"
	"github.com/zae-limiter/zae-limiter-go/core/provision"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
	"github.com/zae-limiter/zae-limiter-go/core/version"
	"github.com/zae-limiter/zae-limiter-go/internal/customresource"
)

// Settings are the function's configuration (its environment).
type Settings struct {
	// Table is the stack's table (TABLE_NAME); a manifest or invocation
	// may name another.
	Table string
	// StampTTL bounds bypass and soft stamp deadlines
	// (ZAEL_STAMP_TTL_SECONDS, default 60 s).
	StampTTL time.Duration
	// LambdaVersion is the lambda_version stamped when the version
	// stamp's LambdaVersion property is absent (ZAEL_LAMBDA_VERSION,
	// default config.BuildVersion). The bound is the build's own version:
	// a stamp, or this setting, above config.BuildVersion is refused.
	LambdaVersion string
	// Clock is the wall clock (default time.Now).
	Clock func() time.Time
	// Respond tunes the CloudFormation answers.
	Respond customresource.Options
}

// Handler serves every invocation of the provisioner function.
type Handler struct {
	db            provision.DB
	table         string
	stampTTL      time.Duration
	lambdaVersion string
	clock         func() time.Time
	log           *slog.Logger
	respond       customresource.Options
}

// New returns the handler of table through db.
func New(db provision.DB, s Settings, log *slog.Logger) *Handler {
	if s.Clock == nil {
		s.Clock = time.Now
	}
	if s.LambdaVersion == "" {
		s.LambdaVersion = config.BuildVersion
	}
	if s.Respond.Logger == nil {
		s.Respond.Logger = log
	}
	return &Handler{db: db, table: s.Table, stampTTL: s.StampTTL, lambdaVersion: s.LambdaVersion,
		clock: s.Clock, log: log, respond: s.Respond}
}

// Invoke is the Lambda entry point. No panic escapes it: one in a
// CloudFormation request's handler is answered FAILED (customresource), and
// any other, such as one in a direct invocation, is returned as a
// *customresource.PanicError and logged with its stack.
func (h *Handler) Invoke(ctx context.Context, raw json.RawMessage) (res any, err error) {
	defer func() {
		if v := recover(); v != nil {
			pe := &customresource.PanicError{Value: v, Stack: debug.Stack()}
			h.log.Error("provisioner: invocation panicked", "panic", fmt.Sprint(v), "stack", string(pe.Stack))
			res, err = nil, pe
		}
	}()
	ev, err := decodeEvent(raw)
	if err != nil {
		h.log.Error("provisioner: refused event", "error", err)
		if ev.undecoded != nil {
			// CloudFormation waits for an answer: it gets the reason. A
			// send that fails is logged; the decode error is returned
			// either way.
			_, _ = customresource.Fail(ctx, *ev.undecoded, err, h.respond)
		}
		return nil, err
	}
	if ev.request != nil {
		resp, err := customresource.Run(ctx, *ev.request, h.customResource, h.respond)
		if err != nil {
			return nil, err
		}
		return resp, nil
	}
	return h.invoke(ctx, *ev.invocation)
}

// customResource dispatches a CloudFormation request by resource type.
func (h *Handler) customResource(ctx context.Context, ev cfn.Event) (string, map[string]string, error) {
	switch ev.RequestType {
	case cfn.RequestCreate, cfn.RequestUpdate, cfn.RequestDelete:
	default:
		return "", nil, errUnknownRequestType
	}
	if ev.ResourceType == versionStampType {
		return h.versionStamp(ctx, ev)
	}
	if ev.RequestType == cfn.RequestDelete {
		return h.deleteLimits(ctx, ev)
	}
	return h.applyLimits(ctx, ev)
}

// physicalID is the id of a limits resource: stable per namespace, so an
// Update is a replacement only when the namespace changes.
func physicalID(table, ns string) string { return table + "/" + ns + "/limits-provisioner" }

// parsePhysicalID reads a limits resource's id back.
func parsePhysicalID(id string) (table, ns string, ok bool) {
	rest, found := strings.CutSuffix(id, "/limits-provisioner")
	if !found {
		return "", "", false
	}
	i := strings.LastIndexByte(rest, '/')
	if i < 0 {
		return "", "", false
	}
	table, ns = rest[:i], rest[i+1:]
	if schema.ValidateStackName(table) != nil || schema.ValidateNamespaceID(ns) != nil {
		return "", "", false
	}
	return table, ns, true
}

// applyLimits handles Create and Update of a limits resource.
func (h *Handler) applyLimits(ctx context.Context, ev cfn.Event) (string, map[string]string, error) {
	m, err := manifest.FromProperties(ev.ResourceProperties)
	if err != nil {
		return "", nil, err
	}
	table := h.table
	if m.TableName != "" {
		table = m.TableName
	}
	p := h.provisioner(table)
	ns, err := namespaceID(ctx, p, m.NamespaceID, m.Namespace)
	if err != nil {
		return "", nil, err
	}
	res, err := p.Apply(ctx, ns, m, principal(ev))
	if err != nil {
		var cw *provision.ConfigWriteError
		if errors.As(err, &cw) {
			// Something was written: a Delete of this id must find it.
			return physicalID(table, ns), nil, err
		}
		return "", nil, err
	}
	return physicalID(table, ns), h.report(res), nil
}

// deleteLimits applies the empty manifest. A Delete never wedges a stack:
// an id this provisioner never gave (`failed` after a failed Create, or
// anything else) and a namespace that no longer resolves answer SUCCESS
// with no changes.
func (h *Handler) deleteLimits(ctx context.Context, ev cfn.Event) (string, map[string]string, error) {
	table, ns, ok := parsePhysicalID(ev.PhysicalResourceID)
	if !ok {
		h.log.Info("provisioner: delete of an id never provisioned: nothing to do", "physical_id", ev.PhysicalResourceID)
		return ev.PhysicalResourceID, map[string]string{"Status": "skipped"}, nil
	}
	p := h.provisioner(table)
	name, err := p.Store().NamespaceName(ctx, ns)
	var nf *config.NamespaceNotFoundError
	var st *config.NamespaceStateError
	switch {
	case errors.As(err, &nf), errors.As(err, &st):
		h.log.Info("provisioner: delete of a namespace that no longer resolves: nothing to do", "namespace", ns, "reason", err.Error())
		return ev.PhysicalResourceID, map[string]string{"Status": "skipped"}, nil
	case err != nil:
		return "", nil, err
	}
	res, err := p.Apply(ctx, ns, manifest.Empty(name), principal(ev))
	if err != nil {
		return "", nil, err
	}
	return ev.PhysicalResourceID, h.report(res), nil
}

// report is the response Data of an apply: string scalars only, so the
// body stays small whatever the manifest; the full error list goes to the
// log.
func (h *Handler) report(res *provision.Result) map[string]string {
	for _, e := range res.Errors {
		h.log.Warn("provisioner: post-commit problem (the config is applied; the next apply finishes it)", "error", e)
	}
	status := "applied"
	if !res.StateWritten {
		status = "unchanged"
	}
	return map[string]string{
		"Status": status, "Created": strconv.Itoa(res.Created), "Updated": strconv.Itoa(res.Updated),
		"Deleted": strconv.Itoa(res.Deleted), "ErrorCount": strconv.Itoa(len(res.Errors)), "AppliedHash": res.AppliedHash,
	}
}

// versionStamp handles the version record resource (docs/design.md §12;
// decisions P33): it writes schema_version and lambda_version and never
// lowers client_min_version. A Delete changes nothing. Before any write it
// refuses a LambdaVersion above this build (config.BuildVersion: the
// stamp promises readers that must be deployed), a LambdaVersion setting
// above it (the default stamped when the property is absent), and a
// SchemaVersion of another major than this code's (config.SchemaVersion:
// every client of this code would refuse the table) or above it.
func (h *Handler) versionStamp(ctx context.Context, ev cfn.Event) (string, map[string]string, error) {
	table, _ := ev.ResourceProperties["TableName"].(string)
	if table == "" {
		table = h.table
	}
	id := table + "/version-stamp"
	if ev.RequestType == cfn.RequestDelete {
		return ev.PhysicalResourceID, nil, nil
	}
	lv, _ := ev.ResourceProperties["LambdaVersion"].(string)
	sv, _ := ev.ResourceProperties["SchemaVersion"].(string)
	if err := checkStamp(lv, sv, h.lambdaVersion); err != nil {
		return "", nil, err
	}
	if lv == "" {
		lv = h.lambdaVersion
	}
	if sv == "" {
		sv = config.SchemaVersion
	}
	st := config.NewStore(h.db, table, config.WithCacheTTL(-1), config.WithClock(h.clock), config.WithLogger(h.log))
	if err := st.WriteVersion(ctx, config.VersionRecord{SchemaVersion: sv, LambdaVersion: lv, UpdatedBy: principal(ev)}); err != nil {
		return "", nil, err
	}
	rec, _, err := st.ReadVersion(ctx)
	if err != nil {
		return "", nil, err
	}
	return id, map[string]string{"LambdaVersion": rec.LambdaVersion, "SchemaVersion": rec.SchemaVersion, "ClientMinVersion": rec.ClientMinVersion}, nil
}

// checkStamp refuses a stamp of lambda version lv (property; "" for the
// setting's) and schema version sv ("" for this code's) that would promise
// what this build does not do. Each refusal names both versions.
func checkStamp(lv, sv, setting string) error {
	build, err := version.Parse(config.BuildVersion)
	if err != nil {
		return fmt.Errorf("provisioner: own build version: %w", err)
	}
	own, err := version.Parse(config.SchemaVersion)
	if err != nil {
		return fmt.Errorf("provisioner: own schema version: %w", err)
	}
	set, err := version.Parse(setting)
	if err != nil {
		return fmt.Errorf("provisioner: the function's LambdaVersion setting (ZAEL_LAMBDA_VERSION): %w", err)
	}
	if set.Compare(build) > 0 {
		return fmt.Errorf("provisioner: the function's LambdaVersion setting %s (ZAEL_LAMBDA_VERSION) is newer than the deployed code (%s): the stamp would promise readers that are not there", setting, config.BuildVersion)
	}
	if lv != "" {
		claimed, err := version.Parse(lv)
		if err != nil {
			return fmt.Errorf("provisioner: LambdaVersion: %w", err)
		}
		if claimed.Compare(build) > 0 {
			return fmt.Errorf("provisioner: LambdaVersion %s is newer than the deployed code (%s): the stamp would promise readers that are not there", lv, config.BuildVersion)
		}
	}
	if sv != "" {
		schemaV, err := version.Parse(sv)
		if err != nil {
			return fmt.Errorf("provisioner: SchemaVersion: %w", err)
		}
		switch {
		case schemaV.Major != own.Major:
			return fmt.Errorf("provisioner: SchemaVersion %s is of another major version than this code's schema (%s): every client of this code would refuse the table", sv, config.SchemaVersion)
		case schemaV.Compare(own) > 0:
			return fmt.Errorf("provisioner: SchemaVersion %s is newer than this code's schema (%s): the stamp would describe a table this code does not write", sv, config.SchemaVersion)
		}
	}
	return nil
}

// principal is `cfn:{stack name}`, for the audit trail and updated_by.
func principal(ev cfn.Event) string {
	// arn:aws:cloudformation:{region}:{account}:stack/{name}/{guid}
	parts := strings.Split(ev.StackID, "/")
	if len(parts) >= 2 && parts[1] != "" {
		return "cfn:" + parts[1]
	}
	return "cfn"
}

// invocationResult is the answer to a direct invocation.
type invocationResult struct {
	Status  string         `json:"status"`
	Changes []changeReport `json:"changes"`
	Created int            `json:"created,omitempty"`
	Updated int            `json:"updated,omitempty"`
	Deleted int            `json:"deleted,omitempty"`
	Errors  []string       `json:"errors,omitempty"`
}

type changeReport struct {
	Action string `json:"action"`
	Level  string `json:"level"`
	Target string `json:"target"`
	What   string `json:"what,omitempty"`
}

// invoke handles a direct plan or apply.
func (h *Handler) invoke(ctx context.Context, inv invocation) (*invocationResult, error) {
	m, err := manifest.FromDocument(inv.Manifest)
	if err != nil {
		return nil, err
	}
	table := h.table
	if inv.TableName != "" {
		table = inv.TableName
	}
	p := h.provisioner(table)
	ns, err := namespaceID(ctx, p, inv.NamespaceID, m.Namespace)
	if err != nil {
		return nil, err
	}
	if inv.Action == "plan" {
		pl, err := p.Plan(ctx, ns, m)
		if err != nil {
			return nil, err
		}
		return &invocationResult{Status: "planned", Changes: reports(pl.Changes)}, nil
	}
	res, err := p.Apply(ctx, ns, m, "invoke")
	if err != nil {
		return nil, err
	}
	return &invocationResult{Status: "applied", Changes: reports(res.Changes), Created: res.Created,
		Updated: res.Updated, Deleted: res.Deleted, Errors: res.Errors}, nil
}

func reports(cs []provision.Change) []changeReport {
	out := make([]changeReport, len(cs))
	for i, c := range cs {
		out[i] = changeReport{Action: string(c.Action), Level: string(c.Target.Kind), Target: c.Target.String(), What: strings.Join(c.What, ", ")}
	}
	return out
}

// namespaceID is id when given, else the id of the live namespace name.
func namespaceID(ctx context.Context, p *provision.Provisioner, id, name string) (string, error) {
	if id != "" {
		return id, nil
	}
	id, err := p.Store().ResolveNamespace(ctx, name)
	if err != nil {
		return "", fmt.Errorf("provisioner: namespace %q: %w", name, err)
	}
	return id, nil
}

func (h *Handler) provisioner(table string) *provision.Provisioner {
	return provision.New(h.db, table, provision.Options{Clock: h.clock, StampTTL: h.stampTTL, Logger: h.log})
}
