package bucketwrite

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/schema"
)

const testNow = 1_700_000_000_123

var testID = schema.BucketID{Namespace: "ns1", Entity: "user-1", Resource: "openai/gpt-4", Shard: 3}

func mustFast(t testing.TB, w *Writes, shape Shape, limits []Declared, now int64) *dynamodb.UpdateItemInput {
	t.Helper()
	in, err := w.Speculative(testID, shape, limits, now)
	if err != nil {
		t.Fatal(err)
	}
	return in
}

func values(in *dynamodb.UpdateItemInput) map[string]string {
	out := map[string]string{}
	for k, v := range in.ExpressionAttributeValues {
		out[k] = v.(*types.AttributeValueMemberN).Value
	}
	return out
}

func TestFastPathEnforceGolden(t *testing.T) {
	w := NewWrites("tbl")
	in := mustFast(t, w, ShapeEnforce, []Declared{{"rpm", 1}, {"tpm", 1500}}, testNow)
	if got, want := aws.ToString(in.UpdateExpression),
		"ADD #t0 :n0, #c0 :p0, #t1 :n1, #c1 :p1, #wt :nw, #wc :pw"; got != want {
		t.Errorf("update:\n got %s\nwant %s", got, want)
	}
	if got, want := aws.ToString(in.ConditionExpression), "attribute_exists(PK)"+
		" AND (#o0 > :now OR #byp > :now OR #t0 >= :p0)"+
		" AND (#o1 > :now OR #byp > :now OR #t1 >= :p1)"+
		" AND #wt >= :pw AND (attribute_not_exists(#ttl) OR #ttl > :nows)"+
		" AND attribute_not_exists(#dis) AND (attribute_not_exists(#vu) OR #vu > :now)"; got != want {
		t.Errorf("condition:\n got %s\nwant %s", got, want)
	}
	wantNames := map[string]string{
		"#t0": "b_rpm_tk", "#c0": "b_rpm_tc", "#o0": "b_rpm_soft",
		"#t1": "b_tpm_tk", "#c1": "b_tpm_tc", "#o1": "b_tpm_soft",
		"#wt": "b_wcu_tk", "#wc": "b_wcu_tc", "#byp": "bypass", "#ttl": "ttl", "#dis": "disabled", "#vu": "vu",
	}
	if !maps.Equal(in.ExpressionAttributeNames, wantNames) {
		t.Errorf("names = %v", in.ExpressionAttributeNames)
	}
	wantValues := map[string]string{
		":n0": "-1000", ":p0": "1000",
		":n1": "-1500000", ":p1": "1500000",
		":nw": "-1000", ":pw": "1000",
		":now": "1700000000123", ":nows": "1700000000",
	}
	if got := values(in); !maps.Equal(got, wantValues) {
		t.Errorf("values = %v", got)
	}
	if aws.ToString(in.TableName) != "tbl" || in.ReturnValues != types.ReturnValueAllNew ||
		in.ReturnValuesOnConditionCheckFailure != types.ReturnValuesOnConditionCheckFailureAllOld {
		t.Errorf("table/return values: %s %s %s", aws.ToString(in.TableName), in.ReturnValues, in.ReturnValuesOnConditionCheckFailure)
	}
	if pk := in.Key[schema.AttrPK].(*types.AttributeValueMemberS).Value; pk != "ns1/BUCKET#user-1#openai/gpt-4#3" {
		t.Errorf("PK = %s", pk)
	}
	if sk := in.Key[schema.AttrSK].(*types.AttributeValueMemberS).Value; sk != schema.SKState {
		t.Errorf("SK = %s", sk)
	}
}

func TestFastPathBypassGolden(t *testing.T) {
	w := NewWrites("tbl")
	in := mustFast(t, w, ShapeBypass, []Declared{{"rpm", 1}, {"tpm", 0}}, testNow)
	if got, want := aws.ToString(in.UpdateExpression), "ADD #c0 :p0, #c1 :p1, #wt :nw, #wc :pw"; got != want {
		t.Errorf("update:\n got %s\nwant %s", got, want)
	}
	if got, want := aws.ToString(in.ConditionExpression),
		"attribute_exists(PK) AND #byp > :now AND #wt >= :pw"+
			" AND (attribute_not_exists(#ttl) OR #ttl > :nows) AND attribute_not_exists(#dis)"; got != want {
		t.Errorf("condition:\n got %s\nwant %s", got, want)
	}
	wantNames := map[string]string{
		"#c0": "b_rpm_tc", "#c1": "b_tpm_tc",
		"#wt": "b_wcu_tk", "#wc": "b_wcu_tc", "#byp": "bypass", "#ttl": "ttl", "#dis": "disabled",
	}
	if !maps.Equal(in.ExpressionAttributeNames, wantNames) {
		t.Errorf("names = %v", in.ExpressionAttributeNames)
	}
	wantValues := map[string]string{
		":p0": "1000", ":p1": "0", ":nw": "-1000", ":pw": "1000",
		":now": "1700000000123", ":nows": "1700000000",
	}
	if got := values(in); !maps.Equal(got, wantValues) {
		t.Errorf("values = %v", got)
	}
}

