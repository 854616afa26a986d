package handler_test

import (
	"strings"
	"testing"
	"time"

	"github.com/zae-limiter/zae-limiter-go/core/config"
	"github.com/zae-limiter/zae-limiter-go/functions/provisioner/handler"
)

// TestSettingsFromEnv: defaults and validation of the Lambda environment.
func TestSettingsFromEnv(t *testing.T) {
	env := func(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }
	s, err := handler.SettingsFromEnv(env(map[string]string{"TABLE_NAME": "zae-limiter"}))
	if err != nil || s.Table != "zae-limiter" || s.StampTTL != 60*time.Second || s.LambdaVersion != config.BuildVersion {
		t.Fatalf("%+v %v", s, err)
	}
	s, err = handler.SettingsFromEnv(env(map[string]string{"TABLE_NAME": "t", "ZAEL_STAMP_TTL_SECONDS": "30", "ZAEL_LAMBDA_VERSION": "0.16.1"}))
	if err != nil || s.StampTTL != 30*time.Second || s.LambdaVersion != "0.16.1" {
		t.Fatalf("%+v %v", s, err)
	}
	for _, bad := range []map[string]string{
		{},
		{"TABLE_NAME": "has space"},
		{"TABLE_NAME": "t", "ZAEL_STAMP_TTL_SECONDS": "0"},
		{"TABLE_NAME": "t", "ZAEL_STAMP_TTL_SECONDS": "1.5"},
	} {
		if _, err := handler.SettingsFromEnv(env(bad)); err == nil || !strings.Contains(err.Error(), "_") {
			t.Errorf("%v: %v", bad, err)
		}
	}
}
