#!/usr/bin/env bash
# Preemption across processes: SIGUSR1 to ONE rank of a 2-rank bundled-trainer job → both ranks
# stop at the same step with a checkpoint (exit 128+10), summary.json says stopped_by, the
# heartbeat file is kept fresh, and a rerun with --resume auto finishes from that checkpoint.
. "$(dirname "$0")/../lib.sh"
[ -x "${MTRAIN_BIN_DIR}/mtrain-worker" ] || skip "mtrain-worker is not built (LibTorch build off)"
export TMPDIR="$WORK"  # the launcher's run folder (job.json) lands here: it marks our workers
export MTRAIN_HEARTBEAT_FILE="$WORK/heartbeat"
small=(--set model.n_layer=2 --set model.n_embd=32 --set model.block_size=16 --set train.batch_size=4
       --set train.log_interval=5 --set data.num_samples=100000)
timeout -k 5 180 "$MTRAIN" launch --nproc-per-node 2 --strategy ddp --max-steps 1000000 \
  --master-port auto "${small[@]}" --work-dir "$WORK/wd" >"$WORK/run" 2>&1 &
launcher=$!
for _ in $(seq 600); do grep -q "Iter(train) \[ *10/" "$WORK/run" && break; sleep 0.1; done
grep -q "Iter(train) \[ *10/" "$WORK/run" && ok "training reached step 10" || { fail "training did not start"; cat "$WORK/run"; }
rank1=""
for p in $(pgrep -f "mtrain-worker --job $WORK"); do
  tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "RANK=1" && rank1=$p
done
[ -n "$rank1" ] && ok "found rank 1 (pid $rank1)" || fail "rank 1 not found"
kill -USR1 "$rank1"
timeout 120 tail --pid=$launcher -f /dev/null
wait $launcher; rc=$?
expect_rc 138 "job stopped by SIGUSR1 on one rank → 128+10"
expect_in "$WORK/run" "preempted by SIGUSR1 at step"
expect_in "$WORK/run" "rerun with --resume auto"
step=$("$PY" -c 'import json,sys; s=json.load(open(sys.argv[1])); assert s["stopped_by"]=="SIGUSR1", s; print(s["steps"])' "$WORK/wd/summary.json") \
  && ok "summary.json: stopped_by SIGUSR1 at step $step" || fail "summary.json lacks stopped_by"
[ -f "$WORK/wd/checkpoints/step_$step/COMPLETE" ] && ok "checkpoint step_$step is complete" || fail "no checkpoint at step $step"
ls "$WORK/wd/checkpoints/step_$step/shard_rank1.pt" >/dev/null 2>&1 && ok "both ranks wrote their shard" || fail "rank 1's shard is missing"
[ -f "$WORK/heartbeat" ] && ok "heartbeat file written" || fail "no heartbeat file"
no_survivors "mtrain-worker --job $WORK"

target=$((step + 5))
run_mtrain "$WORK/rerun" launch --nproc-per-node 2 --strategy ddp --max-steps $target --master-port auto \
  "${small[@]}" --work-dir "$WORK/wd" --resume auto
expect_rc 0 "rerun with --resume auto"
expect_in "$WORK/rerun" "Resumed from $WORK/wd/checkpoints/step_$step at step $step"
"$PY" -c 'import json,sys; s=json.load(open(sys.argv[1])); assert s["steps"]==int(sys.argv[2]) and "stopped_by" not in s, s' \
  "$WORK/wd/summary.json" "$target" && ok "the rerun finished at step $target" || fail "rerun summary"

# The Slurm way: SIGUSR1 to the launcher, which forwards it to every rank as a notice.
"$MTRAIN" launch --nproc-per-node 2 --strategy ddp --max-steps 1000000 --master-port auto \
  "${small[@]}" --work-dir "$WORK/wd2" >"$WORK/run2" 2>&1 &
launcher=$!
bound "$launcher" 150
for _ in $(seq 600); do grep -q "Iter(train) \[ *10/" "$WORK/run2" && break; sleep 0.1; done
kill -USR1 $launcher
wait $launcher; rc=$?; kill $watchdog 2>/dev/null
expect_rc 138 "SIGUSR1 to the launcher → every rank checkpoints and exits 138"
expect_in "$WORK/run2" "preempted by SIGUSR1 at step"
"$PY" -c 'import json,sys; s=json.load(open(sys.argv[1])); assert s["stopped_by"]=="SIGUSR1"' "$WORK/wd2/summary.json" \
  && ok "summary.json of the launcher-signalled job says stopped_by SIGUSR1" || fail "summary.json (launcher signal)"
no_survivors "mtrain-worker --job $WORK"
finish
