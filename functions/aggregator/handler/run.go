package handler

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/zae-limiter/zae-limiter-go/core/streamimage"
)

// RunEvent handles one Lambda-shaped DynamoDB stream event from a file, as
// the function would, and prints the batch response as JSON.
func (h *Handler) RunEvent(ctx context.Context, path string, out io.Writer) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	ev, err := streamimage.DecodeEvent(raw)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	resp, err := h.Handle(ctx, ev)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(out)
	enc.SetIndent("", "  ")
	return enc.Encode(resp)
}