func TestAdjustRetryDoubleGolden(t *testing.T) {
	w := NewWrites("tbl")
	limits := []Declared{{"rpm", 2}, {"tpm", -300}}
	for _, c := range []struct {
		name      string
		build     func() (*dynamodb.UpdateItemInput, error)
		update    string
		condition string
		values    map[string]string
	}{
		{"adjust", func() (*dynamodb.UpdateItemInput, error) { return w.Adjust(testID, AdjustBoth, limits, false, testNow) },
			"ADD #t0 :n0, #c0 :p0, #t1 :n1, #c1 :p1", "",
			map[string]string{":n0": "-2000", ":p0": "2000", ":n1": "300000", ":p1": "-300000"}},
		{"adjust tokens", func() (*dynamodb.UpdateItemInput, error) {
			return w.Adjust(testID, AdjustTokens, limits, false, testNow)
		},
			"ADD #t0 :n0, #t1 :n1", "", map[string]string{":n0": "-2000", ":n1": "300000"}},
		{"adjust consumed", func() (*dynamodb.UpdateItemInput, error) {
			return w.Adjust(testID, AdjustConsumed, limits, false, testNow)
		}, "ADD #c0 :p0, #c1 :p1", "", map[string]string{":p0": "2000", ":p1": "-300000"}},
		{"adjust force pass", func() (*dynamodb.UpdateItemInput, error) {
			return w.Adjust(testID, AdjustBoth, limits[1:], true, testNow)
		},
			"SET #vu = :now ADD #t0 :n0, #c0 :p0", "", map[string]string{":now": "1700000000123", ":n0": "300000", ":p0": "-300000"}},
		{"retry", func() (*dynamodb.UpdateItemInput, error) {
			return w.Retry(testID, []RetryLimit{{"rpm", 2, true}, {"tpm", 5, false}, {"rpd", 0, true}, {"x", 1, true}}, testNow)
		}, "ADD #t0 :n0, #c0 :p0, #t1 :n1, #c1 :p1, #t2 :n2, #c2 :p2, #t3 :n3, #c3 :p3",
			"attribute_exists(PK) AND #t0 >= :p0 AND #t3 >= :p3 AND (attribute_not_exists(#vu) OR #vu > :now)",
			map[string]string{":n0": "-2000", ":p0": "2000", ":n1": "-5000", ":p1": "5000",
				":n2": "0", ":p2": "0", ":n3": "-1000", ":p3": "1000", ":now": "1700000000123"}},
		{"double", func() (*dynamodb.UpdateItemInput, error) { return w.Double("ns1", "user-1", "openai/gpt-4", 4) },
			"SET #sc = :new", "#sc = :old", map[string]string{":new": "8", ":old": "4"}},
		{"double from 1", func() (*dynamodb.UpdateItemInput, error) { return w.Double("ns1", "user-1", "openai/gpt-4", 1) },
			"SET #sc = :new", "attribute_exists(PK) AND (attribute_not_exists(#sc) OR #sc = :old)",
			map[string]string{":new": "2", ":old": "1"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			in, err := c.build()
			if err != nil {
				t.Fatal(err)
			}
			if got := aws.ToString(in.UpdateExpression); got != c.update {
				t.Errorf("update:\n got %s\nwant %s", got, c.update)
			}
			if got := aws.ToString(in.ConditionExpression); got != c.condition || (c.condition == "") != (in.ConditionExpression == nil) {
				t.Errorf("condition:\n got %q\nwant %q", got, c.condition)
			}
			if got := values(in); !maps.Equal(got, c.values) {
				t.Errorf("values = %v\nwant %v", got, c.values)
			}
			checkAliases(t, in)
		})
	}
	in, _ := w.Double("ns1", "user-1", "openai/gpt-4", 4)
	if pk := in.Key[schema.AttrPK].(*types.AttributeValueMemberS).Value; pk != "ns1/BUCKET#user-1#openai/gpt-4#0" {
		t.Errorf("doubling must write shard 0, PK = %s", pk)
	}
	if in.ExpressionAttributeNames["#sc"] != schema.AttrShardCount ||
		in.ReturnValuesOnConditionCheckFailure != types.ReturnValuesOnConditionCheckFailureAllOld {
		t.Errorf("double: %v %s", in.ExpressionAttributeNames, in.ReturnValuesOnConditionCheckFailure)
	}
}

