#!/usr/bin/env bash
# Launch latency: `mtrain bench launch` (spawn N ranks, pass a first barrier, exit) beside
# torchrun's start-up floor (`/usr/bin/python3 -c 'import torch.distributed.run'`), and the
# launcher's first answer (`mtrain --help`, `mtrain --version`; target: under 3 ms median),
# interleaved. `--compare OLD/bin/mtrain` puts another build's first answer beside this one's.
# The logic lives in the native command; this wrapper keeps the old entry point.
# Usage: bench/launch/run.sh [BUILD_DIR] [REPS] [extra `mtrain bench launch` flags…]
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
bin=${1:-$here/build}/bin/mtrain
reps=${2:-30}
shift $(( $# > 2 ? 2 : $# ))
exec "$bin" bench launch --nproc 1,2,4,8 --reps "$reps" "$@"
