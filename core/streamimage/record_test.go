package streamimage_test

import (
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/zae-limiter/zae-limiter-go/core/streamimage"
)

// toStreams is the test's own DynamoDB → Streams converter; the package
// never needs that direction.
func toStreams(t *testing.T, v ddbtypes.AttributeValue) streamtypes.AttributeValue {
	t.Helper()
	switch m := v.(type) {
	case *ddbtypes.AttributeValueMemberS:
		return &streamtypes.AttributeValueMemberS{Value: m.Value}
	case *ddbtypes.AttributeValueMemberN:
		return &streamtypes.AttributeValueMemberN{Value: m.Value}
	case *ddbtypes.AttributeValueMemberB:
		return &streamtypes.AttributeValueMemberB{Value: m.Value}
	case *ddbtypes.AttributeValueMemberBOOL:
		return &streamtypes.AttributeValueMemberBOOL{Value: m.Value}
	case *ddbtypes.AttributeValueMemberNULL:
		return &streamtypes.AttributeValueMemberNULL{Value: m.Value}
	case *ddbtypes.AttributeValueMemberSS:
		return &streamtypes.AttributeValueMemberSS{Value: m.Value}
	case *ddbtypes.AttributeValueMemberNS:
		return &streamtypes.AttributeValueMemberNS{Value: m.Value}
	case *ddbtypes.AttributeValueMemberBS:
		return &streamtypes.AttributeValueMemberBS{Value: m.Value}
	case *ddbtypes.AttributeValueMemberL:
		var out []streamtypes.AttributeValue
		if m.Value != nil {
			out = make([]streamtypes.AttributeValue, len(m.Value))
		}
		for i, e := range m.Value {
			out[i] = toStreams(t, e)
		}
		return &streamtypes.AttributeValueMemberL{Value: out}
	case *ddbtypes.AttributeValueMemberM:
		return &streamtypes.AttributeValueMemberM{Value: imageToStreams(t, m.Value)}
	default:
		t.Fatalf("toStreams: %T", v)
		return nil
	}
}

func imageToStreams(t *testing.T, img map[string]ddbtypes.AttributeValue) map[string]streamtypes.AttributeValue {
	t.Helper()
	if img == nil {
		return nil
	}
	out := make(map[string]streamtypes.AttributeValue, len(img))
	for k, v := range img {
		out[k] = toStreams(t, v)
	}
	return out
}

// streamsRecord builds the Streams API record GetRecords would return for a
// record Lambda delivered.
func streamsRecord(t *testing.T, rec events.DynamoDBEventRecord) streamtypes.Record {
	t.Helper()
	image := func(img map[string]events.DynamoDBAttributeValue) map[string]streamtypes.AttributeValue {
		d, err := streamimage.ImageToDynamoDB(img)
		if err != nil {
			t.Fatal(err)
		}
		return imageToStreams(t, d)
	}
	out := streamtypes.Record{
		AwsRegion:    aws.String(rec.AWSRegion),
		EventID:      aws.String(rec.EventID),
		EventName:    streamtypes.OperationType(rec.EventName),
		EventSource:  aws.String(rec.EventSource),
		EventVersion: aws.String(rec.EventVersion),
		Dynamodb: &streamtypes.StreamRecord{
			ApproximateCreationDateTime: aws.Time(rec.Change.ApproximateCreationDateTime.UTC()),
			Keys:                        image(rec.Change.Keys),
			NewImage:                    image(rec.Change.NewImage),
			OldImage:                    image(rec.Change.OldImage),
			SequenceNumber:              aws.String(rec.Change.SequenceNumber),
			SizeBytes:                   aws.Int64(rec.Change.SizeBytes),
			StreamViewType:              streamtypes.StreamViewType(rec.Change.StreamViewType),
		},
	}
	if rec.UserIdentity != nil {
		out.UserIdentity = &streamtypes.Identity{
			Type:        aws.String(rec.UserIdentity.Type),
			PrincipalId: aws.String(rec.UserIdentity.PrincipalID),
		}
	}
	return out
}

// equalRecords compares records with time.Time compared by instant.
func equalRecords(a, b events.DynamoDBEventRecord) bool {
	if !a.Change.ApproximateCreationDateTime.Equal(b.Change.ApproximateCreationDateTime.Time) {
		return false
	}
	a.Change.ApproximateCreationDateTime, b.Change.ApproximateCreationDateTime = events.SecondsEpochTime{}, events.SecondsEpochTime{}
	return reflect.DeepEqual(a, b)
}

func TestRecordFromStreamsMatchesFixtures(t *testing.T) {
	for name := range fixtures() {
		t.Run(name, func(t *testing.T) {
			ev, err := streamimage.DecodeEvent(readFixture(t, name))
			if err != nil {
				t.Fatal(err)
			}
			for i, want := range ev.Records {
				got, err := streamimage.RecordFromStreams(streamsRecord(t, want), want.EventSourceArn)
				if err != nil {
					t.Fatalf("record %d: %v", i, err)
				}
				if !equalRecords(got, want) {
					t.Errorf("record %d:\n got %+v\nwant %+v", i, got, want)
				}
			}
		})
	}
}

