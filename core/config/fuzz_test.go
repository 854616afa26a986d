package config_test

import (
	"strconv"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/config"
)

// fuzzNames are attribute-name pieces the builder combines, so that random
// bytes hit the shapes the decoder cares about far more often than raw
// strings would.
var fuzzNames = [...]string{
	"l_", "w_", "p_", "rpm", "a.b", "x-y", "t_p_m", "wcu", "ttl", "_",
	"_cp", "_ra", "_rp", "_soft", "_sched", "_rsched", "_rsa", "_bx",
	"disabled", "cascade", "on_unavailable", "inherit_limits", "exclude_limits", "patch_limits", "sched_tz", "#",
}

var fuzzNumbers = [...]string{
	"0", "1", "-1", "60", "1000", "9223372036854775807", "9223372036854775808", "9223372036854775",
	"9223372036854776", "9223372036", "9223372037", "1.5", "6E1", "", " 1", "+1", "007",
}

// buildItem turns fuzz bytes into an attribute map: each entry takes a
// name of up to three pieces (or raw bytes), a type and a value.
func buildItem(data []byte) map[string]types.AttributeValue {
	item := make(map[string]types.AttributeValue)
	next := func() (byte, bool) {
		if len(data) == 0 {
			return 0, false
		}
		c := data[0]
		data = data[1:]
		return c, true
	}
	for len(data) > 0 {
		c, _ := next()
		var name string
		switch c % 5 {
		case 0: // raw name
			l, _ := next()
			l %= 12
			if int(l) > len(data) {
				l = byte(len(data))
			}
			name = string(data[:l])
			data = data[l:]
		default:
			for range 1 + int(c%5)%3 {
				p, _ := next()
				name += fuzzNames[int(p)%len(fuzzNames)]
			}
			if c%5 == 4 {
				name = "l_" + name
			}
		}
		t, _ := next()
		v, _ := next()
		var av types.AttributeValue
		switch t % 7 {
		case 0, 1, 2:
			av = &types.AttributeValueMemberN{Value: fuzzNumbers[int(v)%len(fuzzNumbers)]}
		case 3:
			av = &types.AttributeValueMemberN{Value: strconv.Itoa(int(int8(v)))}
		case 4:
			av = &types.AttributeValueMemberBOOL{Value: v%2 == 0}
		case 5:
			av = &types.AttributeValueMemberS{Value: [...]string{"allow", "block", "bypass", "", "x"}[int(v)%5]}
		default:
			av = &types.AttributeValueMemberNULL{Value: true}
		}
		item[name] = av
	}
	return item
}

// FuzzDecodeConfigItem: decoding any attribute map never panics, every
// limit it returns validates and appears once, limits come sorted, an
// unsupported item yields no limits, and the access fields are in range.
// Session quotas are among the limits decoded (docs/decisions.md P55).
func FuzzDecodeConfigItem(f *testing.F) {
	rpm := []byte{2, 0, 3, 10, 0, 3, 2, 0, 3, 11, 0, 3, 2, 0, 3, 12, 0, 3} // l_rpm_cp/ra/rp = 60
	f.Add(rpm)
	f.Add(append(append([]byte{}, rpm...), 2, 0, 3, 13, 4, 0))              // + l_rpm_soft true
	f.Add(append(append([]byte{}, rpm...), 2, 1, 3, 10, 0, 3))              // + w_rpm_cp
	f.Add(append(append([]byte{}, rpm...), 4, 4, 10, 0, 4, 4, 4, 11, 0, 4)) // + l_a.b_cp, l_a.b_ra
	f.Add(append(append([]byte{}, rpm...), 3, 18, 5, 2, 3, 19, 4, 0))       // + disabled "bypass", cascade true
	f.Add([]byte{0, 5, 'l', '_', 'a', '_', 'c', 1, 1})
	session := []byte{2, 1, 3, 10, 0, 3, 2, 1, 3, 11, 0, 0, 2, 1, 3, 12, 0, 1, 2, 1, 3, 16, 0, 3} // w_rpm_cp 60, ra 0, rp 1, rsa 60
	f.Add(session)
	f.Add(append(append([]byte{}, session...), rpm...))                 // + l_rpm: both prefixes
	f.Add(append(append([]byte{}, session...), 2, 1, 3, 13, 4, 0))      // + w_rpm_soft true
	f.Add(append(append([]byte{}, session[:18]...), 2, 0, 3, 16, 0, 3)) // w_rpm without rsa, l_rpm_rsa
	f.Fuzz(func(t *testing.T, data []byte) {
		item := buildItem(data)
		for _, level := range []config.Level{config.LevelEntity, config.LevelEntityDefault, config.LevelResource, config.LevelSystem} {
			d, err := config.DecodeConfigItem(level, item)
			if err != nil {
				if !config.IsUnsupported(err) {
					t.Fatalf("unexpected error type %T: %v", err, err)
				}
				if d.Limits != nil {
					t.Fatalf("unsupported item with limits %v", d.Limits)
				}
			}
			seen := map[string]bool{}
			for i, l := range d.Limits {
				if err := l.Validate(); err != nil {
					t.Fatalf("decoded limit %+v does not validate: %v (item %v)", l, err, item)
				}
				if seen[l.Name] {
					t.Fatalf("limit %q decoded twice", l.Name)
				}
				seen[l.Name] = true
				if i > 0 && d.Limits[i-1].Name >= l.Name {
					t.Fatalf("limits not sorted: %v", d.Limits)
				}
			}
			if d.Disabled > config.AccessBypass || d.Cascade > config.CascadeOff {
				t.Fatalf("access out of range: %+v", d.Config)
			}
			if d.OnUnavailable != "" && (level != config.LevelSystem || !d.OnUnavailable.Valid()) {
				t.Fatalf("on_unavailable %q at level %v", d.OnUnavailable, level)
			}
			if level == config.LevelSystem && (d.Disabled != config.AccessInherit || d.Cascade != config.CascadeUnset) {
				t.Fatalf("system level decoded access %+v", d.Config)
			}
		}
	})
}
