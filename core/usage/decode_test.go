package usage_test

import (
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/schema"
	"github.com/zae-limiter/zae-limiter-go/core/usage"
)

const decodeNS = "dEcOdE00001"

// storedSnapshot is a snapshot item as the aggregator writes one: the
// daily window of 2026-02-01 where monthly is configured too (so its key
// is suffixed), two limits, an overdraw counter, marks of two shards.
func storedSnapshot() map[string]types.AttributeValue {
	keys := schema.UsageItemKeys(decodeNS, "alice", "gpt-4", "2026-02-01T00:00:00Z#daily")
	it := keys.Item()
	it["entity_id"] = schema.Str("alice")
	it["resource"] = schema.Str("gpt-4")
	it["window"] = schema.Str("daily")
	it["window_start"] = schema.Str("2026-02-01T00:00:00Z")
	it["ttl"] = schema.Num(1800000000)
	it["total_events"] = schema.Num(9)
	it["rpm"] = schema.Num(3)
	it["tpm"] = schema.Num(-20)
	it["tpm#od"] = schema.Num(2)
	it["seq#0"] = schema.Str("0000000000000000000000000000000000000100")
	it["seq#3"] = schema.Str("0000000000000000000000000000000000000200")
	return it
}

// TestDecodeSnapshot: what the aggregator stores decodes to the domain
// value; a limit called "seq" keeps its overdraw counter apart from the
// seq# marks; an item that breaks a rule is a *CorruptSnapshotError naming
// the attribute.
func TestDecodeSnapshot(t *testing.T) {
	s, err := usage.DecodeSnapshot(decodeNS, storedSnapshot())
	if err != nil {
		t.Fatal(err)
	}
	if got, want := render(s), "alice daily 2026-02-01T00:00:00Z rpm=3 tpm=-20/od2 events=9"; got != want || s.Resource != "gpt-4" {
		t.Fatalf("decoded %s on %s, want %s on gpt-4", got, s.Resource, want)
	}
	if l, ok := s.Limit("tpm"); !ok || l.Overdraws != 2 {
		t.Fatalf("Limit(tpm) = %+v, %v", l, ok)
	}
	if _, ok := s.Limit("nosuch"); ok {
		t.Fatal("Limit(nosuch) found")
	}

	// Overdraws only (a soft limit in debt that added no whole token) and
	// a limit named like the marks.
	it := storedSnapshot()
	delete(it, "tpm")
	it["seq"] = schema.Num(4)
	it["seq#od"] = schema.Num(1)
	it["note"] = &types.AttributeValueMemberBOOL{Value: true} // named like a limit
	if _, err := usage.DecodeSnapshot(decodeNS, it); err == nil {
		t.Fatal("a limit-named attribute holding a BOOL decoded")
	}
	delete(it, "note")
	it["_note"] = schema.Str("an attribute no limit can be named") // a limit name starts with a letter
	s, err = usage.DecodeSnapshot(decodeNS, it)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := render(s), "alice daily 2026-02-01T00:00:00Z rpm=3 seq=4/od1 tpm=0/od2 events=9"; got != want {
		t.Fatalf("decoded %s, want %s", got, want)
	}

	// Windows whose keys are plain: an hour that is not midnight, the
	// daily window without monthly configured.
	for _, c := range []struct{ window, key, start string }{
		{"hourly", "2026-02-01T05:00:00Z", "2026-02-01T05:00:00Z"},
		{"hourly", "2026-02-01T00:00:00Z#hourly", "2026-02-01T00:00:00Z"},
		{"hourly", "2026-02-01T00:00:00Z", "2026-02-01T00:00:00Z"},
		{"daily", "2026-02-01T00:00:00Z", "2026-02-01T00:00:00Z"},
		{"monthly", "2026-02-01T00:00:00Z", "2026-02-01T00:00:00Z"},
	} {
		it := storedSnapshot()
		maps.Copy(it, schema.UsageItemKeys(decodeNS, "alice", "gpt-4", c.key).Item())
		it["window"], it["window_start"] = schema.Str(c.window), schema.Str(c.start)
		if _, err := usage.DecodeSnapshot(decodeNS, it); err != nil {
			t.Errorf("%s %s: %v", c.window, c.key, err)
		}
	}

	set := func(attr string, v types.AttributeValue) func(map[string]types.AttributeValue) {
		return func(it map[string]types.AttributeValue) {
			if v == nil {
				delete(it, attr)
			} else {
				it[attr] = v
			}
		}
	}
	for _, c := range []struct {
		attr string
		mut  func(map[string]types.AttributeValue)
	}{
		{"PK", set("PK", nil)},
		{"PK", set("PK", schema.Str("oThEr000001/ENTITY#alice"))},
		{"PK", set("PK", schema.Str(decodeNS+"/BUCKET#alice#gpt-4#0"))},
		{"SK", set("SK", schema.Str("#CONFIG#gpt-4"))},
		{"SK", set("SK", schema.Str("#USAGE#gpt-4#2026-02-01T00:00:00Z#weekly"))},
		{"SK", set("SK", schema.Str("#USAGE#_default_#2026-02-01T00:00:00Z#daily"))},
		{"SK", set("SK", schema.Str("#USAGE#gpt-4#2026-02-01T00:00:00Z#hourly"))}, // a daily item under the hourly key
		{"SK", set("SK", schema.Str("#USAGE#gpt-4#2026-02-02T00:00:00Z"))},        // another start
		{"window", set("window", nil)},
		{"window", set("window", schema.Str("weekly"))},
		{"window", set("window", schema.Num(1))},
		{"window_start", set("window_start", nil)},
		{"window_start", set("window_start", schema.Str("2026-02-01"))},
		{"window_start", set("window_start", schema.Str("2026-02-01T00:00:00+00:00"))},
		{"window_start", func(it map[string]types.AttributeValue) { // not a day's start
			maps.Copy(it, schema.UsageItemKeys(decodeNS, "alice", "gpt-4", "2026-02-01T05:00:00Z").Item())
			it["window_start"] = schema.Str("2026-02-01T05:00:00Z")
		}},
		{"entity_id", set("entity_id", schema.Str("bob"))},
		{"resource", set("resource", schema.Num(4))},
		{"total_events", set("total_events", schema.Str("9"))},
		{"total_events", set("total_events", &types.AttributeValueMemberN{Value: "10000000000000000000"})},
		{"rpm", set("rpm", schema.Str("3"))},
		{"rpm", set("rpm", &types.AttributeValueMemberN{Value: "1.5"})},
		{"tpm#od", set("tpm#od", &types.AttributeValueMemberNULL{Value: true})},
	} {
		it := storedSnapshot()
		c.mut(it)
		_, err := usage.DecodeSnapshot(decodeNS, it)
		var ce *usage.CorruptSnapshotError
		if !errors.As(err, &ce) || ce.Attribute != c.attr {
			t.Errorf("%s: %v, want a *CorruptSnapshotError on %s", fmt.Sprint(it[c.attr]), err, c.attr)
		}
	}
}

