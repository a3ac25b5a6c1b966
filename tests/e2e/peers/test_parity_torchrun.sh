#!/usr/bin/env bash
# Launcher parity with torchrun 2.x and `python -m torch.distributed.launch` (parity_cases.txt t*,
# l*): each command line runs under the real tool and under `mtrain launch` with the same words on
# record_rank.py; argv and every variable a rank gets must match but for the differences listed in
# parity_differences.txt; failing ranks: exit codes and error reports. The table is docs/peers.md's
# "torchrun" section (MTRAIN_UPDATE_DOCS=1 rewrites it).
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/peers_lib.sh"
need_peers torch
"$PPY" "$PEERS_DIR/parity.py" --mtrain "$MTRAIN" --python "$PPY" --tools torchrun,launch --work "$WORK" \
  --doc "${MTRAIN_SOURCE_DIR:?}/docs/peers.md" --section torchrun ${MTRAIN_UPDATE_DOCS:+--update} ${PARITY_ONLY:+--only "$PARITY_ONLY"}
rc=$?
[ "$rc" -eq 0 ] && ok "parity with torchrun and torch.distributed.launch" || fail "parity (above)"
no_survivors "record_rank"
finish
