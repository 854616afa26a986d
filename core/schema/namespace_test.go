package schema

import (
	"bytes"
	"crypto/rand"
	"errors"
	"io"
	"testing"
)

func TestNewNamespaceID(t *testing.T) {
	for i := 0; i < 1000; i++ {
		id, err := NewNamespaceID(rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		if err := ValidateNamespaceID(id); err != nil {
			t.Fatalf("id %q fails its own validation: %v", id, err)
		}
	}
}

func TestNewNamespaceIDRedrawsLeadingDash(t *testing.T) {
	// 0xF8 encodes to '-' as the first URL-safe base64 character (62 << 2).
	src := append(bytes.Repeat([]byte{0xF8}, 8), []byte("ABCDEFGH")...)
	id, err := NewNamespaceID(bytes.NewReader(src))
	if err != nil {
		t.Fatal(err)
	}
	if id != "QUJDREVGR0g" {
		t.Fatalf("id = %q, want the second draw QUJDREVGR0g", id)
	}
}

func TestNewNamespaceIDShortRead(t *testing.T) {
	_, err := NewNamespaceID(bytes.NewReader([]byte{1, 2, 3}))
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("err = %v, want io.ErrUnexpectedEOF", err)
	}
}
