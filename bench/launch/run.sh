#!/usr/bin/env bash
# Launch latency: median wall time of `mtrain --help`, of launching 8 trivial ranks, and of
# torchrun's start-up floor (`python3 -c 'import torch.distributed.run'`), side by side in one run.
# Usage: bench/launch/run.sh [BUILD_DIR] [RUNS]
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
bin=${1:-$here/build}/bin/mtrain
runs=${2:-30}
exec /usr/bin/python3 "$here/bench/launch/median.py" "$runs" \
  "mtrain --help" "$bin --help" \
  "mtrain launch --nproc-per-node 8 -- /bin/true" "$bin launch --nproc-per-node 8 --master-port auto -- /bin/true" \
  "python3 -c 'import torch.distributed.run'" "/usr/bin/python3 -c 'import torch.distributed.run'"
