package streamimage_test

import (
	"errors"
	"reflect"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/zae-limiter/zae-limiter-go/core/streamimage"
)

// triple is one value in all three shapes.
type triple struct {
	name   string
	ev     events.DynamoDBAttributeValue
	ddb    ddbtypes.AttributeValue
	stream streamtypes.AttributeValue
}

// fromStreamsWant is what FromStreams gives for tc: tc.ev, but for a nil
// list, which the SDK's Streams conversion turns into an empty one (a
// stream never delivers a nil list: its JSON has none; docs/decisions.md
// P27).
func fromStreamsWant(tc triple) events.DynamoDBAttributeValue {
	if tc.name == "L nil" {
		return events.NewListAttribute([]events.DynamoDBAttributeValue{})
	}
	return tc.ev
}

func triples() []triple {
	return []triple{
		{"S", events.NewStringAttribute("a1B2c3D4e5F/BUCKET#user-1#gpt-4#0"),
			&ddbtypes.AttributeValueMemberS{Value: "a1B2c3D4e5F/BUCKET#user-1#gpt-4#0"},
			&streamtypes.AttributeValueMemberS{Value: "a1B2c3D4e5F/BUCKET#user-1#gpt-4#0"}},
		{"S empty", events.NewStringAttribute(""),
			&ddbtypes.AttributeValueMemberS{Value: ""},
			&streamtypes.AttributeValueMemberS{Value: ""}},
		// 38 significant digits: a float64 would lose them.
		{"N big", events.NewNumberAttribute("-12345678901234567890123456789012345678"),
			&ddbtypes.AttributeValueMemberN{Value: "-12345678901234567890123456789012345678"},
			&streamtypes.AttributeValueMemberN{Value: "-12345678901234567890123456789012345678"}},
		{"N tiny", events.NewNumberAttribute("1E-130"),
			&ddbtypes.AttributeValueMemberN{Value: "1E-130"},
			&streamtypes.AttributeValueMemberN{Value: "1E-130"}},
		{"B", events.NewBinaryAttribute([]byte{0, 1, 0x2a, 0x41}),
			&ddbtypes.AttributeValueMemberB{Value: []byte{0, 1, 0x2a, 0x41}},
			&streamtypes.AttributeValueMemberB{Value: []byte{0, 1, 0x2a, 0x41}}},
		{"B empty", events.NewBinaryAttribute([]byte{}),
			&ddbtypes.AttributeValueMemberB{Value: []byte{}},
			&streamtypes.AttributeValueMemberB{Value: []byte{}}},
		{"B nil", events.NewBinaryAttribute(nil),
			&ddbtypes.AttributeValueMemberB{},
			&streamtypes.AttributeValueMemberB{}},
		{"BOOL true", events.NewBooleanAttribute(true),
			&ddbtypes.AttributeValueMemberBOOL{Value: true},
			&streamtypes.AttributeValueMemberBOOL{Value: true}},
		{"BOOL false", events.NewBooleanAttribute(false),
			&ddbtypes.AttributeValueMemberBOOL{Value: false},
			&streamtypes.AttributeValueMemberBOOL{Value: false}},
		{"NULL", events.NewNullAttribute(),
			&ddbtypes.AttributeValueMemberNULL{Value: true},
			&streamtypes.AttributeValueMemberNULL{Value: true}},
		{"SS", events.NewStringSetAttribute([]string{"beta", "eu"}),
			&ddbtypes.AttributeValueMemberSS{Value: []string{"beta", "eu"}},
			&streamtypes.AttributeValueMemberSS{Value: []string{"beta", "eu"}}},
		{"NS", events.NewNumberSetAttribute([]string{"3600", "2.5", "-1"}),
			&ddbtypes.AttributeValueMemberNS{Value: []string{"3600", "2.5", "-1"}},
			&streamtypes.AttributeValueMemberNS{Value: []string{"3600", "2.5", "-1"}}},
		{"BS", events.NewBinarySetAttribute([][]byte{{0}, {0xff, 0xfe}}),
			&ddbtypes.AttributeValueMemberBS{Value: [][]byte{{0}, {0xff, 0xfe}}},
			&streamtypes.AttributeValueMemberBS{Value: [][]byte{{0}, {0xff, 0xfe}}}},
		{"L empty", events.NewListAttribute([]events.DynamoDBAttributeValue{}),
			&ddbtypes.AttributeValueMemberL{Value: []ddbtypes.AttributeValue{}},
			&streamtypes.AttributeValueMemberL{Value: []streamtypes.AttributeValue{}}},
		{"L nil", events.NewListAttribute(nil),
			&ddbtypes.AttributeValueMemberL{},
			&streamtypes.AttributeValueMemberL{}},
		{"M empty", events.NewMapAttribute(map[string]events.DynamoDBAttributeValue{}),
			&ddbtypes.AttributeValueMemberM{Value: map[string]ddbtypes.AttributeValue{}},
			&streamtypes.AttributeValueMemberM{Value: map[string]streamtypes.AttributeValue{}}},
		{"nested", events.NewMapAttribute(map[string]events.DynamoDBAttributeValue{
			"l": events.NewListAttribute([]events.DynamoDBAttributeValue{
				events.NewNumberAttribute("1"),
				events.NewListAttribute([]events.DynamoDBAttributeValue{
					events.NewMapAttribute(map[string]events.DynamoDBAttributeValue{
						"bs":   events.NewBinarySetAttribute([][]byte{[]byte("x")}),
						"null": events.NewNullAttribute(),
					}),
				}),
			}),
			"m": events.NewMapAttribute(map[string]events.DynamoDBAttributeValue{
				"ns": events.NewNumberSetAttribute([]string{"1"}),
			}),
		}),
			&ddbtypes.AttributeValueMemberM{Value: map[string]ddbtypes.AttributeValue{
				"l": &ddbtypes.AttributeValueMemberL{Value: []ddbtypes.AttributeValue{
					&ddbtypes.AttributeValueMemberN{Value: "1"},
					&ddbtypes.AttributeValueMemberL{Value: []ddbtypes.AttributeValue{
						&ddbtypes.AttributeValueMemberM{Value: map[string]ddbtypes.AttributeValue{
							"bs":   &ddbtypes.AttributeValueMemberBS{Value: [][]byte{[]byte("x")}},
							"null": &ddbtypes.AttributeValueMemberNULL{Value: true},
						}},
					}},
				}},
				"m": &ddbtypes.AttributeValueMemberM{Value: map[string]ddbtypes.AttributeValue{
					"ns": &ddbtypes.AttributeValueMemberNS{Value: []string{"1"}},
				}},
			}},
			&streamtypes.AttributeValueMemberM{Value: map[string]streamtypes.AttributeValue{
				"l": &streamtypes.AttributeValueMemberL{Value: []streamtypes.AttributeValue{
					&streamtypes.AttributeValueMemberN{Value: "1"},
					&streamtypes.AttributeValueMemberL{Value: []streamtypes.AttributeValue{
						&streamtypes.AttributeValueMemberM{Value: map[string]streamtypes.AttributeValue{
							"bs":   &streamtypes.AttributeValueMemberBS{Value: [][]byte{[]byte("x")}},
							"null": &streamtypes.AttributeValueMemberNULL{Value: true},
						}},
					}},
				}},
				"m": &streamtypes.AttributeValueMemberM{Value: map[string]streamtypes.AttributeValue{
					"ns": &streamtypes.AttributeValueMemberNS{Value: []string{"1"}},
				}},
			}}},
	}
}

