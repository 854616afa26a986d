package condwrite_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"maps"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/zae-limiter/zae-limiter-go/core/condwrite"
	"github.com/zae-limiter/zae-limiter-go/internal/clock"
	"github.com/zae-limiter/zae-limiter-go/internal/ddblocal"
	"github.com/zae-limiter/zae-limiter-go/internal/ddbtest"
	"github.com/zae-limiter/zae-limiter-go/internal/faultproxy"
)

func TestMain(m *testing.M) { ddbtest.Main(m) }

// direct returns the DB over client, failing the test unless it sends
// conditional UpdateItems itself.
func direct(t *testing.T, client *dynamodb.Client, opts ...condwrite.Option) *condwrite.DB {
	t.Helper()
	db := condwrite.New(context.Background(), client, opts...)
	if ok, why := db.Direct(); !ok {
		t.Fatalf("the DB sends nothing itself: %s", why)
	}
	return db
}

// seqWrite is the snapshot write's pattern: add n to a counter and set
// the mark to seq, if the mark is below seq.
func seqWrite(table, pk string, seq int, n int64) *dynamodb.UpdateItemInput {
	return &dynamodb.UpdateItemInput{
		TableName: aws.String(table),
		Key: map[string]types.AttributeValue{
			"PK": &types.AttributeValueMemberS{Value: pk},
			"SK": &types.AttributeValueMemberS{Value: "#USAGE"},
		},
		UpdateExpression:         aws.String("SET #sq = :seq ADD #n :n"),
		ConditionExpression:      aws.String("attribute_not_exists(#sq) OR #sq < :seq"),
		ExpressionAttributeNames: map[string]string{"#sq": "seq#0", "#n": "tokens"},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":seq": &types.AttributeValueMemberS{Value: fmt.Sprintf("%021d", seq)},
			":n":   &types.AttributeValueMemberN{Value: strconv.FormatInt(n, 10)},
		},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}
}

// items reads every item of tbl, rendered.
func items(t *testing.T, tbl *ddbtest.Table) map[string]string {
	t.Helper()
	out := map[string]string{}
	p := dynamodb.NewScanPaginator(tbl.DB, &dynamodb.ScanInput{TableName: aws.String(tbl.Name), ConsistentRead: aws.Bool(true)})
	for p.HasMorePages() {
		page, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range page.Items {
			key := ddbtest.Render(it["PK"]) + " " + ddbtest.Render(it["SK"])
			var b strings.Builder
			for _, name := range slices.Sorted(maps.Keys(it)) {
				fmt.Fprintf(&b, "%s=%s ", name, ddbtest.Render(it[name]))
			}
			out[key] = b.String()
		}
	}
	return out
}

// randomText is text a key, a name or a value may hold: plain, quotes and
// backslashes, control characters, non-ASCII.
func randomText(r *rand.Rand) string {
	parts := []string{"key", "-", "_", ".", "\"", "\\", "\n", "\t", "\x01", "é", "\u2028", "😀", "#", ":", " "}
	var b strings.Builder
	for range 1 + r.IntN(8) {
		b.WriteString(parts[r.IntN(len(parts))])
	}
	return b.String()
}

