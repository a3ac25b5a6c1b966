#!/usr/bin/env bash
# Scenario: the launcher itself is SIGKILLed (it cannot clean up). No rank may survive it:
# ranks die with their parent (PDEATHSIG), including ranks that ignore SIGTERM. Processes the
# ranks started themselves (a data-loader helper, a shell pipeline) must not survive either:
# the launcher's guardian process (lib/launch/guardian.hpp) kills each rank's process group.
. "$(dirname "$0")/lib.sh"
"${tagged[@]}" "$MTRAIN" launch --nproc-per-node 3 -- bash -c \
  'trap "" TERM; echo "rank $RANK pid $$"; if [ "$RANK" = 0 ]; then sleep 300 & echo "child $!"; fi; exec sleep 301' \
  >"$WORK/out" 2>&1 &
launcher=$!
wait_for 20 count_tagged_at_least 5 && ok "job running" ">= 5 processes" "$(tagged_pids | wc -l)" \
  || fail "job running" ">= 5 processes" "$(tagged_pids | wc -l)"
guards() { local p; for p in $(tagged_pids); do [ "$(cat /proc/$p/comm 2>/dev/null)" = mtrain-guard ] && echo "$p"; done; }
guard=$(guards)
[ "$(echo $guard | wc -w)" = 1 ] && ok "one guardian process (mtrain-guard)" "1" "pid $guard" \
  || fail "one guardian process (mtrain-guard)" "1" "${guard:-none}"
ranks=$(sed -n 's/.*rank [0-9] pid \([0-9]*\).*/\1/p' "$WORK/out")
child=$(sed -n 's/.*child \([0-9]*\).*/\1/p' "$WORK/out")
kill -KILL "$launcher"
wait "$launcher" 2>/dev/null
alive() { local p n=0; for p in "$@"; do kill -0 "$p" 2>/dev/null && n=$((n + 1)); done; echo $n; }
gone() { [ "$(alive "$@")" = 0 ]; }
wait_for 10 gone $ranks
[ "$(alive $ranks)" = 0 ] && ok "every rank dies with the launcher" "0 of 3 alive" "0" \
  || fail "every rank dies with the launcher" "0 of 3 alive" "$(alive $ranks)"
wait_for 5 gone $child
[ "$(alive $child)" = 0 ] && ok "a rank's own child dies too" "gone" "gone" \
  || fail "a rank's own child dies too" "gone" "pid $child alive: $(tr '\0' ' ' </proc/$child/cmdline)"
[ -n "$guard" ] && { wait_for 10 gone $guard; [ "$(alive $guard)" = 0 ] && ok "the guardian exits after its work" "gone" "gone" \
  || fail "the guardian exits after its work" "gone" "pid $guard alive"; }
no_survivors 10
finish
