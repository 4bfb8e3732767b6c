#!/usr/bin/env bash
# Configures and builds VRI with Ninja and ccache.
#   scripts/build.sh [BUILD_DIR] [extra cmake arguments...]
# Examples:
#   scripts/build.sh                                   # build/ with g++
#   CXX=clang++ scripts/build.sh build-asan -DVRI_SANITIZE=address,undefined
#   CXX=clang++ scripts/build.sh build-tsan -DVRI_SANITIZE=thread
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
build_dir=${1:-build}
shift || true
case "$build_dir" in /*) ;; *) build_dir="$repo/$build_dir" ;; esac

# Clones at different paths share one cache.
export CCACHE_BASEDIR="$repo"
export CCACHE_NOHASHDIR=1

cmake -S "$repo" -B "$build_dir" -G Ninja "$@" >/dev/null
cmake --build "$build_dir"
