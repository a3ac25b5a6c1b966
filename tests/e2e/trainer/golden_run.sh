# Sourced by test_torchscript_golden_{sgd,adamw}.sh with OPT set. The golden test of TorchScript training (issue 14): a small transformer defined in Python is
# scripted and saved; plain PyTorch trains it 10 steps (world 1, rows in file order) with SGD and
# with AdamW; mtrain trains the same file from a `tensors` data file with ddp, zero2, zero3 and
# fsdp at world 1, 2 and 3 (global batch 6 every time, shuffle off, constant lr). Final weights
# (model.pt, and model.scripted.pt loaded back with torch.jit.load) must match: SGD within 1e-6,
# AdamW (lr 1e-3) within 1e-4 — also for a run checkpointed under fsdp at world 2 and resumed
# under zero3 at world 3.
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
. "$(dirname "${BASH_SOURCE[0]}")/port_retry.sh"
[ -x "${MTRAIN_BIN_DIR}/mtrain-worker" ] || skip "mtrain-worker is not built (LibTorch build off)"
need_worker_torch
GOLDEN="$(dirname "${BASH_SOURCE[0]}")/torchscript_golden.py"
"$TORCH_PY" -W ignore "$GOLDEN" make-lm "$WORK" || { fail "the Python reference"; finish; }

for opt in $OPT; do
  if [ "$opt" = sgd ]; then lr=0.1; tol=1e-6; else lr=1e-3; tol=1e-4; fi
  common=(--master-port 0 --model torchscript --model-path "$WORK/net.pt" --data tensors
    --data-path "$WORK/data.pt" --set data.shuffle=false --set data.val_fraction=0
    --set sched.name=constant --set optim.name="$opt" --set optim.lr="$lr" --set optim.weight_decay=0
    --set train.threads=1 --set train.log_interval=5)
  for world in 1 2 3; do
    for strategy in ddp zero2 zero3 fsdp; do
      wd="$WORK/wd-$opt-$strategy-$world"
      # Units that are really released and gathered on use: no persistent ZeRO-3 unit, and FSDP
      # units per Block (FULL_SHARD).
      extra=(--set zero.stage3_param_persistence_threshold=0)
      [ "$strategy" = fsdp ] && extra=(--set fsdp.wrap_module_types=Block)
      [ "$strategy" = zero3 ] || [ "$strategy" = fsdp ] || extra=()
      retry_port_clash "$WORK/out" launch --nproc-per-node "$world" --strategy "$strategy" \
        --max-steps 10 --batch-size $((6 / world)) --work-dir "$wd" "${common[@]}" "${extra[@]}"
      if [ "$rc" -ne 0 ]; then
        fail "$opt $strategy world $world: exit $rc"; sed 's/^/    | /' "$WORK/out" | tail -20; continue
      fi
      for f in model.pt model.scripted.pt; do
        if msg=$("$TORCH_PY" -W ignore "$GOLDEN" compare "$WORK/ref_$opt.pt" "$wd/$f" "$tol" 2>&1); then
          ok "$opt $strategy world $world $f: $msg"
        else
          fail "$opt $strategy world $world $f: $msg"
        fi
      done
    done
  done
  # Checkpoint and resume across strategies and world sizes: 5 steps fsdp at world 2, then
  # zero3 at world 3 resumes to step 10 from that checkpoint; the result is still PyTorch's.
  wd="$WORK/wd-$opt-resumed"
  common+=(--work-dir "$wd")
  retry_port_clash "$WORK/out" launch --nproc-per-node 2 --strategy fsdp --max-steps 5 --batch-size 3 \
    "${common[@]}" --set fsdp.wrap_module_types=Block
  expect_rc 0 "$opt fsdp world 2, steps 1-5"
  retry_port_clash "$WORK/out" launch --nproc-per-node 3 --strategy zero3 --max-steps 10 --batch-size 2 \
    --resume auto "${common[@]}"
  expect_rc 0 "$opt zero3 world 3 resumed, steps 6-10"
  expect_in "$WORK/out" "at step 5 (written by world size 2)"
  if msg=$("$TORCH_PY" -W ignore "$GOLDEN" compare "$WORK/ref_$opt.pt" "$wd/model.scripted.pt" "$tol" 2>&1); then
    ok "$opt resumed across strategies and world sizes: $msg"
  else
    fail "$opt resumed across strategies and world sizes: $msg"
  fi
done
finish
