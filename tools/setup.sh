#!/usr/bin/env bash
# Builds or fetches every external tool capt's local stack and tests need, into a cache outside the
# work tree keyed by name and version, so fresh clones (CI) reuse it. Idempotent: present tools are kept.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
tools=${CAPT_TOOLS_DIR:-$HOME/.cache/capt/tools}
temporal_version=v1.5.1
etcd_version=v3.6.8
kube_versions=(v1.35.4 v1.36.3)
etcd_module_from=v1.36.3

say() { printf '[setup] %s\n' "$*"; }
fail() { printf '[setup] error: %s\n' "$*" >&2; exit 1; }
need() { command -v "$1" >/dev/null 2>&1 || fail "$1 is required: $2"; }

need go "install Go 1.26 or newer (https://go.dev/doc/install) and put it on PATH"
need dpkg-deb "capt's setup fetches kubectl from Debian's kubernetes-client package; run it on Debian or Ubuntu"
need apt-get "capt's setup fetches kubectl from Debian's kubernetes-client package; run it on Debian or Ubuntu"
need openssl "install Debian's openssl package: capt signs cluster certificates with it"
need unshare "install Debian's util-linux package: local machines are confined with mount namespaces"

export GOFLAGS=-buildvcs=false

build_temporal() {
  local dir=$tools/temporal/$temporal_version
  [ -x "$dir/temporal" ] && { say "temporal $temporal_version: cached"; return; }
  say "temporal $temporal_version: building with go install (a few minutes)"
  mkdir -p "$dir"
  GOBIN=$dir go install "github.com/temporalio/cli/cmd/temporal@$temporal_version"
}

build_kube() {
  local version=$1 dir=$tools/kubernetes/$1 minor
  minor=${version#v1.}; minor=${minor%%.*}
  if [ -x "$dir/kube-apiserver" ] && [ -x "$dir/kube-controller-manager" ] && [ -x "$dir/kube-scheduler" ]; then
    say "kubernetes $version: cached"; return
  fi
  say "kubernetes $version: building kube-apiserver, kube-controller-manager, kube-scheduler (10-20 minutes cold)"
  mkdir -p "$dir.partial"
  # Upstream's build stamps these; without them the binaries report v0.0.0 and version-skew checks break.
  local ldflags="-s -w"
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldflags+=" -X $pkg.gitVersion=$version -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
    ldflags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
  done
  (cd "$here/kube/$version" && go build -trimpath -ldflags "$ldflags" -o "$dir.partial/" \
    k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager k8s.io/kubernetes/cmd/kube-scheduler)
  rm -rf "$dir" && mv "$dir.partial" "$dir"
}

build_etcd() {
  local dir=$tools/etcd/$etcd_version
  [ -x "$dir/etcd" ] && { say "etcd $etcd_version: cached"; return; }
  say "etcd $etcd_version: building"
  mkdir -p "$dir.partial"
  (cd "$here/kube/$etcd_module_from" && go build -trimpath -ldflags "-s -w" -o "$dir.partial/etcd" go.etcd.io/etcd/server/v3)
  rm -rf "$dir" && mv "$dir.partial" "$dir"
}

# Debian binaries are unpacked into the cache rather than installed, so setup never touches the system.
unpack_deb() {
  local pkg=$1 binary=$2 version dir tmp
  version=$(apt-cache policy "$pkg" 2>/dev/null | sed -n 's/ *Candidate: //p')
  if [ -z "$version" ] || [ "$version" = "(none)" ]; then
    say "$pkg: refreshing Debian package lists"
    apt-get update -qq >/dev/null || fail "apt-get update failed; $pkg cannot be fetched"
    version=$(apt-cache policy "$pkg" | sed -n 's/ *Candidate: //p')
  fi
  [ -n "$version" ] && [ "$version" != "(none)" ] || fail "Debian package $pkg is not available"
  dir=$tools/$pkg/${version//[:+~]/_}
  [ -x "$dir/$binary" ] && { say "$pkg $version: cached"; ln -sfn "$dir" "$tools/$pkg/current"; return; }
  say "$pkg $version: unpacking from Debian"
  tmp=$(mktemp -d) && chmod 755 "$tmp"
  (cd "$tmp" && apt-get download -qq "$pkg=$version" >/dev/null) || fail "apt-get download $pkg failed"
  dpkg-deb -x "$tmp"/*.deb "$tmp/root"
  mkdir -p "$dir" && cp "$tmp/root/usr/bin/$binary" "$dir/$binary"
  rm -rf "$tmp"
  ln -sfn "$dir" "$tools/$pkg/current"
}

build_temporal
unpack_deb kubernetes-client kubectl
build_etcd
for v in "${kube_versions[@]}"; do build_kube "$v"; done

cat > "$tools/manifest.json.partial" <<JSON
{
  "temporal": "$tools/temporal/$temporal_version/temporal",
  "etcd": "$tools/etcd/$etcd_version/etcd",
  "kubectl": "$tools/kubernetes-client/current/kubectl",
  "kubernetes": {
$(for v in "${kube_versions[@]}"; do printf '    "%s": "%s"%s\n' "$v" "$tools/kubernetes/$v" "$([ "$v" = "${kube_versions[-1]}" ] || echo ,)"; done)
  }
}
JSON
mv "$tools/manifest.json.partial" "$tools/manifest.json"
say "tools ready: $tools/manifest.json"
