package streamimage

import (
	"fmt"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
)

// Values Lambda puts in every DynamoDB stream record it delivers.
const (
	// EventSource is the eventSource of every DynamoDB stream record.
	EventSource = "aws:dynamodb"
	// TTLPrincipal and TTLIdentityType mark a REMOVE made by the TTL process
	// (userIdentity.principalId and userIdentity.type).
	TTLPrincipal    = "dynamodb.amazonaws.com"
	TTLIdentityType = "Service"
)

// RecordFromStreams converts one Streams API record into the record an event
// source mapping hands to Lambda. eventSourceARN is the stream ARN, which the
// Streams API does not repeat per record; Lambda puts it in eventSourceARN.
//
// Every field maps one to one (eventID, eventName, eventVersion, eventSource,
// awsRegion, userIdentity and dynamodb.{ApproximateCreationDateTime, Keys,
// NewImage, OldImage, SequenceNumber, SizeBytes, StreamViewType}); absent
// fields stay empty. A record without its dynamodb part is malformed.
// Attribute errors name the image, e.g. NewImage.b_rpm_tk.
func RecordFromStreams(r streamtypes.Record, eventSourceARN string) (events.DynamoDBEventRecord, error) {
	if r.Dynamodb == nil {
		return events.DynamoDBEventRecord{}, &PathError{Path: "dynamodb", Err: fmt.Errorf("%w: record %s has no dynamodb part", ErrNilValue, aws.ToString(r.EventID))}
	}
	d := r.Dynamodb
	out := events.DynamoDBEventRecord{
		AWSRegion:      aws.ToString(r.AwsRegion),
		EventID:        aws.ToString(r.EventID),
		EventName:      string(r.EventName),
		EventSource:    aws.ToString(r.EventSource),
		EventVersion:   aws.ToString(r.EventVersion),
		EventSourceArn: eventSourceARN,
		Change: events.DynamoDBStreamRecord{
			SequenceNumber: aws.ToString(d.SequenceNumber),
			SizeBytes:      aws.ToInt64(d.SizeBytes),
			StreamViewType: string(d.StreamViewType),
		},
	}
	if r.UserIdentity != nil {
		out.UserIdentity = &events.DynamoDBUserIdentity{
			Type:        aws.ToString(r.UserIdentity.Type),
			PrincipalID: aws.ToString(r.UserIdentity.PrincipalId),
		}
	}
	if d.ApproximateCreationDateTime != nil {
		out.Change.ApproximateCreationDateTime = events.SecondsEpochTime{Time: *d.ApproximateCreationDateTime}
	}
	var err error
	if out.Change.Keys, err = ImageFromStreams(d.Keys); err != nil {
		return events.DynamoDBEventRecord{}, within(err, "Keys")
	}
	if out.Change.NewImage, err = ImageFromStreams(d.NewImage); err != nil {
		return events.DynamoDBEventRecord{}, within(err, "NewImage")
	}
	if out.Change.OldImage, err = ImageFromStreams(d.OldImage); err != nil {
		return events.DynamoDBEventRecord{}, within(err, "OldImage")
	}
	return out, nil
}

// IsTTLDelete reports whether rec is a REMOVE made by the TTL process.
func IsTTLDelete(rec events.DynamoDBEventRecord) bool {
	return rec.EventName == string(events.DynamoDBOperationTypeRemove) &&
		rec.UserIdentity != nil &&
		rec.UserIdentity.Type == TTLIdentityType &&
		rec.UserIdentity.PrincipalID == TTLPrincipal
}
