package schedule

import (
	"errors"
	"testing"
	"time"
)

func TestZone(t *testing.T) {
	if loc, err := Zone(""); err != nil || loc != time.UTC {
		t.Errorf(`Zone("") = %v, %v`, loc, err)
	}
	if loc, err := Zone("America/New_York"); err != nil || loc.String() != "America/New_York" {
		t.Errorf("Zone(New York) = %v, %v", loc, err)
	}
	var ze *ZoneError
	if _, err := Zone("Mars/Olympus_Mons"); !errors.As(err, &ze) || ze.Name != "Mars/Olympus_Mons" {
		t.Errorf("Zone(unknown) = %v", err)
	}
}

func TestEntryValidate(t *testing.T) {
	for _, tc := range []struct {
		e  Entry
		ok bool
	}{
		{entry("* 9-17 * * 1-5", 500, 0, 0, 0), true},
		{entry("* 9-17 * * 1-5", 0, 10, 0, 0), true},
		{entry("* 9-17 * * 1-5", 0, 0, 0, 30), true},
		{entry("* 9-17 * * 1-5", 500, 10, 0, 0), false},
		{entry("* 9-17 * * 1-5", 0, 0, 0, 0), false},
		{entry("* 9-17 * * 1-5", -1, 0, 0, 0), false},
		{entry("* 9-17 * * 1-5", MaxScalePerMille+1, 0, 0, 0), false},
		{entry("* 9-17 * * 1-5", 0, MaxTokens+1, 0, 0), false},
		{entry("* 9-17 * * 1-5", 0, 0, -5, 0), false},
		{entry("* 9-17 * * 1-5", 0, 0, 0, MaxPeriodSeconds+1), false},
		{entry("0 0 30 2 *", 500, 0, 0, 0), false},
	} {
		err := tc.e.Validate()
		var ee *EntryError
		if tc.ok != (err == nil) || (err != nil && !errors.As(err, &ee)) {
			t.Errorf("Validate(%+v) = %v, want ok %v", tc.e, err, tc.ok)
		}
	}
	if err := (Resets{MustParseCron("0 0 30 2 *")}).Validate(); err == nil {
		t.Error("a reset that never fires validated")
	}
	if err := (Resets{MustParseCron("0 0 1 * *")}).Validate(); err != nil {
		t.Error(err)
	}
}

func TestDecodeIn(t *testing.T) {
	s, loc, err := DecodeIn("h9-17w1-5s500", "America/New_York")
	if err != nil || len(s) != 1 || loc.String() != "America/New_York" {
		t.Errorf("DecodeIn = %v, %v, %v", s, loc, err)
	}
	for _, text := range []string{"", None} {
		if s, loc, err := DecodeIn(text, "Mars/Olympus_Mons"); s != nil || loc != time.UTC || err != nil {
			t.Errorf("DecodeIn(%q) = %v, %v, %v", text, s, loc, err)
		}
	}
	var ee *EncodingError
	if _, _, err := DecodeIn("h99s5", ""); !errors.As(err, &ee) {
		t.Errorf("undecodable: %v", err)
	}
	var ze *ZoneError
	if _, _, err := DecodeIn("s500", "Mars/Olympus_Mons"); !errors.As(err, &ze) {
		t.Errorf("unknown zone: %v", err)
	}
}
