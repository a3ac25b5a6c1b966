#!/usr/bin/env bash
# Launcher parity with `accelerate launch` and the `deepspeed` launcher (parity_cases.txt a*, d*):
# each command line runs under the real tool and under `mtrain launch` with the same words on
# record_rank.py; argv and every variable a rank gets must match but for the differences listed in
# parity_differences.txt; failing ranks: exit codes and error reports. The table is docs/peers.md's
# "accelerate-deepspeed" section (MTRAIN_UPDATE_DOCS=1 rewrites it).
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/peers_lib.sh"
need_peers torch accelerate deepspeed
"$PPY" "$PEERS_DIR/parity.py" --mtrain "$MTRAIN" --python "$PPY" --tools accelerate,deepspeed --work "$WORK" \
  --doc "${MTRAIN_SOURCE_DIR:?}/docs/peers.md" --section accelerate-deepspeed ${MTRAIN_UPDATE_DOCS:+--update} ${PARITY_ONLY:+--only "$PARITY_ONLY"}
rc=$?
[ "$rc" -eq 0 ] && ok "parity with accelerate launch and deepspeed" || fail "parity (above)"
no_survivors "record_rank"
finish
