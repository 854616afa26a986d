package schema

import (
	"encoding/base64"
	"fmt"
	"io"
)

// namespaceIDBytes is the entropy of a namespace id: 8 bytes, which encode to
// NamespaceIDLen (11) URL-safe base64 characters without padding.
const namespaceIDBytes = 8

// NewNamespaceID draws a fresh namespace id from r (crypto/rand.Reader in
// production): 8 random bytes as unpadded URL-safe base64, redrawn while the
// result would start with '-' (docs/design.md §2), so it can never read as a flag.
func NewNamespaceID(r io.Reader) (string, error) {
	var b [namespaceIDBytes]byte
	for {
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return "", fmt.Errorf("namespace id: %w", err)
		}
		id := base64.RawURLEncoding.EncodeToString(b[:])
		if id[0] != '-' {
			return id, nil
		}
	}
}