func TestConvertEveryType(t *testing.T) {
	for _, tc := range triples() {
		t.Run(tc.name, func(t *testing.T) {
			gotDDB, err := streamimage.ToDynamoDB(tc.ev)
			if err != nil {
				t.Fatalf("ToDynamoDB: %v", err)
			}
			if !reflect.DeepEqual(gotDDB, tc.ddb) {
				t.Errorf("ToDynamoDB = %#v, want %#v", gotDDB, tc.ddb)
			}
			gotEv, err := streamimage.FromDynamoDB(tc.ddb)
			if err != nil {
				t.Fatalf("FromDynamoDB: %v", err)
			}
			if !reflect.DeepEqual(gotEv, tc.ev) {
				t.Errorf("FromDynamoDB = %#v, want %#v", gotEv, tc.ev)
			}
			gotEv, err = streamimage.FromStreams(tc.stream)
			if err != nil {
				t.Fatalf("FromStreams: %v", err)
			}
			if want := fromStreamsWant(tc); !reflect.DeepEqual(gotEv, want) {
				t.Errorf("FromStreams = %#v, want %#v", gotEv, want)
			}
		})
	}
}

func TestImagesConvert(t *testing.T) {
	ev := map[string]events.DynamoDBAttributeValue{}
	ddb := map[string]ddbtypes.AttributeValue{}
	st := map[string]streamtypes.AttributeValue{}
	for _, tc := range triples() {
		ev[tc.name], ddb[tc.name], st[tc.name] = tc.ev, tc.ddb, tc.stream
	}
	gotDDB, err := streamimage.ImageToDynamoDB(ev)
	if err != nil || !reflect.DeepEqual(gotDDB, ddb) {
		t.Errorf("ImageToDynamoDB = %v, %v", gotDDB, err)
	}
	gotEv, err := streamimage.ImageFromDynamoDB(ddb)
	if err != nil || !reflect.DeepEqual(gotEv, ev) {
		t.Errorf("ImageFromDynamoDB = %v, %v", gotEv, err)
	}
	for _, tc := range triples() {
		ev[tc.name] = fromStreamsWant(tc)
	}
	gotEv, err = streamimage.ImageFromStreams(st)
	if err != nil || !reflect.DeepEqual(gotEv, ev) {
		t.Errorf("ImageFromStreams = %v, %v", gotEv, err)
	}
	for name, f := range map[string]func() (bool, error){
		"ImageToDynamoDB": func() (bool, error) { m, err := streamimage.ImageToDynamoDB(nil); return m == nil, err },
		"ImageFromDynamoDB": func() (bool, error) {
			m, err := streamimage.ImageFromDynamoDB(nil)
			return m == nil, err
		},
		"ImageFromStreams": func() (bool, error) { m, err := streamimage.ImageFromStreams(nil); return m == nil, err },
	} {
		if isNil, err := f(); !isNil || err != nil {
			t.Errorf("%s(nil) = nil? %v, %v; want a nil map", name, isNil, err)
		}
	}
}

