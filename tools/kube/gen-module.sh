#!/usr/bin/env bash
# Writes tools/kube/<version>/go.mod: a wrapper module that pins k8s.io/kubernetes and maps each
# staging module (a ./staging path in upstream's go.mod, which `go install` cannot follow) to its
# published v0.x.y release. Run once per new Kubernetes version; the output is committed.
set -euo pipefail
version=${1:?usage: gen-module.sh vX.Y.Z}
staging="v0.${version#v1.}"
dir=$(cd "$(dirname "$0")" && pwd)/$version
mkdir -p "$dir"
upstream=$(go mod download -json "k8s.io/kubernetes@$version" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')
gover=$(sed -n 's/^go \(.*\)/\1/p' "$upstream")
{
  echo "module capt.local/tools/kube"
  echo
  echo "go $gover"
  echo
  echo "require k8s.io/kubernetes $version"
  echo
  echo "replace ("
  sed -n 's#^\s*\(k8s.io/[a-z0-9-]*\) => ./staging/src/.*#\t\1 => \1 '"$staging"'#p' "$upstream"
  echo ")"
} > "$dir/go.mod"
cat > "$dir/tools.go" <<GO
//go:build tools

// Package tools pins the Kubernetes commands capt builds for the local provider, and the matching kubectl.
package tools

import (
	_ "go.etcd.io/etcd/server/v3"
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
GO
cd "$dir" && go mod tidy -e
