package handler

import (
	"fmt"
	"strconv"
	"time"

	"github.com/zae-limiter/zae-limiter-go/core/config"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
	"github.com/zae-limiter/zae-limiter-go/functions/provisioner/customresource"
)

// The function's environment (docs/design.md §12, §13).
const (
	envTable         = "TABLE_NAME"
	envStampTTL      = "ZAEL_STAMP_TTL_SECONDS"
	envLambdaVersion = "ZAEL_LAMBDA_VERSION"
)

// Settings are the function's configuration: what SettingsFromEnv reads
// from the environment, and what the wiring or a test adds.
type Settings struct {
	// Table is the stack's table (TABLE_NAME); a manifest or invocation
	// may name another.
	Table string
	// StampTTL bounds bypass and soft stamp deadlines
	// (ZAEL_STAMP_TTL_SECONDS, default 60 s).
	StampTTL time.Duration
	// LambdaVersion is the lambda_version stamped when the version
	// stamp's LambdaVersion property is absent (ZAEL_LAMBDA_VERSION,
	// default config.BuildVersion). The bound is the build's own version:
	// a stamp, or this setting, above config.BuildVersion is refused.
	LambdaVersion string
	// Clock is the wall clock (default time.Now).
	Clock func() time.Time
	// Respond tunes the CloudFormation answers.
	Respond customresource.Options
}

// SettingsFromEnv reads the function's settings from its environment
// through getenv (os.Getenv in the Lambda).
func SettingsFromEnv(getenv func(string) string) (Settings, error) {
	s := Settings{Table: getenv(envTable), StampTTL: 60 * time.Second, LambdaVersion: config.BuildVersion}
	if err := schema.ValidateStackName(s.Table); err != nil {
		return Settings{}, fmt.Errorf("%s: %w", envTable, err)
	}
	if v := getenv(envStampTTL); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 3600 {
			return Settings{}, fmt.Errorf("%s: %q is not a whole number of seconds between 1 and 3600", envStampTTL, v)
		}
		s.StampTTL = time.Duration(n) * time.Second
	}
	if v := getenv(envLambdaVersion); v != "" {
		s.LambdaVersion = v
	}
	return s, nil
}
