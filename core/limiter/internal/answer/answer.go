// Package answer reads the fast path's UpdateItem answer straight from its
// body (docs/design.md §5, "The answer's decoding"): the write returns the
// bucket's new image, and the limiter reads it into a bucketitem.Image
// instead of letting the SDK build a map of attribute values that it would
// then decode again. The SDK's generic decoding of that map is the larger
// part of what an acquire costs beyond the request itself (docs/costs.md,
// "Client CPU of an acquire").
//
// Only a successful answer (HTTP 200) whose item is inside ddbjson's subset
// is read so; anything else — an error answer, another attribute type, an
// escape, a body that cannot be read — goes to the SDK exactly as it came,
// and Image decodes out.Attributes as before. A DB that is not the SDK's
// client never runs the middleware, and Image falls back the same way.
package answer

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"unsafe"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/zae-limiter/zae-limiter-go/core/bucketitem"
	"github.com/zae-limiter/zae-limiter-go/core/internal/ddbjson"
)

// Answer is a bucket image read from an answer's body, carried to the
// caller in the output's metadata.
type Answer struct {
	Image bucketitem.Image
	Item  string // the item's JSON (telemetry sizes it)
	Attrs int    // the attributes the item holds (telemetry's size bound)
}

type answerKey struct{}

// Of returns the answer the middleware read, from a call's output
// metadata, or nil.
func Of(md middleware.Metadata) *Answer {
	a, _ := md.Get(answerKey{}).(*Answer)
	return a
}

// Read is the call option that installs the middleware on one UpdateItem.
func Read(o *dynamodb.Options) {
	o.APIOptions = append(o.APIOptions, addReader)
}

// addReader places the middleware right inside the SDK's operation
// deserializer, so it sees the body after the SDK's own response wrappers
// (checksum validation, decompression) and before the SDK decodes it. A
// stack without that step (a future SDK that renames it) is left as it
// is: the answer is then decoded by the SDK, as for any other DB.
func addReader(s *middleware.Stack) error {
	_ = s.Deserialize.Insert(reader{}, "OperationDeserializer", middleware.After)
	return nil
}

// reader is the deserialize middleware of the fast path's UpdateItem.
type reader struct{}

// ID implements middleware.DeserializeMiddleware.
func (reader) ID() string { return "ZaeLimiter:BucketAnswer" }

// maxBytes bounds the body read whole: an item is at most 400 KB,
// and its JSON a few times that.
const maxBytes = 4 << 20

// HandleDeserialize implements middleware.DeserializeMiddleware.
func (reader) HandleDeserialize(ctx context.Context, in middleware.DeserializeInput, next middleware.DeserializeHandler) (
	middleware.DeserializeOutput, middleware.Metadata, error,
) {
	out, md, err := next.HandleDeserialize(ctx, in)
	if err != nil {
		return out, md, err
	}
	resp, ok := out.RawResponse.(*smithyhttp.Response)
	if !ok || resp == nil || resp.Response == nil || resp.StatusCode != http.StatusOK || resp.Body == nil ||
		resp.ContentLength > maxBytes {
		return out, md, err
	}
	body, rerr := readAll(resp.Body, resp.ContentLength)
	if rerr != nil {
		// What was read, then the failure: the SDK meets the body as it
		// would have.
		resp.Body = replacedBody{Reader: io.MultiReader(bytes.NewReader(body), failingReader{rerr}), closer: resp.Body}
		return out, md, err
	}
	// body is never written again: the strings the image keeps share it.
	text := unsafe.String(unsafe.SliceData(body), len(body))
	a := new(Answer)
	item, derr := ddbjson.Member(text, "Attributes")
	if derr == nil {
		a.Item = item
		a.Attrs, derr = a.Image.DecodeJSON(item)
	}
	if derr != nil {
		// The bytes read, then whatever is left (a body of unknown
		// length past maxBytes): the SDK reads the answer whole.
		resp.Body = replacedBody{Reader: io.MultiReader(bytes.NewReader(body), resp.Body), closer: resp.Body}
		return out, md, err
	}
	// The SDK decodes an empty answer; its Close still closes (and
	// checks) the real body.
	e := &emptyAnswer{closer: resp.Body}
	e.Reset("{}")
	resp.Body = e
	md.Set(answerKey{}, a)
	return out, md, err
}

// readAll reads r whole, in one allocation when its length is known.
func readAll(r io.Reader, length int64) ([]byte, error) {
	if length < 0 {
		return io.ReadAll(io.LimitReader(r, maxBytes))
	}
	buf := make([]byte, length)
	n, err := io.ReadFull(r, buf)
	return buf[:n], err
}

// replacedBody is a response body read from elsewhere, closing the
// original.
type replacedBody struct {
	io.Reader
	closer io.Closer
}

func (b replacedBody) Close() error { return b.closer.Close() }

// emptyAnswer is the body handed to the SDK after the middleware read the
// answer: "{}", closing the original.
type emptyAnswer struct {
	strings.Reader
	closer io.Closer
}

func (b *emptyAnswer) Close() error { return b.closer.Close() }

type failingReader struct{ err error }

func (f failingReader) Read([]byte) (int, error) { return 0, f.err }

// Image decodes the image of a successful UpdateItem: the one the
// middleware read, or out.Attributes.
func Image(out *dynamodb.UpdateItemOutput) (*bucketitem.Image, error) {
	if a := Of(out.ResultMetadata); a != nil {
		return &a.Image, nil
	}
	img, err := bucketitem.Decode(out.Attributes)
	return &img, err
}
