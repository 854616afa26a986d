package streamimage_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/streamimage"
)

const fixtureARN = "arn:aws:dynamodb:eu-west-1:123456789012:table/zae-limiter-demo/stream/2025-11-01T09:30:12.345"

type item = map[string]ddbtypes.AttributeValue

func s(v string) ddbtypes.AttributeValue { return &ddbtypes.AttributeValueMemberS{Value: v} }
func n(v string) ddbtypes.AttributeValue { return &ddbtypes.AttributeValueMemberN{Value: v} }
func b(v bool) ddbtypes.AttributeValue   { return &ddbtypes.AttributeValueMemberBOOL{Value: v} }
func l(v ...ddbtypes.AttributeValue) ddbtypes.AttributeValue {
	return &ddbtypes.AttributeValueMemberL{Value: append([]ddbtypes.AttributeValue{}, v...)}
}
func m(v item) ddbtypes.AttributeValue { return &ddbtypes.AttributeValueMemberM{Value: v} }

// with returns base plus the extra attributes.
func with(base item, extra item) item {
	out := item{}
	for k, v := range base {
		out[k] = v
	}
	for k, v := range extra {
		out[k] = v
	}
	return out
}

func bucketKeys(shard string) item {
	return item{"PK": s("a1B2c3D4e5F/BUCKET#user-1#gpt-4#" + shard), "SK": s("#STATE")}
}

// bucket is the identity part of a bucket item plus the rpm and wcu
// parameters every fixture bucket carries.
func bucket(shard string) item {
	return with(bucketKeys(shard), item{
		"entity_id": s("user-1"), "resource": s("gpt-4"),
		"b_rpm_cp": n("100000"), "b_rpm_ra": n("100000"), "b_rpm_rp": n("60000"),
		"b_wcu_cp": n("1000000"), "b_wcu_ra": n("1000000"), "b_wcu_rp": n("1000"),
	})
}

type wantRecord struct {
	eventID, eventName, seq  string
	created                  int64
	sizeBytes                int64
	ttl                      bool
	keys, newImage, oldImage item
}

