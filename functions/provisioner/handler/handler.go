// Package handler is the provisioner function's handler (docs/design.md §12):
// it decodes a Lambda payload, answers CloudFormation requests for limits
// resources and the version stamp through functions/provisioner/customresource, and
// plans or applies direct invocations with core/provision. The function's
// main wires it; the command line and `make run` call RunEvent and
// RunManifest, the same code the -event and -manifest flags run.
package handler

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
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
	"github.com/zae-limiter/zae-limiter-go/functions/provisioner/customresource"
)

// Handler serves every invocation of the provisioner function.
type Handler struct {
	db  provision.DB
	s   Settings // defaults filled in
	log *slog.Logger
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
	return &Handler{db: db, s: s, log: log}
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
			_, _ = customresource.Fail(ctx, *ev.undecoded, err, h.s.Respond)
		}
		return nil, err
	}
	if ev.request != nil {
		resp, err := customresource.Run(ctx, *ev.request, h.customResource, h.s.Respond)
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

// A limits resource's physical id names one incarnation of one resource
// (docs/design.md §12): `{table}/{namespace_id}/limits/{stack}/{logical
// id}/{token}`, the token drawn from the request that created it. The id of
// the earlier provisioner, `{table}/{namespace_id}/limits-provisioner`, is
// still read: it names the namespace's legacy state record (R10).
const (
	physicalIDLimits = "limits"
	legacyIDSuffix   = "/limits-provisioner"
)

// resourceID is a parsed physical id.
type resourceID struct {
	table, ns string
	// owner and token are empty for a legacy id.
	owner  provision.Owner
	token  string
	legacy bool
}

// String is the id r was parsed from.
func (r resourceID) String() string {
	if r.legacy {
		return r.table + "/" + r.ns + legacyIDSuffix
	}
	return strings.Join([]string{r.table, r.ns, physicalIDLimits, r.owner.Stack, r.owner.Name, r.token}, "/")
}

// physicalID is the id of owner's incarnation created by the request
// requestID in namespace ns of table.
func physicalID(table, ns string, owner provision.Owner, requestID string) string {
	sum := sha256.Sum256([]byte(requestID))
	return strings.Join([]string{table, ns, physicalIDLimits, owner.Stack, owner.Name, hex.EncodeToString(sum[:6])}, "/")
}

// parsePhysicalID reads a limits resource's id back.
func parsePhysicalID(id string) (resourceID, bool) {
	if rest, ok := strings.CutSuffix(id, legacyIDSuffix); ok {
		table, ns, ok := strings.Cut(rest, "/")
		if !ok || !isTableName(table) || schema.ValidateNamespaceID(ns) != nil {
			return resourceID{}, false
		}
		return resourceID{table: table, ns: ns, legacy: true}, true
	}
	parts := strings.Split(id, "/")
	if len(parts) != 6 || parts[2] != physicalIDLimits || !isTableName(parts[0]) ||
		schema.ValidateNamespaceID(parts[1]) != nil || len(parts[5]) != 12 {
		return resourceID{}, false
	}
	owner, legacy, err := provision.ParseOwner(parts[3] + "/" + parts[4])
	if err != nil || legacy {
		return resourceID{}, false
	}
	return resourceID{table: parts[0], ns: parts[1], owner: owner, token: parts[5]}, true
}

// isTableName reports a DynamoDB table name: 3–255 letters, digits, `_`,
// `-` and `.` (so never a `/`).
func isTableName(s string) bool {
	if len(s) < 3 || len(s) > 255 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}

// applyLimits handles Create and Update of a limits resource: the resource
// (stack, logical id) applies its manifest as the owner of what it names.
func (h *Handler) applyLimits(ctx context.Context, ev cfn.Event) (string, map[string]string, error) {
	m, tolerated, err := manifestOf(ev)
	// unsure holds the refusal of an Update whose only problems are unknown
	// fields the previous properties did not carry: it stands unless the
	// Update goes back to what this resource last committed (the rollback
	// of a failed Update that had removed the fields, docs/design.md §12).
	var unsure error
	if err != nil && ev.RequestType == cfn.RequestUpdate {
		if unchanged, ok := h.unchangedRefused(ev, err); ok {
			return ev.PhysicalResourceID, unchanged, nil
		}
		if onlyUnknown(err) {
			unsure = err
			m, tolerated, err = manifest.FromPropertiesTolerating(ev.ResourceProperties, func(manifest.Problem) bool { return true })
		}
	}
	if err != nil {
		return "", nil, err
	}
	owner, err := provision.CloudFormationOwner(ev.StackID, ev.LogicalResourceID)
	if err != nil {
		return "", nil, err
	}
	takeOver, adoptLegacy, err := owners(ev.ResourceProperties, "TakeOverFrom")
	if err != nil {
		return "", nil, err
	}
	allowBy, allowLegacy, err := owners(ev.ResourceProperties, "AllowTakeOverBy")
	if err == nil && allowLegacy {
		err = errors.New("provisioner: AllowTakeOverBy: legacy names no owner that could take over")
	}
	if err != nil {
		return "", nil, err
	}
	table := h.s.Table
	if m.TableName != "" {
		table = m.TableName
	}
	p := h.provisioner(table)
	_, nameGiven := ev.ResourceProperties["Namespace"]
	ns, err := namespaceID(ctx, p, m.NamespaceID, m.Namespace, nameGiven)
	if err != nil {
		return "", nil, err
	}

	// The incarnation: an Update keeps its id while it stays in its table
	// and namespace; going back to a namespace the resource still has a
	// record in (the rollback of a move) takes that record's id; anything
	// else is a new incarnation.
	prev, hasPrev := parsePhysicalID(ev.PhysicalResourceID)
	if ev.RequestType != cfn.RequestUpdate {
		hasPrev = false
	}
	rec, err := p.OwnerRecord(ctx, ns, owner)
	if err != nil {
		return "", nil, err
	}
	if unsure != nil && !rollbackToCommitted(ev, m, rec) {
		return "", nil, unsure
	}
	var id string
	switch {
	case hasPrev && !prev.legacy && prev.table == table && prev.ns == ns && prev.owner.Key() == owner.Key():
		id = ev.PhysicalResourceID
	case ev.RequestType == cfn.RequestUpdate && rec.Found && rec.PhysicalID != "":
		id = rec.PhysicalID
	default:
		id = physicalID(table, ns, owner, ev.RequestID)
	}
	customresource.SetPhysicalID(ctx, id)
	req := provision.Request{Owner: owner, PhysicalID: id, TakeOverFrom: takeOver, AllowTakeOverBy: allowBy, Principal: principal(ev),
		AdoptLegacy: adoptLegacy || (hasPrev && prev.legacy && prev.table == table && prev.ns == ns)}

	// A move to another table or namespace: the old incarnation's record
	// says where it went before the first write there, so that a rollback
	// releases it.
	if hasPrev && !prev.legacy && prev.owner.Key() == owner.Key() && (prev.table != table || prev.ns != ns) {
		if err := h.provisioner(prev.table).MarkMoving(ctx, prev.ns, owner, ev.PhysicalResourceID, id); err != nil {
			return "", nil, err
		}
	}
	// Back from a move that did not finish (the rollback of a failed
	// Update): release what the move wrote first.
	if rec.MovingTo != "" && rec.MovingTo != id {
		if to, ok := parsePhysicalID(rec.MovingTo); ok && !to.legacy {
			res, err := h.provisioner(to.table).Release(ctx, to.ns, provision.Request{Owner: owner, PhysicalID: rec.MovingTo, Principal: principal(ev)})
			if err != nil {
				return "", nil, fmt.Errorf("provisioner: release the unfinished move to %s: %w", rec.MovingTo, err)
			}
			h.log.Info("provisioner: released an unfinished move", "physical_id", rec.MovingTo, "skipped", res.Skipped)
		}
	}

	res, err := p.Apply(ctx, ns, m, req)
	if err != nil {
		return "", nil, err
	}
	data := h.report(res)
	if len(tolerated) > 0 {
		for _, pr := range tolerated {
			h.log.Warn("provisioner: ignored a field the resource was already deployed with (fix it in the template)", "field", pr.Path)
		}
		data["IgnoredFields"] = strconv.Itoa(len(tolerated))
	}
	return id, data, nil
}

// manifestOf decodes a Create's or an Update's properties. Unknown fields
// are errors, except in an Update whose previous properties carried the
// same field at the same path: the stack already runs with it, and refusing
// it would fail the rollback too (docs/decisions.md P40). applyLimits
// tolerates one more case: properties that are what the resource last
// committed.
func manifestOf(ev cfn.Event) (*manifest.Manifest, []manifest.Problem, error) {
	if ev.RequestType != cfn.RequestUpdate || len(ev.OldResourceProperties) == 0 {
		m, err := manifest.FromProperties(ev.ResourceProperties)
		return m, nil, err
	}
	old := map[string]bool{}
	if _, err := manifest.FromProperties(ev.OldResourceProperties); err != nil {
		var ime *manifest.InvalidManifestError
		if errors.As(err, &ime) {
			for _, p := range ime.Problems {
				if p.Unknown {
					old[p.Path] = true
				}
			}
		}
	}
	return manifest.FromPropertiesTolerating(ev.ResourceProperties, func(p manifest.Problem) bool { return old[p.Path] })
}

// rollbackToCommitted reports whether an Update brings the resource back
// to what it last committed from properties that are not that: m (its
// properties, unknown fields set aside) hashes to the owner's committed
// manifest, and the previous properties do not. That is CloudFormation's
// rollback of a failed Update, which resends the deployed properties,
// unknown fields and all. A forward Update that only adds an unknown field
// comes from the committed properties and stays refused.
func rollbackToCommitted(ev cfn.Event, m *manifest.Manifest, rec provision.State) bool {
	committed := rec.Committed()
	if !rec.Found || committed == "" || m.Hash() != committed {
		return false
	}
	old, _, err := manifest.FromPropertiesTolerating(ev.OldResourceProperties, func(manifest.Problem) bool { return true })
	return err != nil || old.Hash() != committed
}

// onlyUnknown reports whether err is an invalid manifest whose every
// problem is an unknown field.
func onlyUnknown(err error) bool {
	var ime *manifest.InvalidManifestError
	if !errors.As(err, &ime) || len(ime.Problems) == 0 {
		return false
	}
	for _, p := range ime.Problems {
		if !p.Unknown {
			return false
		}
	}
	return true
}

// unchangedRefused answers an Update whose properties this provisioner
// refuses (err) but which changes nothing it reads: the properties are the
// previous ones but for ServiceToken, and those were refused too. That is
// the Update CloudFormation sends when a stack moves to this provisioner
// (from the Python one, whose properties it may not take: a field it
// ignored), and the rollback of that Update. Both
// answer SUCCESS with nothing written and the problems in the log and in
// Data (`Refused`), so neither wedges the stack; the limits stay as the
// previous provisioner left them, until an Update this one can apply.
func (h *Handler) unchangedRefused(ev cfn.Event, err error) (map[string]string, bool) {
	if len(ev.OldResourceProperties) == 0 || !sameButToken(ev.ResourceProperties, ev.OldResourceProperties) {
		return nil, false
	}
	var ime *manifest.InvalidManifestError
	if !errors.As(err, &ime) {
		return nil, false
	}
	problems := ime.Problems
	for _, p := range problems {
		h.log.Warn("provisioner: the properties are unchanged and cannot be applied here; nothing written (fix them in the template)", "problem", p.String())
	}
	data := h.report(&provision.Result{})
	data["Refused"] = strconv.Itoa(len(problems))
	return data, true
}

// sameButToken reports whether two property sets are equal once
// ServiceToken is left out of both.
func sameButToken(a, b map[string]any) bool {
	strip := func(m map[string]any) map[string]any {
		out := make(map[string]any, len(m))
		for k, v := range m {
			if k != "ServiceToken" {
				out[k] = v
			}
		}
		return out
	}
	return reflect.DeepEqual(strip(a), strip(b))
}

// owners reads the TakeOverFrom or AllowTakeOverBy property (prop): one
// owner or a list (`{stack}/{logical id}`, `manifest:{name}`, `legacy`).
func owners(props map[string]any, prop string) (owners []provision.Owner, legacy bool, err error) {
	var names []string
	switch v := props[prop].(type) {
	case nil:
		return nil, false, nil
	case string:
		if v != "" {
			names = strings.Split(v, ",")
		}
	case []any:
		for _, x := range v {
			s, ok := x.(string)
			if !ok {
				return nil, false, fmt.Errorf("provisioner: %s: %v is not a string", prop, x)
			}
			names = append(names, s)
		}
	default:
		return nil, false, fmt.Errorf("provisioner: %s: %v is neither a string nor a list of strings", prop, v)
	}
	for _, n := range names {
		o, isLegacy, err := provision.ParseOwner(strings.TrimSpace(n))
		if err != nil {
			return nil, false, fmt.Errorf("provisioner: %s: %w", prop, err)
		}
		if isLegacy {
			legacy = true
		} else {
			owners = append(owners, o)
		}
	}
	return owners, legacy, nil
}

// deleteLimits releases what the resource holds. A Delete never wedges a
// stack: an id this provisioner never gave (`failed` after a failed
// Create, or anything else), a namespace that no longer resolves, and an id
// that names another resource or an incarnation the namespace no longer
// records answer SUCCESS with no changes.
func (h *Handler) deleteLimits(ctx context.Context, ev cfn.Event) (string, map[string]string, error) {
	skipped := func(why string, args ...any) (string, map[string]string, error) {
		h.log.Info("provisioner: delete with nothing to do: "+why, append([]any{"physical_id", ev.PhysicalResourceID}, args...)...)
		return ev.PhysicalResourceID, map[string]string{"Status": "skipped", "status": "skipped"}, nil
	}
	rid, ok := parsePhysicalID(ev.PhysicalResourceID)
	if !ok {
		return skipped("an id never provisioned")
	}
	owner, err := provision.CloudFormationOwner(ev.StackID, ev.LogicalResourceID)
	if err != nil {
		return skipped("the request names no resource", "reason", err.Error())
	}
	if !rid.legacy && rid.owner.Key() != owner.Key() {
		return skipped("the id names another resource", "owner", owner.Key())
	}
	p := h.provisioner(rid.table)
	_, err = p.Store().NamespaceName(ctx, rid.ns)
	var nf *config.NamespaceNotFoundError
	var st *config.NamespaceStateError
	switch {
	case errors.As(err, &nf), errors.As(err, &st):
		return skipped("a namespace that no longer resolves", "namespace", rid.ns, "reason", err.Error())
	case err != nil:
		return "", nil, err
	}
	res, err := p.Release(ctx, rid.ns, provision.Request{Owner: owner, PhysicalID: ev.PhysicalResourceID,
		AdoptLegacy: rid.legacy, Principal: principal(ev)})
	if err != nil {
		return "", nil, err
	}
	if res.Skipped {
		return skipped("the namespace records another incarnation of this resource")
	}
	return ev.PhysicalResourceID, h.report(res), nil
}

// report is the response Data of an apply: string scalars only, so the
// body stays small whatever the manifest; the full error list goes to the
// log. The lower-case keys are the Python provisioner's, so a template's
// `!GetAtt Limits.created` keeps resolving.
func (h *Handler) report(res *provision.Result) map[string]string {
	for _, e := range res.Errors {
		h.log.Warn("provisioner: post-commit problem (the config is applied; the next apply finishes it)", "error", e)
	}
	status := "applied"
	if !res.StateWritten {
		status = "unchanged"
	}
	created, updated, deleted := strconv.Itoa(res.Created), strconv.Itoa(res.Updated), strconv.Itoa(res.Deleted)
	return map[string]string{
		"Status": status, "Created": created, "Updated": updated, "Deleted": deleted,
		"TakenOver": strconv.Itoa(res.TakenOver), "ErrorCount": strconv.Itoa(len(res.Errors)), "AppliedHash": res.AppliedHash,
		"status": status, "created": created, "updated": updated, "deleted": deleted,
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
		table = h.s.Table
	}
	id := table + "/version-stamp"
	if ev.RequestType == cfn.RequestDelete {
		return ev.PhysicalResourceID, nil, nil
	}
	lv, _ := ev.ResourceProperties["LambdaVersion"].(string)
	sv, _ := ev.ResourceProperties["SchemaVersion"].(string)
	if err := checkStamp(lv, sv, h.s.LambdaVersion); err != nil {
		return "", nil, err
	}
	if lv == "" {
		lv = h.s.LambdaVersion
	}
	if sv == "" {
		sv = config.SchemaVersion
	}
	st := config.NewStore(h.db, table, config.WithCacheTTL(-1), config.WithClock(h.s.Clock), config.WithLogger(h.log))
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
	// notAbove refuses a lambda version v (named what) above this build.
	notAbove := func(what, v string) error {
		parsed, err := version.Parse(v)
		if err != nil {
			return fmt.Errorf("provisioner: %s: %w", what, err)
		}
		if parsed.Compare(build) > 0 {
			return fmt.Errorf("provisioner: %s %s is newer than the deployed code (%s): the stamp would promise readers that are not there", what, v, config.BuildVersion)
		}
		return nil
	}
	if err := notAbove("the function's LambdaVersion setting (ZAEL_LAMBDA_VERSION)", setting); err != nil {
		return err
	}
	if lv != "" {
		if err := notAbove("LambdaVersion", lv); err != nil {
			return err
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
	table := h.s.Table
	if inv.TableName != "" {
		table = inv.TableName
	}
	p := h.provisioner(table)
	ns, err := namespaceID(ctx, p, inv.NamespaceID, m.Namespace, true)
	if err != nil {
		return nil, err
	}
	owner, err := provision.ManifestOwner(inv.Owner)
	if err != nil {
		return nil, err
	}
	req := provision.Request{Owner: owner, Principal: "invoke"}
	for _, n := range inv.TakeOverFrom {
		o, legacy, err := provision.ParseOwner(n)
		if err != nil {
			return nil, err
		}
		if legacy {
			req.AdoptLegacy = true
		} else {
			req.TakeOverFrom = append(req.TakeOverFrom, o)
		}
	}
	for _, n := range inv.AllowTakeOverBy {
		o, legacy, err := provision.ParseOwner(n)
		if err == nil && legacy {
			err = errors.New("provisioner: allow_take_over_by: legacy names no owner that could take over")
		}
		if err != nil {
			return nil, err
		}
		req.AllowTakeOverBy = append(req.AllowTakeOverBy, o)
	}
	if inv.Action == "plan" {
		pl, err := p.Plan(ctx, ns, m, req)
		if err != nil {
			return nil, err
		}
		return &invocationResult{Status: "planned", Changes: reports(pl.Changes)}, nil
	}
	res, err := p.Apply(ctx, ns, m, req)
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

// namespaceID is the id of the live namespace name, or id when given: then
// it must be a registered namespace's id, and that namespace's name must be
// name when nameGiven. A manifest never writes to a namespace it does not
// name.
func namespaceID(ctx context.Context, p *provision.Provisioner, id, name string, nameGiven bool) (string, error) {
	if id == "" {
		id, err := p.Store().ResolveNamespace(ctx, name)
		if err != nil {
			return "", fmt.Errorf("provisioner: namespace %q: %w", name, err)
		}
		return id, nil
	}
	registered, err := p.Store().NamespaceName(ctx, id)
	if err != nil {
		if nameGiven {
			return "", fmt.Errorf("provisioner: NamespaceId %q is not a live namespace, so it is not the id of %q (Namespace): %w", id, name, err)
		}
		return "", fmt.Errorf("provisioner: NamespaceId %q is not a live namespace: %w", id, err)
	}
	if nameGiven && registered != name {
		return "", &NamespaceMismatchError{NamespaceID: id, Registered: registered, Namespace: name}
	}
	return id, nil
}

// NamespaceMismatchError refuses a manifest whose NamespaceId is the id of
// another namespace than the one it names.
type NamespaceMismatchError struct {
	NamespaceID, Registered, Namespace string
}

// Error implements error, naming both.
func (e *NamespaceMismatchError) Error() string {
	return fmt.Sprintf("provisioner: NamespaceId %s is the id of namespace %q, not of %q (Namespace): refusing to apply one namespace's manifest to another",
		e.NamespaceID, e.Registered, e.Namespace)
}

func (h *Handler) provisioner(table string) *provision.Provisioner {
	return provision.New(h.db, table, provision.Options{Clock: h.s.Clock, StampTTL: h.s.StampTTL, Logger: h.log})
}
