#!/usr/bin/env bash
# Builds the outside programs the tests run that Debian 12 does not have, from their Go modules at
# the versions pinned in tests/peers/<peer>/go.mod and go.sum, with this machine's Go:
#   kubernetes   kubelet, kube-apiserver, kube-controller-manager and kubectl from k8s.io/kubernetes,
#                kube-scheduler with the NodeResourceTopologyMatch plugin, and etcd, in one wrapper
#                module (kubernetes' own go.mod points its staging modules at directories a module
#                download lacks; tests/peers/kubernetes/go.mod)
#   containerd   containerd 2.x, containerd-shim-runc-v2 and ctr (runc is Debian's), at the release
#                the containerd 2.x tests run on; containerd-2.0 and containerd-2.4, the oldest and
#                newest 2.x lines, for the NRI plugin's tests
#   podfingerprint the pods fingerprint of github.com/k8stopologyawareschedwg/podfingerprint, the
#                scheduler plugin's, printed for pods named on its command line
#
#   scripts/build-peers.sh [OUT]      (OUT defaults to build/peers)
#
# Each peer's programs are cached outside the clone, in $VRI_CACHE_DIR (default /var/cache/vri-test)
# /peers/<peer>-<key>/, keyed by its wrapper module's files, Go's version and this script; Go's module and
# build caches are kept there too (go/mod, go/build), so a fresh clone builds nothing twice. OUT
# gets <peer>/ with links to the cached programs. Prints, per peer, whether it was built or cached,
# how long it took and what it downloaded. A peer that cannot be built fails the script with Go's
# output: the tests that need it have nothing to run against.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "${1:-$repo/build/peers}"
out=$(readlink -f "${1:-$repo/build/peers}")
cache=${VRI_CACHE_DIR:-/var/cache/vri-test}/peers

say() { echo "build-peers: $*"; }
command -v go >/dev/null || { say "no Go on this machine: the peers are built with it"; exit 1; }

export GOMODCACHE=$cache/go/mod GOCACHE=$cache/go/build GOTOOLCHAIN=local GOFLAGS=-buildvcs=false
export GOPATH=$cache/go/path
mkdir -p "$GOMODCACHE/cache/download" "$GOCACHE" "$GOPATH" "$out"
go_version=$(go env GOVERSION)

# The versions each wrapper module requires, as go.mod pins them.
required_version() { awk -v m="$2" '$1 == m {print $2; exit} $1 == "require" && $2 == m {print $3; exit}' "$1/go.mod"; }

# build_peer NAME PACKAGE:LDFLAGS ...: builds each package of the wrapper module tests/peers/NAME
# into the cache, once per key.
build_peer() {
  local name=$1
  shift
  local module=$repo/tests/peers/$name
  local key
  key=$( { find "$module" -type f | sort | xargs cat; cat "$0"; echo "$go_version"; } | sha256sum | cut -c1-16)
  local dir=$cache/$name-$key
  if [ -f "$dir/.complete" ]; then
    say "$name: cached ($dir)"
  else
    local start downloads_before downloads_after
    start=$(date +%s)
    downloads_before=$(find "$GOMODCACHE/cache/download" -name '*.zip' 2>/dev/null | wc -l)
    local bytes_before
    bytes_before=$(du -sb "$GOMODCACHE/cache/download" 2>/dev/null | cut -f1 || echo 0)
    rm -rf "$dir.partial"
    mkdir -p "$dir.partial"
    local spec package ldflags
    for spec in "$@"; do
      package=${spec%%|*}
      ldflags=${spec#*|}
      say "$name: go build $package"
      (cd "$module" && CGO_ENABLED=0 go build -mod=readonly -trimpath -tags "${PEER_TAGS:-}" \
        -ldflags "-s -w $ldflags" -o "$dir.partial/$(basename "$package")" "$package") || {
        say "$name: building $package with $go_version failed (above)"; exit 1; }
    done
    touch "$dir.partial/.complete"
    rm -rf "$dir"
    mv "$dir.partial" "$dir"
    downloads_after=$(find "$GOMODCACHE/cache/download" -name '*.zip' | wc -l)
    local bytes_after
    bytes_after=$(du -sb "$GOMODCACHE/cache/download" | cut -f1)
    say "$name: built in $(($(date +%s) - start)) s, $((downloads_after - downloads_before)) modules" \
      "downloaded ($(((bytes_after - bytes_before) / 1048576)) MiB)"
  fi
  rm -rf "${out:?}/$name"
  mkdir -p "$out/$name"
  local program
  for program in "$dir"/*; do ln -s "$program" "$out/$name/$(basename "$program")"; done
  "$out/$name/$(basename "${1%%|*}")" --version 2>&1 | head -1 | sed "s/^/build-peers: $name: /"
}

kubernetes=$(required_version "$repo/tests/peers/kubernetes" k8s.io/kubernetes)
version_pkg=k8s.io/component-base/version
minor=${kubernetes#v1.}
minor=${minor%%.*}
k8s_version="-X $version_pkg.gitVersion=$kubernetes -X $version_pkg.gitMajor=1 -X $version_pkg.gitMinor=$minor \
-X $version_pkg.gitTreeState=clean -X $version_pkg.buildDate=1970-01-01T00:00:00Z"
# The scheduler is kubernetes' own (cmd/kube-scheduler/app) with one plugin added: it carries the
# same version. etcd's version is a constant of its own module.
build_peer kubernetes \
  "k8s.io/kubernetes/cmd/kubelet|$k8s_version" \
  "k8s.io/kubernetes/cmd/kube-apiserver|$k8s_version" \
  "k8s.io/kubernetes/cmd/kube-controller-manager|$k8s_version" \
  "k8s.io/kubernetes/cmd/kubectl|$k8s_version" \
  "vri.invalid/peers/kubernetes/cmd/kube-scheduler|$k8s_version" \
  "vri.invalid/peers/kubernetes/cmd/etcd|"

# build_containerd NAME: containerd, its runc shim and ctr from the wrapper module tests/peers/NAME,
# at the release its go.mod pins.
build_containerd() {
  local release
  release=$(required_version "$repo/tests/peers/$1" github.com/containerd/containerd/v2)
  local version_flag="-X github.com/containerd/containerd/v2/version.Version=$release"
  # no_btrfs: the btrfs snapshotter needs cgo and btrfs headers; the tests use overlayfs.
  PEER_TAGS=no_btrfs build_peer "$1" \
    "github.com/containerd/containerd/v2/cmd/containerd|$version_flag" \
    "github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2|$version_flag" \
    "github.com/containerd/containerd/v2/cmd/ctr|$version_flag"
}
# The release every containerd 2.x test runs on, and the oldest and newest 2.x lines the NRI plugin
# is also tested against (they vendor NRI v0.8.0 and v0.12.3; the first one, v0.11.0).
build_containerd containerd
build_containerd containerd-2.0
build_containerd containerd-2.4
# The pods fingerprint as the scheduler's plugin computes it, which VRI's own is checked against.
build_peer podfingerprint "vri.invalid/peers/podfingerprint|"
say "programs in $out"
