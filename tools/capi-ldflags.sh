# Sourced by tools/setup.sh and bench/capi/build.sh: the link flags that stamp a Cluster API binary with its
# release, as upstream's release build does (the managers log it at start; clusterctl prints it).
capi_ldflags() {
  local version=$1 minor kv flags="-s -w"
  minor=${version#v1.}; minor=${minor%%.*}
  for kv in gitVersion=$version gitMajor=1 gitMinor=$minor gitTreeState=clean buildDate=1970-01-01T00:00:00Z; do
    flags+=" -X sigs.k8s.io/cluster-api/version.$kv"
  done
  printf '%s' "$flags"
}
