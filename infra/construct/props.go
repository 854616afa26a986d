package construct

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"

	"github.com/zae-limiter/zae-limiter-go/core/config"
	"github.com/zae-limiter/zae-limiter-go/core/version"
	aggregatorhandler "github.com/zae-limiter/zae-limiter-go/functions/aggregator/handler"
)

// Props are the stack's settings (docs/design.md §13). The zero value of
// every field is its default, so Props{} deploys what `sam deploy` deploys
// with every parameter at its default, with Lambdas the construct builds.
// Each field names the template.yaml parameter it mirrors; a switch whose
// parameter defaults to true is a Disable… field here.
type Props struct {
	// GSI2ProjectAll projects every attribute into GSI2 (parameter
	// GSI2Projection=ALL), for tables shared with Python clients, which
	// read bucket attributes from GSI2. Default KEYS_ONLY (docs/design.md §2).
	GSI2ProjectAll bool
	// PITRRecoveryPeriodDays is the point-in-time recovery period, 1–35;
	// 0 leaves AWS's default (35).
	PITRRecoveryPeriodDays int
	// EnableDeletionProtection turns the table's deletion protection on.
	EnableDeletionProtection bool
	// RemovalPolicy of the table; nil keeps it (RETAIN) when the stack is
	// deleted. CDK only: template.yaml always retains.
	RemovalPolicy awscdk.RemovalPolicy

	// DisableAggregator leaves out the aggregator, its dead-letter queue,
	// log group, role, mapping, alarms and dashboard (EnableAggregator=false).
	DisableAggregator bool
	// SnapshotWindows is the aggregator's SNAPSHOT_WINDOWS ("" = "hourly,daily";
	// hourly, daily and monthly are allowed).
	SnapshotWindows string
	// SnapshotRetentionDays is SNAPSHOT_TTL_DAYS, 1–3650 (0 = 90).
	SnapshotRetentionDays int
	// LambdaMemorySize of the aggregator in MB, 128–3008 (0 = 256).
	LambdaMemorySize int
	// LambdaTimeoutSeconds of the aggregator, 1–900 (0 = 60).
	LambdaTimeoutSeconds int
	// LambdaDurationThresholdMs is the aggregator duration alarm's
	// threshold (0 = 80 % of the timeout: 48000 at the default timeout).
	LambdaDurationThresholdMs int
	// EnableTracing turns X-Ray on for the aggregator (Active instead of
	// PassThrough) and grants it the trace writes.
	EnableTracing bool
	// AggregatorRoleArn is an existing role for the aggregator; the stack
	// then creates none, and deploys the aggregator even with DisableIAM.
	AggregatorRoleArn string

	// DisableProvisioner leaves out the provisioner, its log group, role,
	// alarm and the version stamp (EnableProvisioner=false). Without the
	// stamp, gated features fail closed (docs/design.md §13).
	DisableProvisioner bool
	// StampTTLSeconds is the provisioner's ZAEL_STAMP_TTL_SECONDS (0 = 60).
	StampTTLSeconds int
	// LambdaVersion is the version the stamp writes as lambda_version
	// ("" = the version of the code deployed: config.BuildVersion as the
	// bundled source declares it when the construct builds the Lambdas,
	// else config.BuildVersion of this build; docs/decisions.md P52).
	LambdaVersion string
	// SchemaVersion is the version the stamp writes as schema_version
	// ("" = config.SchemaVersion).
	SchemaVersion string

	// BuildDir holds aggregator.zip and provisioner.zip as `make lambdas`
	// builds them. A relative path is relative to the working directory of
	// the synth. "" (and no code below): the construct builds the Lambdas
	// itself at synth, with the go command, from the source of ModulePath
	// Go resolves in the synth's working directory (docs/design.md §13).
	BuildDir string
	// AggregatorCode and ProvisionerCode override the zips in BuildDir or
	// the code the construct would build.
	AggregatorCode, ProvisionerCode awslambda.Code

	// DisableAlarms leaves out every alarm (EnableAlarms=false).
	DisableAlarms bool
	// AlarmSNSTopicArn is the alarms' action; "" for none.
	AlarmSNSTopicArn string
	// DisableDashboard leaves out the CloudWatch dashboard (EnableDashboard=false).
	DisableDashboard bool
	// LogRetentionDays of both log groups; one of CloudWatch's allowed
	// values (0 = 30).
	LogRetentionDays int

	// DisableIAM leaves out every policy and role, and with them the
	// provisioner; the aggregator then needs AggregatorRoleArn (EnableIAM=false).
	DisableIAM bool
	// EnableIAMRoles adds the app, admin and read-only roles, trusted by
	// the account (default off: the policies are attached to the callers'
	// own roles).
	EnableIAMRoles bool
	// PermissionBoundary is a managed policy name or ARN every role the
	// stack creates carries as its permissions boundary; "" for none.
	PermissionBoundary string
	// RoleNameFormat wraps every default role name: "{}" stands for it
	// ("PowerUserPB-{}" names the aggregator's role PowerUserPB-{stack}-aggr).
	RoleNameFormat string
	// Role names ("" = {stack}-aggr, -prov, -app, -admin, -read, each
	// through RoleNameFormat).
	AggregatorRoleName, ProvisionerRoleName, AppRoleName, AdminRoleName, ReadOnlyRoleName string
	// Managed policy names ("" = {stack}-acq, -full, -read, -ns-acq,
	// -ns-full, -ns-read).
	AcquireOnlyPolicyName, FullAccessPolicyName, ReadOnlyPolicyName                        string
	NamespaceAcquirePolicyName, NamespaceFullAccessPolicyName, NamespaceReadOnlyPolicyName string

	// Limits, when set, declares a limits manifest as a Custom::ZaeLimiterLimits
	// resource applied by the provisioner. CDK only.
	Limits *Limits
}