var aliasRE = regexp.MustCompile(`[#:][A-Za-z0-9_]+`)

// checkAliases: the names and values maps hold exactly the aliases the
// expressions use (DynamoDB rejects unused ones).
func checkAliases(t *testing.T, in *dynamodb.UpdateItemInput) {
	t.Helper()
	used := map[string]bool{}
	for _, e := range []string{aws.ToString(in.UpdateExpression), aws.ToString(in.ConditionExpression)} {
		for _, a := range aliasRE.FindAllString(e, -1) {
			used[a] = true
		}
	}
	defined := map[string]bool{}
	for k := range in.ExpressionAttributeNames {
		defined[k] = true
	}
	for k := range in.ExpressionAttributeValues {
		defined[k] = true
	}
	if !maps.Equal(used, defined) {
		t.Errorf("aliases used %v, defined %v", slices.Sorted(maps.Keys(used)), slices.Sorted(maps.Keys(defined)))
	}
}

// updateItem is one SET/ADD/REMOVE/DELETE item of an update expression.
type updateItem struct {
	clause, path, value string
}

// parseUpdate splits an update expression of the shapes built here into
// its items: `SET p = v, …`, `ADD p v, …`, `REMOVE p, …`.
func parseUpdate(t *testing.T, expr string) []updateItem {
	t.Helper()
	var out []updateItem
	clauseRE := regexp.MustCompile(`\b(SET|ADD|REMOVE|DELETE) `)
	locs := clauseRE.FindAllStringSubmatchIndex(expr, -1)
	if len(locs) == 0 || locs[0][0] != 0 {
		t.Fatalf("update %q does not start with a clause", expr)
	}
	for i, loc := range locs {
		end := len(expr)
		if i+1 < len(locs) {
			end = locs[i+1][0]
		}
		clause := expr[loc[2]:loc[3]]
		for _, it := range strings.Split(strings.TrimSpace(expr[loc[1]:end]), ", ") {
			var u updateItem
			switch clause {
			case "SET":
				p, v, ok := strings.Cut(it, " = ")
				if !ok {
					t.Fatalf("SET item %q", it)
				}
				u = updateItem{clause, p, v}
			case "ADD", "DELETE":
				f := strings.Fields(it)
				if len(f) != 2 {
					t.Fatalf("%s item %q", clause, it)
				}
				u = updateItem{clause, f[0], f[1]}
			default:
				u = updateItem{clause, it, ""}
			}
			out = append(out, u)
		}
	}
	return out
}

// allShapes builds every fast-path shape for n limits with awkward names.
func allFastPath(t *testing.T, w *Writes, limits []Declared) map[string]*dynamodb.UpdateItemInput {
	return map[string]*dynamodb.UpdateItemInput{
		"enforce": mustFast(t, w, ShapeEnforce, limits, testNow),
		"bypass":  mustFast(t, w, ShapeBypass, limits, testNow),
	}
}

