package customresource

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/cfn"
)

// MaxBody is the most CloudFormation accepts as a response body.
const MaxBody = 4096

// truncated marks a shortened reason.
const truncated = " …[truncated]"

// Body is the JSON response body, at most MaxBody bytes: Reason is cut
// (on a rune boundary) until it fits, then Data values if it still does
// not.
func Body(r cfn.Response) ([]byte, error) {
	b, err := json.Marshal(r)
	reason := r.Reason
	for err == nil && len(b) > MaxBody && reason != "" {
		cut := len(reason) - (len(b) - MaxBody) - len(truncated)
		if cut < 0 {
			cut = 0
		}
		for cut > 0 && !utf8.RuneStart(reason[cut]) {
			cut--
		}
		reason = reason[:cut]
		r.Reason = reason + truncated
		b, err = json.Marshal(r)
	}
	if err == nil && len(b) > MaxBody {
		r.Data = map[string]any{"Truncated": "true"}
		b, err = json.Marshal(r)
	}
	if err != nil {
		return nil, err
	}
	if len(b) > MaxBody {
		return nil, fmt.Errorf("customresource: response of %d bytes does not fit %d", len(b), MaxBody)
	}
	return b, nil
}

// send PUTs the response to url, retrying network errors and 5xx answers.
func send(ctx context.Context, url string, r cfn.Response, o Options) error {
	if url == "" {
		return errors.New("customresource: the request has no ResponseURL")
	}
	body, err := Body(r)
	if err != nil {
		return err
	}
	wait := o.Backoff
	var last error
	for attempt := 1; attempt <= o.Attempts; attempt++ {
		if attempt > 1 {
			select {
			case <-ctx.Done():
				return fmt.Errorf("customresource: response not sent: %w (last: %w)", ctx.Err(), last)
			case <-time.After(wait):
			}
			wait *= 2
		}
		retry, err := put(ctx, url, body, o.Client)
		if err == nil {
			return nil
		}
		last = err
		o.Logger.Warn("custom resource response PUT failed", "attempt", attempt, "error", err)
		if !retry {
			break
		}
	}
	return fmt.Errorf("customresource: response not sent: %w", last)
}

// put sends one PUT; retry reports whether another attempt may succeed.
func put(ctx context.Context, url string, body []byte, c *http.Client) (retry bool, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, url, bytes.NewReader(body))
	if err != nil {
		return false, err
	}
	// The pre-signed URL's signature covers an empty content type.
	req.Header["Content-Type"] = []string{""}
	resp, err := c.Do(req)
	if err != nil {
		return ctx.Err() == nil, err
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		return false, nil
	case resp.StatusCode >= 500:
		return true, fmt.Errorf("PUT answered %s: %s", resp.Status, msg)
	default:
		return false, fmt.Errorf("PUT answered %s: %s", resp.Status, msg)
	}
}
