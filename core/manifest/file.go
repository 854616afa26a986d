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
	// The node tree, then a walk of it: yaml.v3's own decode into Go
	// values checks each mapping key against every key before it, which
	// takes minutes on a manifest of 100,000 resources (docs/design.md §12).
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, &InvalidManifestError{Problems: []Problem{{Message: "not YAML or JSON: " + err.Error()}}}
	}
	w := nodeWalk{budget: maxNodes}
	raw, err := w.value(&root)
	if err != nil {
		return nil, &InvalidManifestError{Problems: []Problem{{Message: "not YAML or JSON: " + err.Error()}}}
	}
	doc, ok := raw.(map[string]any)
	if !ok {
		return nil, &InvalidManifestError{Problems: []Problem{{Message: "the document must be a mapping, not " + describe(raw)}}}
	}
	return doc, nil
}

// maxNodes bounds the values a document's aliases may expand to: a file
// of MaxDocumentSize holds at most a few million nodes of its own, and an
// alias bomb (an anchor of anchors) is refused instead of expanded.
const maxNodes = 8 << 20

// nodeWalk turns a YAML node tree into the generic document: mappings with
// string keys (a key given twice is an error), sequences, and scalars as
// YAML resolves them.
type nodeWalk struct {
	budget int // nodes left to visit, aliases expanded
	depth  int // nesting of the node being visited
}

// maxDepth bounds nesting (a manifest nests six levels; a hostile file
// could nest until the stack runs out).
const maxDepth = 256

func (w *nodeWalk) value(n *yaml.Node) (any, error) {
	if w.budget--; w.budget < 0 {
		return nil, fmt.Errorf("line %d: too many values (aliases expand to more than %d)", n.Line, maxNodes)
	}
	if w.depth++; w.depth > maxDepth {
		return nil, fmt.Errorf("line %d: nested more than %d levels deep (or an alias refers to itself)", n.Line, maxDepth)
	}
	defer func() { w.depth-- }()
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return nil, nil
		}
		return w.value(n.Content[0])
	case yaml.AliasNode:
		return w.value(n.Alias)
	case yaml.SequenceNode:
		out := make([]any, 0, len(n.Content))
		for _, c := range n.Content {
			v, err := w.value(c)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	case yaml.MappingNode:
		out := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Kind == yaml.ScalarNode && k.Tag == "!!merge" {
				return nil, fmt.Errorf("line %d: merge keys (<<) are not supported in a manifest", k.Line)
			}
			kv, err := w.value(k)
			if err != nil {
				return nil, err
			}
			key := fmt.Sprint(kv)
			if _, dup := out[key]; dup {
				return nil, fmt.Errorf("line %d: mapping key %q already defined", k.Line, key)
			}
			if out[key], err = w.value(v); err != nil {
				return nil, err
			}
		}
		return out, nil
	case yaml.ScalarNode:
		var v any
		if err := n.Decode(&v); err != nil {
			return nil, err
		}
		return v, nil
	}
	return nil, fmt.Errorf("line %d: unexpected YAML node", n.Line)
}
