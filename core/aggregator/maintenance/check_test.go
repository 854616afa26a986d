package maintenance

import (
	"fmt"
	"maps"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/bucketitem"
	"github.com/zae-limiter/zae-limiter-go/core/schedule"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
)

// This file checks built writes against the rules they must follow,
// independently of how plan.go builds them: docs/design.md §6 (no stamp, owner
// attribute, tu or ttl in any write but a clone, whose values are shard
// 0's), the rf lock on every write that credits, exact aliases, the cap,
// and no write at all for an abstaining bucket.

var aliasRE = regexp.MustCompile(`[#:][A-Za-z0-9_]+`)

// isStampOrOwned reports the attributes the aggregator must never write
// (other than verbatim in a clone).
func isStampOrOwned(attr string) bool {
	switch attr {
	case schema.AttrBypass, schema.AttrCascade, schema.AttrParentID, schema.AttrPGen,
		schema.AttrTTL, schema.AttrDisabled:
		return true
	}
	_, f, ok := schema.ParseBucketAttr(attr)
	return ok && f == schema.LimitSoft
}

// rawNotMaintained is docs/design.md §9, §14 and §15 read straight off the
// attribute map: window attributes on wcu, on a partial limit or without a
// window length (rsa), a window length that is not positive, a schedule on
// wcu, a stored schedule or reset schedule that does not decode (or a zone
// that does not load beside one), a zero refill with neither a reset
// schedule nor a window, or with both, a reset schedule or a window beside a
// drip, or unusable parameters.
func rawNotMaintained(it item) bool {
	present := map[string]bool{}
	windowed := map[string]bool{}
	rsa := map[string]types.AttributeValue{}
	var scheds, resets []string
	limitResets := map[string]string{}
	itemResets := ""
	for k, v := range it {
		if k == schema.AttrRSched || k == schema.AttrSched {
			s, ok := v.(*types.AttributeValueMemberS)
			if !ok {
				return true
			}
			if k == schema.AttrRSched {
				itemResets = s.Value
				resets = append(resets, s.Value)
			} else {
				scheds = append(scheds, s.Value)
			}
			continue
		}
		name, f, ok := schema.ParseBucketAttr(k)
		if !ok {
			continue
		}
		switch f {
		case schema.LimitWindowStart, schema.LimitWindowAnchor, schema.LimitWindowConsumed:
			windowed[name] = true
		case schema.LimitResetAfter:
			windowed[name], rsa[name] = true, v
		case schema.LimitSchedule, schema.LimitResetSchedule:
			s, ok := v.(*types.AttributeValueMemberS)
			if !ok || name == schema.WCULimit {
				return true
			}
			if f == schema.LimitSchedule {
				scheds = append(scheds, s.Value)
			} else {
				resets = append(resets, s.Value)
				limitResets[name] = s.Value
			}
		case schema.LimitTokens:
			if _, ok := it[schema.BucketAttr(name, schema.LimitCapacity)]; ok {
				present[name] = true
			}
		}
	}
	for name := range windowed {
		if name == schema.WCULimit || !present[name] || rsa[name] == nil {
			return true
		}
	}
	for _, text := range scheds {
		if _, err := schedule.Decode(text); err != nil {
			return true
		}
	}
	for _, text := range resets {
		if _, err := schedule.DecodeResets(text); err != nil {
			return true
		}
	}
	if len(scheds)+len(resets) > 0 {
		tz, _ := it[schema.AttrSchedTZ].(*types.AttributeValueMemberS)
		name := ""
		if tz != nil {
			name = tz.Value
		}
		if _, err := schedule.Zone(name); err != nil {
			return true
		}
	}
	n := func(k string) int64 {
		v, ok := it[k].(*types.AttributeValueMemberN)
		if !ok {
			return 0
		}
		x, _ := strconv.ParseInt(v.Value, 10, 64)
		return x
	}
	for name := range present {
		ra := n(schema.BucketAttr(name, schema.LimitRefillAmount))
		r, own := limitResets[name]
		if !own {
			r = itemResets
		}
		calendar := r != "" && r != schedule.None
		if name == schema.WCULimit {
			calendar = false
		}
		session := rsa[name] != nil
		if session && (calendar || n(schema.BucketAttr(name, schema.LimitResetAfter)) <= 0) {
			return true
		}
		if ra < 0 || (ra == 0) != (calendar || session) || (name == schema.WCULimit && ra == 0) ||
			n(schema.BucketAttr(name, schema.LimitRefillPeriod)) <= 0 ||
			n(schema.BucketAttr(name, schema.LimitCapacity)) < 0 {
			return true
		}
	}
	return false
}

func pairOf(id schema.BucketID) schema.BucketID { id.Shard = 0; return id }