// TestWritesAsTheSDKWrites: a seeded sequence of conditional writes (the
// snapshot's pattern, with values of every type the package sends and text
// that needs escaping), each applied through the package to one table and
// through the SDK client to another, gives the same answer at every step
// (success, or a refused condition with the same item) and the same
// items; the successes were sent directly, the refusals sent again through
// the SDK.
func TestWritesAsTheSDKWrites(t *testing.T) {
	viaDirect, viaSDK := ddbtest.NewBareTable(t), ddbtest.NewBareTable(t)
	db := direct(t, viaDirect.DB)
	r := rand.New(rand.NewPCG(7, 11))
	keys := []string{"k1", "k2", randomText(r), randomText(r)}
	var refused int64
	const writes = 80
	for i := range writes {
		pk := keys[r.IntN(len(keys))]
		seed := r.Uint64()
		// build makes the same write for either table.
		build := func(table string) *dynamodb.UpdateItemInput {
			r := rand.New(rand.NewPCG(seed, 1))
			w := seqWrite(table, pk, r.IntN(40), int64(r.IntN(100))-10)
			w.UpdateExpression = aws.String("SET #sq = :seq, #s = :s, #b = :b, #z = :z ADD #n :n")
			w.ExpressionAttributeNames["#s"] = "text " + randomText(r)
			w.ExpressionAttributeNames["#b"] = "flag"
			w.ExpressionAttributeNames["#z"] = "nothing"
			w.ExpressionAttributeValues[":s"] = &types.AttributeValueMemberS{Value: randomText(r)}
			w.ExpressionAttributeValues[":b"] = &types.AttributeValueMemberBOOL{Value: r.IntN(2) == 0}
			w.ExpressionAttributeValues[":z"] = &types.AttributeValueMemberNULL{Value: true}
			return w
		}
		_, errDirect := db.UpdateItem(context.Background(), build(viaDirect.Name))
		_, errSDK := viaSDK.DB.UpdateItem(context.Background(), build(viaSDK.Name))
		var ccfDirect, ccfSDK *types.ConditionalCheckFailedException
		switch {
		case errDirect == nil && errSDK == nil:
		case errors.As(errDirect, &ccfDirect) && errors.As(errSDK, &ccfSDK):
			refused++
			if !reflect.DeepEqual(render(ccfDirect.Item), render(ccfSDK.Item)) {
				t.Fatalf("write %d: refused with item %v, the SDK's %v", i, render(ccfDirect.Item), render(ccfSDK.Item))
			}
		default:
			t.Fatalf("write %d: answered %v, the SDK %v", i, errDirect, errSDK)
		}
	}
	if refused == 0 || refused == writes {
		t.Fatalf("%d of %d writes refused; the sequence must have both", refused, writes)
	}
	got, want := items(t, viaDirect), items(t, viaSDK)
	if len(got) != len(want) {
		t.Fatalf("%d items, the SDK's table %d", len(got), len(want))
	}
	for k, v := range want {
		// The two tables' keys are the same: items are keyed by PK and SK.
		if got[k] != v {
			t.Errorf("item %s:\n got  %s\n want %s", k, got[k], v)
		}
	}
	c := db.Stats()
	if c.Sent != writes || c.Succeeded != writes-refused || c.Refused+c.Resent != refused || c.Passed != 0 {
		t.Fatalf("counts %+v, want %d sent, %d succeeded, %d refused or resent, none passed", c, writes, writes-refused, refused)
	}
}

