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
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
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
	requests   map[string]Request
}

// New returns an empty recorder.
func New() *Recorder {
	return &Recorder{actions: map[Action]int{}, operations: map[string]int{}, requests: map[string]Request{}}
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
	reqs := RequestsOf(input)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.operations[op]++
	for _, a := range acts {
		r.actions[a]++
	}
	for _, q := range reqs {
		k := q.Action + "\x00" + q.Index + "\x00" + strings.Join(q.LeadingKeys, "\x00")
		if _, ok := r.requests[k]; !ok {
			r.requests[k] = q
		}
	}
}

// Requests are the distinct authorisations recorded, sorted by action,
// index and keys.
func (r *Recorder) Requests() []Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	keys := make([]string, 0, len(r.requests))
	for k := range r.requests {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]Request, len(keys))
	for i, k := range keys {
		out[i] = r.requests[k]
	}
	return out
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

// Request is one authorisation DynamoDB makes for a call: an IAM action on
// the table or on one of its indexes, with the partition key values the
// request names (the dynamodb:LeadingKeys of IAM's condition). A batch is
// one request with every key it names, so a statement that allows it must
// allow all of them at once; a transaction is one request per member.
type Request struct {
	Action string // "dynamodb:UpdateItem"
	// Index is the index a Query or Scan reads ("" for the table).
	Index string
	// LeadingKeys are the partition key values the request names, sorted
	// and distinct; nil for a call that names none (Scan, DescribeTable).
	LeadingKeys []string
}

// RequestsOf returns the authorisations a DynamoDB input needs. An input
// of another service, or an operation without a case here, yields
// "dynamodb:Unknown<type>", which no policy grants.
func RequestsOf(input any) []Request {
	one := func(name string, keys ...map[string]types.AttributeValue) Request {
		r := Request{Action: "dynamodb:" + name, LeadingKeys: []string{}}
		for _, k := range keys {
			r.LeadingKeys = append(r.LeadingKeys, pk(k))
		}
		sort.Strings(r.LeadingKeys)
		r.LeadingKeys = slices.Compact(r.LeadingKeys)
		return r
	}
	switch in := input.(type) {
	case *dynamodb.GetItemInput:
		return []Request{one("GetItem", in.Key)}
	case *dynamodb.PutItemInput:
		return []Request{one("PutItem", in.Item)}
	case *dynamodb.UpdateItemInput:
		return []Request{one("UpdateItem", in.Key)}
	case *dynamodb.DeleteItemInput:
		return []Request{one("DeleteItem", in.Key)}
	case *dynamodb.QueryInput:
		return []Request{{Action: "dynamodb:Query", Index: aws.ToString(in.IndexName), LeadingKeys: []string{queryKey(in)}}}
	case *dynamodb.ScanInput:
		return []Request{{Action: "dynamodb:Scan", Index: aws.ToString(in.IndexName)}}
	case *dynamodb.DescribeTableInput:
		return []Request{{Action: "dynamodb:DescribeTable"}}
	case *dynamodb.BatchGetItemInput:
		var keys []map[string]types.AttributeValue
		for _, ka := range in.RequestItems {
			keys = append(keys, ka.Keys...)
		}
		return []Request{one("BatchGetItem", keys...)}
	case *dynamodb.BatchWriteItemInput:
		var keys []map[string]types.AttributeValue
		for _, reqs := range in.RequestItems {
			for _, w := range reqs {
				switch {
				case w.PutRequest != nil:
					keys = append(keys, w.PutRequest.Item)
				case w.DeleteRequest != nil:
					keys = append(keys, w.DeleteRequest.Key)
				}
			}
		}
		return []Request{one("BatchWriteItem", keys...)}
	case *dynamodb.TransactWriteItemsInput:
		var out []Request
		for _, it := range in.TransactItems {
			switch {
			case it.Put != nil:
				out = append(out, one("PutItem", it.Put.Item))
			case it.Update != nil:
				out = append(out, one("UpdateItem", it.Update.Key))
			case it.Delete != nil:
				out = append(out, one("DeleteItem", it.Delete.Key))
			case it.ConditionCheck != nil:
				out = append(out, one("ConditionCheckItem", it.ConditionCheck.Key))
			}
		}
		return out
	case *dynamodb.TransactGetItemsInput:
		var out []Request
		for _, it := range in.TransactItems {
			if it.Get != nil {
				out = append(out, one("GetItem", it.Get.Key))
			}
		}
		return out
	}
	return []Request{{Action: "dynamodb:Unknown" + strings.TrimSuffix(strings.TrimPrefix(fmt.Sprintf("%T", input), "*dynamodb."), "Input")}}
}

// ActionsOf returns the IAM actions a DynamoDB input needs, one per item
// it names (RequestsOf, a batch split by key).
func ActionsOf(input any) []Action {
	var out []Action
	for _, r := range RequestsOf(input) {
		if r.LeadingKeys == nil {
			out = append(out, Action{Name: r.Action})
			continue
		}
		for _, k := range r.LeadingKeys {
			out = append(out, Action{Name: r.Action, Key: k})
		}
	}
	return out
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
