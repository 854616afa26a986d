package handler_test

import (
	"slices"
	"testing"
	"time"

	"github.com/zae-limiter/zae-limiter-go/core/aggregator"
	"github.com/zae-limiter/zae-limiter-go/functions/aggregator/handler"
)

// TestSettingsFromEnv: defaults and validation of the Lambda environment.
func TestSettingsFromEnv(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	s, err := handler.SettingsFromEnv(env(map[string]string{"TABLE_NAME": "t"}))
	c := s.Config
	if err != nil || c.TableName != "t" || !slices.Equal(c.Windows, []aggregator.Window{aggregator.Hourly, aggregator.Daily}) || c.SnapshotTTL != 90*24*time.Hour {
		t.Fatalf("%+v %v", c, err)
	}
	s, err = handler.SettingsFromEnv(env(map[string]string{"TABLE_NAME": "t", "SNAPSHOT_WINDOWS": "monthly, hourly", "SNAPSHOT_TTL_DAYS": "7"}))
	c = s.Config
	if err != nil || !slices.Equal(c.Windows, []aggregator.Window{aggregator.Monthly, aggregator.Hourly}) || c.SnapshotTTL != 7*24*time.Hour {
		t.Fatalf("%+v %v", c, err)
	}
	for _, bad := range []map[string]string{{}, {"TABLE_NAME": "t", "SNAPSHOT_WINDOWS": "weekly"}, {"TABLE_NAME": "t", "SNAPSHOT_TTL_DAYS": "0"}} {
		if _, err := handler.SettingsFromEnv(env(bad)); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}