// docs/design.md §5: the fast path writes only b_*_tk, b_*_tc and b_wcu_*,
// only by ADD; it never names rf, gc, tu, cascade, parent_id, pgen, and
// names vu, ttl, bypass, disabled and soft stamps only in its condition.
func TestFastPathIsBlind(t *testing.T) {
	w := NewWrites("tbl")
	for n := range 6 {
		limits := make([]Declared, n)
		for i := range limits {
			limits[i] = Declared{Name: []string{"rpm", "my_limit", "a.b", "x-y", "tpm_soft", "rf"}[i], Amount: int64(i)}
		}
		for shape, in := range allFastPath(t, w, limits) {
			checkAliases(t, in)
			for _, u := range parseUpdate(t, aws.ToString(in.UpdateExpression)) {
				attr, ok := in.ExpressionAttributeNames[u.path]
				if !ok {
					t.Fatalf("%s n=%d: path %q is not a placeholder", shape, n, u.path)
				}
				if u.clause != "ADD" {
					t.Errorf("%s n=%d: %s %s", shape, n, u.clause, attr)
				}
				limit, f, ok := schema.ParseBucketAttr(attr)
				switch {
				case !ok:
					t.Errorf("%s n=%d: writes %q", shape, n, attr)
				case limit == schema.WCULimit && (f == schema.LimitTokens || f == schema.LimitConsumed):
				case f == schema.LimitConsumed:
				case f == schema.LimitTokens && shape == "enforce":
				default:
					t.Errorf("%s n=%d: writes %q", shape, n, attr)
				}
			}
			for alias, attr := range in.ExpressionAttributeNames {
				switch attr {
				case schema.AttrRF, schema.AttrShardCount, schema.AttrCascade, schema.AttrParentID, schema.AttrPGen:
					t.Errorf("%s n=%d: names %s (%s)", shape, n, attr, alias)
				case schema.AttrVU, schema.AttrTTL, schema.AttrBypass, schema.AttrDisabled:
					continue
				}
				_, f, ok := schema.ParseBucketAttr(attr)
				if !ok || (f != schema.LimitTokens && f != schema.LimitConsumed && f != schema.LimitSoft) {
					t.Errorf("%s n=%d: names %q", shape, n, attr)
				}
			}
			if shape == "bypass" {
				if _, ok := in.ExpressionAttributeNames["#vu"]; ok {
					t.Errorf("bypass shape has no vu guard")
				}
			}
		}
	}
}

// docs/design.md §5: no limit or resource name ever appears in an expression.
func TestPositionalPlaceholders(t *testing.T) {
	w := NewWrites("tbl")
	names := []string{"a.b", "x-y", "my_limit", "PK", "ttl", "now"}
	limits := make([]Declared, len(names))
	retry := make([]RetryLimit, len(names))
	for i, n := range names {
		limits[i] = Declared{Name: n, Amount: int64(i + 1)}
		retry[i] = RetryLimit{Name: n, Amount: int64(i + 1), Hard: i%2 == 0}
	}
	id := schema.BucketID{Namespace: "ns", Entity: "ent.ity-1", Resource: "openai/gpt-4", Shard: 0}
	var ins []*dynamodb.UpdateItemInput
	add := func(in *dynamodb.UpdateItemInput, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		ins = append(ins, in)
	}
	add(w.Speculative(id, ShapeEnforce, limits, testNow))
	add(w.Speculative(id, ShapeBypass, limits, testNow))
	for _, m := range []AdjustMode{AdjustBoth, AdjustTokens, AdjustConsumed} {
		add(w.Adjust(id, m, limits, false, testNow))
		add(w.Adjust(id, m, limits, true, testNow))
	}
	add(w.Retry(id, retry, testNow))
	add(w.Double(id.Namespace, id.Entity, id.Resource, 1))
	add(w.Double(id.Namespace, id.Entity, id.Resource, 2))
	for _, in := range ins {
		checkAliases(t, in)
		checkVocabulary(t, in)
		for _, e := range []string{aws.ToString(in.UpdateExpression), aws.ToString(in.ConditionExpression)} {
			// Strip the placeholders and the one literal attribute name.
			rest := aliasRE.ReplaceAllString(e, "")
			rest = strings.ReplaceAll(rest, "attribute_exists(PK)", "")
			for _, s := range append(slices.Clone(names[:4]), id.Resource, id.Entity, "gpt", "b_") {
				if strings.Contains(rest, s) {
					t.Errorf("expression %q contains %q", e, s)
				}
			}
		}
		for alias, attr := range in.ExpressionAttributeNames {
			if l, _, ok := schema.ParseBucketAttr(attr); ok && l != schema.WCULimit && !slices.Contains(names, l) {
				t.Errorf("%s = %q: unknown limit", alias, attr)
			}
		}
	}
	// The limit names reach the names map intact.
	got := ins[0].ExpressionAttributeNames
	for i, n := range names {
		if got[idx("#t", i)] != "b_"+n+"_tk" || got[idx("#c", i)] != "b_"+n+"_tc" || got[idx("#o", i)] != "b_"+n+"_soft" {
			t.Errorf("limit %d: %v", i, got)
		}
	}
}

