package expr

import (
	"maps"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/schema"
)

func TestBuilder(t *testing.T) {
	var b Builder
	b.Cond(b.Name("rf") + " = " + b.Value(schema.Num(7)))
	b.Set("rf", schema.Num(9))
	b.Add("b_a.b-c_tk", schema.Num(-1000))
	b.Remove("vu")
	b.Cond("attribute_not_exists(" + b.Name("disabled") + ")")
	in := b.UpdateInput("tbl", schema.Key{PK: "p", SK: "s"})
	if got, want := aws.ToString(in.UpdateExpression), "SET #a0 = :v1 ADD #a1 :v2 REMOVE #a2"; got != want {
		t.Errorf("update %q, want %q", got, want)
	}
	if got, want := aws.ToString(in.ConditionExpression), "#a0 = :v0 AND attribute_not_exists(#a3)"; got != want {
		t.Errorf("condition %q, want %q", got, want)
	}
	if want := map[string]string{"#a0": "rf", "#a1": "b_a.b-c_tk", "#a2": "vu", "#a3": "disabled"}; !maps.Equal(in.ExpressionAttributeNames, want) {
		t.Errorf("names %v", in.ExpressionAttributeNames)
	}
	if len(in.ExpressionAttributeValues) != 3 || in.ReturnValues != types.ReturnValueAllNew || aws.ToString(in.TableName) != "tbl" {
		t.Errorf("input %+v", in)
	}
	var none Builder
	if in := none.UpdateInput("t", schema.Key{}); in.ConditionExpression != nil || none.Update() != "" || none.Names() != nil {
		t.Errorf("empty builder: %+v", in)
	}
}

func TestSetRemoveIsOrdered(t *testing.T) {
	var b Builder
	b.SetRemove(map[string]types.AttributeValue{"z": schema.Str("1"), "a": schema.Str("2"), "m": schema.Str("3")}, []string{"y", "b"})
	if got, want := b.Update(), "SET #a0 = :v0, #a1 = :v1, #a2 = :v2 REMOVE #a3, #a4"; got != want {
		t.Fatalf("update %q, want %q", got, want)
	}
	if want := map[string]string{"#a0": "a", "#a1": "m", "#a2": "z", "#a3": "b", "#a4": "y"}; !maps.Equal(b.Names(), want) {
		t.Fatalf("names %v", b.Names())
	}
}

func TestSetIfNotExists(t *testing.T) {
	var b Builder
	b.Set("shard_count", schema.Num(4))
	b.SetIfNotExists("b_q_gc", schema.Num(2))
	if got, want := b.Update(), "SET #a0 = :v0, #a1 = if_not_exists(#a1, :v1)"; got != want {
		t.Fatalf("update %q, want %q", got, want)
	}
}

func TestSetFrom(t *testing.T) {
	var b Builder
	b.Set("b_q_ws", schema.Num(1000))
	b.SetFrom("b_q_wtc", "b_q_tc", schema.Num(0))
	if got, want := b.Update(), "SET #a0 = :v0, #a1 = if_not_exists(#a2, :v1)"; got != want {
		t.Fatalf("update %q, want %q", got, want)
	}
	if want := map[string]string{"#a0": "b_q_ws", "#a1": "b_q_wtc", "#a2": "b_q_tc"}; !maps.Equal(b.Names(), want) {
		t.Fatalf("names %v", b.Names())
	}
}
