package control

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/internal/ulid"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
)

// AuditEvent is one recorded operator change: who changed what, and when.
// Events are kept for Options.AuditRetention, also after the entity they
// concern is deleted.
type AuditEvent struct {
	// EntityID is the audit trail the event is in: the entity the change
	// concerns, ResourceTrail(resource) for a change of a resource's own
	// settings, or SystemTrail for a namespace-wide one.
	EntityID string
	// EventID is a ULID: the events of one trail sort by time.
	EventID string
	// Timestamp is when the change was recorded, to the millisecond.
	Timestamp time.Time
	// Action names the change: namespace_registered, namespace_deleted,
	// namespace_recovered, entity_created,
	// entity_deleted, limits_set, limits_deleted, access_set,
	// access_cleared, cascade_set, cascade_cleared, on_unavailable_set,
	// bucket_reset or bucket_topped_up.
	Action string
	// Principal is who asked for it ("" when not given).
	Principal string
	// Resource is the resource concerned ("" when none).
	Resource string
	// Details are the change's parameters.
	Details map[string]string
}

// SystemTrail is the audit trail of a namespace's own changes: its
// registration, its system limits and on_unavailable.
const SystemTrail = "$SYSTEM"

// ResourceTrail is the audit trail of the changes to a resource's own
// settings (its limits, access and cascade policy); the changes of an
// entity's settings on the resource are in the entity's trail.
func ResourceTrail(resource string) string { return "$RESOURCE:" + resource }

// auditEntity is the audit trail of a change: the entity's, or the
// resource's for a resource-level one.
func auditEntity(entity, resource string) string {
	if entity == "" {
		return ResourceTrail(resource)
	}
	return entity
}

// auditItem is the stored item of an event (R13).
func (c *Controls) auditItem(ns, entity, action, principal, resource string, details map[string]string) (map[string]types.AttributeValue, error) {
	now := c.now()
	id, err := c.ids.New(now, c.entropy)
	if err != nil {
		return nil, err
	}
	it := schema.AuditItemKeys(ns, entity, id).Item()
	it[schema.AttrEntityID] = schema.Str(entity)
	it[schema.AttrEventID] = schema.Str(id)
	it[schema.AttrTimestamp] = schema.Str(now.UTC().Format("2006-01-02T15:04:05.000Z"))
	it[schema.AttrAction] = schema.Str(action)
	it[schema.AttrPrincipal] = strOrNull(principal)
	it[schema.AttrResource] = strOrNull(resource)
	m := make(map[string]types.AttributeValue, len(details))
	for k, v := range details {
		m[k] = schema.Str(v)
	}
	it[schema.AttrDetails] = &types.AttributeValueMemberM{Value: m}
	it[schema.AttrTTL] = schema.Num(now.Add(c.audit).Unix())
	return it, nil
}

// Record writes one audit event in namespace ns: ev's EntityID (the
// trail), Action, Principal, Resource and Details; EventID and Timestamp
// are assigned. A declarative apply (core/provision) records its changes
// with it; the Controls' own writes record theirs themselves.
func (c *Controls) Record(ctx context.Context, ns string, ev AuditEvent) error {
	if _, _, err := schema.ParseAuditPK(schema.AuditPK(ns, ev.EntityID)); err != nil {
		return err
	}
	return c.recordAudit(ctx, ns, ev.EntityID, ev.Action, ev.Principal, ev.Resource, ev.Details)
}

// recordAudit writes one event.
func (c *Controls) recordAudit(ctx context.Context, ns, entity, action, principal, resource string, details map[string]string) error {
	it, err := c.auditItem(ns, entity, action, principal, resource, details)
	if err != nil {
		return fmt.Errorf("control: audit: %w", err)
	}
	if _, err := c.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(c.table), Item: it}); err != nil {
		return fmt.Errorf("control: audit: %w", err)
	}
	return nil
}

// AuditEvents lists the events of one audit trail of namespace ns, oldest
// first, read strongly consistently. trail is an entity's id (the changes
// of its settings, the resets and top-ups of its buckets),
// ResourceTrail(resource) or SystemTrail.
func (c *Controls) AuditEvents(ctx context.Context, ns, trail string) ([]AuditEvent, error) {
	if _, _, err := schema.ParseAuditPK(schema.AuditPK(ns, trail)); err != nil {
		return nil, err
	}
	var out []AuditEvent
	var start map[string]types.AttributeValue
	for {
		res, err := c.db.Query(ctx, &dynamodb.QueryInput{
			TableName:                 aws.String(c.table),
			KeyConditionExpression:    aws.String("#pk = :pk"),
			ExpressionAttributeNames:  map[string]string{"#pk": schema.AttrPK},
			ExpressionAttributeValues: map[string]types.AttributeValue{":pk": schema.Str(schema.AuditPK(ns, trail))},
			ConsistentRead:            aws.Bool(true),
			ExclusiveStartKey:         start,
		})
		if err != nil {
			return nil, fmt.Errorf("control: audit events of %s: %w", trail, err)
		}
		for _, it := range res.Items {
			out = append(out, decodeAudit(it))
		}
		if len(res.LastEvaluatedKey) == 0 {
			return out, nil
		}
		start = res.LastEvaluatedKey
	}
}

// AuditQuery selects the events of one audit trail a page at a time.
type AuditQuery struct {
	// Since keeps the events recorded at or after it (to the
	// millisecond); zero keeps every event.
	Since time.Time
	// Limit is the most events a page holds; 0 or less is no limit.
	Limit int
	// NewestFirst pages from the latest event back (the default is
	// oldest first, as AuditEvents).
	NewestFirst bool
	// After is the page token a previous page returned: the page goes on
	// past that event, in the same order. "" starts at the beginning.
	After string
}

