#!/usr/bin/env bash
# Installs what VRI needs, builds it, and runs its main job on this machine:
# printing the discovered topology and the CPU pools VRI would manage.
# Arguments go to vri-topology (try --help).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
"$repo/scripts/install-deps.sh" >&2
"$repo/scripts/build.sh" build -DCMAKE_BUILD_TYPE=RelWithDebInfo >&2
exec "$repo/build/vri/vri-topology" "$@"
