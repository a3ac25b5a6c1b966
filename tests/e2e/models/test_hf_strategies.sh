#!/usr/bin/env bash
# transformers models under every strategy, equal to PyTorch (issue 44 items 1 and 2), one script
# for the three families so that transformers is imported twice, not six times (CI's budget):
# GPT2LMHeadModel (tied embeddings), LlamaForCausalLM (untied head) and BertForMaskedLM (decoder
# weight tied to the word embeddings, its bias to the head's; masked-LM targets: the masked tokens'
# ids, -100 elsewhere, as BertForMaskedLM's own labels), tiny configs (hf_models.py: 2 layers,
# hidden 32, vocab 64, 16 tokens, every dropout 0.0), wrapped to return the logits and traced. Each
# trains 5 steps (global batch 6, rows in file order) under ddp x1, fsdp x2 (units: the layer
# class) and zero3 x3, with SGD and with AdamW, and must end with the weights of PyTorch's own eager
# training of the same model on the same batches: within 1e-6 (SGD), 1e-4 (AdamW). The tied
# references keep one tensor under two names, so a tie mtrain broke would differ by far more.
# GPT-2 with every dropout 0.1 trains as the pair of traces (model.path after .train(),
# model.eval_path after .eval(), one model object) under the same strategies: dropout's masks are
# random, so the check is PyTorch's eval-mode loss of mtrain's model.pt on the validation file,
# which must equal the validation loss mtrain logged, and a training loss that falls.
# BERT with 1 to 5 masked tokens per row under ddp x3 equals PyTorch's DDP loss (the mean of the
# ranks' means), which the data makes differ from the global batch's mean, and with
# train.average_tokens_across_ranks under zero3 x3 (2 micro-batches) the global mean; GPT-2 on left-padded
# rows with the attention mask in its input (docs/your-model.md's MaskedWrapper) under fsdp x2
# equals PyTorch's, which the mask changes. Each run prints its max |d| and seconds. BERT under
# ZeRO-3 found the engine's defect of an operator reading two units (sharded_engine.hpp).
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../trainer/port_retry.sh"
[ -x "${MTRAIN_BIN_DIR}/mtrain-worker" ] || skip "mtrain-worker is not built (LibTorch build off)"
PEERS=${MTRAIN_PEERS_PYTHON:-}
[ -n "$PEERS" ] && "$PEERS" -c 'import sys, torch, transformers; sys.exit(int(torch.__version__.split(".")[0]) < 2)' \
  2>/dev/null || skip "no PyTorch 2.x with transformers (scripts/python-env makes .venv from python/requirements.txt)"
HF="$(dirname "$0")/hf_models.py"

# The traced models, their data and PyTorch's references in $WORK/KIND: one Python start.
if "$PEERS" -W ignore "$HF" make "$WORK" gpt2 llama bert bert_ragged gpt2_padded gpt2_dropout >"$WORK/make.log" 2>&1; then
  grep -E "reference losses|differ by" "$WORK/make.log" | sed 's/^/    /'
else
  fail "the traced models and PyTorch's references"
  sed 's/^/    | /' "$WORK/make.log"
  finish
fi

hf_train() {  # KIND STRATEGY WORLD UNIT WORK_DIR ARGS...: one mtrain run (BATCH rows per micro-batch, default
  # 6 / WORLD), its seconds in $secs
  local kind=$1 strategy=$2 world=$3 unit=$4 wd=$5 t0=$SECONDS
  shift 5
  retry_port_clash "$WORK/out" launch --nproc-per-node "$world" --strategy "$strategy" --master-port 0 \
    --batch-size "${BATCH:-$((6 / world))}" --model torchscript --model-path "$WORK/$kind/net.pt" --data tensors \
    --data-path "$WORK/$kind/data.pt" --set model.loss=lm_cross_entropy --set train.threads=1 \
    --set data.shuffle=false --set sched.name=constant --set fsdp.wrap_module_types="$unit" \
    --set zero.stage3_param_persistence_threshold=0 --work-dir "$wd" "$@"
  secs=$((SECONDS - t0))
  [ "$rc" -eq 0 ] && return 0
  fail "$kind $strategy x$world $*: exit $rc"
  grep -m3 "error" "$WORK/out" | sed 's/^/    | /'
  return 1
}

