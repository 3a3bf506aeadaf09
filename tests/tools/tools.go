//go:build tools

// Package tools pins the Go-built command-line tools that the tests use.
// Nothing here is compiled into the operator; build-helm.sh builds the
// helm command from the version this module's go.mod/go.sum pin.
package tools

import (
	_ "helm.sh/helm/v3/cmd/helm"
)
