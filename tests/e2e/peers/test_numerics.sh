#!/usr/bin/env bash
# Issue 28, item 4: mtrain's trainer against
# PyTorch 2.x's own distributed training of the same TorchScript model and data. At world 2 and 3,
# PyTorch DDP (Gloo), FSDP2 (fully_shard per Block, then the root) and DeepSpeed ZeRO-1/2/3 — each
# under the real torchrun, train_reference.py — and `mtrain launch` with ddp, fsdp, zero1, zero2
# and zero3 train 10 steps from the same net.pt on the same rows (global batch 6, shuffle off),
# with SGD and with AdamW (each reference launch trains both, one after the other);
# the final weights must agree: SGD within 1e-6, AdamW within 1e-4. Pairs: mtrain ddp ~ DDP; mtrain
# fsdp and zero3 ~ FSDP2; mtrain zeroN ~ DeepSpeed ZeRO-N. Rows go to $NUMERICS_TABLE when set
# (TSV: opt, world, mtrain strategy, peer, largest difference) for docs/peers.md.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/peers_lib.sh"
. "$(dirname "$0")/../trainer/port_retry.sh"
[ -x "${MTRAIN_BIN_DIR}/mtrain-worker" ] || skip "mtrain-worker is not built (LibTorch build off)"
need_peers torch
"$PPY" -c 'import torch, sys; sys.exit(not torch.__version__.startswith("2."))' ||
  skip "the peers environment's torch is not 2.x"
GOLDEN="$PEERS_DIR/../trainer/torchscript_golden.py"
"$PPY" -W ignore "$GOLDEN" make-lm "$WORK" || { fail "the model and data (torchscript_golden.py make-lm)"; finish; }
peers=(ddp fsdp2)
if "$PPY" -c 'import deepspeed' >/dev/null 2>&1; then peers+=(zero1 zero2 zero3)
else echo "note: no DeepSpeed in the peers environment: ZeRO-1/2/3 references not run"; fi
# mtrain strategy:reference pairs compared.
pairs=(ddp:ddp fsdp:fsdp2 zero3:fsdp2 zero1:zero1 zero2:zero2 zero3:zero3)

for world in 2 3; do
  port=$(free_port)
  for peer in "${peers[@]}"; do
    ref_out=$WORK/ref_${peer}_$world.out
    run_peer "$ref_out" 300 torchrun --nproc_per_node "$world" --master_port "$port" \
      "$PEERS_DIR/train_reference.py" "$WORK" "$peer" sgd,adamw "$WORK/peer_${peer}_$world"
    expect_rc 0 "PyTorch $peer sgd,adamw world $world (torchrun)"
    # On failure: the first error lines (an abort's cause comes before torchrun's long report), then the end.
    [ "$rc" -eq 0 ] || { grep -m 8 -E "terminate called|Fatal Python error|Error|error:" "$ref_out"
      grep -v Warning "$ref_out" | tail -15; } | sed 's/^/    | /'
  done
  for OPT in sgd adamw; do
    if [ "$OPT" = sgd ]; then lr=0.1; tol=1e-6; else lr=1e-3; tol=1e-4; fi
    for strategy in ddp fsdp zero1 zero2 zero3; do
      wd="$WORK/wd-$OPT-$strategy-$world"
      extra=()
      [ "$strategy" = zero3 ] && extra=(--set zero.stage3_param_persistence_threshold=0)
      [ "$strategy" = fsdp ] && extra=(--set fsdp.wrap_module_types=Block)
      retry_port_clash "$WORK/out" launch --nproc-per-node "$world" --strategy "$strategy" --master-port 0 \
        --max-steps 10 --batch-size $((6 / world)) --work-dir "$wd" --model torchscript --model-path "$WORK/net.pt" \
        --data tensors --data-path "$WORK/data.pt" --set data.shuffle=false --set data.val_fraction=0 \
        --set sched.name=constant --set optim.name="$OPT" --set optim.lr="$lr" --set optim.weight_decay=0 \
        --set train.threads=1 --set train.log_interval=5 "${extra[@]}"
      if [ "$rc" -ne 0 ]; then
        fail "mtrain $strategy $OPT world $world: exit $rc"; tail -20 "$WORK/out" | sed 's/^/    | /'; continue
      fi
      for pair in "${pairs[@]}"; do
        [ "${pair%%:*}" = "$strategy" ] || continue
        peer=${pair#*:}
        ref="$WORK/peer_${peer}_${world}_$OPT.pt"
        [ -f "$ref" ] || continue
        if msg=$("$PPY" -W ignore "$GOLDEN" compare "$ref" "$wd/model.pt" "$tol" 2>&1); then
          ok "$OPT world $world: mtrain $strategy vs PyTorch $peer: $msg"
        else
          fail "$OPT world $world: mtrain $strategy vs PyTorch $peer: $msg"
        fi
        [ -n "${NUMERICS_TABLE:-}" ] && printf '%s\t%s\t%s\t%s\t%s\n' "$OPT" "$world" "$strategy" "$peer" \
          "$(echo "$msg" | sed -n 's/^max abs diff \([^ ]*\).*/\1/p')" >>"$NUMERICS_TABLE"
      done
    done
  done
done
finish