// checkWrites checks every write built from recs.
func checkWrites(t testing.TB, recs []Record, ups []*dynamodb.UpdateItemInput, puts []*dynamodb.PutItemInput, now int64) {
	t.Helper()
	last := map[schema.BucketID]bucketitem.Image{}
	abst := map[schema.BucketID]bool{}
	for _, r := range recs {
		img, err := bucketitem.Decode(r.NewItem)
		if err != nil || len(r.NewItem) == 0 || r.ID.Shard < 0 {
			continue
		}
		last[r.ID] = img
		if rawNotMaintained(r.NewItem) {
			abst[r.ID] = true
		}
	}
	idOf := func(pk types.AttributeValue) schema.BucketID {
		s, ok := pk.(*types.AttributeValueMemberS)
		if !ok {
			t.Fatalf("PK %s", render(pk))
		}
		id, err := schema.ParseBucketPK(s.Value)
		if err != nil {
			t.Fatalf("PK %q: %v", s.Value, err)
		}
		return id
	}

	for _, in := range ups {
		id := idOf(in.Key[schema.AttrPK])
		upd, cond := aws.ToString(in.UpdateExpression), aws.ToString(in.ConditionExpression)
		if cond == "" {
			t.Errorf("%s: unconditioned update %q", id.PK(), upd)
		}
		checkAliases(t, upd+" "+cond, in.ExpressionAttributeNames, in.ExpressionAttributeValues)
		if abst[id] {
			t.Errorf("%s: update on an abstaining bucket: %q", id.PK(), upd)
		}
		for alias, attr := range in.ExpressionAttributeNames {
			if isStampOrOwned(attr) {
				t.Errorf("%s: update names %s (%s)", id.PK(), attr, alias)
			}
		}
		setsRF, setsSC := false, false
		for _, a := range aliasRE.FindAllString(upd, -1) {
			if a[0] != '#' {
				continue
			}
			attr := in.ExpressionAttributeNames[a]
			_, f, isLimit := schema.ParseBucketAttr(attr)
			switch {
			case attr == schema.AttrRF:
				setsRF = true
			case attr == schema.AttrShardCount:
				setsSC = true
			case isLimit && f == schema.LimitTokens:
			case isLimit && (f == schema.LimitGrantShards || f == schema.LimitTopUp) && strings.Contains(upd, "#rf = :rf"):
				// A quota's reset edge (docs/design.md §15): gc sized at
				// the image's count, tu removed, under the count pin.
				if f == schema.LimitGrantShards {
					img := last[id]
					if got := numOf(t, in.ExpressionAttributeValues[":sc"]); got != max(img.ShardCount, 1) ||
						!strings.Contains(cond, "(attribute_not_exists(#sc) OR #sc <= :sc)") {
						t.Errorf("%s: grant %d without the count pin: %q", id.PK(), got, cond)
					}
				} else if _, removed, ok := strings.Cut(upd, " REMOVE "); !ok || !strings.Contains(removed, a) || !strings.Contains(upd, "#g") {
					// tu is only ever removed, by a reset (ADR-149).
					t.Errorf("%s: writes tu: %q", id.PK(), upd)
				}
			case isLimit && f == schema.LimitWindowAnchor && strings.Contains(upd, "#rf = :rf"):
				// wa takes the image's ws, under a pin of that ws
				// (docs/design.md §15).
				img := last[id]
				name, _, _ := schema.ParseBucketAttr(attr)
				l := img.Lookup(name)
				v := strings.TrimSpace(strings.Split(strings.SplitAfter(upd, a+" = ")[1], ",")[0])
				v = strings.Fields(v)[0]
				if l == nil || !l.HasWindow() || numOf(t, in.ExpressionAttributeValues[v]) != l.WindowStart {
					t.Errorf("%s: sets %s to %s, not the image's window start", id.PK(), attr, render(in.ExpressionAttributeValues[v]))
					continue
				}
				pinned := false
				for w, n := range in.ExpressionAttributeNames {
					if n == schema.BucketAttr(name, schema.LimitWindowStart) && strings.Contains(cond, w+" = "+v) {
						pinned = true
					}
				}
				if !pinned {
					t.Errorf("%s: sets %s without pinning its window start: %q", id.PK(), attr, cond)
				}
			case isLimit && f == schema.LimitWindowConsumed:
				// wtc is only ever removed, by a roll.
				if _, removed, ok := strings.Cut(upd, " REMOVE "); !ok || !strings.Contains(removed, a) || !strings.Contains(upd, "#g") {
					t.Errorf("%s: writes wtc: %q", id.PK(), upd)
				}
			case attr == schema.AttrVU && strings.Contains(upd, "#rf = :rf"):
				// While a session window in force has ended or was never
				// opened, vu is left as stored (docs/design.md §15).
				if img, ok := last[id]; ok {
					for i := range img.Limits {
						l := &img.Limits[i]
						if end, ok := l.WindowEnd(); l.HasWindow() && (!ok || end <= now) {
							t.Errorf("%s: writes vu while the window of %s awaits a client: %q", id.PK(), l.Name, upd)
						}
					}
				}
				// A refill stamps the full-at instant (docs/decisions.md P25).
				if img, ok := last[id]; ok && strings.Contains(upd, "#vu = :vu") {
					sc, _ := outsideSupported(&img)
					if got, want := numOf(t, in.ExpressionAttributeValues[":vu"]), validUntil(&img, sc.passes(&img, now), now); got != want {
						t.Errorf("%s: stamps vu %d, want %d", id.PK(), got, want)
					}
				}
			default:
				t.Errorf("%s: update writes %s: %q", id.PK(), attr, upd)
			}
		}
		writesTK := strings.Contains(upd, "ADD")
		if setsRF || writesTK {
			// Every write that credits or moves rf holds the rf lock of the
			// last image of its bucket, and moves rf forward only.
			img, ok := last[id]
			if !ok || !strings.HasPrefix(cond, "#rf = :erf AND ") || in.ExpressionAttributeNames["#rf"] != schema.AttrRF {
				t.Errorf("%s: credit without the rf lock: %q / %q", id.PK(), upd, cond)
				continue
			}
			if got := numOf(t, in.ExpressionAttributeValues[":erf"]); got != img.RF {
				t.Errorf("%s: conditions on rf %d, image has %d", id.PK(), got, img.RF)
			}
			if numOf(t, in.ExpressionAttributeValues[":rf"]) < img.RF {
				t.Errorf("%s: rf moves backwards", id.PK())
			}
			for i := range img.Limits {
				// rf is never before a window start in force.
				if l := &img.Limits[i]; l.HasWindow() && l.Fields.Has(bucketitem.FieldWindowStart) && numOf(t, in.ExpressionAttributeValues[":rf"]) < l.WindowStart {
					t.Errorf("%s: rf before the window start of %s", id.PK(), l.Name)
				}
			}
			wantVU := "attribute_not_exists(#vu)"
			if img.HasVU {
				wantVU = "#vu = :evu"
				if got := numOf(t, in.ExpressionAttributeValues[":evu"]); got != img.VU {
					t.Errorf("%s: pins vu %d, image has %d", id.PK(), got, img.VU)
				}
			}
			if img.HasSched {
				// A refill of a scheduled item also pins the schedule it read.
				wantVU += " AND #sched = :esched"
				if got := in.ExpressionAttributeValues[":esched"]; render(got) != "S:"+img.Sched || in.ExpressionAttributeNames["#sched"] != schema.AttrSched {
					t.Errorf("%s: pins sched %s, image has %q", id.PK(), render(got), img.Sched)
				}
			}
			if !strings.HasSuffix(strings.TrimSuffix(cond, " AND (attribute_not_exists(#sc) OR #sc <= :sc)"), wantVU) {
				t.Errorf("%s: vu pin missing: %q", id.PK(), cond)
			}
		}
		if setsSC && id.Shard != 0 && abst[pairOf(id)] {
			t.Errorf("%s: raise propagated from an abstaining shard 0", id.PK())
		}
		if setsSC {
			if v := numOf(t, in.ExpressionAttributeValues[":new"]); v > schema.MaxShardCount || v < 2 {
				t.Errorf("%s: writes shard_count %d", id.PK(), v)
			}
		}
	}

	for _, in := range puts {
		id := idOf(in.Item[schema.AttrPK])
		if aws.ToString(in.ConditionExpression) != "attribute_not_exists(#pk)" ||
			!maps.Equal(in.ExpressionAttributeNames, map[string]string{"#pk": schema.AttrPK}) || len(in.ExpressionAttributeValues) != 0 {
			t.Errorf("%s: clone condition %q %v", id.PK(), aws.ToString(in.ConditionExpression), in.ExpressionAttributeNames)
		}
		if id.Shard == 0 || abst[id] || abst[pairOf(id)] {
			t.Errorf("%s: clone onto shard %d (abstaining %v/%v)", id.PK(), id.Shard, abst[id], abst[pairOf(id)])
		}
		sc := numOf(t, in.Item[schema.AttrShardCount])
		if sc > schema.MaxShardCount || int64(id.Shard) >= sc {
			t.Errorf("%s: clone with shard_count %d", id.PK(), sc)
		}
		// Some shard-0 record of the batch that raised the count to sc is
		// the clone's source: every attribute it carries is copied verbatim
		// but keys, shard_count, tk and tc; tu is dropped; nothing is added.
		var why []string
		found := false
		for _, r := range recs {
			if r.ID != pairOf(id) || r.OldItem == nil {
				continue
			}
			img, err := bucketitem.Decode(r.NewItem)
			if err != nil || img.ShardCount != sc {
				continue
			}
			if d := cloneDiff(r.NewItem, in.Item); d == "" {
				found = true
				break
			} else {
				why = append(why, d)
			}
		}
		if !found {
			t.Errorf("%s: clone matches no shard-0 image of the batch: %v", id.PK(), why)
		}
		if d := recheckDiff(in.Item); d != "" {
			t.Errorf("%s: %s", id.PK(), d)
		}
	}
}