// zeroEntropy is the entropy of the smallest ULID of a millisecond.
type zeroEntropy struct{}

func (zeroEntropy) Read(b []byte) (int, error) {
	clear(b)
	return len(b), nil
}

// AuditPage lists one page of the events of audit trail trail of namespace
// ns (see AuditEvents for the trails), read strongly consistently: those
// recorded at or after q.Since, in the order q asks, at most q.Limit of
// them. next is the token of the page after this one ("" when this page
// reached the trail's end; a full page may be followed by an empty one).
// The events' ids (ULIDs) begin with their time, so Since and the token
// are conditions on the sort key: a page reads only the events it returns.
// A malformed token is a *schema.ValidationError.
func (c *Controls) AuditPage(ctx context.Context, ns, trail string, q AuditQuery) (events []AuditEvent, next string, err error) {
	pk := schema.AuditPK(ns, trail)
	if _, _, err := schema.ParseAuditPK(pk); err != nil {
		return nil, "", err
	}
	if q.After != "" && !validEventID(q.After) {
		return nil, "", schema.NewValidationError("page_token", q.After, "is not an audit event id (a ULID) this trail returned")
	}
	cond := "#pk = :pk AND begins_with(#sk, :sk)"
	values := map[string]types.AttributeValue{":pk": schema.Str(pk), ":sk": schema.Str(schema.SKAuditPrefix)}
	if !q.Since.IsZero() {
		if q.Since.UnixMilli() < 0 {
			q.Since = time.UnixMilli(0)
		}
		low, err := ulid.New(q.Since, zeroEntropy{})
		if err != nil {
			return nil, "", schema.NewValidationError("since", q.Since.UTC().Format(time.RFC3339), err.Error())
		}
		// Every event id sorts below "~" (ULIDs are digits and capitals).
		cond = "#pk = :pk AND #sk BETWEEN :lo AND :hi"
		values = map[string]types.AttributeValue{":pk": schema.Str(pk),
			":lo": schema.Str(schema.SKAuditPrefix + low), ":hi": schema.Str(schema.SKAuditPrefix + "~")}
	}
	var start map[string]types.AttributeValue
	if q.After != "" {
		start = schema.AuditKey(ns, trail, q.After).AttributeValues()
	}
	for {
		in := &dynamodb.QueryInput{
			TableName:                 aws.String(c.table),
			KeyConditionExpression:    aws.String(cond),
			ExpressionAttributeNames:  map[string]string{"#pk": schema.AttrPK, "#sk": schema.AttrSK},
			ExpressionAttributeValues: values,
			ConsistentRead:            aws.Bool(true),
			ScanIndexForward:          aws.Bool(!q.NewestFirst),
			ExclusiveStartKey:         start,
		}
		if q.Limit > 0 {
			in.Limit = aws.Int32(int32(min(q.Limit-len(events), 1000)))
		}
		res, err := c.db.Query(ctx, in)
		if err != nil {
			return nil, "", fmt.Errorf("control: audit events of %s: %w", trail, err)
		}
		for _, it := range res.Items {
			events = append(events, decodeAudit(it))
		}
		switch {
		case len(res.LastEvaluatedKey) == 0:
			return events, "", nil
		case q.Limit > 0 && len(events) >= q.Limit:
			return events, events[len(events)-1].EventID, nil
		}
		start = res.LastEvaluatedKey
	}
}

// validEventID reports whether id has the shape of an event id: 26
// characters of Crockford base32.
func validEventID(id string) bool {
	if len(id) != 26 {
		return false
	}
	for i := 0; i < len(id); i++ {
		ch := id[i]
		if !(ch >= '0' && ch <= '9' || ch >= 'A' && ch <= 'Z') || ch == 'I' || ch == 'L' || ch == 'O' || ch == 'U' {
			return false
		}
	}
	return true
}

func decodeAudit(it map[string]types.AttributeValue) AuditEvent {
	s := func(a string) string {
		if v, ok := it[a].(*types.AttributeValueMemberS); ok {
			return v.Value
		}
		return ""
	}
	ev := AuditEvent{
		EntityID: s(schema.AttrEntityID), EventID: s(schema.AttrEventID), Action: s(schema.AttrAction),
		Principal: s(schema.AttrPrincipal), Resource: s(schema.AttrResource), Details: map[string]string{},
	}
	ev.Timestamp, _ = time.Parse("2006-01-02T15:04:05.000Z", s(schema.AttrTimestamp))
	if m, ok := it[schema.AttrDetails].(*types.AttributeValueMemberM); ok {
		for k, v := range m.Value {
			if v, ok := v.(*types.AttributeValueMemberS); ok {
				ev.Details[k] = v.Value
			}
		}
	}
	return ev
}

func strOrNull(v string) types.AttributeValue {
	if v == "" {
		return &types.AttributeValueMemberNULL{Value: true}
	}
	return schema.Str(v)
}

// recordSetting audits a change of a resource- or entity-scoped setting
// (entity "" is the resource level).
func (c *Controls) recordSetting(ctx context.Context, ns, entity, resource, action, principal, value string) error {
	scope := "entity"
	if entity == "" {
		scope = "resource"
	}
	return c.recordAudit(ctx, ns, auditEntity(entity, resource), action, principal, resource, map[string]string{
		"scope": scope, "value": value,
	})
}
