// Package condwrite sends conditional UpdateItems as signed HTTP requests of
// its own, through the SDK client's credentials, endpoint and HTTP client,
// and hands every other call, and every answer it does not take as a clear
// success, to that SDK client (docs/design.md §6, "Snapshot writes without
// the SDK's stack"; docs/decisions.md P57).
//
// The SDK builds a middleware stack for every call and decodes its answer
// through it: about 34 KB and 350 allocations per UpdateItem, which is most
// of what the aggregator allocates per stream record. A write this package
// sends itself costs a fraction of that; it takes only what it can send
// and read exactly as the SDK would:
//
//   - a conditional UpdateItem (a ConditionExpression) with no legacy
//     parameters, no option functions, nothing asked back but
//     ReturnValuesOnConditionCheckFailure, and attribute values of type S, N,
//     BOOL or NULL in valid UTF-8. Anything else goes to the SDK client as
//     it came.
//   - a 200 answer whose body is a JSON object is the write's success. The
//     body ("{}": nothing was asked back) is read to its end and not used,
//     so its CRC32 is not checked: a damaged body changes nothing the
//     caller gets, and the SDK's client returns such an answer as a
//     success too. A 200 whose body is not a JSON object is an error, as
//     the SDK's deserializer makes it (not sent again: it may have been
//     DynamoDB's).
//   - a refused condition (400, ConditionalCheckFailedException) whose
//     answer it reads whole (its checksum, and the old item in the subset
//     of core/internal/ddbjson) is returned as the SDK returns it: a
//     *types.ConditionalCheckFailedException with the item, in a
//     *smithy.OperationError. The write did not take effect.
//   - any other answer, and a request that failed in transit, is sent again
//     through the SDK client, which types the error (a refused condition
//     comes back as *types.ConditionalCheckFailedException with its item),
//     retries and backs off as it always does. A 4xx answer means the write
//     did not take effect; after a 5xx or a lost answer it may have, and
//     the SDK's own retry would send it again just the same. The one send
//     more than the SDK alone would make is that first one, and for the
//     next second (Pause) every UpdateItem goes through the SDK client, so
//     that under throttling or failure its retry policy paces the client.
//
// A write that the condition of its own update makes false after it lands
// (the snapshot write's seq# mark, the refill's rf) takes effect at most
// once however often it is sent; that is why only conditional writes are
// taken.
package condwrite

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
)

