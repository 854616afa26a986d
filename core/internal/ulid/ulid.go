// Package ulid makes ULIDs (https://github.com/ulid/spec): the entity
// incarnation ids and audit event ids of the table.
package ulid

import (
	"encoding/binary"
	"fmt"
	"io"
	"sync"
	"time"
)

// crockford is the ULID alphabet: Crockford's base32, upper case.
const crockford = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

// Len is the length of a ULID string.
const Len = 26

// maxTime is the largest timestamp a ULID holds: 2^48 − 1 ms.
const maxTime = 1<<48 - 1

// New returns a ULID (https://github.com/ulid/spec): the millisecond
// timestamp of t in 48 bits followed by 80 bits read from entropy, as 26
// characters of Crockford base32. ULIDs of different milliseconds sort by
// time as strings; within one millisecond their order is random (no
// monotonic counter: pinc and event ids need uniqueness, not order). It
// fails when t is before the Unix epoch or after year 10889, or when
// entropy fails.
func New(t time.Time, entropy io.Reader) (string, error) {
	ms := t.UnixMilli()
	if ms < 0 || ms > maxTime {
		return "", fmt.Errorf("ulid: time %s out of range", t.UTC().Format(time.RFC3339))
	}
	var b [16]byte
	binary.BigEndian.PutUint64(b[0:8], uint64(ms)<<16)
	if _, err := io.ReadFull(entropy, b[6:16]); err != nil {
		return "", fmt.Errorf("ulid: entropy: %w", err)
	}
	return encode(b), nil
}

// Monotonic makes ULIDs that sort in the order they were made, also within
// one millisecond: the first of a millisecond takes fresh entropy, each
// later one the previous random part plus one (the spec's monotonic
// mode). Safe for concurrent use.
type Monotonic struct {
	mu   sync.Mutex
	last [16]byte
}

// New returns the next ULID for t (see New for the failures; a random part
// that would overflow within one millisecond is one too).
func (m *Monotonic) New(t time.Time, entropy io.Reader) (string, error) {
	ms := t.UnixMilli()
	if ms < 0 || ms > maxTime {
		return "", fmt.Errorf("ulid: time %s out of range", t.UTC().Format(time.RFC3339))
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var b [16]byte
	binary.BigEndian.PutUint64(b[0:8], uint64(ms)<<16)
	lastMs := binary.BigEndian.Uint64(m.last[0:8]) >> 16
	if lastMs == uint64(ms) && m.last != [16]byte{} {
		b = m.last
		i := 15
		for ; i >= 6; i-- {
			b[i]++
			if b[i] != 0 {
				break
			}
		}
		if i < 6 {
			return "", fmt.Errorf("ulid: random part exhausted within one millisecond")
		}
	} else if _, err := io.ReadFull(entropy, b[6:16]); err != nil {
		return "", fmt.Errorf("ulid: entropy: %w", err)
	}
	m.last = b
	return encode(b), nil
}

// encode renders 128 bits as 26 Crockford base32 characters.
func encode(b [16]byte) string {
	hi := binary.BigEndian.Uint64(b[0:8])
	lo := binary.BigEndian.Uint64(b[8:16])
	var out [Len]byte
	// 26 characters × 5 bits = 130 bits: the first character carries the
	// top 3 bits of the 128.
	for i := range Len {
		shift := uint(125 - 5*i)
		var v uint64 // the 128-bit value shifted right by shift (low bits matter)
		switch {
		case shift >= 64:
			v = hi >> (shift - 64)
		case shift == 0:
			v = lo
		default:
			v = lo>>shift | hi<<(64-shift)
		}
		out[i] = crockford[v&31]
	}
	return string(out[:])
}