// cloneDiff explains how clone departs from a verbatim copy of src. A
// quota's grant is the clone's own count (ADR-145: the clone is funded at
// the new count).
func cloneDiff(src, clone item) string {
	quotaGrant := func(k string) bool {
		name, f, ok := schema.ParseBucketAttr(k)
		return ok && f == schema.LimitGrantShards && render(src[schema.BucketAttr(name, schema.LimitRefillAmount)]) == "N:0" &&
			render(clone[k]) == render(clone[schema.AttrShardCount])
	}
	for k, v := range src {
		_, f, isLimit := schema.ParseBucketAttr(k)
		switch {
		case quotaGrant(k):
		case k == schema.AttrPK || k == schema.AttrSK || strings.HasPrefix(k, "GSI") || k == schema.AttrShardCount:
		case isLimit && f == schema.LimitTopUp:
			if _, ok := clone[k]; ok {
				return k + " copied"
			}
		case isLimit && f == schema.LimitConsumed:
			if render(clone[k]) != "N:0" {
				return k + " = " + render(clone[k])
			}
		case isLimit && f == schema.LimitTokens:
			if _, ok := clone[k]; !ok {
				return k + " dropped"
			}
		case k == schema.AttrVU && render(clone[k]) == render(src[schema.AttrRF]):
			// A clone's vu is at most its rf (docs/decisions.md P25).
		case k == schema.AttrVU && render(clone[k]) == render(clone[schema.AttrRecheck]):
			// ... and at most its recheck deadline (docs/design.md §8).
		default:
			if render(clone[k]) != render(v) {
				return fmt.Sprintf("%s = %s, source %s", k, render(clone[k]), render(v))
			}
		}
	}
	for k := range clone {
		if _, ok := src[k]; ok {
			continue
		}
		if k == schema.AttrPK || k == schema.AttrSK || strings.HasPrefix(k, "GSI") || k == schema.AttrShardCount {
			continue
		}
		if (k == schema.AttrVU && (render(clone[k]) == render(src[schema.AttrRF]) || render(clone[k]) == render(clone[schema.AttrRecheck]))) ||
			quotaGrant(k) || k == schema.AttrRecheck {
			continue
		}
		return k + " added"
	}
	return ""
}