func TestWriteErrors(t *testing.T) {
	w := NewWrites("tbl")
	big := int64(math.MaxInt64/1000 + 1)
	for _, c := range []struct {
		name  string
		err   error
		limit string
	}{
		{"empty", fpErr(w, ShapeEnforce, Declared{"", 1}), ""},
		{"wcu", fpErr(w, ShapeEnforce, Declared{"wcu", 1}), "wcu"},
		{"dup", fpErr(w, ShapeBypass, Declared{"a", 1}, Declared{"b", 1}, Declared{"a", 2}), "a"},
		{"negative", fpErr(w, ShapeEnforce, Declared{"a", -1}), "a"},
		{"overflow", fpErr(w, ShapeEnforce, Declared{"a", big}), "a"},
		{"shape", fpErr(w, Shape(9), Declared{"a", 1}), ""},
		{"adjust overflow", adjErr(w, AdjustBoth, Declared{"a", -big}), "a"},
		{"adjust empty", adjErr(w, AdjustBoth), ""},
		{"adjust mode", adjErr(w, AdjustMode(7), Declared{"a", 1}), ""},
		{"adjust dup", adjErr(w, AdjustConsumed, Declared{"a", 1}, Declared{"a", 1}), "a"},
		{"retry negative", retryErr(w, RetryLimit{"a", -1, false}), "a"},
		{"retry empty", retryErr(w), ""},
		{"double 0", doubleErr(w, 0), ""},
	} {
		var we *WriteError
		if !errors.As(c.err, &we) || we.Limit != c.limit || we.Reason == "" || !strings.HasPrefix(we.Error(), "limiter: ") {
			t.Errorf("%s: %v (%#v)", c.name, c.err, c.err)
		}
	}
	// Invalid input never touches the cache.
	if m := w.cache.Load(); m != nil {
		t.Errorf("cache grew on errors: %d entries", len(*m))
	}
	var ce *ShardCapError
	if err := doubleErr(w, schema.MaxShardCount); !errors.As(err, &ce) || ce.Old != schema.MaxShardCount {
		t.Errorf("double at cap: %v", err)
	}
	if _, err := w.Double("ns", "e", "r", schema.MaxShardCount/2); err != nil {
		t.Errorf("16 → 32 must be allowed: %v", err)
	}
	// Adjust accepts any sign; ×1000 of the most negative admissible amount fits.
	if _, err := w.Adjust(testID, AdjustBoth, []Declared{{"a", math.MinInt64 / 1000}}, false, testNow); err != nil {
		t.Error(err)
	}
}

func fpErr(w *Writes, s Shape, l ...Declared) error {
	_, err := w.Speculative(testID, s, l, testNow)
	return err
}

func adjErr(w *Writes, m AdjustMode, l ...Declared) error {
	_, err := w.Adjust(testID, m, l, false, testNow)
	return err
}

func retryErr(w *Writes, l ...RetryLimit) error {
	_, err := w.Retry(testID, l, testNow)
	return err
}

func doubleErr(w *Writes, old int64) error {
	_, err := w.Double("ns", "e", "r", old)
	return err
}

// The expressions are built once per shape; calls share them and callers
// may modify what they get.
func TestShapeCache(t *testing.T) {
	w := NewWrites("tbl")
	a := mustFast(t, w, ShapeEnforce, []Declared{{"rpm", 1}, {"tpm", 2}}, testNow)
	b := mustFast(t, w, ShapeEnforce, []Declared{{"x.y", 7}, {"z", 0}}, testNow+1)
	if unsafe.StringData(*a.UpdateExpression) != unsafe.StringData(*b.UpdateExpression) ||
		unsafe.StringData(*a.ConditionExpression) != unsafe.StringData(*b.ConditionExpression) {
		t.Error("same shape must share the cached expression strings")
	}
	// The names map is shared by the requests of one shape and one set of
	// limit names, and by no others; everything else is the call's own.
	*a.UpdateExpression = "mutated"
	a.ExpressionAttributeValues[":p0"] = &types.AttributeValueMemberN{Value: "666"}
	c := mustFast(t, w, ShapeEnforce, []Declared{{"rpm", 1}, {"tpm", 2}}, testNow)
	if aws.ToString(c.UpdateExpression) == "mutated" || values(c)[":p0"] != "1000" {
		t.Error("a caller's change leaked into the cache")
	}
	if !sameMap(a.ExpressionAttributeNames, c.ExpressionAttributeNames) {
		t.Error("one shape and one set of names must share the names map")
	}
	if sameMap(a.ExpressionAttributeNames, b.ExpressionAttributeNames) || b.ExpressionAttributeNames["#t0"] != "b_x.y_tk" {
		t.Errorf("other names must have their own map: %v", b.ExpressionAttributeNames)
	}
	// A name sequence is told apart however its names split: ("ab","c")
	// is not ("a","bc").
	d := mustFast(t, w, ShapeEnforce, []Declared{{"ab", 1}, {"c", 2}}, testNow)
	e := mustFast(t, w, ShapeEnforce, []Declared{{"a", 1}, {"bc", 2}}, testNow)
	if d.ExpressionAttributeNames["#t0"] != "b_ab_tk" || e.ExpressionAttributeNames["#t0"] != "b_a_tk" {
		t.Errorf("names %v and %v", d.ExpressionAttributeNames, e.ExpressionAttributeNames)
	}
	mustFast(t, w, ShapeBypass, []Declared{{"rpm", 1}, {"tpm", 2}}, testNow)
	mustFast(t, w, ShapeEnforce, []Declared{{"rpm", 1}}, testNow)
	if n := len(*w.cache.Load()); n != 3 {
		t.Errorf("cache holds %d shapes, want 3", n)
	}
	// Retry shapes differ by which limits are conditioned.
	r1, _ := w.Retry(testID, []RetryLimit{{"a", 1, true}, {"b", 1, false}}, testNow)
	r2, _ := w.Retry(testID, []RetryLimit{{"a", 1, false}, {"b", 1, true}}, testNow)
	if aws.ToString(r1.ConditionExpression) == aws.ToString(r2.ConditionExpression) {
		t.Error("retry masks share a shape")
	}
}