// Limits is a limits manifest (the provisioner's YAML, docs/design.md §13)
// deployed with the stack.
type Limits struct {
	// ManifestFile is the manifest's path.
	ManifestFile string
	// RetainOnDelete keeps the limits in the table when the resource is
	// deleted; by default a delete removes what the manifest manages.
	RetainOnDelete bool
}

// Defaults of the zero Props (docs/design.md §13).
const (
	DefaultSnapshotWindows       = "hourly,daily"
	DefaultSnapshotRetentionDays = 90
	DefaultLambdaMemorySize      = 256
	DefaultLambdaTimeoutSeconds  = 60
	DefaultLogRetentionDays      = 30
	DefaultStampTTLSeconds       = 60
	// ProvisionerMemorySize and ProvisionerTimeoutSeconds are fixed.
	ProvisionerMemorySize     = 256
	ProvisionerTimeoutSeconds = 300
)

// logRetentionValues are the retention periods CloudWatch Logs accepts.
func logRetentionValues() []int {
	return []int{1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653}
}

var (
	stackNamePattern = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9-]*$`)
	// roleNameFormatPattern: exactly one "{}", as template.yaml requires.
	roleNameFormatPattern = regexp.MustCompile(`^[^{}]*\{\}[^{}]*$`)
)

// MaxStackNameLength bounds the stack name, from which every resource name
// derives (the longest, the provisioner's role with its suffix, must fit IAM's 64).
const MaxStackNameLength = 55

// ValidateStackName checks a stack name the stack can be deployed under.
func ValidateStackName(name string) error {
	if len(name) > MaxStackNameLength || !stackNamePattern.MatchString(name) {
		return fmt.Errorf("construct: stack name %q: want %s and at most %d characters", name, stackNamePattern, MaxStackNameLength)
	}
	return nil
}

// settings are Props with every default filled in and every value checked.
type settings struct {
	Props
	aggregator, iam, externalRole, aggregatorRole, aggregatorLambda     bool
	provisioner, iamRoles, alarms, aggregatorAlarms, dashboard, tracing bool
	// bundleFailure is where the code the construct builds reports a build
	// that failed (nil when nothing is built here).
	bundleFailure *bundleFailure
}

func resolve(p Props) (settings, error) {
	s := settings{Props: p}
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	if s.SnapshotWindows == "" {
		s.SnapshotWindows = DefaultSnapshotWindows
	}
	def(&s.SnapshotRetentionDays, DefaultSnapshotRetentionDays)
	def(&s.LambdaMemorySize, DefaultLambdaMemorySize)
	def(&s.LambdaTimeoutSeconds, DefaultLambdaTimeoutSeconds)
	def(&s.LambdaDurationThresholdMs, s.LambdaTimeoutSeconds*800)
	def(&s.LogRetentionDays, DefaultLogRetentionDays)
	def(&s.StampTTLSeconds, DefaultStampTTLSeconds)
	if s.SchemaVersion == "" {
		s.SchemaVersion = config.SchemaVersion
	}
	var errs []error
	inRange := func(name string, v, lo, hi int) {
		if v < lo || v > hi {
			errs = append(errs, fmt.Errorf("%s %d: want %d–%d", name, v, lo, hi))
		}
	}
	inRange("SnapshotRetentionDays", s.SnapshotRetentionDays, 1, 3650)
	inRange("LambdaMemorySize", s.LambdaMemorySize, 128, 3008)
	inRange("LambdaTimeoutSeconds", s.LambdaTimeoutSeconds, 1, 900)
	inRange("LambdaDurationThresholdMs", s.LambdaDurationThresholdMs, 1, 900000)
	inRange("StampTTLSeconds", s.StampTTLSeconds, 1, 3600) // the provisioner refuses more at start-up
	if s.PITRRecoveryPeriodDays != 0 {
		inRange("PITRRecoveryPeriodDays", s.PITRRecoveryPeriodDays, 1, 35)
	}
	if f := s.RoleNameFormat; f != "" && !roleNameFormatPattern.MatchString(f) {
		errs = append(errs, fmt.Errorf("RoleNameFormat %q: want exactly one {} and no other braces", f))
	}
	allowed := false
	for _, d := range logRetentionValues() {
		allowed = allowed || d == s.LogRetentionDays
	}
	if !allowed {
		errs = append(errs, fmt.Errorf("LogRetentionDays %d: want one of %v", s.LogRetentionDays, logRetentionValues()))
	}
	// The aggregator's own parser judges its environment, so the stack never
	// deploys one the function refuses at start-up.
	if _, err := aggregatorhandler.SettingsFromEnv(func(k string) string { return aggregatorEnv(s, "table")[k] }); err != nil {
		errs = append(errs, err)
	}

	s.aggregator = !s.DisableAggregator
	s.iam = !s.DisableIAM
	s.externalRole = s.AggregatorRoleArn != ""
	s.aggregatorRole = s.aggregator && s.iam && !s.externalRole
	s.aggregatorLambda = s.aggregator && (s.iam || s.externalRole)
	s.provisioner = !s.DisableProvisioner && s.iam
	s.iamRoles = s.EnableIAMRoles && s.iam
	s.alarms = !s.DisableAlarms
	s.aggregatorAlarms = s.aggregatorLambda && s.alarms
	s.dashboard = s.aggregatorLambda && !s.DisableDashboard
	s.tracing = s.aggregatorLambda && s.EnableTracing

	codeErr := s.resolveCode()
	errs = append(errs, codeErr)
	versions := map[string]string{"SchemaVersion": s.SchemaVersion}
	if s.LambdaVersion != "" || codeErr == nil { // "" when the source to read it from was not found
		versions["LambdaVersion"] = s.LambdaVersion
	}
	for name, v := range versions {
		if _, err := version.Parse(v); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
		}
	}
	if s.Limits != nil && !s.provisioner {
		errs = append(errs, errors.New("Limits need the provisioner (DisableProvisioner and DisableIAM off)"))
	}
	if err := errors.Join(errs...); err != nil {
		return settings{}, fmt.Errorf("construct: %w", err)
	}
	return s, nil
}

// resolveCode fills in the code of each function deployed without one:
// the zip in BuildDir, or, without BuildDir, the code the construct builds
// from the root module's source; and the default LambdaVersion, the
// version of that source when it is built here (docs/decisions.md P52).
func (s *settings) resolveCode() error {
	type missing struct {
		function string
		code     *awslambda.Code
	}
	var need []missing
	if s.aggregatorLambda && s.AggregatorCode == nil {
		need = append(need, missing{"aggregator", &s.AggregatorCode})
	}
	if s.provisioner && s.ProvisionerCode == nil {
		need = append(need, missing{"provisioner", &s.ProvisionerCode})
	}
	lambdaVersion := config.BuildVersion
	var errs []error
	switch {
	case len(need) == 0:
	case s.BuildDir != "":
		for _, m := range need {
			var err error
			*m.code, err = buildZip(s.BuildDir, m.function)
			errs = append(errs, err)
		}
	default:
		src, err := locateSource(context.Background())
		if err != nil {
			return err
		}
		s.bundleFailure = &bundleFailure{}
		for _, m := range need {
			*m.code = bundledCode(src, m.function, s.bundleFailure)
		}
		lambdaVersion = src.BuildVersion
	}
	if s.LambdaVersion == "" {
		s.LambdaVersion = lambdaVersion
	}
	return errors.Join(errs...)
}

// buildZip is the function's zip in dir as `make lambdas` builds it.
func buildZip(dir, function string) (awslambda.Code, error) {
	path := filepath.Join(dir, function+".zip")
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("%s code: %w (run `make lambdas`)", function, err)
	}
	return awslambda.Code_FromAsset(&path, nil), nil
}

// aggregatorEnv is the aggregator's environment: the variables its
// handler reads (aggregatorhandler.SettingsFromEnv, docs/design.md §13).
func aggregatorEnv(s settings, table string) map[string]string {
	return map[string]string{
		"TABLE_NAME":        table,
		"SNAPSHOT_WINDOWS":  s.SnapshotWindows,
		"SNAPSHOT_TTL_DAYS": strconv.Itoa(s.SnapshotRetentionDays),
	}
}

// provisionerEnv is the provisioner's environment (docs/design.md §13).
func provisionerEnv(s settings, table string) map[string]string {
	return map[string]string{
		"TABLE_NAME":             table,
		"ZAEL_STAMP_TTL_SECONDS": strconv.Itoa(s.StampTTLSeconds),
		"ZAEL_LAMBDA_VERSION":    s.LambdaVersion,
	}
}
