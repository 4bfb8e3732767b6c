#!/usr/bin/env bash
# Configures and builds VRI with Ninja and ccache.
#   scripts/build.sh [BUILD_DIR] [extra cmake arguments...]
# Examples:
#   scripts/build.sh                                   # build/ with g++
#   CXX=clang++ scripts/build.sh build-asan -DVRI_SANITIZE=address,undefined
#   CXX=clang++ scripts/build.sh build-tsan -DVRI_SANITIZE=thread
#   VRI_BUILD_TARGETS="tests-unit" scripts/build.sh build-tsan ...   # only what the `unit` tests run
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
build_dir=${1:-build}
shift || true
case "$build_dir" in /*) ;; *) build_dir="$repo/$build_dir" ;; esac

# Clones at different paths share one cache.
export CCACHE_BASEDIR="$repo"
export CCACHE_NOHASHDIR=1

cmake -S "$repo" -B "$build_dir" -G Ninja "$@" >/dev/null
# shellcheck disable=SC2086  # a list of targets
cmake --build "$build_dir" ${VRI_BUILD_TARGETS:+--target $VRI_BUILD_TARGETS}