func TestConvertDoesNotAlias(t *testing.T) {
	in := []byte{1, 2, 3}
	set := [][]byte{{4, 5}}
	av := events.NewMapAttribute(map[string]events.DynamoDBAttributeValue{
		"b":  events.NewBinaryAttribute(in),
		"bs": events.NewBinarySetAttribute(set),
	})
	out, err := streamimage.ToDynamoDB(av)
	if err != nil {
		t.Fatal(err)
	}
	m := out.(*ddbtypes.AttributeValueMemberM).Value
	m["b"].(*ddbtypes.AttributeValueMemberB).Value[0] = 99
	m["bs"].(*ddbtypes.AttributeValueMemberBS).Value[0][0] = 99
	if in[0] != 1 || set[0][0] != 4 {
		t.Fatalf("ToDynamoDB result aliases its input: %v %v", in, set)
	}
	back, err := streamimage.FromDynamoDB(out)
	if err != nil {
		t.Fatal(err)
	}
	m["b"].(*ddbtypes.AttributeValueMemberB).Value[1] = 99
	if got := back.Map()["b"].Binary(); got[1] != 2 {
		t.Fatalf("FromDynamoDB result aliases its input: %v", got)
	}
}

func TestConvertErrors(t *testing.T) {
	var zero events.DynamoDBAttributeValue
	nested := events.NewMapAttribute(map[string]events.DynamoDBAttributeValue{
		"config": events.NewMapAttribute(map[string]events.DynamoDBAttributeValue{
			"sched": events.NewListAttribute([]events.DynamoDBAttributeValue{
				events.NewStringAttribute("ok"), zero,
			}),
		}),
	})
	cases := []struct {
		name     string
		run      func() error
		sentinel error
		path     string
	}{
		{"events zero value", func() error { _, err := streamimage.ToDynamoDB(zero); return err }, streamimage.ErrNilValue, ""},
		{"events zero value nested", func() error {
			_, err := streamimage.ImageToDynamoDB(map[string]events.DynamoDBAttributeValue{"item": nested})
			return err
		}, streamimage.ErrNilValue, "item.config.sched[1]"},
		{"events zero value odd key", func() error {
			_, err := streamimage.ImageToDynamoDB(map[string]events.DynamoDBAttributeValue{"a b": zero})
			return err
		}, streamimage.ErrNilValue, `["a b"]`},
		{"ddb nil interface", func() error { _, err := streamimage.FromDynamoDB(nil); return err }, streamimage.ErrNilValue, ""},
		{"ddb typed nil", func() error {
			_, err := streamimage.FromDynamoDB((*ddbtypes.AttributeValueMemberN)(nil))
			return err
		}, streamimage.ErrNilValue, ""},
		{"ddb nil in list", func() error {
			_, err := streamimage.ImageFromDynamoDB(map[string]ddbtypes.AttributeValue{
				"l": &ddbtypes.AttributeValueMemberL{Value: []ddbtypes.AttributeValue{&ddbtypes.AttributeValueMemberM{
					Value: map[string]ddbtypes.AttributeValue{"x": nil},
				}}},
			})
			return err
		}, streamimage.ErrNilValue, "l[0].x"},
		{"ddb unknown member", func() error {
			_, err := streamimage.FromDynamoDB(&ddbtypes.UnknownUnionMember{Tag: "X"})
			return err
		}, streamimage.ErrUnsupportedType, ""},
		{"ddb NULL false", func() error {
			_, err := streamimage.FromDynamoDB(&ddbtypes.AttributeValueMemberNULL{})
			return err
		}, streamimage.ErrMalformed, ""},
		{"streams nil", func() error {
			_, err := streamimage.ImageFromStreams(map[string]streamtypes.AttributeValue{"k": nil})
			return err
		}, streamimage.ErrNilValue, "k"},
		{"streams typed nil in list", func() error {
			_, err := streamimage.FromStreams(&streamtypes.AttributeValueMemberL{Value: []streamtypes.AttributeValue{
				&streamtypes.AttributeValueMemberS{}, (*streamtypes.AttributeValueMemberBS)(nil),
			}})
			return err
		}, streamimage.ErrNilValue, "[1]"},
		{"streams unknown member", func() error {
			_, err := streamimage.ImageFromStreams(map[string]streamtypes.AttributeValue{
				"m": &streamtypes.AttributeValueMemberM{Value: map[string]streamtypes.AttributeValue{
					"u": &streamtypes.UnknownUnionMember{Tag: "DOC"},
				}},
			})
			return err
		}, streamimage.ErrUnsupportedType, "m.u"},
		{"streams NULL false", func() error {
			_, err := streamimage.FromStreams(&streamtypes.AttributeValueMemberNULL{})
			return err
		}, streamimage.ErrMalformed, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.run()
			if !errors.Is(err, tc.sentinel) {
				t.Fatalf("err = %v, want %v", err, tc.sentinel)
			}
			var pe *streamimage.PathError
			if !errors.As(err, &pe) {
				t.Fatalf("err = %T, want *PathError", err)
			}
			if pe.Path != tc.path {
				t.Fatalf("path = %q, want %q (%v)", pe.Path, tc.path, err)
			}
		})
	}
}
