package httplimit

import (
	"encoding/json"
	"net/http"
	"strconv"
)

// Problem types. A 429 is the draft's "quota-exceeded" problem type, with
// its "violated-policies" member (the policies are the limits of the
// RateLimit fields); every other answer is "about:blank", whose title is the
// status's own phrase (RFC 9457 §4.2.1).
const (
	QuotaExceededType  = "https://iana.org/assignments/http-problem-types#quota-exceeded"
	quotaExceededTitle = "Request cannot be satisfied as assigned quota has been exceeded"
	blankType          = "about:blank"
)

// ProblemContentType is the media type of every problem body the
// middleware writes (RFC 9457).
const ProblemContentType = "application/problem+json"

// Problem is the body of every answer the middleware writes itself: the
// members of RFC 9457 and, on a 429, the limits.
type Problem struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail,omitempty"`
	// ViolatedPolicies names the exhausted limits (429 only).
	ViolatedPolicies []string `json:"violated-policies,omitempty"`
	// Limits lists every limit of the request, in the order of the
	// RateLimit fields (429 only).
	Limits []ProblemLimit `json:"limits,omitempty"`
}

// ProblemLimit is one limit of a 429's problem body.
type ProblemLimit struct {
	Name string `json:"name"`
	// Limit is the capacity in tokens (the policy's q), WindowSeconds its
	// window (w) when known.
	Limit         int64  `json:"limit"`
	WindowSeconds *int64 `json:"window_seconds,omitempty"`
	// Remaining is the whole tokens left (r), Requested what the request
	// asked for.
	Remaining int64 `json:"remaining"`
	Requested int64 `json:"requested"`
	Exceeded  bool  `json:"exceeded"`
	// RetryAfterSeconds is an exhausted limit's wait in whole seconds,
	// rounded up; null when no wait can help; absent for a limit that is
	// not exhausted.
	RetryAfterSeconds json.RawMessage `json:"retry_after_seconds,omitempty"`
}

// blankProblem is an "about:blank" problem of status with detail.
func blankProblem(status int, detail string) Problem {
	return Problem{Type: blankType, Title: http.StatusText(status), Status: status, Detail: detail}
}

// writeProblem answers p: its status, Content-Type application/problem+json
// and the JSON body.
func writeProblem(w http.ResponseWriter, p Problem) {
	body, err := json.Marshal(p)
	if err != nil { // a Problem always marshals; this keeps the status honest if not
		body = []byte(`{"type":"about:blank","status":` + strconv.Itoa(p.Status) + `}`)
	}
	body = append(body, '\n')
	h := w.Header()
	h.Set("Content-Type", ProblemContentType)
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(p.Status)
	_, _ = w.Write(body)
}

// noEntity is the default answer to a request with no usable entity.
func noEntity(w http.ResponseWriter, _ *http.Request) {
	writeProblem(w, blankProblem(http.StatusBadRequest, "the request does not say who is calling, so no rate limit can be applied"))
}
