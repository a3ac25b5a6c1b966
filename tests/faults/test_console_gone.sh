#!/usr/bin/env bash
# Scenario (issue 17 items 4 and 14): the launcher's console goes away (`mtrain launch … | head`).
# SIGPIPE used to kill the launcher (exit 141) and with it every rank. Now the launcher ignores
# SIGPIPE: training goes on, rank output still reaches the --log-dir files, and the launcher
# says so once on stderr — which may be gone as well (`2>&1 | head`), and that must not kill it.
. "$(dirname "$0")/lib.sh"
rank_prog='i=0; while [ $i -lt 60 ]; do echo "line $i of rank $RANK"; i=$((i + 1)); sleep 0.03; done; touch "$DONE.$RANK"'
# 1. stdout to `head -3`, stderr kept.
set -o pipefail
DONE=$WORK/done1 timeout -k 5 60 "${tagged[@]}" "$MTRAIN" launch --nproc-per-node 2 --master-port 0 --tee \
  --log-dir "$WORK/logs" --job-id gone1 -- sh -c "$rank_prog" 2>"$WORK/err1" | head -3 >/dev/null
st=("${PIPESTATUS[@]}"); rc=${st[0]}
expect_rc 0 "stdout piped to head -3"
[ -e "$WORK/done1.0" ] && [ -e "$WORK/done1.1" ] && ok "ranks trained to the end" "both finished" "both finished" \
  || fail "ranks trained to the end" "both finished" "$(ls "$WORK" | grep done1 | tr '\n' ' ')"
grep -q "line 59 of rank 1" "$WORK/logs/gone1/attempt_0/1/stdout.log" 2>/dev/null \
  && ok "rank output still reaches the log files" "line 59 in rank 1's stdout.log" "present" \
  || fail "rank output still reaches the log files" "line 59 in rank 1's stdout.log" "absent"
n=$(grep -c "console" "$WORK/err1")
[ "$n" = 1 ] && ok "said once on stderr that the console is gone" "1 notice" "$n" \
  || { fail "said once on stderr that the console is gone" "1 notice" "$n"; sed 's/^/    | /' "$WORK/err1" | tail; }
# 2. stdout and stderr both to `head -3`: nothing can be said, and the launcher still lives.
DONE=$WORK/done2 timeout -k 5 60 "${tagged[@]}" "$MTRAIN" launch --nproc-per-node 2 --master-port 0 \
  --job-id gone2 -- sh -c "$rank_prog" 2>&1 | head -3 >/dev/null
st=("${PIPESTATUS[@]}"); rc=${st[0]}
expect_rc 0 "stdout and stderr piped to head -3"
[ -e "$WORK/done2.0" ] && [ -e "$WORK/done2.1" ] && ok "ranks trained to the end (no console at all)" "both finished" "both finished" \
  || fail "ranks trained to the end (no console at all)" "both finished" "$(ls "$WORK" | grep done2 | tr '\n' ' ')"
# 3. The run folder of a launcher whose console went away is removed as usual (item 14).
mkdir -p "$WORK/tmp"
DONE=$WORK/done3 TMPDIR=$WORK/tmp timeout -k 5 60 "${tagged[@]}" "$MTRAIN" launch --nproc-per-node 1 --master-port 0 \
  --job-id gone3 -- sh -c "$rank_prog" 2>&1 | head -1 >/dev/null
left=$(ls "$WORK/tmp")
[ -z "$left" ] && ok "no run folder left in TMPDIR" "none" "none" || fail "no run folder left in TMPDIR" "none" "$left"
no_survivors
finish
