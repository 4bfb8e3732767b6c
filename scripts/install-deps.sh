#!/usr/bin/env bash
# Installs what VRI needs to build and test, from Debian 12's packages only.
# Does nothing (and needs no network) when everything is already installed.
set -euo pipefail

packages=(
  build-essential cmake ninja-build ccache pkg-config
  clang clang-format libclang-rt-14-dev          # the second compiler and its sanitizer runtimes
  libhwloc-dev hwloc                              # topology
  libvirt-dev libxml2-dev                         # libvirt bridge (libxml2: domain XML, as libvirt itself parses it)
  libvirt-daemon libvirt-daemon-driver-qemu libvirt-clients qemu-system-x86  # the libvirt tests' real libvirtd and QEMU
  libgrpc++-dev protobuf-compiler protobuf-compiler-grpc libprotobuf-dev libabsl-dev  # API (abseil: gRPC's mutexes, tuned by vrid)
  libsqlite3-dev                                  # ledger
  libsystemd-dev                                  # sd-bus: unit properties that systemd keeps
  libyaml-cpp-dev                                 # kubelet's configuration file, read by vrid
  libmicrohttpd-dev                               # the metrics endpoint (GET /metrics), served by vrid
  libcli11-dev libedit-dev libfmt-dev             # vrictl: its command line, its shell, its text
  libxxhash-dev nlohmann-json3-dev libcurl4-openssl-dev  # the NodeResourceTopology export: fingerprint, JSON, HTTPS
  googletest libgtest-dev libgmock-dev libbenchmark-dev                 # tests and benchmarks
  mmdebstrap kmod cpio e2fsprogs bc zstd         # the cgroup v2 guest test bed (tests/v2guest/)
  containerd runc                                # the containerd tests' real containerd (tests/containerd/)
  debhelper dpkg-dev fakeroot lintian            # the Debian package (scripts/build-package.sh)
  help2man                                       # the manual pages, from each program's --help and --version
  openssl curl iproute2                          # the control plane's certificates and health checks (tests/cluster/)
  socat                                          # the cluster guest's way to the API server (tests/v2guest/run-guest.sh)
  gnuplot-nox                                    # the soak report's plots (scripts/soak.sh)
)

missing=()
for package in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${db:Status-Status}' "$package" 2>/dev/null || true)
  [ "$status" = installed ] || missing+=("$package")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

sudo=()
[ "$(id -u)" -eq 0 ] || sudo=(sudo)
echo "install-deps: installing ${missing[*]}"
"${sudo[@]}" apt-get update -q
DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
