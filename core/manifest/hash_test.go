package manifest_test

import (
	"testing"

	"github.com/zae-limiter/zae-limiter-go/core/manifest"
)

// The expected strings and hashes were produced by Python 3.11:
// json.dumps(v, sort_keys=True) and hashlib.sha256 of its UTF-8 bytes.
func TestPythonJSON(t *testing.T) {
	cases := []struct {
		v    map[string]any
		want string
	}{
		{map[string]any{"namespace": "tenant-alpha"}, `{"namespace": "tenant-alpha"}`},
		{map[string]any{"b": "é", "a": "😀", "c": "\u007f\x01\n\t\"\\/", "d": []any{1, true, false, nil}},
			`{"a": "\ud83d\ude00", "b": "\u00e9", "c": "\u007f\u0001\n\t\"\\/", "d": [1, true, false, null]}`},
	}
	for _, c := range cases {
		if got := string(manifest.PythonJSON(c.v)); got != c.want {
			t.Errorf("got  %s\nwant %s", got, c.want)
		}
	}
}

func TestHashParity(t *testing.T) {
	cases := []struct {
		doc  string
		want string
	}{
		{"namespace: tenant-alpha", "sha256:82d836d24f35fd8a4d7020e5d0769622bb05273bc1c5e55d05f61e035d207b9b"},
		// Defaults are filled in before hashing: refill_amount = capacity,
		// refill_period = 60.
		{"namespace: t\nsystem: {on_unavailable: allow, limits: {rpm: {capacity: 100}}}",
			"sha256:6e7afc4ae7bb0d89487889c0299f51a867d2a98974a57f0e7ef97d619e0ef40d"},
		{"namespace: x\nresources: {gpt-4: {limits: {tpm: {capacity: 10000, refill_amount: 5000, soft: true}}, disabled: bypass, cascade: false}}\n" +
			"entities: {k1: {resources: {_default_: {disabled: false}}}}",
			"sha256:fa81e9633fd08f4a26c588f5f977ea193d4b690963565826c016a44820d480a8"},
		// A quota: refill_period defaults to 1 s, each reset cron as stored.
		{"namespace: q\nresources: {gpt-4: {limits: {tpd: {capacity: 1000000, refill_amount: 0, reset_schedule: [{cron: '0  0 * * *', tz: America/New_York}]}}}}",
			"sha256:5df7887613e45acf6fe85fa489bbce13b539f91f360f907579e6b33caae41f89"},
	}
	for _, c := range cases {
		m, err := manifest.Parse([]byte(c.doc))
		if err != nil {
			t.Fatal(err)
		}
		if got := m.Hash(); got != c.want {
			t.Errorf("%q: %s want %s (%s)", c.doc, got, c.want, manifest.PythonJSON(m.Canonical()))
		}
	}
}
