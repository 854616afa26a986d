package control

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/schema"
)

// AuditEvent is one recorded operator change (R13).
type AuditEvent struct {
	// EntityID is the entity the change concerns, `$RESOURCE:{resource}`
	// for a resource-level change, or `$SYSTEM`.
	EntityID string
	// EventID is a ULID: events of one entity sort by time.
	EventID   string
	Timestamp time.Time
	// Action names the change: access_set, access_cleared, …
	Action string
	// Principal is who asked for it ("" when not given).
	Principal string
	// Resource is the resource concerned ("" when none).
	Resource string
	// Details are the change's parameters.
	Details map[string]string
}

// auditEntity is the audit partition of a change: the entity, or
// `$RESOURCE:{resource}` for a resource-level one.
func auditEntity(entity, resource string) string {
	if entity == "" {
		return "$RESOURCE:" + resource
	}
	return entity
}

// auditItem is the R13 item of an event.
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

// Record writes one audit event in namespace ns: ev's EntityID, Action,
// Principal, Resource and Details (EventID and Timestamp are assigned). A
// declarative apply records its changes with it.
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

// AuditEvents lists the events of entity (or `$RESOURCE:{resource}`,
// `$SYSTEM`) in namespace ns, oldest first, read strongly consistently.
func (c *Controls) AuditEvents(ctx context.Context, ns, entity string) ([]AuditEvent, error) {
	if _, _, err := schema.ParseAuditPK(schema.AuditPK(ns, entity)); err != nil {
		return nil, err
	}
	var out []AuditEvent
	var start map[string]types.AttributeValue
	for {
		res, err := c.db.Query(ctx, &dynamodb.QueryInput{
			TableName:                 aws.String(c.table),
			KeyConditionExpression:    aws.String("#pk = :pk"),
			ExpressionAttributeNames:  map[string]string{"#pk": schema.AttrPK},
			ExpressionAttributeValues: map[string]types.AttributeValue{":pk": schema.Str(schema.AuditPK(ns, entity))},
			ConsistentRead:            aws.Bool(true),
			ExclusiveStartKey:         start,
		})
		if err != nil {
			return nil, fmt.Errorf("control: audit events of %s: %w", entity, err)
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
