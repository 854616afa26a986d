package httplimit

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
)

// EntityFromHeader takes the entity from a request header as it is (spaces
// around it trimmed): a tenant or account id that a gateway in front of the
// service has set. A value the table refuses as an entity id (docs/design.md
// §2: letters, digits and `_ . - : @`, at most 256 bytes) is no entity.
// Never use it for a secret: the entity is stored in the table's keys and
// shown to operators; see EntityFromAPIKey.
func EntityFromHeader(name string) EntityFunc {
	key := http.CanonicalHeaderKey(name)
	return func(r *http.Request) string { return headerValue(r.Header, key) }
}

// EntityFromAPIKey takes the entity from an API key the client sends in a
// header (with "Authorization", the credentials after a "Bearer " scheme).
// The key is a secret, so the entity is not the key but APIKeyEntity of it.
func EntityFromAPIKey(name string) EntityFunc {
	key := http.CanonicalHeaderKey(name)
	bearer := key == "Authorization"
	return func(r *http.Request) string {
		v := headerValue(r.Header, key)
		if bearer {
			const scheme = "bearer "
			if len(v) <= len(scheme) || !strings.EqualFold(v[:len(scheme)], scheme) {
				return ""
			}
			v = strings.TrimLeft(v[len(scheme):], " \t")
		}
		if v == "" {
			return ""
		}
		return APIKeyEntity(v)
	}
}

// APIKeyEntity is the entity id of an API key: "key:" and the first 16 bytes
// of its SHA-256 in hex. An operator sets a key's own limits on this id;
// neither the table nor its audit trail ever holds the key.
func APIKeyEntity(apiKey string) string {
	sum := sha256.Sum256([]byte(apiKey))
	var b [4 + 32]byte
	copy(b[:], "key:")
	hex.Encode(b[4:], sum[:16])
	return string(b[:])
}

// headerValue is the first value of the canonical header key, trimmed.
func headerValue(h http.Header, key string) string {
	if v := h[key]; len(v) > 0 {
		return strings.Trim(v[0], " \t")
	}
	return ""
}

// ClientIP says where the client address of a request is read. The zero
// value reads the address of the connection's peer (Request.RemoteAddr).
//
// Behind reverse proxies (a load balancer, a CDN) that peer is the last
// proxy, and the client's address is in a header each proxy appends to. A
// client can send that header too, with any addresses in it, so it is read
// only when the peer is one of TrustedProxies, and only as far as trusted
// proxies wrote it: from the right, each address that is a trusted proxy is
// skipped, and the first that is not is the client. Reading the leftmost
// address instead would let every client choose its own entity, escaping its
// limits or spending someone else's.
type ClientIP struct {
	// TrustedProxies are the addresses of the proxies in front of the
	// service. Empty: the header is never read.
	TrustedProxies []netip.Prefix
	// Header is the field the proxies append the client address to:
	// "X-Forwarded-For" (the default when TrustedProxies is set; any field
	// holding a comma-separated list of addresses, such as "X-Real-IP",
	// reads the same way) or "Forwarded" (RFC 7239, its for= parameters).
	Header string
}

// EntityFromClientIP takes the entity from the client's IP address (see
// ClientIP for where it is read) as ClientIPEntity writes it. A request whose
// address cannot be read, or whose trusted header holds something other than
// an address where the client should be ("unknown", an obfuscated name), has
// no entity.
func EntityFromClientIP(c ClientIP) (EntityFunc, error) {
	for _, p := range c.TrustedProxies {
		if !p.IsValid() {
			return nil, &OptionsError{Field: "ClientIP.TrustedProxies", Reason: "a prefix is not valid: " + p.String()}
		}
	}
	if c.Header != "" && len(c.TrustedProxies) == 0 {
		return nil, &OptionsError{Field: "ClientIP.Header", Reason: "a forwarded header is read only from TrustedProxies, and none is set"}
	}
	if c.Header == "" && len(c.TrustedProxies) > 0 {
		c.Header = "X-Forwarded-For"
	}
	if c.Header != "" && !isToken(c.Header) {
		return nil, &OptionsError{Field: "ClientIP.Header", Reason: strconv.Quote(c.Header) + " is not a header field name"}
	}
	src := &ipSource{trusted: append([]netip.Prefix(nil), c.TrustedProxies...), header: http.CanonicalHeaderKey(c.Header)}
	src.forwarded = src.header == "Forwarded"
	return func(r *http.Request) string {
		a, ok := src.clientAddr(r.RemoteAddr, r.Header[src.header])
		if !ok {
			return ""
		}
		return ClientIPEntity(a)
	}, nil
}

// ipSource is a validated ClientIP.
type ipSource struct {
	trusted   []netip.Prefix
	header    string
	forwarded bool
}

