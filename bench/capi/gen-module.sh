#!/usr/bin/env bash
# Writes bench/capi/module/{go.mod,go.sum,tools.go}: a wrapper module that pins Cluster API's core, api and
# test modules (the test module holds the docker provider and its in-memory backend). Upstream's go.mod
# points the api module at ./api with a replace, which `go install` cannot follow, so the wrapper maps it
# back to the release. Run once per new Cluster API version; the output is committed. The module also holds
# e2e-driver (Cluster API's e2e framework against capt's objects), so tidy keeps what it imports.
set -euo pipefail
version=${1:?usage: gen-module.sh vX.Y.Z}
dir=$(cd "$(dirname "$0")" && pwd)/module
mkdir -p "$dir"
upstream=$(go mod download -json "sigs.k8s.io/cluster-api@$version" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')
gover=$(sed -n 's/^go \(.*\)/\1/p' "$upstream")
cat > "$dir/go.mod" <<MOD
module capt.local/bench/capi

go $gover

require (
	sigs.k8s.io/cluster-api $version
	sigs.k8s.io/cluster-api/api $version
	sigs.k8s.io/cluster-api/test $version
)

replace (
	sigs.k8s.io/cluster-api => sigs.k8s.io/cluster-api $version
	sigs.k8s.io/cluster-api/api => sigs.k8s.io/cluster-api/api $version
)
MOD
cat > "$dir/tools.go" <<GO
//go:build tools

// Package tools pins the four Cluster API managers the side-by-side benchmark runs, and clusterctl, which
// capt's setup builds for the tests of its management API.
package tools

import (
	_ "sigs.k8s.io/cluster-api/bootstrap/kubeadm"
	_ "sigs.k8s.io/cluster-api/cmd/clusterctl"
	_ "sigs.k8s.io/cluster-api/controlplane/kubeadm"
	_ "sigs.k8s.io/cluster-api/core"
	_ "sigs.k8s.io/cluster-api/test/infrastructure/docker"
)
GO
cd "$dir" && go mod tidy -e
