#!/usr/bin/env bash
# Configures and builds VRI with Ninja and ccache.
#   scripts/build.sh [BUILD_DIR] [extra cmake arguments...]
# Examples:
#   scripts/build.sh                                   # build/ with g++
#   CXX=clang++ scripts/build.sh build-asan -DVRI_SANITIZE=address,undefined
#   CXX=clang++ scripts/build.sh build-tsan -DVRI_SANITIZE=thread
#   VRI_BUILD_TARGETS="tests-unit" scripts/build.sh build-tsan ...   # only what the `unit` tests run
#   VRI_FLAGS=package scripts/build.sh build          # the Debian package's compiler flags (below)
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
build_dir=${1:-build}
shift || true
case "$build_dir" in /*) ;; *) build_dir="$repo/$build_dir" ;; esac

# Clones at different paths share one cache.
export CCACHE_BASEDIR="$repo"
export CCACHE_NOHASHDIR=1

# The linker: gold, which links a test program in half the time of ld.bfd here (tests/vrid_api_test:
# 0.96 s against 2.17 s; the trees hold ~130 programs). Linking is not cached, so this is most of a
# build whose objects all come from ccache. The package links with the toolchain's default.
# VRI_LINKER=bfd for that one.
linker=-fuse-ld=${VRI_LINKER:-gold}
ldflags=$linker
flags=()
if [ "${VRI_FLAGS:-}" = package ]; then
  # The compiler by the name the package's build finds it (debhelper leaves CMake to look: c++ and
  # cc, Debian's g++ and gcc). ccache hashes the compiler's name: built as g++, this tree's objects
  # were never found by the package's build, which compiled everything again (5 minutes from an
  # empty cache instead of one).
  export CXX=c++ CC=cc
  # The locale the package's build compiles in: debhelper runs ninja with LC_ALL=C.UTF-8, and ccache
  # hashes LC_ALL (it changes the compiler's messages). Unset here, no object of this tree was the
  # package's (its build compiled all 180 again: 444 s instead of 100).
  export LC_ALL=C.UTF-8
  # The flags the package's build compiles with: dpkg-buildflags with debian/rules' options, asked
  # where dpkg-buildpackage asks (the source's root: its -ffile-prefix-map, which ccache makes
  # relative to CCACHE_BASEDIR as it does every path), CPPFLAGS appended as debhelper appends them
  # for CMake, and debhelper's build type. The package's build then finds these objects in ccache,
  # and the tests run on the code the package ships.
  maint=$(sed -n 's/^export DEB_BUILD_MAINT_OPTIONS = //p' "$repo/debian/rules")
  buildflag() { (cd "$repo" && DEB_BUILD_MAINT_OPTIONS=$maint dpkg-buildflags --get "$1"); }
  cppflags=$(buildflag CPPFLAGS)
  flags=(-DCMAKE_BUILD_TYPE=None "-DCMAKE_C_FLAGS=$(buildflag CFLAGS) $cppflags"
    "-DCMAKE_CXX_FLAGS=$(buildflag CXXFLAGS) $cppflags")
  ldflags="$(buildflag LDFLAGS) $linker"
  # The tests' own code ships in no package: compiled for speed of compiling, with line tables for
  # their backtraces (-Og, not -O0: _FORTIFY_SOURCE needs an optimisation level). Half the tree's
  # compile time was tests' (1,309 of 2,635 s from an empty cache); tests/vri/vrid_api_test.cc
  # compiles in 11.4 s instead of 24.8 s at -O2 -g.
  flags+=("-DVRI_TEST_COMPILE_OPTIONS=-Og;-g1")
fi
flags+=("-DCMAKE_EXE_LINKER_FLAGS=$ldflags" "-DCMAKE_SHARED_LINKER_FLAGS=$ldflags")

cmake -S "$repo" -B "$build_dir" -G Ninja "${flags[@]}" "$@" >/dev/null
# shellcheck disable=SC2086  # a list of targets
cmake --build "$build_dir" ${VRI_BUILD_TARGETS:+--target $VRI_BUILD_TARGETS}
