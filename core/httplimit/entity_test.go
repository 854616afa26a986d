package httplimit

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"testing"

	"github.com/zae-limiter/zae-limiter-go/core/schema"
)

// TestClientIPEntity pins the entity of a client address: IPv4 as it is,
// IPv6 as its /64, IPv4-mapped IPv6 read as IPv4, zones dropped; every one a
// valid entity id.
func TestClientIPEntity(t *testing.T) {
	for _, c := range []struct{ addr, want string }{
		{"203.0.113.7", "203.0.113.7"},
		{"0.0.0.0", "0.0.0.0"},
		{"255.255.255.255", "255.255.255.255"},
		{"10.1.2.3", "10.1.2.3"},
		{"::ffff:198.51.100.1", "198.51.100.1"},
		{"2001:db8:1:2:3:4:5:6", "2001:db8:1:2::"},
		{"2001:db8:1:2::", "2001:db8:1:2::"},
		{"2001:db8:1:2:ffff:ffff:ffff:ffff", "2001:db8:1:2::"},
		{"2001:DB8:0:0:1::1", "2001:db8:0:0::"},
		{"::1", "0:0:0:0::"},
		{"::", "0:0:0:0::"},
		{"fe80::1%eth0", "fe80:0:0:0::"},
		{"ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "ffff:ffff:ffff:ffff::"},
	} {
		got := ClientIPEntity(netip.MustParseAddr(c.addr))
		if got != c.want {
			t.Errorf("ClientIPEntity(%s) = %q, want %q", c.addr, got, c.want)
		}
		if err := schema.ValidateEntityID(got); err != nil {
			t.Errorf("ClientIPEntity(%s) = %q, not an entity id: %v", c.addr, got, err)
		}
	}
	if got := ClientIPEntity(netip.Addr{}); got != "" {
		t.Errorf("ClientIPEntity(zero) = %q, want \"\"", got)
	}
}

// TestParseNode pins the address forms a peer or a proxy writes.
func TestParseNode(t *testing.T) {
	for _, c := range []struct {
		in   string
		want string // "" for not an address
	}{
		{"203.0.113.7", "203.0.113.7"},
		{"203.0.113.7:443", "203.0.113.7"},
		{" 203.0.113.7 ", "203.0.113.7"},
		{"[2001:db8::1]:8080", "2001:db8::1"},
		{"[2001:db8::1]", "2001:db8::1"},
		{"2001:db8::1", "2001:db8::1"},
		{"[fe80::1%25eth0]:80", "fe80::1"}, // whatever the zone says, it is dropped
		{"[fe80::1%eth0]:80", "fe80::1"},
		{"[::ffff:192.0.2.1]:1", "192.0.2.1"},
		{"192.0.2.60:_hidden", "192.0.2.60"}, // an obfuscated port (RFC 7239 §6.3)
		{"203.0.113.7:", ""},
		{"[2001:db8::1]:", ""},
		{"[2001:db8::1]x", ""},
		{"[2001:db8::1", ""},
		{"unknown", ""},
		{"_hidden", ""},
		{"", ""},
		{"example.com", ""},
		{"1.2.3", ""},
		{"@", ""},
	} {
		a, ok := parseNode(c.in)
		got := ""
		if ok {
			got = a.String()
		}
		if got != c.want {
			t.Errorf("parseNode(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// TestEntityFromClientIP pins where the client address is read: the peer
// by default; behind trusted proxies, the header from the right, skipping
// the trusted hops, never an address a client wrote past an untrusted hop.
func TestEntityFromClientIP(t *testing.T) {
	proxies := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("2001:db8:ffff::/48")}
	for _, c := range []struct {
		name   string
		cfg    ClientIP
		remote string
		header map[string][]string
		want   string
	}{
		{name: "peer, IPv4", remote: "203.0.113.7:51234", want: "203.0.113.7"},
		{name: "peer, IPv6 to its /64", remote: "[2001:db8:aa:bb:1:2:3:4]:443", want: "2001:db8:aa:bb::"},
		{name: "peer: a forwarded header is ignored without trusted proxies", remote: "203.0.113.7:1",
			header: map[string][]string{"X-Forwarded-For": {"198.51.100.1"}}, want: "203.0.113.7"},
		{name: "peer unreadable", remote: "@", want: ""},
		{name: "trusted peer, one hop", cfg: ClientIP{TrustedProxies: proxies}, remote: "10.0.0.5:80",
			header: map[string][]string{"X-Forwarded-For": {"198.51.100.1"}}, want: "198.51.100.1"},
		{name: "an untrusted peer's header is never read", cfg: ClientIP{TrustedProxies: proxies}, remote: "203.0.113.7:80",
			header: map[string][]string{"X-Forwarded-For": {"198.51.100.1"}}, want: "203.0.113.7"},
		{
			// The client wrote "1.1.1.1" itself; the first untrusted
			// address from the right is the one our proxy saw.
			name: "a spoofed leftmost address is skipped", cfg: ClientIP{TrustedProxies: proxies}, remote: "10.0.0.5:80",
			header: map[string][]string{"X-Forwarded-For": {"1.1.1.1, 198.51.100.1, 10.0.0.9"}}, want: "198.51.100.1",
		},
		{
			name: "several header lines read in order", cfg: ClientIP{TrustedProxies: proxies}, remote: "10.0.0.5:80",
			header: map[string][]string{"X-Forwarded-For": {"1.1.1.1, 198.51.100.1", "10.0.0.9,10.0.0.8"}}, want: "198.51.100.1",
		},
		{name: "every hop trusted: the leftmost", cfg: ClientIP{TrustedProxies: proxies}, remote: "10.0.0.5:80",
			header: map[string][]string{"X-Forwarded-For": {"10.0.0.7, 10.0.0.9"}}, want: "10.0.0.7"},
		{name: "no header: the trusted peer itself", cfg: ClientIP{TrustedProxies: proxies}, remote: "10.0.0.5:80", want: "10.0.0.5"},
		{name: "an unreadable hop where the client should be", cfg: ClientIP{TrustedProxies: proxies}, remote: "10.0.0.5:80",
			header: map[string][]string{"X-Forwarded-For": {"1.1.1.1, garbage, 10.0.0.9"}}, want: ""},
		{name: "empty entries are skipped", cfg: ClientIP{TrustedProxies: proxies}, remote: "10.0.0.5:80",
			header: map[string][]string{"X-Forwarded-For": {",198.51.100.1,, "}}, want: "198.51.100.1"},
		{name: "IPv6 through trusted IPv6 proxies", cfg: ClientIP{TrustedProxies: proxies}, remote: "[2001:db8:ffff::1]:80",
			header: map[string][]string{"X-Forwarded-For": {"2001:db8:5:6:7::1, 2001:db8:ffff:1::2"}}, want: "2001:db8:5:6::"},
		{name: "X-Real-IP", cfg: ClientIP{TrustedProxies: proxies, Header: "x-real-ip"}, remote: "10.0.0.5:80",
			header: map[string][]string{"X-Real-Ip": {"198.51.100.1"}}, want: "198.51.100.1"},
		{
			name: "Forwarded", cfg: ClientIP{TrustedProxies: proxies, Header: "Forwarded"}, remote: "10.0.0.5:80",
			header: map[string][]string{"Forwarded": {`for=1.1.1.1, for="[2001:db8:cafe::17]:4711";proto=https, For=10.0.0.9;by=10.0.0.5`}},
			want:   "2001:db8:cafe:0::",
		},
		{
			name: "Forwarded, quoted with escapes", cfg: ClientIP{TrustedProxies: proxies, Header: "Forwarded"}, remote: "10.0.0.5:80",
			header: map[string][]string{"Forwarded": {`proto=http;for="198.51.100.\1:80"`}}, want: "198.51.100.1",
		},
		{
			name: "Forwarded for=unknown where the client should be", cfg: ClientIP{TrustedProxies: proxies, Header: "Forwarded"}, remote: "10.0.0.5:80",
			header: map[string][]string{"Forwarded": {"for=198.51.100.1, for=unknown"}}, want: "",
		},
		{
			name: "Forwarded element without for=", cfg: ClientIP{TrustedProxies: proxies, Header: "Forwarded"}, remote: "10.0.0.5:80",
			header: map[string][]string{"Forwarded": {"for=198.51.100.1, proto=https"}}, want: "",
		},
		{
			name: "Forwarded that does not parse", cfg: ClientIP{TrustedProxies: proxies, Header: "Forwarded"}, remote: "10.0.0.5:80",
			header: map[string][]string{"Forwarded": {`for="198.51.100.1`}}, want: "",
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			entity, err := EntityFromClientIP(c.cfg)
			if err != nil {
				t.Fatal(err)
			}
			r := httptest.NewRequest(http.MethodGet, "/", nil)
			r.RemoteAddr = c.remote
			for k, v := range c.header {
				r.Header[k] = v
			}
			if got := entity(r); got != c.want {
				t.Errorf("entity %q, want %q", got, c.want)
			}
		})
	}
}

// TestEntityFromClientIPOptions: a header without trusted proxies, an
// invalid prefix and a header name that is not one are refused.
func TestEntityFromClientIPOptions(t *testing.T) {
	for _, c := range []ClientIP{
		{Header: "X-Forwarded-For"},
		{TrustedProxies: []netip.Prefix{{}}},
		{TrustedProxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}, Header: "X Forwarded"},
	} {
		_, err := EntityFromClientIP(c)
		var oe *OptionsError
		if !errors.As(err, &oe) {
			t.Errorf("EntityFromClientIP(%+v) = %v, want an *OptionsError", c, err)
		}
	}
}

// TestForwardedFor pins RFC 7239 parsing: one for= value per element, ""
// for an element without one, and a last "" where a line stops parsing.
func TestForwardedFor(t *testing.T) {
	for _, c := range []struct {
		in   []string
		want []string
	}{
		{[]string{`for=192.0.2.43`}, []string{"192.0.2.43"}},
		{[]string{`for=192.0.2.43, for=198.51.100.17`}, []string{"192.0.2.43", "198.51.100.17"}},
		{[]string{`for=192.0.2.43`, `for=198.51.100.17;by=203.0.113.60;proto=http;host=example.com`}, []string{"192.0.2.43", "198.51.100.17"}},
		{[]string{`for="[2001:db8:cafe::17]:4711"`}, []string{"[2001:db8:cafe::17]:4711"}},
		{[]string{`proto=https`}, []string{""}},
		{[]string{`for="a,b", for=c`}, []string{"a,b", "c"}},
		{[]string{`for="a\"b"`}, []string{`a"b`}},
		{[]string{` for = x`}, []string{""}},
		{[]string{`for=x y`}, []string{""}},
		{[]string{`for="x`}, []string{""}},
		{[]string{`;;for=x;;`}, []string{"x"}},
		{[]string{`, ,for=x,`}, []string{"x"}},
	} {
		if got := forwardedFor(c.in); !slices.Equal(got, c.want) {
			t.Errorf("forwardedFor(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// TestEntityFromAPIKey: the entity is a hash of the key, never the key;
// with Authorization, only a Bearer credential is one.
func TestEntityFromAPIKey(t *testing.T) {
	const key = "sk-live-abc123"
	// The first 16 bytes of SHA-256("sk-live-abc123") (sha256sum).
	const want = "key:a2c62cb92a6c0cd3014b3936b9fc94e0"
	if got := APIKeyEntity(key); got != want {
		t.Fatalf("APIKeyEntity(%q) = %q, want %q", key, got, want)
	}
	if err := schema.ValidateEntityID(want); err != nil {
		t.Fatalf("APIKeyEntity is not an entity id: %v", err)
	}
	for _, c := range []struct {
		header, value, want string
	}{
		{"X-API-Key", key, want},
		{"X-API-Key", " " + key + " ", want},
		{"X-API-Key", "", ""},
		{"Authorization", "Bearer " + key, want},
		{"Authorization", "bearer   " + key, want},
		{"Authorization", "Basic dXNlcjpwYXNz", ""},
		{"Authorization", "Bearer ", ""},
	} {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		if c.value != "" {
			r.Header.Set(c.header, c.value)
		}
		if got := EntityFromAPIKey(c.header)(r); got != c.want {
			t.Errorf("%s: %q → %q, want %q", c.header, c.value, got, c.want)
		}
	}
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r.Header.Set("X-Tenant", " acme ")
	if got := EntityFromHeader("x-tenant")(r); got != "acme" {
		t.Errorf("EntityFromHeader = %q, want acme", got)
	}
}
