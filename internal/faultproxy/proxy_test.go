package faultproxy

import (
	"bytes"
	"hash/crc32"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"
)

// unusedUpstream is an upstream that fails the test if anything reaches it.
func unusedUpstream(t *testing.T) string {
	t.Helper()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("request %s reached the upstream", r.Header.Get("X-Amz-Target"))
		w.WriteHeader(http.StatusTeapot)
	}))
	t.Cleanup(up.Close)
	return up.URL
}

func rawPost(t *testing.T, endpoint, target, body string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(testCtx(t), http.MethodPost, endpoint, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", jsonContentType)
	req.Header.Set("X-Amz-Target", target)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

// TestWireFormat pins the exact bytes and headers of each error fault: the
// JSON 1.0 body DynamoDB sends (same layout as DynamoDB Local's own errors),
// status, content type, x-amzn-ErrorType, a 52-character x-amzn-RequestId and
// a correct x-amz-crc32.
func TestWireFormat(t *testing.T) {
	p := Start(t, unusedUpstream(t))
	cases := []struct {
		fault  Fault
		body   string
		status int
		code   string
		want   string
	}{
		{ProvisionedThroughputExceeded(), `{}`, 400, "ProvisionedThroughputExceededException",
			`{"__type":"com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException","message":"The level of configured provisioned throughput for the table was exceeded. Consider increasing your provisioning level with the UpdateTable API."}`},
		{Throttling(), `{}`, 400, "ThrottlingException",
			`{"__type":"com.amazon.coral.availability#ThrottlingException","message":"Rate of requests exceeds the allowed throughput."}`},
		{RequestLimitExceeded(), `{}`, 400, "RequestLimitExceeded",
			`{"__type":"com.amazonaws.dynamodb.v20120810#RequestLimitExceeded","message":"Throughput exceeds the current throughput limit for your account. Please contact AWS Support at https://aws.amazon.com/support request a limit increase"}`},
		{InternalServerError(), `{}`, 500, "InternalServerError",
			`{"__type":"com.amazonaws.dynamodb.v20120810#InternalServerError","message":"Internal server error"}`},
		{ServiceUnavailable(), `{}`, 503, "ServiceUnavailable",
			`{"__type":"com.amazonaws.dynamodb.v20120810#ServiceUnavailable","message":"The service is currently unavailable or busy."}`},
		{TransactionConflict(1), `{"TransactItems":[{"Put":{}},{"Update":{}}]}`, 400, "TransactionCanceledException",
			`{"__type":"com.amazonaws.dynamodb.v20120810#TransactionCanceledException","CancellationReasons":[{"Code":"None"},{"Code":"TransactionConflict","Message":"Transaction is ongoing for the item"}],"Message":"Transaction cancelled, please refer cancellation reasons for specific reasons [None, TransactionConflict]"}`},
		{TransactionConflict(), `{"TransactStatements":[{},{},{}]}`, 400, "TransactionCanceledException",
			`{"__type":"com.amazonaws.dynamodb.v20120810#TransactionCanceledException","CancellationReasons":[{"Code":"TransactionConflict","Message":"Transaction is ongoing for the item"},{"Code":"TransactionConflict","Message":"Transaction is ongoing for the item"},{"Code":"TransactionConflict","Message":"Transaction is ongoing for the item"}],"Message":"Transaction cancelled, please refer cancellation reasons for specific reasons [TransactionConflict, TransactionConflict, TransactionConflict]"}`},
	}
	for _, c := range cases {
		t.Run(c.fault.String(), func(t *testing.T) {
			p.Reset()
			p.Add(Rule{Fault: c.fault})
			resp, body := rawPost(t, p.URL(), "DynamoDB_20120810.TransactWriteItems", c.body)
			if string(body) != c.want {
				t.Errorf("body =\n%s\nwant\n%s", body, c.want)
			}
			if resp.StatusCode != c.status {
				t.Errorf("status = %d, want %d", resp.StatusCode, c.status)
			}
			h := resp.Header
			if got := h.Get("Content-Type"); got != "application/x-amz-json-1.0" {
				t.Errorf("Content-Type = %q", got)
			}
			if got := h.Get("x-amzn-ErrorType"); got != c.code {
				t.Errorf("x-amzn-ErrorType = %q, want %q", got, c.code)
			}
			if id := h.Get("x-amzn-RequestId"); len(id) != 52 || !strings.HasPrefix(id, RequestIDPrefix) {
				t.Errorf("x-amzn-RequestId = %q", id)
			}
			if got, want := h.Get("x-amz-crc32"), strconv.FormatUint(uint64(crc32.ChecksumIEEE(body)), 10); got != want {
				t.Errorf("x-amz-crc32 = %q, want %q", got, want)
			}
			if got := h.Get("Content-Length"); got != strconv.Itoa(len(body)) {
				t.Errorf("Content-Length = %q, body has %d bytes", got, len(body))
			}
		})
	}
	t.Run("request-ids-differ", func(t *testing.T) {
		p.Reset()
		p.Add(Rule{Fault: InternalServerError()})
		a, _ := rawPost(t, p.URL(), "DynamoDB_20120810.GetItem", `{}`)
		b, _ := rawPost(t, p.URL(), "DynamoDB_20120810.GetItem", `{}`)
		if a.Header.Get("x-amzn-RequestId") == b.Header.Get("x-amzn-RequestId") {
			t.Error("two faults share a request id")
		}
	})
}

// TestForwardsRequestsUnchanged shows a request without a firing rule reaches
// the upstream with method, path, Host (as signed), headers and body intact,
// and its answer comes back byte for byte with its headers (x-amz-crc32
// included).
func TestForwardsRequestsUnchanged(t *testing.T) {
	type seen struct {
		method, path, host string
		header             http.Header
		body               []byte
	}
	got := make(chan seen, 1)
	answer := []byte(`{"Item":{"PK":{"S":"a"}}}`)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- seen{r.Method, r.URL.RequestURI(), r.Host, r.Header.Clone(), b}
		w.Header().Set("Content-Type", jsonContentType)
		w.Header().Set("x-amzn-RequestId", "UPSTREAM-ID")
		w.Header().Set("x-amz-crc32", strconv.FormatUint(uint64(crc32.ChecksumIEEE(answer)), 10))
		_, _ = w.Write(answer)
	}))
	defer up.Close()
	p := Start(t, up.URL)
	p.Add(Rule{Operation: "PutItem", Fault: Throttling()}) // not this request's operation

	body := `{"TableName":"t","Key":{"PK":{"S":"a"}}}`
	req, err := http.NewRequestWithContext(testCtx(t), http.MethodPost, p.URL()+"/", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	sent := map[string]string{
		"Content-Type":    jsonContentType,
		"X-Amz-Target":    "DynamoDB_20120810.GetItem",
		"X-Amz-Date":      "20260101T000000Z",
		"Authorization":   "AWS4-HMAC-SHA256 Credential=AKID/20260101/us-east-1/dynamodb/aws4_request, SignedHeaders=host;x-amz-date;x-amz-target, Signature=abc",
		"Accept-Encoding": "identity",
		"Amz-Sdk-Request": "attempt=1; max=1",
		"User-Agent":      "aws-sdk-go-v2/test",
	}
	for k, v := range sent {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	respBody, _ := io.ReadAll(resp.Body)
	resp.Body.Close()

	s := await(t, got, "the forwarded request")
	proxyHost := strings.TrimPrefix(p.URL(), "http://")
	if s.method != http.MethodPost || s.path != "/" || s.host != proxyHost {
		t.Errorf("upstream saw %s %s Host %s, want POST / Host %s", s.method, s.path, s.host, proxyHost)
	}
	for k, v := range sent {
		if s.header.Get(k) != v {
			t.Errorf("upstream header %s = %q, want %q", k, s.header.Get(k), v)
		}
	}
	for _, k := range []string{"X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Proto", "Forwarded"} {
		if v := s.header.Get(k); v != "" {
			t.Errorf("proxy added %s: %s", k, v)
		}
	}
	if string(s.body) != body {
		t.Errorf("upstream body = %s, want %s", s.body, body)
	}
	if resp.StatusCode != http.StatusOK || !bytes.Equal(respBody, answer) {
		t.Errorf("client got %d %s, want 200 %s", resp.StatusCode, respBody, answer)
	}
	wantHeaders := map[string]string{
		"x-amzn-RequestId": "UPSTREAM-ID",
		"x-amz-crc32":      strconv.FormatUint(uint64(crc32.ChecksumIEEE(answer)), 10),
		"Content-Type":     jsonContentType,
	}
	for k, v := range wantHeaders {
		if resp.Header.Get(k) != v {
			t.Errorf("client header %s = %q, want the upstream's %q", k, resp.Header.Get(k), v)
		}
	}
	if want := (OpStats{Requests: 1, Forwarded: 1, Succeeded: 1}); p.StatsFor("GetItem") != want {
		t.Errorf("stats = %+v, want %+v", p.StatsFor("GetItem"), want)
	}
}

// TestUpstreamDown shows a request the proxy cannot forward gets 502, not a
// made-up DynamoDB error, and still counts as forwarded but not succeeded.
func TestUpstreamDown(t *testing.T) {
	up := httptest.NewServer(http.NotFoundHandler())
	upURL := up.URL
	up.Close()
	p := Start(t, upURL)
	resp, _ := rawPost(t, p.URL(), "DynamoDB_20120810.GetItem", `{}`)
	if resp.StatusCode != http.StatusBadGateway {
		t.Errorf("status = %d, want 502", resp.StatusCode)
	}
	if want := (OpStats{Requests: 1, Forwarded: 1}); p.StatsFor("GetItem") != want {
		t.Errorf("stats = %+v, want %+v", p.StatsFor("GetItem"), want)
	}
}

func TestNewRejectsBadUpstream(t *testing.T) {
	for _, u := range []string{"", "127.0.0.1:8000", "ftp://127.0.0.1:8000", "http://", "http://[::1"} {
		if p, err := New(u); err == nil {
			p.Close()
			t.Errorf("New(%q) accepted", u)
		}
	}
	p, err := New("http://127.0.0.1:1")
	if err != nil {
		t.Fatal(err)
	}
	if u, err := url.Parse(p.URL()); err != nil || u.Scheme != "http" || !strings.HasPrefix(u.Host, "127.0.0.1:") {
		t.Errorf("URL() = %q", p.URL())
	}
	p.Close()
	p.Close()
}

func TestInvalidRulesAndFaultsPanic(t *testing.T) {
	p := Start(t, unusedUpstream(t))
	cases := map[string]func(){
		"zero fault":           func() { p.Add(Rule{}) },
		"rate above 1":         func() { p.Add(Rule{Fault: Hang(), Rate: 1.5}) },
		"negative rate":        func() { p.Add(Rule{Fault: Hang(), Rate: -0.1}) },
		"NaN rate":             func() { p.Add(Rule{Fault: Hang(), Rate: math.NaN()}) },
		"negative count":       func() { p.Add(Rule{Fault: Hang(), Count: -1}) },
		"negative after":       func() { p.Add(Rule{Fault: Hang(), After: -1}) },
		"negative index":       func() { TransactionConflict(0, -1) },
		"negative delay":       func() { Delay(-time.Second) },
		"after-forward zero":   func() { AfterForward(Fault{}) },
		"error of a non-error": func() { wireErrorOf(kindHang) },
	}
	for name, fn := range cases {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Error("did not panic")
				}
			}()
			fn()
		})
	}
}