// TestCorruptSnapshotsSkipped: a read skips stored items that do not
// decode and logs the attribute and reason, never the entity.
func TestCorruptSnapshotsSkipped(t *testing.T) {
	w := testWorld(t, t0, "gpt-4", nil)
	put := func(key string, mut func(map[string]types.AttributeValue)) {
		k := schema.UsageItemKeys(w.ns, "zelda", "gpt-4", key)
		it := k.Item()
		start, _, _ := strings.Cut(key, "#")
		maps.Copy(it, map[string]types.AttributeValue{
			"entity_id": schema.Str("zelda"), "resource": schema.Str("gpt-4"), "window": schema.Str("hourly"),
			"window_start": schema.Str(start), "total_events": schema.Num(1), "rpm": schema.Num(1),
		})
		mut(it)
		if _, err := w.tbl.DB.PutItem(t.Context(), &dynamodb.PutItemInput{TableName: aws.String(w.tbl.Name), Item: it}); err != nil {
			t.Fatal(err)
		}
	}
	put("2026-03-14T08:00:00Z", func(map[string]types.AttributeValue) {})
	put("2026-03-14T09:00:00Z", func(it map[string]types.AttributeValue) { it["rpm"] = schema.Str("1") })
	put("2026-03-14T10:00:00Z", func(it map[string]types.AttributeValue) { it["window_start"] = schema.Str("2026-03-14T11:00:00Z") })
	var logs strings.Builder
	r, err := usage.New(w.tbl.DB, w.tbl.Name, w.ns, usage.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	for _, sel := range []usage.Selection{
		usage.ForEntity("zelda", "gpt-4", usage.Hourly, t0.Add(-2*time.Hour), t0.Add(2*time.Hour)),
		usage.ForResource("gpt-4", usage.Hourly, t0.Add(-2*time.Hour), t0.Add(2*time.Hour)),
	} {
		logs.Reset()
		equalLines(t, "corrupt items skipped", collect(t, r, sel), []string{"zelda hourly 2026-03-14T08:00:00Z rpm=1 events=1"})
		out := logs.String()
		if strings.Count(out, "level=WARN") != 2 || !strings.Contains(out, "attribute=rpm") || !strings.Contains(out, "attribute=SK") || strings.Contains(out, "zelda") {
			t.Errorf("logs:\n%s", out)
		}
	}
	names := make([]string, usage.MaxLimitNames+1)
	for i := range names {
		names[i] = fmt.Sprintf("l%d", i)
	}
	var ve *schema.ValidationError
	if _, err := r.SnapshotPage(t.Context(), usage.ForResource("gpt-4", usage.Hourly, t0, t0.Add(time.Hour)).WithLimits(names...), ""); !errors.As(err, &ve) {
		t.Errorf("%d limit names: %v", len(names), err)
	}
}
