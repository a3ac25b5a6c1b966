#!/usr/bin/env bash
# Hugging Face models under every strategy, equal to PyTorch (issue 44 item 2): transformers'
# GPT2LMHeadModel (tied embeddings), LlamaForCausalLM and BertForMaskedLM (tied decoder weight and
# bias; targets -100 where a token is not masked), tiny configs with every dropout 0.0, wrapped to
# return the logits and traced (hf_models.py). Each trains 5 SGD steps (global batch 6, rows in
# file order) under ddp x1, fsdp x2 (units: the layer class) and zero3 x3 and must end with the
# weights of PyTorch's own eager training of the same model on the same batches, within 1e-6.
# BERT under ZeRO-3 found a defect: aten::linear read the decoder's tied weight (the embedding's
# unit) and its bias (the head's unit), and the gather of one released the other while the
# operator ran (sharded_engine.hpp: every unit an operator reads is held until it returns).
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../trainer/port_retry.sh"
[ -x "${MTRAIN_BIN_DIR}/mtrain-worker" ] || skip "mtrain-worker is not built (LibTorch build off)"
PEERS=${MTRAIN_PEERS_PYTHON:-}
[ -n "$PEERS" ] && "$PEERS" -c 'import torch, transformers' 2>/dev/null ||
  skip "no PyTorch 2.x with transformers (scripts/python-env makes .venv from python/requirements.txt)"
"$PEERS" -c 'import sys, torch; sys.exit(int(torch.__version__.split(".")[0]) < 2)' || skip "transformers needs PyTorch 2.x"
HF="$(dirname "$0")/hf_models.py"
"$PEERS" -W ignore "$HF" make "$WORK" >"$WORK/make.log" 2>&1 || { fail "the PyTorch references"; sed 's/^/    | /' "$WORK/make.log"; finish; }
grep "reference losses" "$WORK/make.log" | sed 's/^/    /'

declare -A unit=([gpt2]=GPT2Block [llama]=LlamaDecoderLayer [bert]=BertLayer)
for kind in gpt2 llama bert; do
  for sw in "ddp 1" "fsdp 2" "zero3 3"; do
    set -- $sw
    strategy=$1 world=$2
    wd="$WORK/wd-$kind-$strategy"
    retry_port_clash "$WORK/out" launch --nproc-per-node "$world" --strategy "$strategy" --master-port 0 \
      --batch-size $((6 / world)) --max-steps 5 --model torchscript --model-path "$WORK/$kind/net.pt" \
      --data tensors --data-path "$WORK/$kind/data.pt" --set model.loss=lm_cross_entropy --set train.threads=1 \
      --set data.shuffle=false --set data.val_fraction=0 --set sched.name=constant --set optim.name=sgd \
      --set optim.lr=0.1 --set optim.weight_decay=0 --set fsdp.wrap_module_types="${unit[$kind]}" \
      --set zero.stage3_param_persistence_threshold=0 --work-dir "$wd"
    what="$kind $strategy x$world"
    if [ "$rc" -ne 0 ]; then fail "$what: exit $rc"; grep -m3 "error" "$WORK/out" | sed 's/^/    | /'; continue; fi
    if msg=$("$PEERS" -W ignore "$HF" compare "$WORK/$kind/ref_sgd.pt" "$wd/model.pt" 1e-6 2>&1); then
      ok "$what: $msg"
    else
      fail "$what: $msg"
    fi
  done
done
finish
