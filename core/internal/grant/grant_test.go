package grant

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/bucket"
	"github.com/zae-limiter/zae-limiter-go/core/bucketitem"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
)

func image(t *testing.T, rf, count int64, kv ...any) *bucketitem.Image {
	t.Helper()
	item := map[string]types.AttributeValue{"rf": schema.Num(rf), "shard_count": schema.Num(count)}
	for i := 0; i < len(kv); i += 2 {
		item[kv[i].(string)] = schema.Num(int64(kv[i+1].(int)))
	}
	img, err := bucketitem.Decode(item)
	if err != nil {
		t.Fatal(err)
	}
	return &img
}

func quota(tk, gc int) []any {
	kv := []any{"b_q_tk", tk, "b_q_cp", 100_000, "b_q_ra", 0, "b_q_rp", 1000}
	if gc > 0 {
		kv = append(kv, "b_q_gc", gc)
	}
	return kv
}

// Worked example at C = 100 tokens, the period starting at edge 1,000:
// shard 0 current at gc 1; shard 1 from before grants (no gc, 60 tokens
// at a count of 4: R7 reads 1); shard 2 still in the previous period;
// shard 3 carries the limit as a drip.
func TestCandidates(t *testing.T) {
	sibs := []Sibling{
		{0, image(t, 2_000, 4, quota(30_000, 1)...)},
		{1, image(t, 1_500, 4, quota(60_000, 0)...)},
		{2, image(t, 999, 4, quota(25_000, 4)...)},
		{3, image(t, 2_000, 4, "b_q_tk", 1, "b_q_cp", 100_000, "b_q_ra", 100_000, "b_q_rp", 1000)},
	}
	got := Candidates(sibs, "q", 1_000)
	want := []bucket.GrantSibling{{Shard: 0, GrantShards: 1, Tokens: 30_000}, {Shard: 1, GrantShards: 1, Tokens: 60_000}}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("Candidates = %+v, want %+v", got, want)
	}
	if d := DebitOf(sibs[1].Image, "q", 25_000); !d.Legacy || d.Grant != 1 || d.Count != 4 {
		t.Errorf("legacy debit %+v", d)
	}
}

func TestUpdate(t *testing.T) {
	donor := schema.BucketID{Namespace: "ns", Entity: "e", Resource: "r", Shard: 1}
	in := Update("t", donor, []Debit{{Name: "q", Amount: 25_000, Grant: 2}, {Name: "old", Amount: 5_000, Grant: 1, Legacy: true, Count: 4}}, 1_000)
	if got, want := aws.ToString(in.UpdateExpression), "ADD #a2 :v0, #a4 :v3"; got != want {
		t.Errorf("update %q, want %q", got, want)
	}
	if got, want := aws.ToString(in.ConditionExpression),
		"attribute_exists(#a0) AND #a2 >= :v1 AND #a1 = :v2 AND #a4 >= :v4 AND (attribute_not_exists(#a3) AND #a5 = :v5) AND #a6 >= :v6"; got != want {
		t.Errorf("condition %q, want %q", got, want)
	}
	if n := in.ExpressionAttributeNames; n["#a1"] != "b_q_gc" || n["#a2"] != "b_q_tk" || n["#a3"] != "b_old_gc" || n["#a5"] != "shard_count" || n["#a6"] != "rf" {
		t.Errorf("names %v", in.ExpressionAttributeNames)
	}
	if in := Update("t", donor, []Debit{{Name: "q", Amount: 1, Grant: 1}}, 0); aws.ToString(in.ConditionExpression) != "attribute_exists(#a0) AND #a2 >= :v1 AND #a1 = :v2" {
		t.Errorf("no edge: %q", aws.ToString(in.ConditionExpression))
	}
}
