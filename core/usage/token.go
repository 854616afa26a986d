package usage

import (
	"encoding/base64"
	"encoding/json"
	"maps"
	"slices"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/schema"
)

// PageToken resumes a read of snapshots after the last item a page read:
// Page.Next, handed back to Reader.SnapshotPage with the same Selection.
// It is opaque text, safe in a URL or on a command line; "" starts at the
// first page. It holds the key of the last item read (the Query's
// LastEvaluatedKey) and nothing secret.
type PageToken string

// maxTokenLen bounds the text of a token: four keys of at most a few
// hundred bytes each, in base64.
const maxTokenLen = 4096

// PageTokenError reports a page token that is not one this selection's
// pages hand out: malformed, or the key of another partition or range.
type PageTokenError struct {
	// Reason says what is wrong, in words.
	Reason string
}

// Error implements error.
func (e *PageTokenError) Error() string { return "usage: bad page token: " + e.Reason }

// encodeToken returns the token of a LastEvaluatedKey; "" for none.
func encodeToken(last map[string]types.AttributeValue) (PageToken, error) {
	if len(last) == 0 {
		return "", nil
	}
	m := make(map[string]string, len(last))
	for k, v := range last {
		s, ok := str(v)
		if !ok {
			return "", &PageTokenError{Reason: "last evaluated key attribute " + k + " is not a string"}
		}
		m[k] = s
	}
	b, err := json.Marshal(m)
	if err != nil {
		return "", err
	}
	return PageToken(base64.RawURLEncoding.EncodeToString(b)), nil
}

// decodeToken reads tok as the ExclusiveStartKey of a Query of sel in
// namespace ns whose sort key runs from lo to hi: exactly the key
// attributes of that Query (PK and SK, and GSI2PK and GSI2SK for a
// resource selection), its partition, a sort key within [lo, hi] and, for
// a resource selection, the primary key of a snapshot of that resource.
// nil for "".
func decodeToken(sel Selection, ns string, tok PageToken, lo, hi string) (map[string]types.AttributeValue, error) {
	if tok == "" {
		return nil, nil
	}
	if len(tok) > maxTokenLen {
		return nil, &PageTokenError{Reason: "too long"}
	}
	b, err := base64.RawURLEncoding.DecodeString(string(tok))
	if err != nil {
		return nil, &PageTokenError{Reason: "not base64url"}
	}
	var m map[string]string
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, &PageTokenError{Reason: "not a key"}
	}
	want := []string{schema.AttrPK, schema.AttrSK}
	partAttr, sortAttr, part := schema.AttrPK, schema.AttrSK, schema.EntityPK(ns, sel.entity)
	if sel.ByResource() {
		want = append(want, schema.AttrGSI2PK, schema.AttrGSI2SK)
		partAttr, sortAttr, part = schema.AttrGSI2PK, schema.AttrGSI2SK, schema.ResourcePK(ns, sel.resource)
	}
	if got := slices.Sorted(maps.Keys(m)); !slices.Equal(got, slices.Sorted(slices.Values(want))) {
		return nil, &PageTokenError{Reason: "not a key of this selection's query"}
	}
	if m[partAttr] != part {
		return nil, &PageTokenError{Reason: "a key of another partition"}
	}
	if sk := m[sortAttr]; sk < lo || sk > hi {
		return nil, &PageTokenError{Reason: "a key outside the selection's range"}
	}
	if sel.ByResource() {
		info := schema.ClassifyKey(m[schema.AttrPK], m[schema.AttrSK])
		if info.Kind != schema.KindUsageSnapshot || info.Namespace != ns || info.Resource != sel.resource {
			return nil, &PageTokenError{Reason: "not the key of a snapshot of this resource"}
		}
	}
	key := make(map[string]types.AttributeValue, len(m))
	for k, v := range m {
		key[k] = schema.Str(v)
	}
	return key, nil
}