// SDK is the part of the SDK client a DB hands calls to.
type SDK interface {
	UpdateItem(context.Context, *dynamodb.UpdateItemInput, ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	PutItem(context.Context, *dynamodb.PutItemInput, ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	GetItem(context.Context, *dynamodb.GetItemInput, ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	TransactWriteItems(context.Context, *dynamodb.TransactWriteItemsInput, ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error)
}

// DB is a DynamoDB client for the aggregator: conditional UpdateItems sent
// by the package, everything else by the SDK client. It is safe for
// concurrent use.
type DB struct {
	sdk SDK
	// direct is nil when the client's settings leave nothing to send
	// directly (Direct reports why).
	direct *sender
	why    string
	stats  *stats
}

// stats counts what a DB did; read it with (*DB).Stats.
type stats struct {
	// Sent is the UpdateItems sent directly, and Succeeded those of them
	// answered 200.
	Sent, Succeeded counter
	// Refused is the direct sends answered with a refused condition
	// that the package read whole and returned.
	Refused counter
	// Resent is the direct sends handed to the SDK client after their
	// answer (or its absence).
	Resent counter
	// Passed is the UpdateItems handed to the SDK client untouched (not
	// a shape the package sends).
	Passed counter
}

// sender holds what a direct send needs, fixed when the DB is made.
type sender struct {
	http     dynamodb.HTTPClient
	creds    aws.CredentialsProvider
	signer   *v4.Signer
	region   string
	url      string
	host     string
	checksum bool
	now      func() time.Time
	// headers are the fixed headers' values, shared read-only by every
	// request (the signer and the transport only read them).
	headers struct{ contentType, target, identity []string }
	// calmAt is when direct sends start again (Unix nanoseconds) after
	// one that went wrong: until then every UpdateItem goes through the
	// SDK client, whose retry policy paces the client under throttling
	// or failure.
	calmAt atomic.Int64
}

// Pause is how long the DB leaves every UpdateItem to the SDK client
// after a direct send whose answer was neither a success nor a refused
// condition (a throttle, a 5xx, a lost answer).
const Pause = time.Second

// maxAnswer bounds the bytes read of an answer the package reads itself:
// a success is "{}", an error a few hundred bytes.
const maxAnswer = 64 << 10

// Option changes how New makes a DB.
type Option func(*settings)

type settings struct{ now func() time.Time }

// WithClock sets the clock that dates the signatures and times the pause
// after trouble (default time.Now).
func WithClock(now func() time.Time) Option { return func(s *settings) { s.now = now } }

// New returns the DB over client, with the endpoint client resolves for
// its region (or its BaseEndpoint) resolved once, now. A client whose
// settings the package cannot follow by itself (no or anonymous
// credentials, an endpoint that needs headers, an account id or does not
// resolve) yields a DB that sends every call through the client;
// (*DB).Direct says so.
func New(ctx context.Context, client *dynamodb.Client, opts ...Option) *DB {
	s := settings{now: time.Now}
	for _, o := range opts {
		o(&s)
	}
	db := &DB{sdk: client, stats: &stats{}}
	o := client.Options()
	switch {
	case o.Credentials == nil:
		db.why = "the client has no credentials (anonymous)"
		return db
	case isAnonymous(o.Credentials):
		db.why = "the client's credentials are anonymous"
		return db
	case o.AccountIDEndpointMode == aws.AccountIDEndpointModeRequired:
		db.why = "the client requires account-id endpoints"
		return db
	case o.HTTPClient == nil:
		db.why = "the client has no HTTP client"
		return db
	case o.Region == "" || strings.Contains(o.Region, "fips"):
		// No region, or a pseudo-region the SDK maps to another region
		// for signing: the SDK's to resolve.
		db.why = fmt.Sprintf("the client's region %q is not one the package signs for", o.Region)
		return db
	}
	params := dynamodb.EndpointParameters{
		Region:                aws.String(o.Region),
		AccountIdEndpointMode: aws.String(string(o.AccountIDEndpointMode)),
		Endpoint:              o.BaseEndpoint,
		UseFIPS:               aws.Bool(o.EndpointOptions.UseFIPSEndpoint == aws.FIPSEndpointStateEnabled),
		UseDualStack:          aws.Bool(o.EndpointOptions.UseDualStackEndpoint == aws.DualStackEndpointStateEnabled),
	}
	resolver := o.EndpointResolverV2
	if resolver == nil {
		resolver = dynamodb.NewDefaultEndpointResolverV2()
	}
	ep, err := resolver.ResolveEndpoint(ctx, params)
	if err != nil {
		// The SDK client reports it on every call, as it would without us.
		db.why = fmt.Sprintf("the client's endpoint does not resolve: %v", err)
		return db
	}
	if len(ep.Headers) != 0 {
		db.why = "the client's endpoint needs headers of its own"
		return db
	}
	u := ep.URI
	if u.Path == "" {
		u.Path = "/"
	}
	db.direct = &sender{
		http:     o.HTTPClient,
		creds:    o.Credentials,
		signer:   v4.NewSigner(),
		region:   o.Region,
		url:      u.String(),
		host:     u.Host,
		checksum: !o.DisableValidateResponseChecksum,
		now:      s.now,
	}
	db.direct.headers.contentType = []string{"application/x-amz-json-1.0"}
	db.direct.headers.target = []string{"DynamoDB_20120810.UpdateItem"}
	db.direct.headers.identity = []string{"identity"}
	return db
}

// isAnonymous reports whether p is the SDK's anonymous provider, with
// which the SDK sends requests unsigned.
func isAnonymous(p aws.CredentialsProvider) bool {
	switch p.(type) {
	case aws.AnonymousCredentials, *aws.AnonymousCredentials:
		return true
	}
	return false
}

// Direct reports whether the DB sends conditional UpdateItems itself and,
// when it does not, why.
func (db *DB) Direct() (bool, string) { return db.direct != nil, db.why }

// Endpoint is the URL conditional UpdateItems are sent to, or "" when the
// DB sends none itself.
func (db *DB) Endpoint() string {
	if db.direct == nil {
		return ""
	}
	return db.direct.url
}

// Stats returns the DB's counts so far.
func (db *DB) Stats() Counts {
	return Counts{
		Sent:      db.stats.Sent.load(),
		Succeeded: db.stats.Succeeded.load(),
		Refused:   db.stats.Refused.load(),
		Resent:    db.stats.Resent.load(),
		Passed:    db.stats.Passed.load(),
	}
}

// Counts is a copy of a DB's Stats.
type Counts struct{ Sent, Succeeded, Refused, Resent, Passed int64 }

// PutItem is the SDK client's.
func (db *DB) PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	return db.sdk.PutItem(ctx, in, optFns...)
}

// GetItem is the SDK client's.
func (db *DB) GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	return db.sdk.GetItem(ctx, in, optFns...)
}

// TransactWriteItems is the SDK client's.
func (db *DB) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, optFns ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	return db.sdk.TransactWriteItems(ctx, in, optFns...)
}