// sameMap reports whether a and b are one map (not two equal ones).
func sameMap(a, b map[string]string) bool {
	return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
}

// TestNameSetsBounded: a shape keeps at most maxNameSets names maps; names
// beyond them still get a correct map, built for the call.
func TestNameSetsBounded(t *testing.T) {
	w := NewWrites("tbl")
	for i := range maxNameSets + 20 {
		name := "n" + strconv.Itoa(i)
		in := mustFast(t, w, ShapeEnforce, []Declared{{name, 1}}, testNow)
		if got := in.ExpressionAttributeNames["#t0"]; got != "b_"+name+"_tk" {
			t.Fatalf("#t0 = %s for %s", got, name)
		}
	}
	set := w.exprs(shapeKey{kind: kindEnforce, n: 1})
	if got := len(*set.named.sets.Load()); got != maxNameSets {
		t.Errorf("%d names maps kept, want %d", got, maxNameSets)
	}
}

func TestShapeCacheBounded(t *testing.T) {
	w := NewWrites("tbl")
	type key struct {
		n, mode int
		force   bool
	}
	shapes := map[key]bool{}
	for n := range maxCachedShapes + 10 {
		limits := make([]Declared, n%40)
		for i := range limits {
			limits[i] = Declared{Name: "l" + strconv.Itoa(i), Amount: 1}
		}
		k := key{n % 40, n % 3, n%7 == 0}
		if _, err := w.Adjust(testID, AdjustMode(k.mode), append(limits, Declared{"z", int64(n)}), k.force, testNow); err != nil {
			t.Fatal(err)
		}
		shapes[k] = true
	}
	// Every shape cached once.
	want := min(len(shapes), maxCachedShapes)
	if got := len(*w.cache.Load()); got != want || want < 200 {
		t.Errorf("cache = %d, want %d", got, want)
	}
	// Retry with more than 64 limits is built per call, not cached.
	many := make([]RetryLimit, 70)
	for i := range many {
		many[i] = RetryLimit{Name: "l" + strconv.Itoa(i), Amount: 1, Hard: true}
	}
	in, err := w.Retry(testID, many, testNow)
	if err != nil {
		t.Fatal(err)
	}
	checkAliases(t, in)
	if !strings.Contains(aws.ToString(in.ConditionExpression), "#t69 >= :p69") {
		t.Error("limit 69 not conditioned")
	}
	if got := len(*w.cache.Load()); got != want {
		t.Errorf("cache = %d after an uncacheable retry", got)
	}
}

func TestWritesConcurrent(t *testing.T) {
	w := NewWrites("tbl")
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				n := (g + i) % 5
				limits := make([]Declared, n)
				for j := range limits {
					limits[j] = Declared{Name: fmt.Sprintf("g%d_%d", g, j), Amount: int64(i)}
				}
				in, err := w.Speculative(testID, Shape(i%2), limits, testNow)
				if err != nil {
					t.Error(err)
					return
				}
				if len(in.ExpressionAttributeValues) == 0 {
					t.Error("no values")
				}
			}
		})
	}
	wg.Wait()
	if got := len(*w.cache.Load()); got != 10 {
		t.Errorf("cache = %d shapes, want 10", got)
	}
}