# Dropout 0.0: SGD and AdamW under each strategy; the lines of runs.tsv are compared at the end.
: >"$WORK/runs.tsv"
for ku in "gpt2 GPT2Block" "llama LlamaDecoderLayer" "bert BertLayer"; do
  read -r kind unit <<<"$ku"
  for opt in sgd adamw; do
    tol=1e-6 optim=(--set optim.name=sgd --set optim.lr=0.1 --set optim.weight_decay=0)
    [ "$opt" = adamw ] && tol=1e-4 optim=(--set optim.name=adamw --set optim.lr=0.001 --set optim.weight_decay=0.01
      --set optim.beta1=0.9 --set optim.beta2=0.999 --set optim.eps=1e-8)
    for sw in "ddp 1" "fsdp 2" "zero3 3"; do
      read -r strategy world <<<"$sw"
      wd="$WORK/wd-$kind-$opt-$strategy"
      hf_train "$kind" "$strategy" "$world" "$unit" "$wd" --max-steps 5 --set data.val_fraction=0 "${optim[@]}" ||
        continue
      printf '%s\t%s\t%s\t%s\t%s\n' "$kind $opt $strategy x$world (${secs} s)" "$WORK/$kind/ref_$opt.pt" \
        "$wd/model.pt" "$tol" "$WORK/$kind/net.pt" >>"$WORK/runs.tsv"
    done
  done
done

# Masked LM with 1 to 5 masked tokens per row: each rank averages over its own counted targets and
# the ranks' gradients are averaged, as DDP with PyTorch's mean loss does (docs/your-model.md), so
# the reference is PyTorch's training with that loss at world 3, not the global batch's mean.
if hf_train bert_ragged ddp 3 BertLayer "$WORK/wd-bert_ragged" --max-steps 5 --set data.val_fraction=0 \
  --set optim.name=sgd --set optim.lr=0.1 --set optim.weight_decay=0; then
  printf '%s\t%s\t%s\t%s\t%s\n' "bert, 1 to 5 masked tokens per row, sgd ddp x3 (${secs} s)" \
    "$WORK/bert_ragged/ref_sgd.pt" "$WORK/wd-bert_ragged/model.pt" 1e-6 "$WORK/bert_ragged/net.pt" >>"$WORK/runs.tsv"
fi
# With train.average_tokens_across_ranks the step's loss is the mean over every masked token of the
# global batch, as PyTorch's training at world 1 (and Hugging Face's Trainer) computes it: under
# zero3 x3 with 1 row x 2 micro-batches per rank, so that micro-batches and ranks both hold unequal
# counts.
if BATCH=1 hf_train bert_ragged zero3 3 BertLayer "$WORK/wd-bert_tokens" --max-steps 5 --set data.val_fraction=0 \
  --set optim.name=sgd --set optim.lr=0.1 --set optim.weight_decay=0 --set train.average_tokens_across_ranks=true \
  --set train.grad_accum=2; then
  printf '%s\t%s\t%s\t%s\t%s\n' "bert, 1 to 5 masked tokens per row, average_tokens_across_ranks, sgd zero3 x3, 2 micro-batches (${secs} s)" \
    "$WORK/bert_ragged/ref_global.pt" "$WORK/wd-bert_tokens/model.pt" 1e-6 "$WORK/bert_ragged/net.pt" >>"$WORK/runs.tsv"
fi

# Padded data (docs/your-model.md's recipe): GPT-2 wrapped to take [B, 2, T], the ids and the
# attention mask, on left-padded rows with -100 targets at the padding, under fsdp x2.
if hf_train gpt2_padded fsdp 2 GPT2Block "$WORK/wd-gpt2_padded" --max-steps 5 --set data.val_fraction=0 \
  --set optim.name=sgd --set optim.lr=0.1 --set optim.weight_decay=0; then
  printf '%s\t%s\t%s\t%s\t%s\n' "gpt2, left-padded rows and the attention mask, sgd fsdp x2 (${secs} s)" \
    "$WORK/gpt2_padded/ref_sgd.pt" "$WORK/wd-gpt2_padded/model.pt" 1e-6 "$WORK/gpt2_padded/net.pt" >>"$WORK/runs.tsv"
fi

# GPT-2 with every dropout 0.1: the pair, 8 AdamW steps on learnable tokens, validated each step.
kind=gpt2_dropout
: >"$WORK/pairs.tsv"
for sw in "ddp 1" "fsdp 2" "zero3 3"; do
  read -r strategy world <<<"$sw"
  wd="$WORK/wd-$kind-$strategy"
  hf_train "$kind" "$strategy" "$world" GPT2Block "$wd" --max-steps 8 --set model.eval_path="$WORK/$kind/net_eval.pt" \
    --set data.val_path="$WORK/$kind/val.pt" --set train.log_interval=1 --set optim.name=adamw \
    --set optim.lr=0.01 || continue
  printf '%s\t%s\n' "gpt2 dropout 0.1, the eval pair, adamw $strategy x$world (${secs} s)" "$wd" >>"$WORK/pairs.tsv"
done

# Every comparison in one Python start.
"$PEERS" -W ignore "$HF" check "$WORK/runs.tsv" "$WORK/$kind" "$WORK/pairs.tsv" 2>&1
fails=$((fails + $?))
n=$(($(wc -l <"$WORK/runs.tsv") + $(wc -l <"$WORK/pairs.tsv")))
[ "$n" -eq 24 ] && ok "24 runs compared" || fail "$n runs of 24 compared"
finish
