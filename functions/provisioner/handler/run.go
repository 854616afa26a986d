package handler

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/zae-limiter/zae-limiter-go/core/manifest"
)

// RunEvent handles one Lambda payload from a file, as the function would,
// and prints the answer: for a CloudFormation request, the response it
// sent to the request's ResponseURL.
func (h *Handler) RunEvent(ctx context.Context, path string, out io.Writer) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	res, err := h.Invoke(ctx, raw)
	if err != nil {
		return err
	}
	return printJSON(out, res)
}

// RunManifest plans (apply false) or applies a manifest file to namespace
// nsID ("": the manifest's namespace, resolved) and prints the result. Post-
// commit problems are printed and returned as an error.
func (h *Handler) RunManifest(ctx context.Context, path, nsID string, apply bool, out io.Writer) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	doc, err := manifest.ParseDocument(raw)
	if err != nil {
		return err
	}
	action := "plan"
	if apply {
		action = "apply"
	}
	res, err := h.invoke(ctx, invocation{Action: action, Manifest: doc, NamespaceID: nsID})
	if err != nil {
		return err
	}
	if err := printJSON(out, res); err != nil {
		return err
	}
	if len(res.Errors) > 0 {
		return fmt.Errorf("%d post-commit problems; the config is applied, apply again to finish", len(res.Errors))
	}
	return nil
}

func printJSON(out io.Writer, v any) error {
	enc := json.NewEncoder(out)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