// TestRefusedConditionIsTheSDKs: a refused condition answered by DynamoDB
// Local is returned as the SDK returns it (a
// *types.ConditionalCheckFailedException with the same message and old
// item, its code readable through errors.As as smithy.APIError), with no
// second send; an old item outside the subset the package reads is left
// to the SDK client, which sends the write again.
func TestRefusedConditionIsTheSDKs(t *testing.T) {
	viaDirect, viaSDK := ddbtest.NewBareTable(t), ddbtest.NewBareTable(t)
	p := faultproxy.Start(t, viaDirect.Endpoint)
	db := direct(t, p.DynamoDB())
	refuse := func(name string, db interface {
		UpdateItem(context.Context, *dynamodb.UpdateItemInput, ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	}, table, pk string) *types.ConditionalCheckFailedException {
		t.Helper()
		for _, seq := range []int{5, 5} {
			_, err := db.UpdateItem(context.Background(), seqWrite(table, pk, seq, 3))
			var ccf *types.ConditionalCheckFailedException
			if errors.As(err, &ccf) {
				var api smithy.APIError
				if !errors.As(err, &api) || api.ErrorCode() != "ConditionalCheckFailedException" {
					t.Fatalf("%s: %v has no API error code", name, err)
				}
				return ccf
			}
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
		}
		t.Fatalf("%s: the second write was not refused", name)
		return nil
	}
	got := refuse("direct", db, viaDirect.Name, "plain")
	want := refuse("sdk", viaSDK.DB, viaSDK.Name, "plain")
	if got.ErrorMessage() != want.ErrorMessage() || !reflect.DeepEqual(render(got.Item), render(want.Item)) {
		t.Fatalf("refused with %q %v; the SDK %q %v", got.ErrorMessage(), render(got.Item), want.ErrorMessage(), render(want.Item))
	}
	if c := db.Stats(); c.Refused != 1 || c.Resent != 0 || p.StatsFor("UpdateItem").Requests != 2 {
		t.Fatalf("counts %+v, %d requests; want one refusal read directly, 2 requests", c, p.StatsFor("UpdateItem").Requests)
	}
	escaped := "quote\"s"
	got = refuse("direct, escaped key", db, viaDirect.Name, escaped)
	want = refuse("sdk, escaped key", viaSDK.DB, viaSDK.Name, escaped)
	if !reflect.DeepEqual(render(got.Item), render(want.Item)) {
		t.Fatalf("refused with %v; the SDK %v", render(got.Item), render(want.Item))
	}
	if c := db.Stats(); c.Refused != 1 || c.Resent != 1 {
		t.Fatalf("counts %+v, want the escaped item's refusal resent", c)
	}
}

func render(item map[string]types.AttributeValue) map[string]string {
	out := map[string]string{}
	for k, v := range item {
		out[k] = ddbtest.Render(v)
	}
	return out
}

// TestPassesWhatItDoesNotSend: an UpdateItem outside the package's shapes
// goes to the SDK client as it came, with the SDK's answer (ALL_NEW's
// attributes here).
func TestPassesWhatItDoesNotSend(t *testing.T) {
	tbl := ddbtest.NewBareTable(t)
	db := direct(t, tbl.DB)
	in := seqWrite(tbl.Name, "k", 1, 5)
	in.ReturnValues = types.ReturnValueAllNew
	out, err := db.UpdateItem(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	if got := ddbtest.Render(out.Attributes["tokens"]); got != "N:5" {
		t.Fatalf("ALL_NEW's tokens %s, want N:5", got)
	}
	unconditional := seqWrite(tbl.Name, "k", 2, 5)
	unconditional.ConditionExpression = nil
	if _, err := db.UpdateItem(context.Background(), unconditional); err != nil {
		t.Fatal(err)
	}
	withOption := seqWrite(tbl.Name, "k", 3, 5)
	if _, err := db.UpdateItem(context.Background(), withOption, func(o *dynamodb.Options) { o.RetryMaxAttempts = 1 }); err != nil {
		t.Fatal(err)
	}
	if c := db.Stats(); c != (condwrite.Counts{Passed: 3}) {
		t.Fatalf("counts %+v, want 3 passed and nothing sent", c)
	}
}

// TestAfterTroubleTheSDKSends: through a fault proxy, a direct send that
// is refused before it lands (a 500, a throttle) or lands and loses its
// answer (a 500 after DynamoDB applied it) is sent again through the SDK
// client; the write takes effect exactly once. For the next second
// (condwrite.Pause, by the DB's clock) every write goes through the SDK
// client; then direct sends resume. A send that outlives its context is an
// error, not sent again.
func TestAfterTroubleTheSDKSends(t *testing.T) {
	tbl := ddbtest.NewBareTable(t)
	p := faultproxy.Start(t, tbl.Endpoint)
	clk := clock.NewManual(time.Date(2024, 2, 29, 23, 59, 59, 0, time.UTC))
	db := direct(t, p.DynamoDB(func(o *dynamodb.Options) { o.RetryMaxAttempts = 1 }), condwrite.WithClock(clk.Now))
	for i, c := range []struct {
		name    string
		fault   faultproxy.Fault
		refused bool // the resend's condition finds the write applied
	}{
		{"500", faultproxy.InternalServerError(), false},
		{"throttled", faultproxy.Throttling(), false},
		{"over capacity", faultproxy.ProvisionedThroughputExceeded(), false},
		{"503", faultproxy.ServiceUnavailable(), false},
		{"lost answer", faultproxy.AfterForward(faultproxy.InternalServerError()), true},
	} {
		pk := "trouble-" + strconv.Itoa(i)
		p.ResetStats()
		before := db.Stats()
		id := p.Add(faultproxy.Rule{Operation: "UpdateItem", Fault: c.fault, Count: 1})
		_, err := db.UpdateItem(context.Background(), seqWrite(tbl.Name, pk, 1, 5))
		p.Remove(id)
		var ccf *types.ConditionalCheckFailedException
		switch {
		case c.refused && !errors.As(err, &ccf):
			t.Fatalf("%s: %v, want the resend's refused condition", c.name, err)
		case !c.refused && err != nil:
			t.Fatalf("%s: %v", c.name, err)
		}
		if n := p.StatsFor("UpdateItem").Requests; n != 2 {
			t.Fatalf("%s: %d requests, want the direct send and one through the SDK", c.name, n)
		}
		after := db.Stats()
		if after.Resent-before.Resent != 1 || after.Succeeded != before.Succeeded {
			t.Fatalf("%s: counts %+v then %+v, want one resend", c.name, before, after)
		}
		got := items(t, tbl)[`S:`+pk+` S:#USAGE`]
		if !strings.Contains(got, "tokens=N:5 ") {
			t.Fatalf("%s: item %q, want tokens 5 (applied once)", c.name, got)
		}
		// Paused: the next write goes through the SDK client, until the
		// pause has passed.
		clk.Advance(condwrite.Pause - time.Nanosecond)
		if _, err := db.UpdateItem(context.Background(), seqWrite(tbl.Name, pk, 2, 1)); err != nil {
			t.Fatal(err)
		}
		if now := db.Stats(); now.Passed != after.Passed+1 || now.Sent != after.Sent {
			t.Fatalf("%s: counts %+v then %+v, want the write during the pause passed to the SDK", c.name, after, now)
		}
		clk.Advance(time.Nanosecond)
		if _, err := db.UpdateItem(context.Background(), seqWrite(tbl.Name, pk, 3, 1)); err != nil {
			t.Fatal(err)
		}
		if now := db.Stats(); now.Succeeded != after.Succeeded+1 {
			t.Fatalf("%s: counts %+v then %+v, want direct sends again after the pause", c.name, after, now)
		}
	}

	// A hung request: the context's deadline ends it, and it is not sent
	// again.
	p.ResetStats()
	id := p.Add(faultproxy.Rule{Operation: "UpdateItem", Fault: faultproxy.Hang(), Count: 1})
	defer p.Remove(id)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err := db.UpdateItem(ctx, seqWrite(tbl.Name, "hung", 1, 5))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("hung send: %v, want the context's deadline", err)
	}
	if n := p.StatsFor("UpdateItem").Requests; n != 1 {
		t.Fatalf("hung send: %d requests, want 1", n)
	}
}

// TestAnswersAsTheSDKReadsThem: what a direct send makes of answers
// DynamoDB Local cannot be made to give (a server that answers as told):
// a 200 is a success whatever its CRC32 says, as the SDK client's answer
// (its body is not used); a 200 that is not a JSON object is an error for
// both, and not sent again; a refused condition is read when its CRC32
// matches or is not checked, and otherwise sent again through the SDK.
// DynamoDB Local's own 200s pass with the client's validation on.
func TestAnswersAsTheSDKReadsThem(t *testing.T) {
	tbl := ddbtest.NewBareTable(t)
	db := direct(t, ddblocal.DynamoDB(tbl.Endpoint, func(o *dynamodb.Options) { o.DisableValidateResponseChecksum = false }))
	if _, err := db.UpdateItem(context.Background(), seqWrite(tbl.Name, "k", 1, 5)); err != nil {
		t.Fatalf("DynamoDB Local's 200 with validation on: %v", err)
	}
	if c := db.Stats(); c.Succeeded != 1 {
		t.Fatalf("counts %+v, want the write sent directly", c)
	}

	crcOf := func(s string) string { return strconv.FormatUint(uint64(crc32.ChecksumIEEE([]byte(s))), 10) }
	const refusal = `{"__type":"com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException","message":"The conditional request failed","Item":{"PK":{"S":"k"}}}`
	for _, c := range []struct {
		name     string
		status   int
		body     string
		crc      string
		validate bool
		want     string // "ok", "refused" or "error"
		requests int64  // the direct send and any resend
	}{
		{"200, right CRC32", 200, "{}", crcOf("{}"), true, "ok", 1},
		{"200, wrong CRC32", 200, "{}", crcOf("{} "), true, "ok", 1},
		{"200, no CRC32", 200, "{}", "", true, "ok", 1},
		{"200, not JSON", 200, "<html>hello</html>", "", true, "error", 1},
		{"refused, right CRC32", 400, refusal, crcOf(refusal), true, "refused", 1},
		{"refused, wrong CRC32", 400, refusal, crcOf(refusal + " "), true, "refused", 2},
		{"refused, wrong CRC32 unchecked", 400, refusal, crcOf(refusal + " "), false, "refused", 1},
	} {
		var requests atomic.Int64
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			requests.Add(1)
			if c.crc != "" {
				w.Header().Set("X-Amz-Crc32", c.crc)
			}
			w.Header().Set("Content-Type", "application/x-amz-json-1.0")
			w.WriteHeader(c.status)
			_, _ = io.WriteString(w, c.body)
		}))
		client := ddblocal.DynamoDB(srv.URL, func(o *dynamodb.Options) {
			o.DisableValidateResponseChecksum = !c.validate
			o.RetryMaxAttempts = 1
		})
		db := direct(t, client)
		_, err := db.UpdateItem(context.Background(), seqWrite("t", "k", 1, 5))
		sent := requests.Load()
		_, sdkErr := client.UpdateItem(context.Background(), seqWrite("t", "k", 1, 5))
		srv.Close()
		outcome := func(err error) string {
			var ccf *types.ConditionalCheckFailedException
			switch {
			case err == nil:
				return "ok"
			case errors.As(err, &ccf):
				return "refused"
			}
			return "error"
		}
		if got := outcome(err); got != c.want {
			t.Errorf("%s: %s (%v), want %s", c.name, got, err, c.want)
		}
		if got := outcome(sdkErr); got != c.want {
			t.Errorf("%s: the SDK client alone: %s (%v), want %s", c.name, got, sdkErr, c.want)
		}
		if sent != c.requests {
			t.Errorf("%s: %d requests, want %d", c.name, sent, c.requests)
		}
	}
}

