package faultproxy

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
)

// Rule says which requests get which fault.
//
// A request matches a rule when its operation matches Operation and Match (if
// set) accepts it. Of the matching requests the rule skips the first After,
// then fires on each with probability Rate until it has fired Count times.
// Rules are tried in the order they were added and the first that fires wins;
// every matching rule counts the request toward its After, whether or not an
// earlier rule fired.
type Rule struct {
	// Operation is the bare operation name ("UpdateItem", "GetRecords") or
	// the whole X-Amz-Target ("DynamoDB_20120810.UpdateItem"). Empty matches
	// every operation.
	Operation string
	// Fault is what a firing rule does. Required.
	Fault Fault
	// Rate is the probability, in [0, 1], that an eligible request fires the
	// rule, drawn from the proxy's seeded source. 0 means 1 (always).
	Rate float64
	// Count caps how many times the rule fires; 0 means no cap.
	Count int
	// After skips the first After matching requests.
	After int
	// Match, when set, further narrows the requests the rule applies to. It
	// gets the operation and the raw JSON request body, which it must not
	// modify. It runs on the request's goroutine, concurrently with other
	// requests, outside the proxy's lock.
	Match func(op string, body []byte) bool
	// OnFire, when set, is called on the request's goroutine each time the
	// rule fires, just before the client feels the fault: before the error is
	// written or the wait begins, and for AfterForward faults after
	// DynamoDB Local has answered. Tests use it to synchronise without sleeping.
	OnFire func(op string)
}

// RuleID identifies a rule added to a proxy.
type RuleID uint64

// ruleState is a rule and its counters.
type ruleState struct {
	id      RuleID
	rule    Rule
	seen    int // matching requests
	fired   int
	removed bool
}

func (r *Rule) validate() error {
	r.Fault.mustBeValid()
	switch {
	case math.IsNaN(r.Rate) || r.Rate < 0 || r.Rate > 1:
		return fmt.Errorf("faultproxy: rule Rate %v is outside [0, 1]", r.Rate)
	case r.Count < 0:
		return fmt.Errorf("faultproxy: rule Count %d is negative", r.Count)
	case r.After < 0:
		return fmt.Errorf("faultproxy: rule After %d is negative", r.After)
	}
	return nil
}

// matchesOp reports whether the rule's Operation selects op (bare name) or
// target (the whole X-Amz-Target).
func (r *Rule) matchesOp(op, target string) bool {
	return r.Operation == "" || r.Operation == op || r.Operation == target
}

// operationOf returns the bare operation name of an X-Amz-Target header value:
// "DynamoDB_20120810.UpdateItem" gives "UpdateItem".
func operationOf(target string) string {
	if i := strings.LastIndexByte(target, '.'); i >= 0 {
		return target[i+1:]
	}
	return target
}

// ForTable returns a Rule.Match function that accepts requests touching the
// named table: a top-level TableName (item, query, scan and table
// operations), a table of TransactItems, or a key of RequestItems (batch
// operations).
func ForTable(name string) func(op string, body []byte) bool {
	return func(_ string, body []byte) bool {
		var req struct {
			TableName     string
			RequestItems  map[string]json.RawMessage
			TransactItems []map[string]struct{ TableName string }
		}
		if json.Unmarshal(body, &req) != nil {
			return false
		}
		if req.TableName == name {
			return true
		}
		if _, ok := req.RequestItems[name]; ok {
			return true
		}
		for _, item := range req.TransactItems {
			for _, action := range item {
				if action.TableName == name {
					return true
				}
			}
		}
		return false
	}
}
