package cli

import (
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/zae-limiter/zae-limiter-go/cmd/zl/internal/limitspec"
	"github.com/zae-limiter/zae-limiter-go/cmd/zl/internal/output"
	"github.com/zae-limiter/zae-limiter-go/cmd/zl/internal/prompt"
	"github.com/zae-limiter/zae-limiter-go/core/config"
	"github.com/zae-limiter/zae-limiter-go/core/manifest"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
)

// UsageError is a command called wrongly: an unknown flag or command, a
// missing or extra argument, malformed input. zl exits with ExitUsage.
type UsageError struct {
	// Err says what is wrong and what to do.
	Err error
}

// Error implements error.
func (e *UsageError) Error() string { return e.Err.Error() }

// Unwrap returns the cause.
func (e *UsageError) Unwrap() error { return e.Err }

func usageErrorf(format string, args ...any) error {
	return &UsageError{Err: fmt.Errorf(format, args...)}
}

// hinted is an error with what to do about it.
type hinted struct {
	err  error
	hint string
}

func (h *hinted) Error() string { return h.err.Error() + ": " + h.hint }
func (h *hinted) Unwrap() error { return h.err }

// restated is an error said in the operator's words, its cause kept.
type restated struct {
	msg string
	err error
}

func (r *restated) Error() string { return r.msg }
func (r *restated) Unwrap() error { return r.err }

// problemList is a usage error: head, then a manifest's problems one a
// line.
func problemList(head string, problems []manifest.Problem) error {
	var b strings.Builder
	b.WriteString(head)
	for _, p := range problems {
		b.WriteString("\n  " + p.String())
	}
	return &UsageError{Err: errors.New(b.String())}
}

// withHint adds what to do to err.
func withHint(err error, format string, args ...any) error {
	return &hinted{err: err, hint: fmt.Sprintf(format, args...)}
}

// isUsage reports an error that is the caller's to fix in the command
// line or its input: exit code 2.
func isUsage(err error) bool {
	var ue *UsageError
	var me *manifest.InvalidManifestError
	var ny *prompt.NeedYesError
	var fe *output.FormatError
	var se *limitspec.SyntaxError
	return errors.As(err, &ue) || errors.As(err, &me) || errors.As(err, &ny) || errors.As(err, &fe) ||
		errors.As(err, &se) || schema.IsValidationError(err)
}

// explain adds what to do to the errors a command does not explain
// itself: a missing table, no credentials, an endpoint that does not
// answer, a manifest's problems listed one a line.
func explain(err error, a *App) error {
	var h *hinted
	var ue *UsageError
	if errors.As(err, &h) || errors.As(err, &ue) {
		return err
	}
	var me *manifest.InvalidManifestError
	if errors.As(err, &me) {
		return problemList(fmt.Sprintf("the manifest has %d problem(s); nothing was written:", len(me.Problems)), me.Problems)
	}
	var rnf *types.ResourceNotFoundException
	if errors.As(err, &rnf) {
		table := a.flags.table
		return withHint(&restated{msg: fmt.Sprintf("table %q not found%s", table, a.where()), err: err}, "pass --table or set ZAEL_TABLE (zl table create makes one)")
	}
	var mv *config.MissingVersionError
	if errors.As(err, &mv) {
		return withHint(err, "deploy the stack's version stamp, or run zl table create on a table this tool made")
	}
	var vm *config.VersionMismatchError
	if errors.As(err, &vm) {
		if vm.Gate {
			return withHint(err, "the deployed Lambdas (lambda_version %s) do not read this feature yet: deploy the stack at %s or later first", orText(vm.LambdaVersion, "none"), vm.ClientMinVersion)
		}
		return withHint(err, "this zl (%s) is older than the table allows: install a newer zl", vm.ClientVersion)
	}
	var api smithy.APIError
	if errors.As(err, &api) {
		switch api.ErrorCode() {
		case "AccessDeniedException":
			return withHint(err, "the credentials may not do this on the table: use a role with the stack's {stack}-full policy (or its admin role)")
		case "UnrecognizedClientException", "InvalidSignatureException", "ExpiredTokenException":
			return withHint(err, "the AWS credentials are not valid here: check --profile, AWS_PROFILE or AWS_ACCESS_KEY_ID, and --region")
		case "ProvisionedThroughputExceededException", "ThrottlingException", "RequestLimitExceeded":
			return withHint(err, "DynamoDB is throttling: run the command again in a moment (an apply finishes what a cut one began)")
		}
	}
	var nf *config.NamespaceNotFoundError
	if errors.As(err, &nf) {
		return withHint(err, "zl namespace register %s", nf.Name)
	}
	var se *config.NamespaceStateError
	if errors.As(err, &se) && se.State == config.NamespaceDeleted {
		return withHint(err, "zl namespace recover %s", se.Name)
	}
	var enf *config.EntityNotFoundError
	if errors.As(err, &enf) {
		return withHint(err, "zl entity list shows the namespace's entities (zl entity create %s records one)", enf.EntityID)
	}
	var ee *config.EntityExistsError
	if errors.As(err, &ee) {
		return withHint(err, "zl entity show %s shows it", ee.EntityID)
	}
	msg := err.Error()
	var op *net.OpError
	switch {
	case errors.As(err, &op) && op.Op == "dial":
		return withHint(fmt.Errorf("cannot reach DynamoDB%s: %w", a.where(), err),
			"check --endpoint-url (or AWS_ENDPOINT_URL_DYNAMODB) and --region; for DynamoDB Local, make ddb-start prints the endpoint")
	case strings.Contains(msg, "failed to retrieve credentials"), strings.Contains(msg, "failed to refresh cached credentials"),
		strings.Contains(msg, "no EC2 IMDS role found"), strings.Contains(msg, "get identity"):
		return withHint(err, "no AWS credentials: pass --profile, or set AWS_PROFILE or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (any letters and digits for DynamoDB Local)")
	case strings.HasPrefix(msg, "unknown command"), strings.HasPrefix(msg, "unknown flag"), strings.HasPrefix(msg, "unknown shorthand flag"),
		strings.HasPrefix(msg, "required flag"), strings.Contains(msg, "flag needs an argument"), strings.HasPrefix(msg, "invalid argument"):
		return &UsageError{Err: fmt.Errorf("%s (zl --help lists the commands and flags)", strings.TrimSpace(msg))}
	}
	return err
}

// where names the endpoint or region the run talks to, for messages.
func (a *App) where() string {
	switch {
	case a.flags.endpoint != "":
		return " at " + a.flags.endpoint
	case a.flags.region != "":
		return " in " + a.flags.region
	}
	return ""
}
