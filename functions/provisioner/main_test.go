package main

import (
	"strings"
	"testing"
	"time"

	"github.com/zae-limiter/zae-limiter-go/core/config"
)

func TestSettingsFrom(t *testing.T) {
	env := func(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }
	s, err := settingsFrom(env(map[string]string{envTable: "zae-limiter"}))
	if err != nil || s.table != "zae-limiter" || s.stampTTL != 60*time.Second || s.lambdaVersion != config.BuildVersion {
		t.Fatalf("%+v %v", s, err)
	}
	s, err = settingsFrom(env(map[string]string{envTable: "t", envStampTTL: "30", envLambdaVersion: "0.16.1"}))
	if err != nil || s.stampTTL != 30*time.Second || s.lambdaVersion != "0.16.1" {
		t.Fatalf("%+v %v", s, err)
	}
	for _, bad := range []map[string]string{
		{},
		{envTable: "has space"},
		{envTable: "t", envStampTTL: "0"},
		{envTable: "t", envStampTTL: "1.5"},
	} {
		if _, err := settingsFrom(env(bad)); err == nil || !strings.Contains(err.Error(), "_") {
			t.Errorf("%v: %v", bad, err)
		}
	}
}
