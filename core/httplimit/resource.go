package httplimit

import (
	"net/http"
	"strings"
	"sync"

	"github.com/zae-limiter/zae-limiter-go/core/schema"
)

// FixedResource names one resource for every request.
func FixedResource(resource string) ResourceFunc {
	return func(*http.Request) string { return resource }
}

// PatternResource names the resource after the route pattern that matched
// the request (http.Request.Pattern, set by ServeMux and by chi), as
// ResourceForPattern writes it: one resource per route. The pattern is
// known only once the router has matched, so the middleware must wrap the
// route's handler (mux.Handle(pattern, mw(h)), chi's r.With(mw)), not the
// router; a request with no pattern, or one whose name the table refuses,
// has no resource (a 500, logged). Each pattern's name is worked out once.
func PatternResource() ResourceFunc {
	var names sync.Map // pattern → resource name ("" when refused)
	return func(r *http.Request) string {
		if r.Pattern == "" {
			return ""
		}
		if v, ok := names.Load(r.Pattern); ok {
			return v.(string)
		}
		name, err := ResourceForPattern(r.Pattern)
		if err != nil {
			name = ""
		}
		names.Store(r.Pattern, name)
		return name
	}
}

// ResourceForPattern is the resource PatternResource names after a route
// pattern: the pattern's method (ANY when it has none), then "/" and its
// host when it has one, then its path, with each wildcard written "_" and its
// name ("{id}", "{path...}" and chi's "{id:[0-9]+}" are "_id", "_path",
// "_id"), "{$}" left out, and every other character a resource cannot hold
// written "_":
//
//	"GET /v1/chat/{id}"    → "GET/v1/chat/_id"
//	"/v1/files/{path...}"  → "ANY/v1/files/_path"
//	"POST api.example.com/v1/embed" → "POST/api.example.com/v1/embed"
//
// It returns the schema's error when the name is not a valid resource (more
// than schema.MaxNameLen bytes).
func ResourceForPattern(pattern string) (string, error) {
	method, rest := "", strings.TrimLeft(pattern, " \t")
	if i := strings.IndexAny(rest, " \t"); i >= 0 {
		method, rest = rest[:i], strings.TrimLeft(rest[i:], " \t")
	}
	if method == "" {
		method = "ANY"
	}
	host, path := rest, ""
	if i := strings.IndexByte(rest, '/'); i >= 0 {
		host, path = rest[:i], rest[i:]
	}
	var b strings.Builder
	writeResourceChars(&b, method)
	if host != "" {
		b.WriteByte('/')
		writeResourceChars(&b, host)
	}
	for len(path) > 0 {
		open := strings.IndexByte(path, '{')
		if open < 0 {
			writeResourceChars(&b, path)
			break
		}
		writeResourceChars(&b, path[:open])
		end := strings.IndexByte(path[open:], '}')
		if end < 0 {
			writeResourceChars(&b, path[open:])
			break
		}
		wild := path[open+1 : open+end]
		path = path[open+end+1:]
		if wild == "$" {
			continue
		}
		if i := strings.IndexByte(wild, ':'); i >= 0 {
			wild = wild[:i]
		}
		b.WriteByte('_')
		writeResourceChars(&b, strings.TrimSuffix(wild, "..."))
	}
	name := b.String()
	if err := schema.ValidateResource(name); err != nil {
		return "", err
	}
	return name, nil
}

// writeResourceChars writes s with every character a resource cannot hold
// (docs/design.md §2: letters, digits, `_ . - /`) written "_".
func writeResourceChars(b *strings.Builder, s string) {
	for i := range len(s) {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '_', c == '.', c == '-', c == '/':
			b.WriteByte(c)
		default:
			b.WriteByte('_')
		}
	}
}
