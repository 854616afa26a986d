// Command gen-events writes the sample DynamoDB stream events in events/:
// Lambda-shaped batches of bucket records as the table's stream delivers
// them, for `aggregator -event FILE` and `sam local invoke -e FILE`.
//
//	go run ./scripts/gen-events [-dir events]
//
// The files are generated, not hand-edited, so their images always follow
// the bucket layout of core/schema (docs/design.md §2).
package main

import (
	"cmp"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/schema"
	"github.com/zae-limiter/zae-limiter-go/core/streamimage"
)

// Every sample is in namespace ns, at 2026-11-29T12:34:56Z.
const (
	ns      = "a1B2c3D4e5F"
	arn     = "arn:aws:dynamodb:eu-west-1:123456789012:table/zae-limiter/stream/2026-11-29T00:00:00.000"
	created = 1795955696
	rf      = created*1000 - 30_000
)

type item = map[string]types.AttributeValue

func n(v int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)}
}
func s(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }

// bucket is a bucket item as the client writes it: limit rpm (100 per
// minute, undivided) and wcu.
func bucket(entity string, shard int, shards, rpmTk, rpmTc, wcuTk, wcuTc int64) item {
	it := schema.BucketItemKeys(ns, entity, "gpt-4", shard).Item()
	it[schema.AttrEntityID], it[schema.AttrResource] = s(entity), s("gpt-4")
	it[schema.AttrRF], it[schema.AttrShardCount] = n(rf), n(shards)
	it[schema.AttrCascade], it[schema.AttrPGen] = &types.AttributeValueMemberBOOL{}, n(0)
	set := func(limit string, tk, cp, ra, rp, tc int64) {
		it[schema.BucketAttr(limit, schema.LimitTokens)] = n(tk)
		it[schema.BucketAttr(limit, schema.LimitCapacity)] = n(cp)
		it[schema.BucketAttr(limit, schema.LimitRefillAmount)] = n(ra)
		it[schema.BucketAttr(limit, schema.LimitRefillPeriod)] = n(rp)
		it[schema.BucketAttr(limit, schema.LimitConsumed)] = n(tc)
	}
	set("rpm", rpmTk, 100_000, 100_000, 60_000, rpmTc)
	set(schema.WCULimit, wcuTk, 1_000_000, 1_000_000, 1000, wcuTc)
	return it
}

func with(it item, kv ...any) item {
	out := maps.Clone(it)
	for i := 0; i < len(kv); i += 2 {
		out[kv[i].(string)] = kv[i+1].(types.AttributeValue)
	}
	return out
}

// stream numbers the records it builds, as a stream shard does; at is
// their ApproximateCreationDateTime (unix seconds), created unless set.
type stream struct {
	seq int
	at  int64
}

// record builds one stream record; old is nil for an INSERT, nw for a REMOVE.
func (st *stream) record(name string, old, nw item) events.DynamoDBEventRecord {
	st.seq++
	seq := st.seq
	conv := func(it item) map[string]events.DynamoDBAttributeValue {
		if it == nil {
			return nil
		}
		img, err := streamimage.ImageFromDynamoDB(it)
		if err != nil {
			panic(err)
		}
		return img
	}
	keysOf := nw
	if keysOf == nil {
		keysOf = old
	}
	return events.DynamoDBEventRecord{
		EventID: fmt.Sprintf("%032x", seq), EventName: name, EventVersion: "1.1",
		EventSource: "aws:dynamodb", AWSRegion: "eu-west-1", EventSourceArn: arn,
		Change: events.DynamoDBStreamRecord{
			ApproximateCreationDateTime: events.SecondsEpochTime{Time: unix(cmp.Or(st.at, created))},
			Keys:                        conv(item{schema.AttrPK: keysOf[schema.AttrPK], schema.AttrSK: keysOf[schema.AttrSK]}),
			NewImage:                    conv(nw), OldImage: conv(old),
			SequenceNumber: fmt.Sprintf("%021d", seq), SizeBytes: 512,
			StreamViewType: "NEW_AND_OLD_IMAGES",
		},
	}
}