// TestSignsAsSigV4: the request carries a SigV4 signature, dated by the
// DB's clock, over the bytes the server received and the headers it
// names; a session token is sent and signed.
func TestSignsAsSigV4(t *testing.T) {
	at := time.Date(2024, 2, 29, 23, 59, 30, 0, time.UTC)
	creds := aws.Credentials{AccessKeyID: "AKIDEXAMPLE", SecretAccessKey: "secret", SessionToken: "token/+="}
	var got *http.Request
	var body []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			t.Error(err)
		}
		got, body = r.Clone(context.Background()), b
		_, _ = io.WriteString(w, "{}")
	}))
	defer srv.Close()
	client := dynamodb.New(dynamodb.Options{
		Region:       "eu-central-1",
		BaseEndpoint: aws.String(srv.URL),
		Credentials:  credentials.StaticCredentialsProvider{Value: creds},
		HTTPClient:   srv.Client(),
	})
	db := direct(t, client, condwrite.WithClock(func() time.Time { return at }))
	if _, err := db.UpdateItem(context.Background(), seqWrite("t", "k", 1, 5)); err != nil {
		t.Fatal(err)
	}
	auth := got.Header.Get("Authorization")
	wantPrefix := "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20240229/eu-central-1/dynamodb/aws4_request, " +
		"SignedHeaders=accept-encoding;content-length;content-type;host;x-amz-date;x-amz-security-token;x-amz-target, Signature="
	if !strings.HasPrefix(auth, wantPrefix) {
		t.Fatalf("Authorization %q,\nwant it to start %q", auth, wantPrefix)
	}
	if got.Header.Get("X-Amz-Date") != "20240229T235930Z" || got.Header.Get("X-Amz-Security-Token") != creds.SessionToken {
		t.Fatalf("X-Amz-Date %q, X-Amz-Security-Token %q", got.Header.Get("X-Amz-Date"), got.Header.Get("X-Amz-Security-Token"))
	}
	if got.Header.Get("X-Amz-Target") != "DynamoDB_20120810.UpdateItem" || got.Header.Get("Content-Type") != "application/x-amz-json-1.0" {
		t.Fatalf("headers %v", got.Header)
	}
	// The same request signed again from what the server received: the
	// signature covers these bytes and these headers.
	again, err := http.NewRequest(http.MethodPost, srv.URL+"/", strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range []string{"Accept-Encoding", "Content-Type", "X-Amz-Target"} {
		again.Header.Set(h, got.Header.Get(h))
	}
	again.ContentLength = int64(len(body))
	sum := sha256Hex(body)
	if err := v4.NewSigner().SignHTTP(context.Background(), creds, again, sum, "dynamodb", "eu-central-1", at); err != nil {
		t.Fatal(err)
	}
	if again.Header.Get("Authorization") != auth {
		t.Fatalf("signature over the received request\n %s\nsent\n %s", again.Header.Get("Authorization"), auth)
	}
}