func TestFaultString(t *testing.T) {
	cases := map[string]Fault{
		"ProvisionedThroughputExceeded":     ProvisionedThroughputExceeded(),
		"Throttling":                        Throttling(),
		"RequestLimitExceeded":              RequestLimitExceeded(),
		"InternalServerError":               InternalServerError(),
		"ServiceUnavailable":                ServiceUnavailable(),
		"AccessDenied":                      AccessDenied(),
		"TransactionConflict(all)":          TransactionConflict(),
		"TransactionConflict(0,2)":          TransactionConflict(0, 2),
		"Hang":                              Hang(),
		"Delay(1.5s)":                       Delay(1500 * time.Millisecond),
		"AfterForward(InternalServerError)": AfterForward(InternalServerError()),
		"invalid fault":                     {},
	}
	for want, f := range cases {
		if got := f.String(); got != want {
			t.Errorf("String() = %q, want %q", got, want)
		}
	}
}

func TestOperationOf(t *testing.T) {
	cases := map[string]string{
		"DynamoDB_20120810.UpdateItem":        "UpdateItem",
		"DynamoDBStreams_20120810.GetRecords": "GetRecords",
		"GetItem":                             "GetItem",
		"":                                    "",
	}
	for in, want := range cases {
		if got := operationOf(in); got != want {
			t.Errorf("operationOf(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestForTable(t *testing.T) {
	match := ForTable("limits")
	cases := map[string]bool{
		`{"TableName":"limits","Key":{}}`:                 true,
		`{"TableName":"other"}`:                           false,
		`{"RequestItems":{"limits":[{"PutRequest":{}}]}}`: true,
		`{"RequestItems":{"other":[]}}`:                   false,
		`{"TransactItems":[{"Put":{"TableName":"other"}},{"Update":{"TableName":"limits"}}]}`: true,
		`{"TransactItems":[{"ConditionCheck":{"TableName":"other"}}]}`:                        false,
		`not json`: false,
	}
	for body, want := range cases {
		if got := match("X", []byte(body)); got != want {
			t.Errorf("ForTable(limits)(%s) = %v, want %v", body, got, want)
		}
	}
}
