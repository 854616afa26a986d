package manifest_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/zae-limiter/zae-limiter-go/core/manifest"
)

// FuzzParse: any bytes give a manifest or an *InvalidManifestError, never a
// panic; a manifest that parses hashes, and re-parses from its canonical
// JSON to the same hash.
func FuzzParse(f *testing.F) {
	f.Add([]byte("namespace: n\nresources: {r: {limits: {l: {capacity: 1}}, disabled: bypass}}"))
	f.Add([]byte(`{"namespace": "n", "entities": {"u": {"resources": {"_default_": {"cascade": "true"}}}}}`))
	f.Add([]byte("namespace: n\nsystem: {limits: {a: {capacity: '5', refill_period: ''}}}"))
	f.Add([]byte("&a [*a]"))
	f.Add([]byte("namespace: n\nresources: {r: {limits: {l: {capacity: 10, schedule: [{cron: '* 9-17 * * MON-FRI', tz: Europe/Paris, scale: 0.3333}, {cron: '*/15 * 1 JAN *', tz: Europe/Paris, capacity: 4, refill_period_seconds: 30}]}}}}"))
	f.Add([]byte("namespace: n\nresources: {r: {limits: {q: {capacity: 100, refill_amount: 0, reset_schedule: [{cron: '0 0 1 JAN,APR *', tz: Asia/Tokyo}, {cron: '0 12 * * SUN', tz: Asia/Tokyo}]}}}}"))
	f.Add([]byte("namespace: n\nsystem: {limits: {q: {capacity: 5, refill_amount: '0', refill_period: 60, schedule: [{cron: '* 9-17 * * 1-5', scale: 2}], reset_schedule: [{cron: '0 0 * * *', scale: 2}, {cron: '0 0 30 2 *'}]}, d: {capacity: 1, reset_after: 60}}}}"))
	f.Add([]byte("namespace: n\nentities: {u: {resources: {r: {limits: {s: {capacity: 10000, refill_amount: 0, reset_after_seconds: 18000, soft: true, schedule: [{cron: '* 0-6 * * *', scale: 0.5}]}}}}}}"))
	f.Add([]byte("namespace: n\nsystem: {limits: {s: {capacity: 1, refill_amount: '0', reset_after_seconds: '0', reset_schedule: [{cron: '0 0 * * *'}]}, t: {capacity: 1, reset_after_seconds: -1}}}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := manifest.Parse(data)
		if err != nil {
			var inv *manifest.InvalidManifestError
			if !errors.As(err, &inv) || len(inv.Problems) == 0 {
				t.Fatalf("untyped error %T %v", err, err)
			}
			return
		}
		again, err := manifest.Parse(manifest.PythonJSON(m.Canonical()))
		if err != nil {
			t.Fatalf("canonical form does not parse: %v\n%s", err, manifest.PythonJSON(m.Canonical()))
		}
		if again.Hash() != m.Hash() {
			t.Fatal("hash changed through the canonical form")
		}
		props, err := manifest.FromProperties(m.Properties())
		if err != nil {
			t.Fatalf("Properties does not decode: %v", err)
		}
		if !reflect.DeepEqual(props, m) {
			t.Fatalf("through Properties: %+v\nwant %+v", props, m)
		}
	})
}

// FuzzFromProperties: CloudFormation properties (any JSON object) decode or
// fail with every problem typed; the coercion is idempotent: a decoded
// manifest's canonical document decodes to the same manifest.
func FuzzFromProperties(f *testing.F) {
	f.Add([]byte(`{"Namespace":"n","Resources":{"r":{"Disabled":"bypass","Limits":{"l":{"Capacity":"5","Soft":"TRUE"}}}}}`))
	f.Add([]byte(`{"Entities":{"u":{"Resources":{"_default_":{"Cascade":"false","Limits":{"x":{"Burst":"3","RefillPeriod":""}}}}}}}`))
	f.Add([]byte(`{"System":{"OnUnavailable":"allow","Limits":{"l":{"Capacity":"1e3"}}}}`))
	f.Add([]byte(`{"Resources":{"r":{"Limits":{"l":{"Capacity":"10","Schedule":[{"Cron":"* 9-17 * * 1-5","Tz":"America/New_York","Scale":"0.5"},{"Cron":"0 0 * * SUN","Tz":"America/New_York","RefillAmount":"2"}]}}}}}`))
	f.Add([]byte(`{"Resources":{"r":{"Limits":{"q":{"Capacity":"1000","RefillAmount":"0","ResetSchedule":[{"Cron":"0 0 * * *","Tz":"Europe/Paris"}]},"m":{"Capacity":"5","RefillAmount":"0","RefillPeriod":"","ResetSchedule":[{"Cron":"0 0 1 * *","Tz":"Europe/Paris"}],"Schedule":[{"Cron":"* 9-17 * * MON-FRI","Tz":"Europe/Paris","Scale":"0.5"}]}}}}}`))
	f.Add([]byte(`{"System":{"Limits":{"q":{"Capacity":"1","ResetSchedule":[{"Cron":"0 0 L * *","Capacity":"2"}],"ResetAfter":"60"}}}}`))
	f.Add([]byte(`{"Resources":{"r":{"Limits":{"s":{"Capacity":"10000","RefillAmount":"0","RefillPeriod":"1","ResetAfterSeconds":"18000"}}}}}`))
	f.Add([]byte(`{"Resources":{"r":{"Limits":{"s":{"Capacity":"1","RefillAmount":"0","ResetAfterSeconds":"1.5","reset_after_seconds":"2"}}}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var props map[string]any
		if json.Unmarshal(data, &props) != nil {
			return
		}
		m, err := manifest.FromProperties(props)
		if err != nil {
			var inv *manifest.InvalidManifestError
			if !errors.As(err, &inv) || len(inv.Problems) == 0 {
				t.Fatalf("untyped error %T %v", err, err)
			}
			return
		}
		again, err := manifest.FromDocument(m.Canonical())
		if err != nil {
			t.Fatalf("canonical form refused: %v", err)
		}
		if again.Hash() != m.Hash() {
			t.Fatal("coercion is not idempotent")
		}
	})
}