func (s *ipSource) isTrusted(a netip.Addr) bool {
	for _, p := range s.trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// clientAddr finds the client's address from the peer's (remoteAddr) and
// the values of the forwarded header, as ClientIP says.
func (s *ipSource) clientAddr(remoteAddr string, values []string) (netip.Addr, bool) {
	peer, ok := parseNode(remoteAddr)
	if !ok {
		return netip.Addr{}, false
	}
	if len(s.trusted) == 0 || !s.isTrusted(peer) {
		return peer, true
	}
	var hops []string
	if s.forwarded {
		hops = forwardedFor(values)
	} else {
		hops = listEntries(values)
	}
	client := peer
	for i := len(hops) - 1; i >= 0; i-- {
		a, ok := parseNode(hops[i])
		if !ok {
			return netip.Addr{}, false
		}
		client = a
		if !s.isTrusted(a) {
			break
		}
	}
	return client, true
}

// listEntries splits the values of a comma-separated list field
// (X-Forwarded-For), every line in order, into its non-empty entries.
func listEntries(values []string) []string {
	var out []string
	for _, v := range values {
		for len(v) > 0 {
			i := strings.IndexByte(v, ',')
			if i < 0 {
				i = len(v)
			}
			if e := trimOWS(v[:i]); e != "" {
				out = append(out, e)
			}
			if i == len(v) {
				break
			}
			v = v[i+1:]
		}
	}
	return out
}

// forwardedFor reads the for= parameter of every element of the Forwarded
// field (RFC 7239 §4), every line in order: an element without one counts as
// "" (not an address). Values may be tokens or quoted strings; a quoted
// string's escapes are undone. A line that does not parse ends the list there
// with an element "" (so the client is never read from past it).
func forwardedFor(values []string) []string {
	var out []string
	for _, v := range values {
		var forVal string
		hasElem := false
		p := 0
		flush := func() {
			if hasElem {
				out = append(out, forVal)
			}
			forVal, hasElem = "", false
		}
		for {
			p = skipOWS(v, p)
			if p >= len(v) {
				break
			}
			if v[p] == ',' {
				flush()
				p++
				continue
			}
			if v[p] == ';' {
				p++
				continue
			}
			hasElem = true
			// pair = token "=" value
			start := p
			for p < len(v) && isTokenChar(v[p]) {
				p++
			}
			name := v[start:p]
			if name == "" || p >= len(v) || v[p] != '=' {
				out = append(out, "")
				return out
			}
			p++
			var val string
			if p < len(v) && v[p] == '"' {
				var ok bool
				val, p, ok = quotedString(v, p)
				if !ok {
					out = append(out, "")
					return out
				}
			} else {
				start := p
				for p < len(v) && isTokenChar(v[p]) {
					p++
				}
				val = v[start:p]
			}
			if strings.EqualFold(name, "for") {
				forVal = val
			}
			p = skipOWS(v, p)
			if p < len(v) && v[p] != ',' && v[p] != ';' {
				out = append(out, "")
				return out
			}
		}
		flush()
	}
	return out
}

// quotedString reads the quoted-string starting at v[p] == '"' and returns
// its content (escapes undone), the position after it and whether it was
// well formed.
func quotedString(v string, p int) (string, int, bool) {
	p++ // the opening quote
	start := p
	var b []byte
	escaped := false // b holds the content so far
	for p < len(v) {
		c := v[p]
		switch {
		case c == '"':
			if !escaped {
				return v[start:p], p + 1, true
			}
			return string(b), p + 1, true
		case c == '\\':
			if p+1 >= len(v) || isCTL(v[p+1]) {
				return "", p, false
			}
			if !escaped {
				b, escaped = append(b, v[start:p]...), true
			}
			b = append(b, v[p+1])
			p += 2
			continue
		case isCTL(c):
			return "", p, false
		}
		if escaped {
			b = append(b, c)
		}
		p++
	}
	return "", p, false
}

// isToken reports a non-empty token (RFC 9110 §5.6.2), such as a field name.
func isToken(s string) bool {
	for i := range len(s) {
		if !isTokenChar(s[i]) {
			return false
		}
	}
	return s != ""
}

// isCTL reports a control character a field value cannot hold (HTAB
// aside).
func isCTL(c byte) bool { return c < 0x20 && c != '\t' || c == 0x7f }

func skipOWS(v string, p int) int {
	for p < len(v) && (v[p] == ' ' || v[p] == '\t') {
		p++
	}
	return p
}

func trimOWS(s string) string { return strings.Trim(s, " \t") }

// isTokenChar reports a tchar of RFC 9110 §5.6.2.
func isTokenChar(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

// parseNode reads an address as a peer or a proxy writes it: an IPv4
// address, an IPv6 address (bare, or in brackets), either with a port
// (RemoteAddr's host:port; RFC 7239's node, whose port may be obfuscated).
// The zone is dropped and an IPv4-mapped IPv6 address is read as IPv4.
func parseNode(s string) (netip.Addr, bool) {
	s = trimOWS(s)
	host := s
	switch {
	case strings.HasPrefix(s, "["):
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return netip.Addr{}, false
		}
		host = s[1:end]
		if rest := s[end+1:]; rest != "" && (rest[0] != ':' || len(rest) == 1) {
			return netip.Addr{}, false
		}
	case strings.Count(s, ":") == 1:
		i := strings.IndexByte(s, ':')
		if i == len(s)-1 {
			return netip.Addr{}, false
		}
		host = s[:i]
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Addr{}, false
	}
	return a.WithZone("").Unmap(), true
}

// ClientIPEntity is the entity id of a client address: an IPv4 address as it
// is ("203.0.113.7"); an IPv6 address as its /64 network, the first four
// groups in lowercase hex and "::" ("2001:db8:1:2::" for every address of
// 2001:db8:1:2::/64). A /64 is what one IPv6 subscriber is given, so a
// client cannot step out of its limits by changing its interface id. The
// zero Addr is "".
func ClientIPEntity(a netip.Addr) string {
	if !a.IsValid() {
		return ""
	}
	a = a.WithZone("").Unmap()
	if a.Is4() {
		return a.String()
	}
	b := a.As16()
	var buf [4*5 + 1]byte
	out := buf[:0]
	for g := range 4 {
		out = strconv.AppendUint(out, uint64(b[2*g])<<8|uint64(b[2*g+1]), 16)
		out = append(out, ':')
	}
	out = append(out, ':')
	return string(out)
}