func TestFastPathNoLimits(t *testing.T) {
	w := NewWrites("tbl")
	for _, s := range []Shape{ShapeEnforce, ShapeBypass} {
		in := mustFast(t, w, s, nil, testNow)
		checkAliases(t, in)
		if got := aws.ToString(in.UpdateExpression); got != "ADD #wt :nw, #wc :pw" {
			t.Errorf("%s: %s", s, got)
		}
	}
}

// BenchmarkFastPath3 builds the enforce fast-path input for three limits
// (the cached-shape path every acquire takes).
func BenchmarkFastPath3(b *testing.B) {
	w := NewWrites("zae-limiter")
	limits := []Declared{{"rpm", 1}, {"tpm", 1500}, {"rpd", 1}}
	id := schema.BucketID{Namespace: "a1b2c3d4e5f", Entity: "user-123", Resource: "openai/gpt-4", Shard: 2}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := w.Speculative(id, ShapeEnforce, limits, testNow); err != nil {
			b.Fatal(err)
		}
	}
}

// The per-call cost stays small: a regression guard on allocations.
func TestFastPathAllocs(t *testing.T) {
	w := NewWrites("zae-limiter")
	limits := []Declared{{"rpm", 1}, {"tpm", 1500}, {"rpd", 1}}
	allocs := testing.AllocsPerRun(500, func() {
		if _, err := w.Speculative(testID, ShapeEnforce, limits, testNow); err != nil {
			t.Fatal(err)
		}
	})
	// One string (key, names, numbers), the input with its parts, the key
	// map (2), the names and values maps (4 each), and the value members
	// (the input block holds two limits' worth).
	if allocs > 13 {
		t.Errorf("FastPath(3 limits): %v allocs/op, want ≤ 13", allocs)
	}
}

// vocabularyRE matches everything an expression built here may contain
// besides placeholders: keywords, functions, the literal PK, operators.
var vocabularyRE = regexp.MustCompile(`^(?:\s+|,|\(|\)|>=|>|=|ADD|SET|AND|OR|attribute_exists|attribute_not_exists|PK)*$`)

// positionalRE matches the placeholders built here: a short fixed prefix
// and, for per-limit ones, the limit's position.
var positionalRE = regexp.MustCompile(`^(?:#[a-z]{1,3}[0-9]*|:[a-z]{1,4}[0-9]*)$`)

// checkVocabulary: with the placeholders removed, an expression is made of
// the fixed vocabulary only, so no name (limit, resource, attribute) can be
// in it .
func checkVocabulary(t *testing.T, in *dynamodb.UpdateItemInput) {
	t.Helper()
	for _, e := range []string{aws.ToString(in.UpdateExpression), aws.ToString(in.ConditionExpression)} {
		if rest := aliasRE.ReplaceAllString(e, ""); !vocabularyRE.MatchString(rest) {
			t.Errorf("expression %q holds more than placeholders and keywords", e)
		}
		for _, a := range aliasRE.FindAllString(e, -1) {
			if !positionalRE.MatchString(a) {
				t.Errorf("placeholder %q is not positional", a)
			}
		}
	}
}

