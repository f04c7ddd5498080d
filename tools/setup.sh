#!/usr/bin/env bash
# Builds or fetches every external tool capt's local stack and tests need, into a cache outside the
# work tree keyed by name and version, so fresh clones (CI) reuse it. Idempotent: present tools are kept.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=capi-ldflags.sh
. "$here/capi-ldflags.sh"
tools=${CAPT_TOOLS_DIR:-$HOME/.cache/capt/tools}
temporal_version=v1.5.1
etcd_version=v3.6.8
kube_versions=(v1.35.4 v1.36.3)
# The minor below them, for chained upgrades across three minors (bench/chained-upgrade): built only with
# --all-minors, since it adds 10-20 cold minutes that CI's tests do not need; listed in the manifest once built.
older_kube_versions=(v1.34.4)
all_minors=false
for arg in "$@"; do
  case $arg in
    --all-minors) all_minors=true ;;
    *) printf '[setup] error: unknown option %s: the only option is --all-minors (also build Kubernetes %s)\n' "$arg" "${older_kube_versions[*]}" >&2; exit 2 ;;
  esac
done
# The production topology (capt dev start --persistence postgres): the newest releases whose go.mod accepts
# the Go here (1.26.8); server v1.32.2 and ui-server v2.56.0 and later ask for 1.26.9 or newer.
temporal_server_version=v1.32.1
temporal_ui_version=v2.55.0
etcd_module_from=v1.36.3
# Cluster API's CRDs for capt's management API, at the release bench/capi/module pins (one pin for both).
capi_module=$here/../bench/capi/module
capi_version=$(sed -n 's/^[[:space:]]*sigs\.k8s\.io\/cluster-api => sigs\.k8s\.io\/cluster-api \(v[^[:space:]]*\).*/\1/p' "$capi_module/go.mod")

say() { printf '[setup] %s\n' "$*"; }
fail() { printf '[setup] error: %s\n' "$*" >&2; exit 1; }
need() { command -v "$1" >/dev/null 2>&1 || fail "$1 is required: $2"; }

need go "install Go 1.26 or newer (https://go.dev/doc/install) and put it on PATH"
need openssl "install Debian's openssl package: capt signs cluster certificates with it"
need unshare "install Debian's util-linux package: local machines are confined with user, PID and mount namespaces"
need nft "install Debian's nftables package (apt-get install nftables): local machines' connections to the host's own services are refused with it"

export GOFLAGS=-buildvcs=false

build_temporal() {
  local dir=$tools/temporal/$temporal_version
  [ -x "$dir/temporal" ] && { say "temporal $temporal_version: cached"; return; }
  say "temporal $temporal_version: building with go install (a few minutes)"
  mkdir -p "$dir"
  GOBIN=$dir go install "github.com/temporalio/cli/cmd/temporal@$temporal_version"
}

# The server and its schema tool (embedded SQL schemas) come from one module, so one go install builds both.
build_temporal_server() {
  local dir=$tools/temporal-server/$temporal_server_version cmd missing=()
  for cmd in server sql; do [ -x "$dir/$cmd" ] || missing+=("$cmd"); done
  [ ${#missing[@]} -eq 0 ] && { say "temporal server $temporal_server_version: cached"; return; }
  say "temporal server $temporal_server_version: building ${missing[*]} with go install (10-15 minutes cold)"
  rm -rf "$dir.partial" && mkdir -p "$dir.partial"
  [ -d "$dir" ] && cp -a "$dir/." "$dir.partial/"
  local pkgs=() ; for cmd in "${missing[@]}"; do
    case $cmd in server) pkgs+=(go.temporal.io/server/cmd/server) ;; sql) pkgs+=(go.temporal.io/server/cmd/tools/sql) ;; esac
  done
  GOBIN=$dir.partial go install -trimpath -ldflags "-s -w" "${pkgs[@]/%/@$temporal_server_version}"
  rm -rf "$dir" && mv "$dir.partial" "$dir"
}

build_temporal_ui() {
  local dir=$tools/temporal-ui-server/$temporal_ui_version
  [ -x "$dir/server" ] && { say "temporal ui-server $temporal_ui_version: cached"; return; }
  say "temporal ui-server $temporal_ui_version: building with go install (a few minutes)"
  rm -rf "$dir.partial" && mkdir -p "$dir.partial"
  GOBIN=$dir.partial go install -trimpath -ldflags "-s -w" "github.com/temporalio/ui-server/v2/cmd/server@$temporal_ui_version"
  rm -rf "$dir" && mv "$dir.partial" "$dir"
}