// TestNewFollowsTheClient: the endpoint is the client's (its region's,
// FIPS when asked, or its BaseEndpoint); a client with no or anonymous
// credentials, one that requires account-id endpoints, or one whose
// endpoint does not resolve sends everything through the SDK.
func TestNewFollowsTheClient(t *testing.T) {
	creds := credentials.NewStaticCredentialsProvider("a", "b", "")
	for _, c := range []struct {
		name string
		o    dynamodb.Options
		want string // the endpoint, or "" for none
	}{
		{"region", dynamodb.Options{Region: "eu-west-1", Credentials: creds}, "https://dynamodb.eu-west-1.amazonaws.com/"},
		{"FIPS", dynamodb.Options{Region: "us-east-1", Credentials: creds, EndpointOptions: dynamodb.EndpointResolverOptions{UseFIPSEndpoint: aws.FIPSEndpointStateEnabled}}, "https://dynamodb-fips.us-east-1.amazonaws.com/"},
		{"China", dynamodb.Options{Region: "cn-north-1", Credentials: creds}, "https://dynamodb.cn-north-1.amazonaws.com.cn/"},
		{"base endpoint", dynamodb.Options{Region: "eu-west-1", Credentials: creds, BaseEndpoint: aws.String("http://localhost:8000")}, "http://localhost:8000/"},
		{"no credentials", dynamodb.Options{Region: "eu-west-1"}, ""},
		{"anonymous", dynamodb.Options{Region: "eu-west-1", Credentials: aws.AnonymousCredentials{}}, ""},
		{"no region", dynamodb.Options{Credentials: creds}, ""},
		{"FIPS pseudo-region", dynamodb.Options{Region: "fips-us-east-1", Credentials: creds}, ""},
		{"account-id endpoints required", dynamodb.Options{Region: "eu-west-1", Credentials: creds, AccountIDEndpointMode: aws.AccountIDEndpointModeRequired}, ""},
	} {
		db := condwrite.New(context.Background(), dynamodb.New(c.o))
		ok, why := db.Direct()
		if got := db.Endpoint(); got != c.want || ok != (c.want != "") || ok == (why != "") {
			t.Errorf("%s: endpoint %q, direct %v (%q); want %q", c.name, got, ok, why, c.want)
		}
	}
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// TestConcurrentWrites: goroutines sharing one DB, each writing its own
// item in sequence, all through the direct path (run under -race by make
// test): every write lands once.
func TestConcurrentWrites(t *testing.T) {
	tbl := ddbtest.NewBareTable(t)
	db := direct(t, tbl.DB)
	const goroutines, each = 16, 12
	errs := make(chan error, goroutines)
	for g := range goroutines {
		go func() {
			for i := 1; i <= each; i++ {
				if _, err := db.UpdateItem(context.Background(), seqWrite(tbl.Name, "g"+strconv.Itoa(g), i, int64(i))); err != nil {
					errs <- fmt.Errorf("goroutine %d write %d: %w", g, i, err)
					return
				}
			}
			errs <- nil
		}()
	}
	for range goroutines {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	got := items(t, tbl)
	for g := range goroutines {
		if item := got["S:g"+strconv.Itoa(g)+" S:#USAGE"]; !strings.Contains(item, "tokens=N:78 ") {
			t.Errorf("goroutine %d's item %q, want tokens 78 (1 + … + 12)", g, item)
		}
	}
	if c := db.Stats(); c.Sent != goroutines*each || c.Succeeded != goroutines*each {
		t.Fatalf("counts %+v, want %d sent and succeeded", c, goroutines*each)
	}
}
