package streampoll_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
)

const fakeARN = "arn:aws:dynamodb:ddblocal:000000000000:table/fake/stream/2026-01-01T00:00:00.000"

// fakeStream is an in-memory Streams API with the shard lineage, closed
// shards and iterator errors DynamoDB Local never produces. Iterators are
// "shardID|index" strings and stay valid until the fake expires them.
type fakeStream struct {
	mu       sync.Mutex
	shards   []*fakeShard
	seq      int
	pageSize int // DescribeStream page size; 0 means all at once

	// Errors to return from the next GetRecords calls, in order.
	getErrs []error
	// Errors to return from the next GetShardIterator calls, in order.
	iterErrs []error

	getLimits []int32 // Limit of every GetRecords call
	iterTypes []streamtypes.ShardIteratorType
}

type fakeShard struct {
	id, parent string
	closed     bool
	records    []streamtypes.Record
}

func (f *fakeStream) addShard(id, parent string) *fakeShard {
	f.mu.Lock()
	defer f.mu.Unlock()
	sh := &fakeShard{id: id, parent: parent}
	f.shards = append(f.shards, sh)
	return sh
}

// put appends a record with key pk to the shard and returns its sequence
// number.
func (f *fakeStream) put(sh *fakeShard, pk string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seq++
	seq := fmt.Sprintf("%021d", f.seq)
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	sh.records = append(sh.records, streamtypes.Record{
		AwsRegion:    aws.String("ddblocal"),
		EventID:      aws.String("ev-" + seq),
		EventName:    streamtypes.OperationTypeInsert,
		EventSource:  aws.String("aws:dynamodb"),
		EventVersion: aws.String("1.1"),
		Dynamodb: &streamtypes.StreamRecord{
			ApproximateCreationDateTime: &at,
			Keys:                        map[string]streamtypes.AttributeValue{"PK": &streamtypes.AttributeValueMemberS{Value: pk}},
			NewImage:                    map[string]streamtypes.AttributeValue{"PK": &streamtypes.AttributeValueMemberS{Value: pk}},
			SequenceNumber:              aws.String(seq),
			SizeBytes:                   aws.Int64(20),
			StreamViewType:              streamtypes.StreamViewTypeNewAndOldImages,
		},
	})
	return seq
}

func (f *fakeStream) close(sh *fakeShard) {
	f.mu.Lock()
	defer f.mu.Unlock()
	sh.closed = true
}

func (f *fakeStream) shard(id string) *fakeShard {
	for _, sh := range f.shards {
		if sh.id == id {
			return sh
		}
	}
	return nil
}

func (f *fakeStream) DescribeStream(_ context.Context, in *dynamodbstreams.DescribeStreamInput, _ ...func(*dynamodbstreams.Options)) (*dynamodbstreams.DescribeStreamOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if aws.ToString(in.StreamArn) != fakeARN {
		return nil, &streamtypes.ResourceNotFoundException{Message: aws.String("no stream")}
	}
	start := 0
	if in.ExclusiveStartShardId != nil {
		for i, sh := range f.shards {
			if sh.id == *in.ExclusiveStartShardId {
				start = i + 1
			}
		}
	}
	end := len(f.shards)
	if f.pageSize > 0 && start+f.pageSize < end {
		end = start + f.pageSize
	}
	desc := &streamtypes.StreamDescription{StreamArn: in.StreamArn, StreamStatus: streamtypes.StreamStatusEnabled}
	for _, sh := range f.shards[start:end] {
		s := streamtypes.Shard{ShardId: aws.String(sh.id), SequenceNumberRange: &streamtypes.SequenceNumberRange{}}
		if sh.parent != "" {
			s.ParentShardId = aws.String(sh.parent)
		}
		if sh.closed && len(sh.records) > 0 {
			s.SequenceNumberRange.EndingSequenceNumber = sh.records[len(sh.records)-1].Dynamodb.SequenceNumber
		} else if sh.closed {
			s.SequenceNumberRange.EndingSequenceNumber = aws.String("0")
		}
		desc.Shards = append(desc.Shards, s)
	}
	if end < len(f.shards) {
		desc.LastEvaluatedShardId = aws.String(f.shards[end-1].id)
	}
	return &dynamodbstreams.DescribeStreamOutput{StreamDescription: desc}, nil
}

func (f *fakeStream) GetShardIterator(_ context.Context, in *dynamodbstreams.GetShardIteratorInput, _ ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetShardIteratorOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.iterTypes = append(f.iterTypes, in.ShardIteratorType)
	if len(f.iterErrs) > 0 {
		err := f.iterErrs[0]
		f.iterErrs = f.iterErrs[1:]
		return nil, err
	}
	sh := f.shard(aws.ToString(in.ShardId))
	if sh == nil {
		return nil, &streamtypes.ResourceNotFoundException{Message: aws.String("no shard")}
	}
	idx := -1
	switch in.ShardIteratorType {
	case streamtypes.ShardIteratorTypeTrimHorizon:
		idx = 0
	case streamtypes.ShardIteratorTypeLatest:
		idx = len(sh.records)
	case streamtypes.ShardIteratorTypeAtSequenceNumber, streamtypes.ShardIteratorTypeAfterSequenceNumber:
		for i, r := range sh.records {
			if *r.Dynamodb.SequenceNumber == aws.ToString(in.SequenceNumber) {
				idx = i
				if in.ShardIteratorType == streamtypes.ShardIteratorTypeAfterSequenceNumber {
					idx++
				}
			}
		}
	}
	if idx < 0 {
		return nil, fmt.Errorf("fake: bad iterator request %v %s", in.ShardIteratorType, aws.ToString(in.SequenceNumber))
	}
	return &dynamodbstreams.GetShardIteratorOutput{ShardIterator: aws.String(sh.id + "|" + strconv.Itoa(idx))}, nil
}

func (f *fakeStream) GetRecords(_ context.Context, in *dynamodbstreams.GetRecordsInput, _ ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetRecordsOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	limit := aws.ToInt32(in.Limit)
	f.getLimits = append(f.getLimits, limit)
	if limit < 1 || limit > 1000 {
		return nil, fmt.Errorf("fake: Limit %d outside 1..1000", limit)
	}
	if len(f.getErrs) > 0 {
		err := f.getErrs[0]
		f.getErrs = f.getErrs[1:]
		return nil, err
	}
	id, idxText, ok := strings.Cut(aws.ToString(in.ShardIterator), "|")
	idx, err := strconv.Atoi(idxText)
	sh := f.shard(id)
	if !ok || err != nil || sh == nil {
		return nil, fmt.Errorf("fake: bad iterator %q", aws.ToString(in.ShardIterator))
	}
	end := min(idx+int(limit), len(sh.records))
	out := &dynamodbstreams.GetRecordsOutput{Records: append([]streamtypes.Record(nil), sh.records[idx:end]...)}
	if !sh.closed || end < len(sh.records) {
		out.NextShardIterator = aws.String(sh.id + "|" + strconv.Itoa(end))
	}
	return out, nil
}
