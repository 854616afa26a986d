package ulid

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"testing/iotest"
	"time"
)

func TestNewVectors(t *testing.T) {
	tests := []struct {
		t       time.Time
		entropy []byte
		want    string
	}{
		{time.UnixMilli(0), make([]byte, 10), "00000000000000000000000000"},
		{time.UnixMilli(0), bytes.Repeat([]byte{0xff}, 10), "0000000000ZZZZZZZZZZZZZZZZ"},
		{time.UnixMilli(1<<48 - 1), bytes.Repeat([]byte{0xff}, 10), "7ZZZZZZZZZZZZZZZZZZZZZZZZZ"},
		// ulid(1469918176385) is "01ARYZ6S41…" in the reference implementation's
		// README; the spec's example 01ARZ3NDEK… is 1469922850259.
		{time.UnixMilli(1469918176385), make([]byte, 10), "01ARYZ6S410000000000000000"},
		{time.UnixMilli(1469922850259), make([]byte, 10), "01ARZ3NDEK0000000000000000"},
		{time.UnixMilli(1), []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 1}, "00000000010000000000000001"},
		{time.UnixMilli(0), []byte{0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0}, "0000000000G000000000000000"},
	}
	for _, tc := range tests {
		got, err := New(tc.t, bytes.NewReader(tc.entropy))
		if err != nil {
			t.Fatal(err)
		}
		if got != tc.want {
			t.Errorf("New(%d ms, %x) = %s, want %s", tc.t.UnixMilli(), tc.entropy, got, tc.want)
		}
	}
}

func TestNewOrderAndErrors(t *testing.T) {
	base := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	prev := ""
	for i := range 50 {
		id, err := New(base.Add(time.Duration(i)*time.Millisecond), bytes.NewReader(bytes.Repeat([]byte{byte(255 - i)}, 10)))
		if err != nil {
			t.Fatal(err)
		}
		if len(id) != Len || strings.Trim(id, "0123456789ABCDEFGHJKMNPQRSTVWXYZ") != "" {
			t.Fatalf("bad ULID %q", id)
		}
		if id <= prev {
			t.Fatalf("ULIDs of later milliseconds must sort later: %s after %s", id, prev)
		}
		prev = id
	}
	if _, err := New(time.UnixMilli(-1), bytes.NewReader(make([]byte, 10))); err == nil {
		t.Fatal("negative time accepted")
	}
	if _, err := New(time.UnixMilli(1<<48), bytes.NewReader(make([]byte, 10))); err == nil {
		t.Fatal("time beyond 48 bits accepted")
	}
	boom := errors.New("boom")
	if _, err := New(base, iotest.ErrReader(boom)); !errors.Is(err, boom) {
		t.Fatalf("entropy error = %v", err)
	}
	if _, err := New(base, bytes.NewReader(make([]byte, 9))); err == nil {
		t.Fatal("short entropy accepted")
	}
}

// TestMonotonic: ULIDs of one millisecond sort in the order they were made;
// a new millisecond starts from fresh entropy.
func TestMonotonic(t *testing.T) {
	var m Monotonic
	at := time.UnixMilli(1_800_000_000_000)
	entropy := bytes.NewReader(bytes.Repeat([]byte{0xff, 0x01}, 50))
	prev := ""
	for i := range 300 {
		id, err := m.New(at, entropy)
		if err != nil || len(id) != Len || id <= prev {
			t.Fatalf("%d: %q after %q, %v", i, id, prev, err)
		}
		prev = id
	}
	next, err := m.New(at.Add(time.Millisecond), bytes.NewReader(make([]byte, 10)))
	if err != nil || next <= prev || next[10:] != "0000000000000000" {
		t.Fatalf("next millisecond: %q (after %q), %v", next, prev, err)
	}
	// An exhausted random part is an error, not a wrap.
	var full Monotonic
	if _, err := full.New(at, bytes.NewReader(bytes.Repeat([]byte{0xff}, 10))); err != nil {
		t.Fatal(err)
	}
	if _, err := full.New(at, nil); err == nil {
		t.Fatal("an overflow within one millisecond must be an error")
	}
}
