package faultproxy

import (
	"encoding/json"
	"fmt"
	"hash/crc32"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Error namespaces DynamoDB puts in front of the code in a JSON 1.0 error
// body's __type. The SDK keeps only what follows '#'.
const (
	nsDynamoDB     = "com.amazonaws.dynamodb.v20120810"
	nsAvailability = "com.amazon.coral.availability"
	nsCoralService = "com.amazon.coral.service"
)

// jsonContentType is the content type of every DynamoDB (and Streams) answer.
const jsonContentType = "application/x-amz-json-1.0"

type kind int

const (
	kindNone kind = iota
	kindProvisionedThroughputExceeded
	kindThrottling
	kindRequestLimitExceeded
	kindInternalServerError
	kindServiceUnavailable
	kindAccessDenied
	kindTransactionConflict
	kindHang
	kindDelay
)

// wireError is how one error fault looks on the wire.
type wireError struct {
	status    int
	namespace string
	code      string
	message   string
}

// wireErrorOf gives DynamoDB's status, __type and message for an error fault.
// The message field name follows the service model: "message" for these
// shapes (TransactionCanceledException uses "Message", see txCanceledBody).
func wireErrorOf(k kind) wireError {
	switch k {
	case kindProvisionedThroughputExceeded:
		return wireError{http.StatusBadRequest, nsDynamoDB, "ProvisionedThroughputExceededException",
			"The level of configured provisioned throughput for the table was exceeded. Consider increasing your provisioning level with the UpdateTable API."}
	case kindThrottling:
		return wireError{http.StatusBadRequest, nsAvailability, "ThrottlingException",
			"Rate of requests exceeds the allowed throughput."}
	case kindRequestLimitExceeded:
		return wireError{http.StatusBadRequest, nsDynamoDB, "RequestLimitExceeded",
			"Throughput exceeds the current throughput limit for your account. Please contact AWS Support at https://aws.amazon.com/support request a limit increase"}
	case kindInternalServerError:
		return wireError{http.StatusInternalServerError, nsDynamoDB, "InternalServerError",
			"Internal server error"}
	case kindServiceUnavailable:
		return wireError{http.StatusServiceUnavailable, nsDynamoDB, "ServiceUnavailable",
			"The service is currently unavailable or busy."}
	case kindAccessDenied:
		return wireError{http.StatusBadRequest, nsCoralService, "AccessDeniedException",
			"User: arn:aws:sts::123456789012:assumed-role/tenant/session is not authorized to perform this action because no identity-based policy allows it"}
	case kindTransactionConflict:
		return wireError{http.StatusBadRequest, nsDynamoDB, "TransactionCanceledException", ""}
	}
	panic(fmt.Sprintf("faultproxy: fault kind %d is not an error", k))
}

// Fault is what the proxy does to a request a rule fires on. Build one with
// the constructors below; the zero Fault is invalid.
type Fault struct {
	kind      kind
	conflicts []int         // TransactionConflict: item indexes, nil = all
	delay     time.Duration // Delay
	forward   bool          // AfterForward: DynamoDB Local sees the request first
}

// ProvisionedThroughputExceeded answers 400 with
// com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException,
// which the SDK returns as *types.ProvisionedThroughputExceededException and
// retries as a throttle.
func ProvisionedThroughputExceeded() Fault { return Fault{kind: kindProvisionedThroughputExceeded} }

// Throttling answers 400 with com.amazon.coral.availability#ThrottlingException,
// which the SDK returns as *types.ThrottlingException (ErrorCode
// "ThrottlingException") and retries as a throttle.
func Throttling() Fault { return Fault{kind: kindThrottling} }

// RequestLimitExceeded answers 400 with
// com.amazonaws.dynamodb.v20120810#RequestLimitExceeded, which the SDK returns
// as *types.RequestLimitExceeded and retries as a throttle.
func RequestLimitExceeded() Fault { return Fault{kind: kindRequestLimitExceeded} }

// InternalServerError answers 500 with
// com.amazonaws.dynamodb.v20120810#InternalServerError, which the SDK returns
// as *types.InternalServerError and retries (by status code).
func InternalServerError() Fault { return Fault{kind: kindInternalServerError} }

// ServiceUnavailable answers 503 with
// com.amazonaws.dynamodb.v20120810#ServiceUnavailable. The SDK has no modeled
// type for it: it returns a generic API error with ErrorCode
// "ServiceUnavailable" wrapping an HTTP response error of status 503, and
// retries it by status code.
func ServiceUnavailable() Fault { return Fault{kind: kindServiceUnavailable} }

// AccessDenied answers 400 with com.amazon.coral.service#AccessDeniedException,
// IAM's refusal of a call the caller's policies do not allow (DynamoDB
// Local enforces no IAM). The SDK has no modeled type for it: it returns a
// generic API error with ErrorCode "AccessDeniedException", not retried.
func AccessDenied() Fault { return Fault{kind: kindAccessDenied} }

// TransactionConflict answers 400 with
// com.amazonaws.dynamodb.v20120810#TransactionCanceledException carrying one
// cancellation reason per item of the request's TransactItems (or
// TransactStatements): Code "TransactionConflict" at the given indexes, Code
// "None" elsewhere. No indexes means every item conflicts; indexes beyond the
// request's items are ignored. Negative indexes panic.
func TransactionConflict(indexes ...int) Fault {
	for _, i := range indexes {
		if i < 0 {
			panic(fmt.Sprintf("faultproxy: TransactionConflict index %d is negative", i))
		}
	}
	if len(indexes) == 0 {
		return Fault{kind: kindTransactionConflict}
	}
	return Fault{kind: kindTransactionConflict, conflicts: append([]int{}, indexes...)}
}

// Hang never answers: the request blocks until the client gives up (its
// context ends and it drops the connection) or the proxy closes, which drops
// the connection.
func Hang() Fault { return Fault{kind: kindHang} }

// Delay forwards the request to DynamoDB Local after d (latency injection).
// A client that gives up first is not forwarded at all; Close drops the
// connection. Negative d panics.
func Delay(d time.Duration) Fault {
	if d < 0 {
		panic(fmt.Sprintf("faultproxy: negative Delay %s", d))
	}
	return Fault{kind: kindDelay, delay: d}
}

// AfterForward returns f applied after the request has reached DynamoDB Local
// and taken effect there: the real answer is discarded (the client gets f's
// error, or hangs) or, for Delay, held back for the delay. It models a lost
// acknowledgement: a write that landed although the client saw a failure.
func AfterForward(f Fault) Fault {
	f.mustBeValid()
	f.forward = true
	return f
}

// String names the fault, e.g. "Throttling" or "AfterForward(Hang)".
func (f Fault) String() string {
	var s string
	switch f.kind {
	case kindProvisionedThroughputExceeded:
		s = "ProvisionedThroughputExceeded"
	case kindThrottling:
		s = "Throttling"
	case kindRequestLimitExceeded:
		s = "RequestLimitExceeded"
	case kindInternalServerError:
		s = "InternalServerError"
	case kindServiceUnavailable:
		s = "ServiceUnavailable"
	case kindAccessDenied:
		s = "AccessDenied"
	case kindTransactionConflict:
		s = "TransactionConflict("
		if f.conflicts == nil {
			s += "all"
		} else {
			parts := make([]string, len(f.conflicts))
			for i, c := range f.conflicts {
				parts[i] = strconv.Itoa(c)
			}
			s += strings.Join(parts, ",")
		}
		s += ")"
	case kindHang:
		s = "Hang"
	case kindDelay:
		s = "Delay(" + f.delay.String() + ")"
	default:
		return "invalid fault"
	}
	if f.forward {
		s = "AfterForward(" + s + ")"
	}
	return s
}

func (f Fault) mustBeValid() {
	if f.kind == kindNone {
		panic("faultproxy: zero Fault; build one with a constructor such as Throttling()")
	}
}

// errorBody is DynamoDB's JSON 1.0 error body for most errors.
type errorBody struct {
	Type    string `json:"__type"`
	Message string `json:"message"`
}

// txCanceledBody is DynamoDB's TransactionCanceledException body.
type txCanceledBody struct {
	Type                string               `json:"__type"`
	CancellationReasons []cancellationReason `json:"CancellationReasons"`
	Message             string               `json:"Message"`
}

type cancellationReason struct {
	Code    string `json:"Code"`
	Message string `json:"Message,omitempty"`
}

// Codes and messages of cancellation reasons, as DynamoDB writes them.
const (
	reasonNone            = "None"
	reasonConflict        = "TransactionConflict"
	reasonConflictMessage = "Transaction is ongoing for the item"
)

// errorResponse renders an error fault for a request with the given body:
// status, the value of x-amzn-ErrorType and the JSON body.
func (f Fault) errorResponse(reqBody []byte) (status int, code string, body []byte) {
	we := wireErrorOf(f.kind)
	var v any = errorBody{Type: we.namespace + "#" + we.code, Message: we.message}
	if f.kind == kindTransactionConflict {
		v = f.canceledBody(we, transactItemCount(reqBody))
	}
	b, err := json.Marshal(v)
	if err != nil { // plain strings and slices of them always marshal
		panic(fmt.Sprintf("faultproxy: marshal error body: %v", err))
	}
	return we.status, we.code, b
}

func (f Fault) canceledBody(we wireError, n int) txCanceledBody {
	reasons := make([]cancellationReason, n)
	codes := make([]string, n)
	for i := range reasons {
		reasons[i].Code = reasonNone
	}
	if f.conflicts == nil {
		for i := range reasons {
			reasons[i] = cancellationReason{Code: reasonConflict, Message: reasonConflictMessage}
		}
	}
	for _, i := range f.conflicts {
		if i < n {
			reasons[i] = cancellationReason{Code: reasonConflict, Message: reasonConflictMessage}
		}
	}
	for i, r := range reasons {
		codes[i] = r.Code
	}
	return txCanceledBody{
		Type:                we.namespace + "#" + we.code,
		CancellationReasons: reasons,
		Message:             "Transaction cancelled, please refer cancellation reasons for specific reasons [" + strings.Join(codes, ", ") + "]",
	}
}

// transactItemCount is the number of items in a TransactWriteItems or
// TransactGetItems request (TransactItems) or an ExecuteTransaction request
// (TransactStatements); 0 for anything else.
func transactItemCount(body []byte) int {
	var req struct {
		TransactItems      []json.RawMessage
		TransactStatements []json.RawMessage
	}
	if json.Unmarshal(body, &req) != nil {
		return 0
	}
	return max(len(req.TransactItems), len(req.TransactStatements))
}

// writeError writes an error fault the way DynamoDB does: JSON 1.0 body,
// x-amzn-RequestId, x-amz-crc32 of the body, plus x-amzn-ErrorType.
func writeError(w http.ResponseWriter, status int, code string, body []byte, requestID string) {
	h := w.Header()
	h.Set("Content-Type", jsonContentType)
	h.Set("x-amzn-RequestId", requestID)
	h.Set("x-amzn-ErrorType", code)
	h.Set("x-amz-crc32", strconv.FormatUint(uint64(crc32.ChecksumIEEE(body)), 10))
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}