# Debian's PostgreSQL server, run by capt as an unprivileged user; its newest installed major is used.
postgres_bin() {
  local bin
  bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
  [ -n "$bin" ] && [ -x "$bin/postgres" ] && [ -x "$bin/initdb" ] && [ -x "$bin/pg_ctl" ] \
    || fail "PostgreSQL's server is required for the production topology and its tests: install Debian's postgresql package (apt-get install postgresql)"
  printf '%s' "$bin"
}

build_kube() {
  local version=$1 dir=$tools/kubernetes/$1 minor cmd missing=()
  minor=${version#v1.}; minor=${minor%%.*}
  # kubectl is built from the same module: it supports one minor of skew, so each version gets its own.
  for cmd in kube-apiserver kube-controller-manager kube-scheduler kubectl; do [ -x "$dir/$cmd" ] || missing+=("$cmd"); done
  [ ${#missing[@]} -eq 0 ] && { say "kubernetes $version: cached"; return; }
  say "kubernetes $version: building ${missing[*]} (10-20 minutes cold)"
  rm -rf "$dir.partial" && mkdir -p "$dir.partial"
  [ -d "$dir" ] && cp -a "$dir/." "$dir.partial/"
  # Upstream's build stamps these; without them the binaries report v0.0.0 and version-skew checks break.
  local ldflags="-s -w"
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldflags+=" -X $pkg.gitVersion=$version -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
    ldflags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
  done
  (cd "$here/kube/$version" && go build -trimpath -ldflags "$ldflags" -o "$dir.partial/" "${missing[@]/#/k8s.io/kubernetes/cmd/}")
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

# The kustomize config of each Cluster API provider capt serves (its crd folder and default/kustomization.yaml,
# which carry the labels), copied from the Go module; src/management-api turns them into CRDs at start.
fetch_capi_crds() {
  local dir=$tools/cluster-api/$capi_version/config src
  [ -n "$capi_version" ] || fail "no cluster-api replace line in $capi_module/go.mod: run bench/capi/gen-module.sh vX.Y.Z"
  [ -d "$dir" ] && { say "cluster-api $capi_version CRDs: cached"; return; }
  say "cluster-api $capi_version CRDs: copying from the Go module"
  src=$(cd "$capi_module" && go mod download -json "sigs.k8s.io/cluster-api@$capi_version" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
  [ -d "$src" ] || fail "go mod download sigs.k8s.io/cluster-api@$capi_version gave no directory"
  rm -rf "$dir.partial"
  local name from
  for name in core bootstrap-kubeadm controlplane-kubeadm; do
    from=$src/${name/-//}/config
    mkdir -p "$dir.partial/$name/default"
    cp -r "$from/crd" "$dir.partial/$name/"
    cp "$from/default/kustomization.yaml" "$dir.partial/$name/default/"
  done
  # The module cache is read-only; the copy must not be, or the next setup could not replace it.
  chmod -R u+w "$dir.partial"
  mv "$dir.partial" "$dir"
}

# A folder of Cluster API's test module at the same release, copied into the tool cache once:
#   copy_capi_test_folder WHAT FROM DEST   (FROM inside the module, DEST the copy)
copy_capi_test_folder() {
  local what=$1 from=$2 dir=$3 src
  [ -d "$dir" ] && { say "cluster-api $capi_version $what: cached"; return; }
  say "cluster-api $capi_version $what: copying from the Go module"
  src=$(cd "$capi_module" && go mod download -json "sigs.k8s.io/cluster-api/test@$capi_version" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
  [ -d "$src/$from" ] || fail "go mod download sigs.k8s.io/cluster-api/test@$capi_version gave no $from"
  rm -rf "$dir.partial"
  mkdir -p "$(dirname "$dir")"
  cp -r "$src/$from" "$dir.partial"
  chmod -R u+w "$dir.partial"
  mv "$dir.partial" "$dir"
}

# clusterctl from the same pinned module, built as its users get it: the management API's tests drive it.
build_clusterctl() {
  local bin=$tools/cluster-api/$capi_version/clusterctl
  [ -x "$bin" ] && { say "clusterctl $capi_version: cached"; return; }
  say "clusterctl $capi_version: building (a few minutes, once)"
  mkdir -p "$(dirname "$bin")"
  (cd "$capi_module" && GOFLAGS=-buildvcs=false go build -trimpath -ldflags "$(capi_ldflags "$capi_version")" -o "$bin.partial" sigs.k8s.io/cluster-api/cmd/clusterctl)
  mv "$bin.partial" "$bin"
}

# Programs of the pinned module (a main package in bench/capi/module/NAME), cached by the release and a hash of
# their source and the module's go.mod and go.sum, so a changed one is built again and an old one never used.
module_program_bin() {
  local hash
  hash=$(cat "$capi_module/$1"/*.go "$capi_module/go.mod" "$capi_module/go.sum" | sha256sum | cut -c1-16)
  printf '%s' "$tools/cluster-api/$capi_version/$1-$hash/$1"
}
build_module_program() {
  local bin
  bin=$(module_program_bin "$1")
  [ -x "$bin" ] && { say "cluster-api $capi_version $2: cached"; return; }
  say "cluster-api $capi_version $2: building ($3, once per change to it)"
  mkdir -p "$(dirname "$bin")"
  (cd "$capi_module" && go build -trimpath -ldflags "-s -w" -o "$bin.partial" "./$1")
  mv "$bin.partial" "$bin"
}

build_temporal
build_temporal_server
build_temporal_ui
postgres=$(postgres_bin)
say "postgresql: $postgres"
build_etcd
for v in "${kube_versions[@]}"; do build_kube "$v"; done
if $all_minors; then for v in "${older_kube_versions[@]}"; do build_kube "$v"; done; fi
# Every version in the cache is offered; the older minors only once --all-minors has built them.
listed_kube_versions=()
for v in "${older_kube_versions[@]}"; do
  if [ -x "$tools/kubernetes/$v/kube-apiserver" ] && [ -x "$tools/kubernetes/$v/kubectl" ]; then listed_kube_versions+=("$v"); fi
done
listed_kube_versions+=("${kube_versions[@]}")
fetch_capi_crds
# Cluster API's own e2e manifests: the conversion tests round-trip every object of the kinds capt converts in them.
copy_capi_test_folder "e2e manifests" e2e/data/infrastructure-docker "$tools/cluster-api/$capi_version/e2e-data/infrastructure-docker"
# Its templates for the development provider: the quick-start ClusterClass and the development Cluster that
# `clusterctl generate cluster` gives, which a test applies with their kinds swapped to the local provider's.
copy_capi_test_folder templates infrastructure/docker/templates "$tools/cluster-api/$capi_version/templates"
build_clusterctl
# Cluster API's e2e framework (e2e-driver): its test runs the framework's waiters against capt's objects.
build_module_program e2e-driver 'e2e driver' 'about 3 minutes cold'
# Cluster API's topology code (ClusterClass webhooks and reconciler, desired-state generator): capt's ClusterClass
# loader renders a topology with it.
build_module_program topology-render 'topology renderer' 'about 1.5 minutes cold, 5 s when Go has built it before'

cat > "$tools/manifest.json.partial" <<JSON
{
  "temporal": "$tools/temporal/$temporal_version/temporal",
  "temporalServer": "$tools/temporal-server/$temporal_server_version/server",
  "temporalSqlTool": "$tools/temporal-server/$temporal_server_version/sql",
  "temporalUiServer": "$tools/temporal-ui-server/$temporal_ui_version/server",
  "postgres": "$postgres",
  "etcd": "$tools/etcd/$etcd_version/etcd",
  "clusterApi": { "version": "$capi_version", "config": "$tools/cluster-api/$capi_version/config", "clusterctl": "$tools/cluster-api/$capi_version/clusterctl", "e2eDriver": "$(module_program_bin e2e-driver)", "topologyRender": "$(module_program_bin topology-render)" },
  "kubernetes": {
$(for v in "${listed_kube_versions[@]}"; do printf '    "%s": "%s"%s\n' "$v" "$tools/kubernetes/$v" "$([ "$v" = "${listed_kube_versions[-1]}" ] || echo ,)"; done)
  }
}
JSON
mv "$tools/manifest.json.partial" "$tools/manifest.json"
say "tools ready: $tools/manifest.json"
