package streampoll

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// FixEmptyMaps is a dynamodbstreams client option for a poller reading
// DynamoDB Local's streams (the emulator of local runs and tests).
//
// DynamoDB Local writes an empty map attribute ({"M": {}} in the table) into
// stream records as {} with no type key, and the SDK's Streams deserializer
// (service/dynamodbstreams v1.47.0) turns such a value into nil when it is
// the first in its map, or silently into a copy of the previous value of the
// same map otherwise. This option rewrites {} back to {"M": {}} in
// GetRecords responses before the SDK decodes them. DynamoDB itself never
// sends {}; the option changes nothing there.
func FixEmptyMaps(o *dynamodbstreams.Options) {
	o.APIOptions = append(o.APIOptions, func(stack *middleware.Stack) error {
		// Inserted after the operation deserializer, so it sees the raw
		// response first (the deserialize step runs in reverse).
		return stack.Deserialize.Insert(emptyMapFix{}, "OperationDeserializer", middleware.After)
	})
}

type emptyMapFix struct{}

// ID implements middleware.DeserializeMiddleware.
func (emptyMapFix) ID() string { return "streampoll.FixEmptyMaps" }

// HandleDeserialize implements middleware.DeserializeMiddleware.
func (emptyMapFix) HandleDeserialize(ctx context.Context, in middleware.DeserializeInput, next middleware.DeserializeHandler) (middleware.DeserializeOutput, middleware.Metadata, error) {
	out, md, err := next.HandleDeserialize(ctx, in)
	if err != nil || middleware.GetOperationName(ctx) != "GetRecords" {
		return out, md, err
	}
	resp, ok := out.RawResponse.(*smithyhttp.Response)
	if !ok || resp.StatusCode != 200 || resp.Body == nil {
		return out, md, err
	}
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		return out, md, fmt.Errorf("ddblocal: read GetRecords response: %w", err)
	}
	if fixed, ok := fixEmptyMaps(body); ok {
		body = fixed
		resp.ContentLength = int64(len(body))
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	return out, md, nil
}

// fixEmptyMaps rewrites every {} attribute value in the images of a
// GetRecords response body as {"M": {}}. It reports false, and the caller
// keeps the body as it was, when there is nothing to fix or the body is not
// the JSON it expects.
func fixEmptyMaps(body []byte) ([]byte, bool) {
	if !bytes.Contains(body, []byte("{}")) {
		return nil, false
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber() // numbers are written back exactly as they came
	var doc map[string]any
	if dec.Decode(&doc) != nil {
		return nil, false
	}
	records, _ := doc["Records"].([]any)
	changed := false
	for _, r := range records {
		rec, _ := r.(map[string]any)
		sr, _ := rec["dynamodb"].(map[string]any)
		for _, name := range []string{"Keys", "NewImage", "OldImage"} {
			if img, ok := sr[name].(map[string]any); ok && fixImage(img) {
				changed = true
			}
		}
	}
	if !changed {
		return nil, false
	}
	out, err := json.Marshal(doc)
	if err != nil {
		return nil, false
	}
	return out, true
}

// fixImage fixes the attribute values of one image or M value.
func fixImage(img map[string]any) bool {
	changed := false
	for k, v := range img {
		fixed, ok := fixValue(v)
		if ok {
			img[k] = fixed
			changed = true
		}
	}
	return changed
}

// fixValue returns the replacement for an attribute value that needs one.
func fixValue(v any) (any, bool) {
	av, ok := v.(map[string]any)
	if !ok {
		return nil, false
	}
	if len(av) == 0 {
		return map[string]any{"M": map[string]any{}}, true
	}
	changed := false
	if m, ok := av["M"].(map[string]any); ok && fixImage(m) {
		changed = true
	}
	if l, ok := av["L"].([]any); ok {
		for i, e := range l {
			if fixed, ok := fixValue(e); ok {
				l[i] = fixed
				changed = true
			}
		}
	}
	return av, changed
}