// recheckDiff explains how a clone the maintainer writes fails the rule
// of docs/design.md §8: it carries a recheck deadline (its limits are
// shard 0's as the record shows them), and its vu never passes it.
func recheckDiff(clone item) string {
	recheck, ok := clone[schema.AttrRecheck].(*types.AttributeValueMemberN)
	if !ok {
		return "no recheck deadline"
	}
	if vu, ok := clone[schema.AttrVU].(*types.AttributeValueMemberN); !ok || numText(vu.Value) > numText(recheck.Value) {
		return fmt.Sprintf("vu %s past the recheck deadline %s", render(clone[schema.AttrVU]), recheck.Value)
	}
	return ""
}

// numText reads a number's text, for a comparison.
func numText(s string) int64 {
	n, _ := strconv.ParseInt(s, 10, 64)
	return n
}

// checkAliases fails unless the expressions use exactly the defined aliases.
func checkAliases(t testing.TB, expr string, names map[string]string, values map[string]types.AttributeValue) {
	t.Helper()
	used := map[string]bool{}
	for _, a := range aliasRE.FindAllString(expr, -1) {
		used[a] = true
		if a[0] == '#' {
			if _, ok := names[a]; !ok {
				t.Errorf("%q: name %s undefined", expr, a)
			}
		} else if _, ok := values[a]; !ok {
			t.Errorf("%q: value %s undefined", expr, a)
		}
	}
	for a := range names {
		if !used[a] {
			t.Errorf("%q: name %s unused", expr, a)
		}
	}
	for a := range values {
		if !used[a] {
			t.Errorf("%q: value %s unused", expr, a)
		}
	}
}

func numOf(t testing.TB, v types.AttributeValue) int64 {
	t.Helper()
	n, ok := v.(*types.AttributeValueMemberN)
	if !ok {
		t.Fatalf("not an N: %s", render(v))
	}
	x, err := strconv.ParseInt(n.Value, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return x
}