// UpdateItem sends in itself when it is a shape the package sends (the
// package doc) and takes a 200 answer as its success; otherwise, or after
// any other answer, the SDK client sends it.
func (db *DB) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	if db.direct == nil || len(optFns) != 0 || db.direct.paused() {
		db.stats.Passed.add()
		return db.sdk.UpdateItem(ctx, in, optFns...)
	}
	body, ok := appendUpdate(make([]byte, 0, requestSize(in)), in)
	if !ok {
		db.stats.Passed.add()
		return db.sdk.UpdateItem(ctx, in)
	}
	db.stats.Sent.add()
	got, refused, err := db.direct.send(ctx, body)
	switch {
	case err != nil:
		return nil, err
	case got == succeeded:
		db.stats.Succeeded.add()
		return &dynamodb.UpdateItemOutput{}, nil
	case got == refusedRead:
		db.stats.Refused.add()
		return nil, &smithy.OperationError{ServiceID: dynamodb.ServiceID, OperationName: "UpdateItem", Err: refused}
	case got == trouble:
		db.direct.calmAt.Store(db.direct.now().Add(Pause).UnixNano())
	}
	db.stats.Resent.add()
	return db.sdk.UpdateItem(ctx, in)
}

// answer is what became of a direct send.
type answer int

const (
	// succeeded: a 200.
	succeeded answer = iota
	// refusedRead: a refused condition, read whole.
	refusedRead
	// refusedUnread: a refused condition the package does not read (its
	// item is outside the subset); the SDK client sends it again.
	refusedUnread
	// trouble: any other answer, or none; the SDK client sends it again,
	// and direct sends pause.
	trouble
)

// paused reports whether direct sends are paused after trouble.
func (s *sender) paused() bool {
	calm := s.calmAt.Load()
	return calm != 0 && s.now().UnixNano() < calm
}

// send posts one UpdateItem body and says what became of it (answer), with
// the refused condition it read; or an error for a send that cannot be
// made again (ctx ended, or a 200 whose body did not arrive whole).
func (s *sender) send(ctx context.Context, body []byte) (answer, *types.ConditionalCheckFailedException, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.url, bytes.NewReader(body))
	if err != nil {
		return trouble, nil, fmt.Errorf("condwrite: %w", err)
	}
	req.Host = s.host
	req.ContentLength = int64(len(body))
	req.Header = http.Header{
		"Content-Type":    s.headers.contentType,
		"X-Amz-Target":    s.headers.target,
		"Accept-Encoding": s.headers.identity,
	}
	creds, err := s.creds.Retrieve(ctx)
	if err != nil {
		// The SDK client retrieves them again and says why it cannot.
		return trouble, nil, nil
	}
	sum := sha256.Sum256(body)
	if err := s.signer.SignHTTP(ctx, creds, req, hex.EncodeToString(sum[:]), "dynamodb", s.region, s.now()); err != nil {
		return trouble, nil, nil
	}
	resp, err := s.http.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return trouble, nil, fmt.Errorf("condwrite: UpdateItem: %w", ctx.Err())
		}
		return trouble, nil, nil
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusBadRequest {
		refused, got := s.refusal(resp)
		return got, refused, nil
	}
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxAnswer))
		return trouble, nil, nil
	}
	var buf [64]byte
	text, err := readAll(resp.Body, buf[:0])
	if err != nil {
		return trouble, nil, fmt.Errorf("condwrite: reading UpdateItem's 200 answer: %w", err)
	}
	if t := bytes.TrimSpace(text); len(t) == 0 || t[0] != '{' || !json.Valid(t) {
		// Not DynamoDB's answer (a proxy's page?): an error, as the SDK's
		// deserializer makes it, and not sent again.
		return trouble, nil, fmt.Errorf("condwrite: UpdateItem answered 200 with %d bytes that are not a JSON object", len(text))
	}
	return succeeded, nil, nil
}

// errTooLong is an answer longer than maxAnswer.
var errTooLong = errors.New("answer longer than 64 KiB")

// readAll reads r to its end into buf, growing it as needed, up to
// maxAnswer bytes.
func readAll(r io.Reader, buf []byte) ([]byte, error) {
	for {
		if len(buf) == cap(buf) {
			if len(buf) >= maxAnswer {
				return nil, errTooLong
			}
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
}