func TestRecordFromStreamsTTLByHand(t *testing.T) {
	at := time.Date(2026, 2, 27, 19, 1, 0, 0, time.UTC)
	rec := streamtypes.Record{
		AwsRegion:    aws.String("eu-west-1"),
		EventID:      aws.String("1679091c5a880faf6fb5e6087eb1b2dc"),
		EventName:    streamtypes.OperationTypeRemove,
		EventSource:  aws.String("aws:dynamodb"),
		EventVersion: aws.String("1.1"),
		UserIdentity: &streamtypes.Identity{Type: aws.String("Service"), PrincipalId: aws.String("dynamodb.amazonaws.com")},
		Dynamodb: &streamtypes.StreamRecord{
			ApproximateCreationDateTime: &at,
			Keys: map[string]streamtypes.AttributeValue{
				"PK": &streamtypes.AttributeValueMemberS{Value: "a1B2c3D4e5F/AUDIT#user-1"},
				"SK": &streamtypes.AttributeValueMemberS{Value: "#AUDIT#01KB9TQW3X8K2V4N6P8R0T2W4Y"},
			},
			OldImage: map[string]streamtypes.AttributeValue{
				"PK":  &streamtypes.AttributeValueMemberS{Value: "a1B2c3D4e5F/AUDIT#user-1"},
				"SK":  &streamtypes.AttributeValueMemberS{Value: "#AUDIT#01KB9TQW3X8K2V4N6P8R0T2W4Y"},
				"ttl": &streamtypes.AttributeValueMemberN{Value: "1772218859"},
			},
			SequenceNumber: aws.String("4421590000000000023971115560"),
			SizeBytes:      aws.Int64(398),
			StreamViewType: streamtypes.StreamViewTypeNewAndOldImages,
		},
	}
	got, err := streamimage.RecordFromStreams(rec, fixtureARN)
	if err != nil {
		t.Fatal(err)
	}
	want := events.DynamoDBEventRecord{
		AWSRegion:      "eu-west-1",
		EventID:        "1679091c5a880faf6fb5e6087eb1b2dc",
		EventName:      "REMOVE",
		EventSource:    "aws:dynamodb",
		EventVersion:   "1.1",
		EventSourceArn: fixtureARN,
		UserIdentity:   &events.DynamoDBUserIdentity{Type: "Service", PrincipalID: "dynamodb.amazonaws.com"},
		Change: events.DynamoDBStreamRecord{
			ApproximateCreationDateTime: events.SecondsEpochTime{Time: at},
			Keys: map[string]events.DynamoDBAttributeValue{
				"PK": events.NewStringAttribute("a1B2c3D4e5F/AUDIT#user-1"),
				"SK": events.NewStringAttribute("#AUDIT#01KB9TQW3X8K2V4N6P8R0T2W4Y"),
			},
			OldImage: map[string]events.DynamoDBAttributeValue{
				"PK":  events.NewStringAttribute("a1B2c3D4e5F/AUDIT#user-1"),
				"SK":  events.NewStringAttribute("#AUDIT#01KB9TQW3X8K2V4N6P8R0T2W4Y"),
				"ttl": events.NewNumberAttribute("1772218859"),
			},
			SequenceNumber: "4421590000000000023971115560",
			SizeBytes:      398,
			StreamViewType: "NEW_AND_OLD_IMAGES",
		},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
	if !streamimage.IsTTLDelete(got) {
		t.Fatal("IsTTLDelete = false for a TTL delete")
	}
	got.UserIdentity = nil
	if streamimage.IsTTLDelete(got) {
		t.Fatal("IsTTLDelete = true for a user delete")
	}
}

func TestRecordFromStreamsErrors(t *testing.T) {
	_, err := streamimage.RecordFromStreams(streamtypes.Record{EventID: aws.String("x")}, fixtureARN)
	if !errors.Is(err, streamimage.ErrNilValue) {
		t.Fatalf("no dynamodb part: err = %v", err)
	}
	for _, img := range []string{"Keys", "NewImage", "OldImage"} {
		sr := &streamtypes.StreamRecord{}
		bad := map[string]streamtypes.AttributeValue{"b_rpm_tk": &streamtypes.UnknownUnionMember{Tag: "X"}}
		switch img {
		case "Keys":
			sr.Keys = bad
		case "NewImage":
			sr.NewImage = bad
		case "OldImage":
			sr.OldImage = bad
		}
		_, err := streamimage.RecordFromStreams(streamtypes.Record{Dynamodb: sr}, fixtureARN)
		var pe *streamimage.PathError
		if !errors.As(err, &pe) || pe.Path != img+".b_rpm_tk" || !errors.Is(err, streamimage.ErrUnsupportedType) {
			t.Fatalf("%s: err = %v", img, err)
		}
		if want := fmt.Sprintf("streamimage: attribute %s.b_rpm_tk: unsupported attribute type: union member \"X\"", img); err.Error() != want {
			t.Fatalf("message %q, want %q", err.Error(), want)
		}
	}
}