func main() {
	dir := flag.String("dir", "events", "where to write the files")
	flag.Parse()
	if err := write(*dir); err != nil {
		fmt.Fprintln(os.Stderr, "gen-events:", err)
		os.Exit(1)
	}
}

func write(dir string) error {
	st := &stream{seq: 100}
	record := st.record
	fresh := bucket("user-1", 0, 1, 99_000, 1_000, 1_000_000, 0)
	after2 := with(fresh, "b_rpm_tk", n(97_000), "b_rpm_tc", n(3_000), "b_wcu_tk", n(999_000), "b_wcu_tc", n(1_000))
	after3 := with(after2, "b_rpm_tk", n(96_500), "b_rpm_tc", n(3_500), "b_wcu_tk", n(998_000), "b_wcu_tc", n(2_000))

	hot := bucket("hot-key", 0, 1, 50_000, 50_000, 150_000, 850_000)
	hotAfter := with(hot, "b_rpm_tk", n(49_000), "b_rpm_tc", n(51_000), "b_wcu_tk", n(149_000), "b_wcu_tc", n(851_000))
	doubled := with(hotAfter, schema.AttrShardCount, n(2))

	deadline := int64(created*1000 + 60_000)
	soft := with(bucket("soft-key", 0, 1, 500, 99_500, 900_000, 100_000), "b_rpm_soft", n(deadline))
	softAfter := with(soft, "b_rpm_tk", n(-1_500), "b_rpm_tc", n(101_500), "b_wcu_tk", n(899_000), "b_wcu_tc", n(101_000))
	byp := with(bucket("vip-key", 0, 1, 100_000, 7_000, 990_000, 7_000), schema.AttrBypass, n(deadline))
	bypAfter := with(byp, "b_rpm_tc", n(9_000), "b_wcu_tk", n(989_000), "b_wcu_tc", n(8_000))

	expired := with(after3, schema.AttrTTL, n(created-10))
	ttlRemove := record("REMOVE", expired, nil)
	ttlRemove.UserIdentity = &events.DynamoDBUserIdentity{Type: "Service", PrincipalID: "dynamodb.amazonaws.com"}

	good1 := record("MODIFY", fresh, after2)
	poison := record("MODIFY", after2, with(after3, "b_rpm_tc", &types.AttributeValueMemberN{Value: "12x"}))
	good2 := record("MODIFY", after3, with(after3, "b_rpm_tk", n(95_500), "b_rpm_tc", n(4_500)))

	files := map[string][]events.DynamoDBEventRecord{
		"stream-insert.json":      {record("INSERT", nil, fresh)},
		"stream-modify.json":      {record("MODIFY", fresh, after2), record("MODIFY", after2, after3)},
		"stream-remove.json":      {ttlRemove},
		"stream-doubling.json":    {record("MODIFY", hot, hotAfter), record("MODIFY", hotAfter, doubled)},
		"stream-soft-bypass.json": {record("MODIFY", soft, softAfter), record("MODIFY", byp, bypAfter)},
		"stream-poison.json":      {good1, poison, good2},
	}
	// Around midnight on the 1st of a month: 23:59:30 on 30 November, then
	// 00:00:10, 00:59:50 and 01:00:05 on 1 December. With monthly snapshots
	// on, the hour 00 item, the 1st's daily item and December's item each
	// get their own key (docs/decisions.md P22).
	var midnight []events.DynamoDBEventRecord
	prev := bucket("night-key", 0, 1, 100_000, 0, 1_000_000, 0)
	for i, at := range []int64{1796083170, 1796083210, 1796086790, 1796086805} {
		st.at = at
		next := with(prev, "b_rpm_tk", n(int64(99_000-1000*i)), "b_rpm_tc", n(int64(1000*(i+1))))
		midnight = append(midnight, record("MODIFY", prev, next))
		prev = next
	}
	files["stream-midnight-first.json"] = midnight

	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for name, recs := range files {
		b, err := json.MarshalIndent(events.DynamoDBEvent{Records: recs}, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, name), append(b, '\n'), 0o644); err != nil {
			return err
		}
	}
	return nil
}

func unix(sec int64) time.Time { return time.Unix(sec, 0).UTC() }
