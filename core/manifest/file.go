package manifest

import (
	"bytes"
	"fmt"

	"go.yaml.in/yaml/v3"
)

// MaxDocumentSize bounds a manifest file (4 MiB): far above any real one,
// small enough that a hostile file cannot exhaust memory.
const MaxDocumentSize = 4 << 20

// Parse decodes a manifest file: YAML, or JSON (which YAML reads too), in
// the snake_case form. A key given twice in one mapping is an error, not a
// silent last-wins. A bad file is an *InvalidManifestError.
func Parse(data []byte) (*Manifest, error) {
	doc, err := ParseDocument(data)
	if err != nil {
		return nil, err
	}
	return FromDocument(doc)
}

// ParseDocument decodes a YAML or JSON file into the generic document
// FromDocument reads, without validating it.
func ParseDocument(data []byte) (map[string]any, error) {
	if len(data) > MaxDocumentSize {
		return nil, &InvalidManifestError{Problems: []Problem{{Message: fmt.Sprintf("the file holds %d bytes; at most %d", len(data), MaxDocumentSize)}}}
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, &InvalidManifestError{Problems: []Problem{{Message: "the file is empty"}}}
	}
	var raw any
	if err := yaml.Unmarshal(data, &raw); err != nil {
		return nil, &InvalidManifestError{Problems: []Problem{{Message: "not YAML or JSON: " + err.Error()}}}
	}
	doc, ok := normalize(raw).(map[string]any)
	if !ok {
		return nil, &InvalidManifestError{Problems: []Problem{{Message: "the document must be a mapping, not " + describe(normalize(raw))}}}
	}
	return doc, nil
}

// normalize turns the mappings YAML decodes with non-string keys into
// string-keyed ones, so that the decoder sees one shape.
func normalize(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = normalize(e)
		}
		return x
	case map[any]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[fmt.Sprint(k)] = normalize(e)
		}
		return m
	case []any:
		for i, e := range x {
			x[i] = normalize(e)
		}
		return x
	default:
		return v
	}
}