// FuzzFastPath builds every write shape from fuzzed limit names and
// amounts: building never panics, invalid input is a *WriteError, and a
// built input names each limit attribute exactly, uses every alias it
// defines and holds no name in its expressions.
func FuzzFastPath(f *testing.F) {
	f.Add("rpm\x00tpm", int64(1), int64(1500), true)
	f.Add("a.b\x00x-y\x00my_limit", int64(0), int64(-3), false)
	f.Add("wcu", int64(1), int64(1), false)
	f.Add("a\x00a", int64(1), int64(1), true)
	f.Add("ADD #t0 :n0\x00) OR (", int64(9223372036854775), int64(-9223372036854775), true)
	f.Fuzz(func(t *testing.T, joined string, a0, a1 int64, hard bool) {
		parts := strings.Split(joined, "\x00")
		if len(parts) > 8 {
			parts = parts[:8]
		}
		limits := make([]Declared, len(parts))
		retry := make([]RetryLimit, len(parts))
		for i, p := range parts {
			amt := a0
			if i%2 == 1 {
				amt = a1
			}
			limits[i] = Declared{Name: p, Amount: amt}
			retry[i] = RetryLimit{Name: p, Amount: amt, Hard: hard == (i%2 == 0)}
		}
		w := NewWrites("tbl")
		type built struct {
			in     *dynamodb.UpdateItemInput
			err    error
			fields []schema.LimitField
		}
		var all []built
		add := func(in *dynamodb.UpdateItemInput, err error, fields ...schema.LimitField) {
			all = append(all, built{in, err, fields})
		}
		in, err := w.Speculative(testID, ShapeEnforce, limits, testNow)
		add(in, err, schema.LimitTokens, schema.LimitConsumed, schema.LimitSoft)
		in, err = w.Speculative(testID, ShapeBypass, limits, testNow)
		add(in, err, schema.LimitConsumed)
		in, err = w.Adjust(testID, AdjustBoth, limits, hard, testNow)
		add(in, err, schema.LimitTokens, schema.LimitConsumed)
		in, err = w.Adjust(testID, AdjustTokens, limits, !hard, testNow)
		add(in, err, schema.LimitTokens)
		in, err = w.Adjust(testID, AdjustConsumed, limits, false, testNow)
		add(in, err, schema.LimitConsumed)
		in, err = w.Retry(testID, retry, testNow)
		add(in, err, schema.LimitTokens, schema.LimitConsumed)
		for _, b := range all {
			if b.err != nil {
				var we *WriteError
				if !errors.As(b.err, &we) {
					t.Fatalf("error %v is not a *WriteError", b.err)
				}
				continue
			}
			checkAliases(t, b.in)
			checkVocabulary(t, b.in)
			for i, l := range limits {
				for _, f := range b.fields {
					alias := map[schema.LimitField]string{schema.LimitTokens: "#t", schema.LimitConsumed: "#c", schema.LimitSoft: "#o"}[f]
					if got := b.in.ExpressionAttributeNames[idx(alias, i)]; got != schema.BucketAttr(l.Name, f) {
						t.Fatalf("%s%d = %q, want %q", alias, i, got, schema.BucketAttr(l.Name, f))
					}
				}
			}
		}
	})
}

func TestDoubleNeverPassesTheCap(t *testing.T) {
	w := NewWrites("t")
	for _, old := range []int64{1, 2, 16, 20, 31} {
		in, err := w.Double("tEsTnAmEsP0", "e", "r", old)
		if err != nil {
			t.Fatalf("old %d: %v", old, err)
		}
		want := min(2*old, schema.MaxShardCount)
		for _, v := range in.ExpressionAttributeValues {
			if n, ok := v.(*types.AttributeValueMemberN); ok && n.Value != strconv.FormatInt(old, 10) && n.Value != strconv.FormatInt(want, 10) {
				t.Fatalf("old %d: value %s, want only %d and %d", old, n.Value, old, want)
			}
		}
	}
	if _, err := w.Double("tEsTnAmEsP0", "e", "r", 32); err == nil {
		t.Fatal("doubling at the cap must be refused")
	}
}

// TestKeyCache: requests to one bucket share its Key map; every other
// bucket (another shard included) gets its own, and a bucket whose slot
// another took gets a correct key again.
func TestKeyCache(t *testing.T) {
	w := NewWrites("tbl")
	key := func(id schema.BucketID) map[string]types.AttributeValue {
		t.Helper()
		in, err := w.Speculative(id, ShapeEnforce, []Declared{{"rpm", 1}}, testNow)
		if err != nil {
			t.Fatal(err)
		}
		return in.Key
	}
	pkOf := func(k map[string]types.AttributeValue) string {
		return k[schema.AttrPK].(*types.AttributeValueMemberS).Value
	}
	same := func(a, b map[string]types.AttributeValue) bool {
		return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
	}
	a := key(testID)
	if !same(a, key(testID)) {
		t.Error("one bucket's requests must share its Key map")
	}
	other := testID
	other.Shard++
	if b := key(other); same(a, b) || pkOf(b) != string(other.AppendPK(nil)) {
		t.Errorf("another shard's key = %v", b)
	}
	// More buckets than slots: every key is still its bucket's.
	for i := range 3 * keySlots {
		id := schema.BucketID{Namespace: "ns1", Entity: "e" + strconv.Itoa(i), Resource: "r"}
		k := key(id)
		if pkOf(k) != string(id.AppendPK(nil)) || k[schema.AttrSK].(*types.AttributeValueMemberS).Value != schema.SKState {
			t.Fatalf("bucket %d: key %v", i, k)
		}
	}
	if pkOf(key(testID)) != string(testID.AppendPK(nil)) {
		t.Error("a bucket whose slot was taken got a wrong key")
	}
}
