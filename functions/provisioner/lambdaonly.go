//go:build lambda.norpc

package main

import "log/slog"

// runLocal: the deployed build serves Lambda only; its local modes are left
// out (local.go).
func runLocal(log *slog.Logger) int {
	log.Error("not under Lambda (AWS_LAMBDA_RUNTIME_API is not set); this build serves Lambda only: " +
		"build without the lambda.norpc tag for -event and -manifest")
	return 2
}