func fixtures() map[string][]wantRecord {
	return map[string][]wantRecord{
		"insert.json": {{
			eventID: "7de3041dd709b024af6f29e4fa13d34c", eventName: "INSERT",
			seq: "4421584500000000017450439091", created: 1764442860, sizeBytes: 612,
			keys: bucketKeys("0"),
			newImage: with(bucket("0"), item{
				"rf": n("1764442859123"), "vu": n("1764442919123"), "ttl": n("1764529259"),
				"shard_count": n("1"), "cascade": b(false),
				"GSI2PK": s("a1B2c3D4e5F/RESOURCE#gpt-4"), "GSI2SK": s("BUCKET#user-1#0"),
				"GSI3PK": s("a1B2c3D4e5F/ENTITY#user-1"), "GSI3SK": s("BUCKET#gpt-4#0"),
				"GSI4PK": s("a1B2c3D4e5F"), "GSI4SK": s("BUCKET#user-1#gpt-4#0"),
				"b_rpm_tk": n("99000"), "b_rpm_tc": n("1000"),
				"b_tpm_tk": n("9998750"), "b_tpm_cp": n("10000000"), "b_tpm_ra": n("10000000"),
				"b_tpm_rp": n("60000"), "b_tpm_tc": n("1250"),
				"b_wcu_tk": n("999000"), "b_wcu_tc": n("1000"),
			}),
		}},
		"modify.json": {
			{
				eventID: "c4ca4238a0b923820dcc509a6f75849b", eventName: "MODIFY",
				seq: "4421584600000000017450439214", created: 1764442921, sizeBytes: 871,
				keys: bucketKeys("0"),
				newImage: with(bucket("0"), item{"rf": n("1764442859123"), "shard_count": n("1"),
					"b_rpm_tk": n("97000"), "b_rpm_tc": n("3000"), "b_wcu_tk": n("998000"), "b_wcu_tc": n("2000")}),
				oldImage: with(bucket("0"), item{"rf": n("1764442859123"), "shard_count": n("1"),
					"b_rpm_tk": n("99000"), "b_rpm_tc": n("1000"), "b_wcu_tk": n("999000"), "b_wcu_tc": n("1000")}),
			},
			{
				eventID: "a87ff679a2f3e71d9181a67b7542122c", eventName: "MODIFY",
				seq: "4421584600000000017450439377", created: 1764442922, sizeBytes: 905,
				keys: bucketKeys("0"),
				newImage: with(bucket("0"), item{"rf": n("1764442859123"), "shard_count": n("1"),
					"b_rpm_tk": n("-500"), "b_rpm_tc": n("100500"), "b_rpm_soft": n("1764443221000"),
					"b_wcu_tk": n("997000"), "b_wcu_tc": n("3000")}),
				oldImage: with(bucket("0"), item{"rf": n("1764442859123"), "shard_count": n("1"),
					"b_rpm_tk": n("97000"), "b_rpm_tc": n("3000"), "b_rpm_soft": n("1764443221000"),
					"b_wcu_tk": n("998000"), "b_wcu_tc": n("2000")}),
			},
		},
		"remove.json": {{
			eventID: "e4da3b7fbbce2345d7772b0674a318d5", eventName: "REMOVE",
			seq: "4421584700000000017450440001", created: 1764446400, sizeBytes: 402,
			keys: bucketKeys("1"),
			oldImage: with(bucket("1"), item{"rf": n("1764446399870"), "shard_count": n("2"),
				"b_rpm_tk": n("100000"), "b_rpm_tc": n("0"), "b_wcu_tk": n("1000000"), "b_wcu_tc": n("0")}),
		}},
		"ttl-remove.json": {{
			eventID: "1679091c5a880faf6fb5e6087eb1b2dc", eventName: "REMOVE", ttl: true,
			seq: "4421590000000000023971115560", created: 1772218860, sizeBytes: 398,
			keys: item{"PK": s("a1B2c3D4e5F/AUDIT#user-1"), "SK": s("#AUDIT#01KB9TQW3X8K2V4N6P8R0T2W4Y")},
			oldImage: item{
				"PK": s("a1B2c3D4e5F/AUDIT#user-1"), "SK": s("#AUDIT#01KB9TQW3X8K2V4N6P8R0T2W4Y"),
				"GSI4PK": s("a1B2c3D4e5F"), "GSI4SK": s("a1B2c3D4e5F/AUDIT#user-1"),
				"event_id": s("01KB9TQW3X8K2V4N6P8R0T2W4Y"), "entity_id": s("user-1"),
				"action": s("limits_set"), "principal": s("admin@example.com"),
				"timestamp": s("2025-11-29T19:00:59.123Z"), "resource": s("gpt-4"),
				"details": m(item{"limits": l(m(item{
					"name": s("rpm"), "capacity": n("100"), "refill_amount": n("100"), "refill_period_seconds": n("60"),
				}))}),
				"ttl": n("1772218859"),
			},
		}},
		"all-types.json": {{
			eventID: "8f14e45fceea167a5a36dedd4bea2543", eventName: "MODIFY",
			seq: "4421584800000000017450441234", created: 1764442980, sizeBytes: 1187,
			keys: item{"PK": s("a1B2c3D4e5F/BUCKET#user-2#claude#3"), "SK": s("#STATE")},
			newImage: item{
				"PK": s("a1B2c3D4e5F/BUCKET#user-2#claude#3"), "SK": s("#STATE"),
				"entity_id": s("user-2"), "resource": s("claude"), "note": s(""),
				"rf": n("1764442979001"), "shard_count": n("4"),
				"b_rpm_tk": n("-99999999999999999999999999999999999999"),
				"b_rpm_tc": n("99999999999999999999999999999999999999"),
				"b_rpm_ra": n("0.000000000000000000000000000000000001"),
				"b_rpm_rp": n("1E+125"),
				"disabled": b(true), "cascade": b(false),
				"parent_id":  &ddbtypes.AttributeValueMemberNULL{Value: true},
				"digest":     &ddbtypes.AttributeValueMemberB{Value: []byte{0, 1, 0x2a, 0x41}},
				"empty_blob": &ddbtypes.AttributeValueMemberB{Value: []byte{}},
				"tags":       &ddbtypes.AttributeValueMemberSS{Value: []string{"beta", "eu", "trial"}},
				"windows":    &ddbtypes.AttributeValueMemberNS{Value: []string{"3600", "86400", "2.5", "-1"}},
				"keys": &ddbtypes.AttributeValueMemberBS{Value: [][]byte{
					{0, 1, 0x2a, 0x41}, {0xff, 0xfe, 0, 'z', 'l'}, []byte("snapshot-v1"),
				}},
				"history": l(
					n("1"), s("two"),
					l(b(true), &ddbtypes.AttributeValueMemberNULL{Value: true}, l()),
					m(item{"at": n("1764442979001"), "ids": &ddbtypes.AttributeValueMemberSS{Value: []string{"x"}}}),
					&ddbtypes.AttributeValueMemberBS{Value: [][]byte{{0, 1, 0x2a, 0x41}}},
				),
				"config": m(item{
					"limits": m(item{"rpm": m(item{
						"cp":    n("100000"),
						"sched": l(m(item{"cron": s("0 9 * * MON-FRI"), "cp": n("200000")})),
						"blobs": &ddbtypes.AttributeValueMemberBS{Value: [][]byte{[]byte("snapshot-v1")}},
					})}),
					"empty":               m(item{}),
					"weird key.with dots": s("ok"),
				}),
			},
			oldImage: item{
				"PK": s("a1B2c3D4e5F/BUCKET#user-2#claude#3"), "SK": s("#STATE"),
				"shard_count": n("2"), "parent_id": s("org-1"),
			},
		}},
	}
}

