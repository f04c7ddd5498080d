#!/usr/bin/env bash
# Builds Cluster API's four managers from the pinned wrapper module (module/) into capt's tool cache,
# ~/.cache/capt/tools/cluster-api/<version>/, stamped with their version. Built once: cached managers are
# kept. About 12 minutes cold on 2 cores; it runs niced with one package at a time so other work keeps a core.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
tools=${CAPT_TOOLS_DIR:-$HOME/.cache/capt/tools}
version=$(sed -n 's#^\s*sigs.k8s.io/cluster-api => sigs.k8s.io/cluster-api \(v.*\)#\1#p' "$here/module/go.mod")
[ -n "$version" ] || { echo "[capi] error: no pinned Cluster API version in $here/module/go.mod" >&2; exit 1; }
dir=$tools/cluster-api/$version
# name in the cache => package in the wrapper module
declare -A managers=(
  [core]=sigs.k8s.io/cluster-api/core
  [bootstrap-kubeadm]=sigs.k8s.io/cluster-api/bootstrap/kubeadm
  [controlplane-kubeadm]=sigs.k8s.io/cluster-api/controlplane/kubeadm
  [infrastructure-docker]=sigs.k8s.io/cluster-api/test/infrastructure/docker
)
missing=()
for name in "${!managers[@]}"; do [ -x "$dir/$name" ] || missing+=("$name"); done
if [ ${#missing[@]} -eq 0 ]; then echo "[capi] cluster-api $version: cached in $dir"; exit 0; fi
echo "[capi] cluster-api $version: building ${missing[*]} (about 12 minutes cold)"
# shellcheck source=../../tools/capi-ldflags.sh
. "$here/../../tools/capi-ldflags.sh"
ldflags=$(capi_ldflags "$version")
rm -rf "$dir.partial" && mkdir -p "$dir.partial"
[ -d "$dir" ] && cp -a "$dir/." "$dir.partial/"
cd "$here/module"
export GOFLAGS="-buildvcs=false -p=${CAPI_BUILD_JOBS:-1}"
# Two managers are both named kubeadm by `go install`, so each is built to its own name.
for name in "${missing[@]}"; do
  echo "[capi] building $name"
  nice -n 19 go build -trimpath -ldflags "$ldflags" -o "$dir.partial/$name" "${managers[$name]}"
done
rm -rf "$dir" && mv "$dir.partial" "$dir"
echo "[capi] cluster-api $version: built into $dir"
