//go:build tools

// Package clustertools pins the Temporal server's own binaries that
// `make test-cluster` builds at the version in go.mod: the server and its
// SQL schema tool. Nothing imports this package; the build tag keeps it out
// of every build while `go mod tidy` keeps their requirements.
package clustertools

import (
	_ "go.temporal.io/server/cmd/server"
	_ "go.temporal.io/server/cmd/tools/sql"
)
