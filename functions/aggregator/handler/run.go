package handler

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
)

// RunEvent handles one Lambda-shaped DynamoDB stream event from a file as
// the function does (Invoke, handed the file's bytes), and prints the batch
// response as indented JSON.
func (h *Handler) RunEvent(ctx context.Context, path string, out io.Writer) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	resp, err := h.Invoke(ctx, raw)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	var indented bytes.Buffer
	if err := json.Indent(&indented, resp, "", "  "); err != nil {
		return err
	}
	indented.WriteByte('\n')
	_, err = indented.WriteTo(out)
	return err
}
