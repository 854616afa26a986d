package condwrite

import (
	"bytes"
	"hash/crc32"
	"net/http"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/internal/ddbjson"
)

// refusedCode is the error code of a refused condition.
const refusedCode = "ConditionalCheckFailedException"

// refusal reads a 400 answer. It returns the refused condition the answer
// holds, as the SDK decodes it, when the package can read it whole: its
// checksum matches (when checked and sent), its error code is a refused
// condition, and its old item, if any, is in core/internal/ddbjson's
// subset (refusedRead). Otherwise the SDK client sends the write again (a
// 400 did not apply it) and reads the answer itself: refusedUnread when
// the answer names a refused condition anywhere, trouble for any other
// (a throttle, a validation error).
func (s *sender) refusal(resp *http.Response) (*types.ConditionalCheckFailedException, answer) {
	text, err := readAll(resp.Body, make([]byte, 0, 512))
	if err != nil {
		return nil, trouble
	}
	errorType := resp.Header.Get("X-Amzn-Errortype")
	names := strings.Contains(errorType, refusedCode) || bytes.Contains(text, []byte(refusedCode))
	if s.checksum {
		if v := resp.Header.Get("X-Amz-Crc32"); v != "" {
			want, err := strconv.ParseUint(v, 10, 32)
			if err != nil || uint32(want) != crc32.ChecksumIEEE(text) {
				return nil, trouble
			}
		}
	}
	if refused := readRefusal(errorType, text); refused != nil {
		return refused, refusedRead
	}
	if names {
		return nil, refusedUnread
	}
	return nil, trouble
}

// readRefusal reads a refused condition from a 400 answer's error type
// header and body, or returns nil (refusal). It reads a narrow subset, as
// the SDK decodes it: the code from the header when there is one, else the
// body's __type, with the SDK's sanitising (up to the first ':', after the
// first '#'); a body that is one object of the members __type, message
// (or Message) and Item, each at most once, all in core/internal/ddbjson's
// subset (printable ASCII, no escape).
func readRefusal(errorType string, answer []byte) *types.ConditionalCheckFailedException {
	doc := string(answer)
	var typ, message, item string
	var hasMessage bool
	seen := map[string]bool{}
	i := ddbjson.SkipSpace(doc, 0)
	if i >= len(doc) || doc[i] != '{' {
		return nil
	}
	i = ddbjson.SkipSpace(doc, i+1)
	for first := true; ; first = false {
		if i < len(doc) && doc[i] == '}' && first {
			i++
			break
		}
		name, next, err := ddbjson.ReadString(doc, i)
		if err != nil {
			return nil
		}
		key := strings.ToLower(name)
		if seen[key] {
			return nil
		}
		seen[key] = true
		if i = ddbjson.SkipSpace(doc, next); i >= len(doc) || doc[i] != ':' {
			return nil
		}
		i = ddbjson.SkipSpace(doc, i+1)
		switch name {
		case "__type", "message", "Message":
			v, next, err := ddbjson.ReadString(doc, i)
			if err != nil {
				return nil
			}
			if name == "__type" {
				typ = v
			} else {
				message, hasMessage = v, true
			}
			i = next
		case "Item":
			end, err := ddbjson.ObjectEnd(doc, i)
			if err != nil {
				return nil
			}
			item, i = doc[i:end], end
		default:
			return nil
		}
		if i = ddbjson.SkipSpace(doc, i); i < len(doc) && doc[i] == ',' {
			i = ddbjson.SkipSpace(doc, i+1)
			continue
		}
		if i >= len(doc) || doc[i] != '}' {
			return nil
		}
		i++
		break
	}
	if ddbjson.SkipSpace(doc, i) != len(doc) {
		return nil
	}
	code := errorType
	if code == "" {
		code = typ
	}
	if j := strings.IndexByte(code, ':'); j >= 0 {
		code = code[:j]
	}
	if j := strings.IndexByte(code, '#'); j >= 0 {
		code = code[j+1:]
	}
	if code != refusedCode {
		return nil
	}
	refused := &types.ConditionalCheckFailedException{}
	if hasMessage {
		refused.Message = &message
	}
	if item == "" {
		return refused
	}
	it, err := ddbjson.NewItem(item)
	if err != nil {
		return nil
	}
	refused.Item = map[string]types.AttributeValue{}
	for {
		name, v, ok, err := it.Next()
		if err != nil {
			return nil
		}
		if !ok {
			return refused
		}
		if _, dup := refused.Item[name]; dup {
			return nil // a map keeps one; let the SDK decide which
		}
		switch v.Type {
		case "S":
			refused.Item[name] = &types.AttributeValueMemberS{Value: v.Text}
		case "N":
			refused.Item[name] = &types.AttributeValueMemberN{Value: v.Text}
		case "BOOL":
			refused.Item[name] = &types.AttributeValueMemberBOOL{Value: v.Bool}
		case "NULL":
			refused.Item[name] = &types.AttributeValueMemberNULL{Value: v.Bool}
		default:
			return nil
		}
	}
}