func readFixture(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestFixtures(t *testing.T) {
	for name, want := range fixtures() {
		t.Run(name, func(t *testing.T) {
			data := readFixture(t, name)
			var ev events.DynamoDBEvent
			if err := json.Unmarshal(data, &ev); err != nil {
				t.Fatalf("encoding/json: %v", err)
			}
			decoded, err := streamimage.DecodeEvent(data)
			if err != nil {
				t.Fatalf("DecodeEvent: %v", err)
			}
			if !reflect.DeepEqual(decoded, ev) {
				t.Fatalf("DecodeEvent differs from encoding/json:\n got %+v\nwant %+v", decoded, ev)
			}
			if len(ev.Records) != len(want) {
				t.Fatalf("%d records, want %d", len(ev.Records), len(want))
			}
			for i, w := range want {
				rec := ev.Records[i]
				if rec.EventID != w.eventID || rec.EventName != w.eventName || rec.EventVersion != "1.1" ||
					rec.EventSource != streamimage.EventSource || rec.AWSRegion != "eu-west-1" || rec.EventSourceArn != fixtureARN {
					t.Errorf("record %d envelope = %+v", i, rec)
				}
				c := rec.Change
				if c.SequenceNumber != w.seq || c.SizeBytes != w.sizeBytes || c.StreamViewType != "NEW_AND_OLD_IMAGES" ||
					!c.ApproximateCreationDateTime.Equal(time.Unix(w.created, 0)) {
					t.Errorf("record %d dynamodb = seq %s size %d view %s at %v", i, c.SequenceNumber, c.SizeBytes, c.StreamViewType, c.ApproximateCreationDateTime)
				}
				if got := streamimage.IsTTLDelete(rec); got != w.ttl {
					t.Errorf("record %d IsTTLDelete = %v, want %v", i, got, w.ttl)
				}
				for _, img := range []struct {
					name string
					got  map[string]events.DynamoDBAttributeValue
					want item
				}{{"Keys", c.Keys, w.keys}, {"NewImage", c.NewImage, w.newImage}, {"OldImage", c.OldImage, w.oldImage}} {
					got, err := streamimage.ImageToDynamoDB(img.got)
					if err != nil {
						t.Fatalf("record %d %s: %v", i, img.name, err)
					}
					if !reflect.DeepEqual(got, img.want) {
						t.Errorf("record %d %s:\n got %v\nwant %v", i, img.name, got, img.want)
					}
					back, err := streamimage.ImageFromDynamoDB(got)
					if err != nil {
						t.Fatalf("record %d %s back: %v", i, img.name, err)
					}
					if !reflect.DeepEqual(back, img.got) {
						t.Errorf("record %d %s does not round-trip:\n got %v\nwant %v", i, img.name, back, img.got)
					}
				}
			}
			// Marshalling back gives the fixture, up to formatting and key order.
			out, err := json.Marshal(ev)
			if err != nil {
				t.Fatal(err)
			}
			var gotTree, wantTree any
			if err := json.Unmarshal(out, &gotTree); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(data, &wantTree); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(gotTree, wantTree) {
				t.Errorf("re-marshalled event differs from the fixture:\n got %s\nwant %s", out, data)
			}
		})
	}
}

// The TTL fixture is the shape DynamoDB documents for TTL deletes.
func TestTTLFixtureIdentity(t *testing.T) {
	ev, err := streamimage.DecodeEvent(readFixture(t, "ttl-remove.json"))
	if err != nil {
		t.Fatal(err)
	}
	id := ev.Records[0].UserIdentity
	if id == nil || id.Type != "Service" || id.PrincipalID != "dynamodb.amazonaws.com" {
		t.Fatalf("userIdentity = %+v", id)
	}
	if ev.Records[0].Change.NewImage != nil {
		t.Fatalf("a REMOVE carries no NewImage")
	}
}
