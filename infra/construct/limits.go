package construct

import (
	"fmt"
	"os"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"

	"github.com/zae-limiter/zae-limiter-go/core/manifest"
)

// LimitsProperties turns a limits manifest file (the provisioner's YAML or
// JSON, docs/design.md §12) into the properties of a
// Custom::ZaeLimiterLimits resource: the manifest is parsed and validated
// by core/manifest, as the provisioner will, so a bad manifest fails the
// synth with every bad field named instead of failing the deployment; the
// properties are its CloudFormation form (PascalCase, every scalar a
// string, defaults written out).
func LimitsProperties(file []byte) (map[string]any, error) {
	m, err := manifest.Parse(file)
	if err != nil {
		return nil, err
	}
	return m.Properties(), nil
}

// buildLimits adds the Custom::ZaeLimiterLimits resource of props.Limits,
// applied after the version stamp; on delete it removes what the manifest
// manages, unless RetainOnDelete (docs/decisions.md P39).
func (b *builder) buildLimits() error {
	lim := b.s.Limits
	if lim == nil {
		return nil
	}
	raw, err := os.ReadFile(lim.ManifestFile)
	if err != nil {
		return fmt.Errorf("construct: limits: %w", err)
	}
	props, err := LimitsProperties(raw)
	if err != nil {
		return fmt.Errorf("construct: %s: %w", lim.ManifestFile, err)
	}
	props["TableName"] = b.table.Ref()
	removal := awscdk.RemovalPolicy_DESTROY
	if lim.RetainOnDelete {
		removal = awscdk.RemovalPolicy_RETAIN
	}
	cr := awscdk.NewCustomResource(b.scope(), jsii.String("Limits"), &awscdk.CustomResourceProps{
		ServiceToken:  b.provisioner.AttrArn(),
		ResourceType:  jsii.String(LimitsResourceType),
		Properties:    &props,
		RemovalPolicy: removal,
	})
	logicalID(cr.Node().DefaultChild().(awscdk.CfnElement), "Limits")
	cr.Node().AddDependency(b.stamp)
	return nil
}
