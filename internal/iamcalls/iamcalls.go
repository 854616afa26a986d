// Package iamcalls records the DynamoDB calls a client sends and the IAM
// actions that authorise them, so that the stack's policies are derived
// from what the code does rather than written from memory (docs/design.md
// §13). A TransactWriteItems call needs no action of its own: each member
// is authorised as the item call it is (Put → PutItem, Update →
// UpdateItem, Delete → DeleteItem, ConditionCheck → ConditionCheckItem),
// and a TransactGetItems member as GetItem.
package iamcalls

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"

	"github.com/zae-limiter/zae-limiter-go/core/schema"
)

// Action is one IAM action a call needs, on the partition key it names
// ("" when the call names none: Scan, DescribeTable).
type Action struct {
	Name string // "dynamodb:UpdateItem"
	Key  string
}

// Shared reports whether the action is on the table's own namespace `_`
// (the namespace registry and the version record).
func (a Action) Shared() bool { return a.Key == "_" || strings.HasPrefix(a.Key, "_/") }

// Recorder counts the actions of every call sent through the clients it is
// installed on. It is safe for concurrent use.
type Recorder struct {
	mu         sync.Mutex
	actions    map[Action]int
	operations map[string]int
}

// New returns an empty recorder.
func New() *Recorder {
	return &Recorder{actions: map[Action]int{}, operations: map[string]int{}}
}

// Option installs the recorder on a DynamoDB client:
// dynamodb.New(client.Options(), rec.Option()). A call is recorded when it
// is sent, whether or not it succeeds: a refused call needs the permission
// as much as an applied one.
func (r *Recorder) Option() func(*dynamodb.Options) {
	return func(o *dynamodb.Options) {
		o.APIOptions = append(o.APIOptions, func(st *middleware.Stack) error {
			return st.Initialize.Add(middleware.InitializeMiddlewareFunc("iamcalls",
				func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
					r.record(middleware.GetOperationName(ctx), in.Parameters)
					return next.HandleInitialize(ctx, in)
				}), middleware.Before)
		})
	}
}

func (r *Recorder) record(op string, input any) {
	acts := ActionsOf(input)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.operations[op]++
	for _, a := range acts {
		r.actions[a]++
	}
}

// Actions are the distinct IAM actions recorded, sorted.
func (r *Recorder) Actions() []string { return r.names(func(Action) bool { return true }) }

// SharedActions are the distinct actions recorded on the namespace `_`.
func (r *Recorder) SharedActions() []string { return r.names(Action.Shared) }

// Operations counts the API operations recorded, by name.
func (r *Recorder) Operations() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]int, len(r.operations))
	for k, v := range r.operations {
		out[k] = v
	}
	return out
}

func (r *Recorder) names(keep func(Action) bool) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	seen := map[string]bool{}
	for a := range r.actions {
		if keep(a) {
			seen[a.Name] = true
		}
	}
	out := make([]string, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// ActionsOf returns the IAM actions a DynamoDB input needs, one per item
// it names. An input of another service, or an operation without a case
// here, yields "dynamodb:Unknown<type>", which no policy grants.
func ActionsOf(input any) []Action {
	one := func(name string, key map[string]types.AttributeValue) []Action {
		return []Action{{Name: "dynamodb:" + name, Key: pk(key)}}
	}
	switch in := input.(type) {
	case *dynamodb.GetItemInput:
		return one("GetItem", in.Key)
	case *dynamodb.PutItemInput:
		return one("PutItem", in.Item)
	case *dynamodb.UpdateItemInput:
		return one("UpdateItem", in.Key)
	case *dynamodb.DeleteItemInput:
		return one("DeleteItem", in.Key)
	case *dynamodb.QueryInput:
		return []Action{{Name: "dynamodb:Query", Key: queryKey(in)}}
	case *dynamodb.ScanInput:
		return []Action{{Name: "dynamodb:Scan"}}
	case *dynamodb.DescribeTableInput:
		return []Action{{Name: "dynamodb:DescribeTable"}}
	case *dynamodb.BatchGetItemInput:
		var out []Action
		for _, ka := range in.RequestItems {
			for _, k := range ka.Keys {
				out = append(out, one("BatchGetItem", k)...)
			}
		}
		return out
	case *dynamodb.BatchWriteItemInput:
		var out []Action
		for _, reqs := range in.RequestItems {
			for _, w := range reqs {
				switch {
				case w.PutRequest != nil:
					out = append(out, one("BatchWriteItem", w.PutRequest.Item)...)
				case w.DeleteRequest != nil:
					out = append(out, one("BatchWriteItem", w.DeleteRequest.Key)...)
				}
			}
		}
		return out
	case *dynamodb.TransactWriteItemsInput:
		var out []Action
		for _, it := range in.TransactItems {
			switch {
			case it.Put != nil:
				out = append(out, one("PutItem", it.Put.Item)...)
			case it.Update != nil:
				out = append(out, one("UpdateItem", it.Update.Key)...)
			case it.Delete != nil:
				out = append(out, one("DeleteItem", it.Delete.Key)...)
			case it.ConditionCheck != nil:
				out = append(out, one("ConditionCheckItem", it.ConditionCheck.Key)...)
			}
		}
		return out
	case *dynamodb.TransactGetItemsInput:
		var out []Action
		for _, it := range in.TransactItems {
			if it.Get != nil {
				out = append(out, one("GetItem", it.Get.Key)...)
			}
		}
		return out
	}
	return []Action{{Name: "dynamodb:Unknown" + strings.TrimSuffix(strings.TrimPrefix(fmt.Sprintf("%T", input), "*dynamodb."), "Input")}}
}

func pk(key map[string]types.AttributeValue) string {
	if s, ok := key[schema.AttrPK].(*types.AttributeValueMemberS); ok {
		return s.Value
	}
	return ""
}

var (
	// keyCondition matches one equality of a key condition: "#n = :v" or "PK = :v".
	keyCondition = regexp.MustCompile(`^\(?\s*([#A-Za-z0-9_]+)\s*=\s*(:[A-Za-z0-9_]+)\s*\)?$`)
	and          = regexp.MustCompile(`(?i)\s+AND\s+`)
)

// queryKey is the partition key value a query names: the value its key
// condition equates to the partition key of the table or of the index.
func queryKey(in *dynamodb.QueryInput) string {
	if in.KeyConditionExpression == nil {
		return ""
	}
	for _, clause := range and.Split(*in.KeyConditionExpression, -1) {
		m := keyCondition.FindStringSubmatch(strings.TrimSpace(clause))
		if m == nil {
			continue
		}
		name := m[1]
		if n, ok := in.ExpressionAttributeNames[name]; ok {
			name = n
		}
		if name != schema.AttrPK && !(strings.HasPrefix(name, "GSI") && strings.HasSuffix(name, "PK")) {
			continue
		}
		if s, ok := in.ExpressionAttributeValues[m[2]].(*types.AttributeValueMemberS); ok {
			return s.Value
		}
	}
	return ""
}
