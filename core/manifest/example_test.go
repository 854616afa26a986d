package manifest_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/zae-limiter/zae-limiter-go/core/config"
	"github.com/zae-limiter/zae-limiter-go/core/manifest"
)

// A manifest file declares a namespace's limits. Parse reads it; Targets
// lists what an apply of it manages, in the order it writes them, and
// Hash is what the provisioner records once it is applied.
func ExampleParse() {
	m, err := manifest.Parse([]byte(`
namespace: tenant-alpha
system:
  limits:
    rpm: {capacity: 1000}
resources:
  gpt-4:
    limits:
      rpm: {capacity: 100}                                  # 100 a minute
      tpm: {capacity: 20000, refill_amount: 10000, soft: true}
  gpt-3.5: {disabled: true}
entities:
  api-key-1:
    resources:
      gpt-3.5: {disabled: false}                            # a carve-out
`))
	if err != nil {
		panic(err)
	}
	fmt.Println("namespace", m.Namespace)
	for _, t := range m.Targets() {
		c, _ := m.Desired(t)
		var what []string
		for _, l := range c.Limits {
			what = append(what, l.String())
		}
		if c.Disabled != config.AccessInherit {
			what = append(what, "disabled: "+c.Disabled.String())
		}
		fmt.Printf("%-8s %-17s %s\n", t.Kind, t, strings.Join(what, ", "))
	}
	fmt.Println("readers need", m.ReadersNeeded()) // a soft limit
	fmt.Println(m.Hash())
	// Output:
	// namespace tenant-alpha
	// system   system            rpm: 1000/60s
	// resource gpt-3.5           disabled: disabled
	// resource gpt-4             rpm: 100/60s, tpm: 10000/60s burst 20000 soft
	// entity   api-key-1/gpt-3.5 disabled: enforce
	// readers need 0.17.0
	// sha256:532776097006b3f13c6c9aa6d9cf589bcdb91928ab58f8914657d0b5794492f3
}

// CloudFormation hands a limits resource its properties in PascalCase with
// every scalar a string. FromProperties checks every field before
// anything is written and names each bad one by its path.
func ExampleFromProperties() {
	var props map[string]any
	if err := json.Unmarshal([]byte(`{
		"ServiceToken": "arn:aws:lambda:eu-west-1:123456789012:function:my-limiter-provisioner",
		"Namespace": "tenant-alpha",
		"Resources": {
			"gpt-4": {"Disable": "true", "Limits": {
				"rpm": {"Capacity": "100", "RefillPeriod": "1.5"},
				"tpm": {"Capacity": "lots", "Soft": "yes"}
			}}
		},
		"Entities": {
			"api-key-1": {"Resources": {"gpt-4": {"Limits": {"rpm": {"RefillAmount": "10"}}}}}
		}
	}`), &props); err != nil {
		panic(err)
	}
	_, err := manifest.FromProperties(props)
	var invalid *manifest.InvalidManifestError
	if errors.As(err, &invalid) {
		for _, p := range invalid.Problems {
			fmt.Println(p)
		}
	}
	// Output:
	// Resources.gpt-4.Disable: unknown field
	// Resources.gpt-4.Limits.rpm.RefillPeriod: "1.5" is not an integer
	// Resources.gpt-4.Limits.tpm.Capacity: "lots" is not an integer
	// Resources.gpt-4.Limits.tpm.Soft: "yes" is not a boolean (true or false)
	// Entities.api-key-1.Resources.gpt-4.Limits.rpm.Capacity: is required
}
