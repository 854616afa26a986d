package handler

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/aws/aws-lambda-go/cfn"
)

// The resource type of the version stamp (docs/design.md §12); every other
// custom resource type is a limits resource.
const versionStampType = "Custom::ZaeLimiterVersion"

// event is one decoded invocation: a CloudFormation request, or a direct
// plan/apply invocation.
type event struct {
	request    *cfn.Event
	invocation *invocation
	// undecoded, set only with an error, is a CloudFormation request that
	// did not decode but can still be answered FAILED: what answerable
	// read of it.
	undecoded *cfn.Event
}

// invocation is the direct form: {action, manifest, table_name,
// namespace_id, owner, take_over_from, allow_take_over_by}. owner names the manifest owner
// (default "default", docs/design.md §12).
type invocation struct {
	Action       string         `json:"action"`
	Manifest     map[string]any `json:"manifest"`
	TableName    string         `json:"table_name"`
	NamespaceID  string         `json:"namespace_id"`
	Owner        string         `json:"owner"`
	TakeOverFrom []string       `json:"take_over_from"`
	// AllowTakeOverBy are the owners this owner consents to hand its
	// targets to.
	AllowTakeOverBy []string `json:"allow_take_over_by"`
}

// EventError reports an invocation payload that is neither form.
type EventError struct{ Reason string }

// Error implements error.
func (e *EventError) Error() string { return "provisioner: bad event: " + e.Reason }

// decodeEvent reads a Lambda payload: an object with `RequestType` is a
// CloudFormation request (numbers kept as json.Number so that coercion sees
// what was sent), any other object a direct invocation.
func decodeEvent(raw []byte) (event, error) {
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(raw, &probe); err != nil || probe == nil {
		return event{}, &EventError{Reason: "the payload is not a JSON object"}
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if _, ok := probe["RequestType"]; ok {
		var ev cfn.Event
		if err := dec.Decode(&ev); err != nil {
			return event{undecoded: answerable(probe)}, &EventError{Reason: "a CloudFormation request that does not decode: " + err.Error()}
		}
		if ev.ResponseURL == "" {
			return event{}, &EventError{Reason: "a CloudFormation request without a ResponseURL"}
		}
		return event{request: &ev}, nil
	}
	var inv invocation
	if err := dec.Decode(&inv); err != nil {
		return event{}, &EventError{Reason: "an invocation that does not decode: " + err.Error()}
	}
	switch inv.Action {
	case "":
		inv.Action = "plan"
	case "plan", "apply":
	default:
		return event{}, &EventError{Reason: fmt.Sprintf("action %q is neither plan nor apply", inv.Action)}
	}
	if inv.Manifest == nil {
		return event{}, &EventError{Reason: "an invocation without a manifest"}
	}
	return event{invocation: &inv}, nil
}

// errUnknownRequestType answers a request CloudFormation never sends.
var errUnknownRequestType = errors.New("provisioner: RequestType is not Create, Update or Delete")

// answerable reads what a FAILED answer needs from a CloudFormation request
// that does not decode (a number where a string belongs, properties that
// are not an object): nil unless ResponseURL (not empty), StackId,
// RequestId and LogicalResourceId are strings. PhysicalResourceId is kept
// when it is a string (else the answer says `failed`), RequestType and
// ResourceType when they are, for the log.
func answerable(probe map[string]json.RawMessage) *cfn.Event {
	str := func(key string) (string, bool) {
		var s string
		raw, ok := probe[key]
		if !ok || !bytes.HasPrefix(bytes.TrimSpace(raw), []byte(`"`)) || json.Unmarshal(raw, &s) != nil { // null is no string
			return "", false
		}
		return s, true
	}
	var ev cfn.Event
	var ok [4]bool
	ev.ResponseURL, ok[0] = str("ResponseURL")
	ev.StackID, ok[1] = str("StackId")
	ev.RequestID, ok[2] = str("RequestId")
	ev.LogicalResourceID, ok[3] = str("LogicalResourceId")
	if ok != [4]bool{true, true, true, true} || ev.ResponseURL == "" {
		return nil
	}
	ev.PhysicalResourceID, _ = str("PhysicalResourceId")
	rt, _ := str("RequestType")
	ev.RequestType = cfn.RequestType(rt)
	ev.ResourceType, _ = str("ResourceType")
	return &ev
}
