package ddbjson

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"
)

// attr is one attribute as Item.Next returns it.
type attr struct {
	Name string
	V    Value
}

// readItem reads every attribute of the item s.
func readItem(s string) ([]attr, error) {
	it, err := NewItem(s)
	if err != nil {
		return nil, err
	}
	var out []attr
	for {
		name, v, ok, err := it.Next()
		if err != nil {
			return nil, err
		}
		if !ok {
			return out, nil
		}
		out = append(out, attr{name, v})
	}
}

func TestItemReadsTheSubset(t *testing.T) {
	for _, tc := range []struct {
		item string
		want []attr
	}{
		{`{}`, nil},
		{" \t\r\n{ } \n", nil},
		{`{"rf":{"N":"1795953600001"}}`, []attr{{"rf", Value{Type: "N", Text: "1795953600001"}}}},
		{`{"PK":{"S":"ns/ENTITY#e"},"cascade":{"BOOL":true},"x":{"NULL":true},"d":{"BOOL":false},"e":{"S":""}}`, []attr{
			{"PK", Value{Type: "S", Text: "ns/ENTITY#e"}},
			{"cascade", Value{Type: "BOOL", Bool: true}},
			{"x", Value{Type: "NULL", Bool: true}},
			{"d", Value{Type: "BOOL"}},
			{"e", Value{Type: "S"}},
		}},
		{` { "a" : { "N" : "-1.5e3" } , "a" : { "S" : "b" } } `, []attr{
			{"a", Value{Type: "N", Text: "-1.5e3"}}, {"a", Value{Type: "S", Text: "b"}},
		}},
	} {
		got, err := readItem(tc.item)
		if err != nil {
			t.Errorf("%s: %v", tc.item, err)
			continue
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: read %+v, want %+v", tc.item, got, tc.want)
		}
	}
}

// Everything outside the subset is ErrUnsupported: the SDK reads it.
func TestItemRefusesWhatItDoesNotRead(t *testing.T) {
	for _, item := range []string{
		``, ` `, `[]`, `{`, `}`, `{"a"}`, `{"a":}`, `{"a":1}`, `{"a":"x"}`, `{"a":{}}`,
		`{"a":{"N":"1"},}`, `{"a":{"N":"1"}`, `{"a":{"N":"1"}}}`, `{"a":{"N":"1"}} x`, `{"a":{"N":"1"} "b":{"N":"2"}}`,
		`{"a":{"N":1}}`, `{"a":{"N":null}}`, `{"a":{"N":"1","S":"x"}}`, `{"a":{"BOOL":"true"}}`, `{"a":{"BOOL":truex}}`,
		`{"a":{"NULL":nul}}`, `{"a":{"B":"AA=="}}`, `{"a":{"M":{}}}`, `{"a":{"L":[]}}`, `{"a":{"SS":["x"]}}`,
		`{"a":{"NS":["1"]}}`, `{"a":{"BS":[]}}`, `{"a":{"X":"1"}}`, `{"a":{"n":"1"}}`,
		`{"a\"b":{"S":"x"}}`, `{"a":{"S":"x\ny"}}`, `{"a":{"S":"x\\u0041"}}`, `{"a":{"S":"é"}}`, "{\"a\":{\"S\":\"\x7f\"}}",
		"{\"a\":{\"S\":\"\x01\"}}", `{"a":{"S":"x`, `{'a':{"S":"x"}}`, "{\"a\":{\"S\":\"x\"}}\x00",
	} {
		if got, err := readItem(item); !errors.Is(err, ErrUnsupported) {
			t.Errorf("%q: read %+v, %v; want ErrUnsupported", item, got, err)
		}
	}
}

func TestMember(t *testing.T) {
	for _, tc := range []struct{ doc, want string }{
		{`{"Attributes":{}}`, `{}`},
		{` { "Attributes" : {"a":{"S":"}{]["}} } `, `{"a":{"S":"}{]["}}`},
		{`{"Attributes":{"m":{"M":{"x":{"L":[{"N":"1"}]}}}}}`, `{"m":{"M":{"x":{"L":[{"N":"1"}]}}}}`},
	} {
		got, err := Member(tc.doc, "Attributes")
		if err != nil || got != tc.want {
			t.Errorf("Member(%s) = %q, %v; want %q", tc.doc, got, err, tc.want)
		}
	}
	for _, doc := range []string{
		``, `{}`, `{"Attributes":[]}`, `{"Attributes":{}`, `{"Attributes":{},"ConsumedCapacity":{}}`,
		`{"Attributes":{}} {}`, `{"Other":{}}`, `{"Attributes":{"a":{"S":"\""}}}`, `{"Attributes":{]}`, `{"Attributes":"x"}`,
	} {
		if got, err := Member(doc, "Attributes"); !errors.Is(err, ErrUnsupported) {
			t.Errorf("Member(%s) = %q, %v; want ErrUnsupported", doc, got, err)
		}
	}
}

// FuzzItem: whatever the package reads is valid JSON, and reads as
// encoding/json reads it (the SDK's decoder follows the same grammar):
// the same attributes, the last of a duplicated name winning, each a type
// object of one member.
func FuzzItem(f *testing.F) {
	for _, s := range []string{
		`{}`, `{"rf":{"N":"17"},"b_rpm_tk":{"N":"-5"},"PK":{"S":"a/b"},"c":{"BOOL":false},"n":{"NULL":true}}`,
		`{"a":{"N":"1"},"a":{"S":"x"}}`, `{"a":{"M":{}}}`, `{"a":{"S":"x\u0041"}}`, ` {"a" : {"BOOL" : true} } `,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := readItem(s)
		if err != nil {
			if !errors.Is(err, ErrUnsupported) {
				t.Fatalf("%q: error %v is not ErrUnsupported", s, err)
			}
			return
		}
		var want map[string]map[string]any
		if err := json.Unmarshal([]byte(s), &want); err != nil {
			t.Fatalf("%q read as %+v, but encoding/json refuses it: %v", s, got, err)
		}
		last := map[string]Value{}
		for _, a := range got {
			last[a.Name] = a.V
		}
		if len(last) != len(want) {
			t.Fatalf("%q: read %d names, encoding/json %d", s, len(last), len(want))
		}
		for name, v := range last {
			tv := want[name]
			if len(tv) != 1 {
				t.Fatalf("%q: %s has %d type members in encoding/json's reading", s, name, len(tv))
			}
			var wantV any
			switch v.Type {
			case "S", "N":
				wantV = v.Text
			default:
				wantV = v.Bool
			}
			if g, ok := tv[v.Type]; !ok || g != wantV {
				t.Fatalf("%q: %s read as %+v, encoding/json %v", s, name, v, tv)
			}
		}
		if doc := `{"Attributes":` + s + `}`; true {
			inner, err := Member(doc, "Attributes")
			if err != nil || inner != s[skipSpaceLeft(s):len(s)-skipSpaceRight(s)] {
				t.Fatalf("Member(%q) = %q, %v; want the item", doc, inner, err)
			}
		}
	})
}

func skipSpaceLeft(s string) int { return skipSpace(s, 0) }

func skipSpaceRight(s string) int {
	n := 0
	for i := len(s) - 1; i >= 0 && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r'); i-- {
		n++
	}
	return n
}
