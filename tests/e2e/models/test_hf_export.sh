#!/usr/bin/env bash
# Hugging Face in and out (issue 44 item 4), with transformers from the peers environment:
#  * a tiny GPT2LMHeadModel (2 layers, n_embd 32, vocab 128, every dropout 0.0, tied embeddings)
#    wrapped to return the logits (its attribute `model`) and traced, trains 3 steps under ddp x1
#    (the trace's dropouts with p = 0 are accepted, item 1);
#  * `mtrain checkpoint consolidate CKPT -o DIR --format hf --hf-config config.json` writes a folder
#    AutoModelForCausalLM.from_pretrained reads with no missing or unexpected key (the wrapper's
#    `model.` stripped, lm_head.weight left out as tied), whose logits equal the wrapper's loaded
#    from mtrain's model.safetensors (max |d| printed, bound 1e-5);
#  * the same folder at the end of training with model.hf_config (<work_dir>/hf/);
#  * the reverse: the model.safetensors save_pretrained writes (HF names, no lm_head.weight) is
#    taken as model.init: 0 steps give back its tensors under the wrapper's names, lm_head.weight
#    filled from its twin.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../trainer/port_retry.sh"
[ -x "${MTRAIN_BIN_DIR}/mtrain-worker" ] || skip "mtrain-worker is not built (LibTorch build off)"
PEERS=${MTRAIN_PEERS_PYTHON:-}
[ -n "$PEERS" ] && "$PEERS" -c 'import torch, transformers, safetensors' 2>/dev/null ||
  skip "no PyTorch 2.x with transformers (scripts/python-env makes .venv from python/requirements.txt)"

cat >"$WORK/gpt2.py" <<'PYEOF'
import sys, warnings, torch
import torch.nn as nn
from transformers import GPT2Config, GPT2LMHeadModel
warnings.simplefilter("ignore")
def config():
    return GPT2Config(n_layer=2, n_embd=32, n_head=2, vocab_size=128, n_positions=16, resid_pdrop=0.0,
                      embd_pdrop=0.0, attn_pdrop=0.0, tie_word_embeddings=True, use_cache=False, bos_token_id=0, eos_token_id=0)
class Wrapper(nn.Module):  # what the user traces: one Tensor in, the logits out
    def __init__(self, model):
        super().__init__()
        self.model = model
    def forward(self, ids):
        return self.model(input_ids=ids, use_cache=False).logits
def hf(seed):
    torch.manual_seed(seed)
    return GPT2LMHeadModel._from_config(config(), attn_implementation="eager")
if __name__ == "__main__":
    d = sys.argv[1]
    m = hf(0)
    m.config.save_pretrained(f"{d}/cfg")  # config.json
    hf(1).save_pretrained(f"{d}/pretrained")  # the reverse: HF names, lm_head.weight left out
    w = Wrapper(m).train()
    ids = torch.randint(0, 128, (4, 16))
    torch.jit.save(torch.jit.trace(w, (ids,), check_trace=False), f"{d}/gpt2.pt")
    g = torch.Generator().manual_seed(0)
    x = torch.randint(0, 128, (64, 16), generator=g)
    torch.save({"input": x, "target": torch.roll(x, -1, 1)}, f"{d}/data.pt")
PYEOF
( cd "$WORK" && "$PEERS" gpt2.py "$WORK" ) >"$WORK/make" 2>&1 || { fail "making the traced GPT-2"; cat "$WORK/make"; finish; }
[ -s "$WORK/cfg/config.json" ] && [ -s "$WORK/pretrained/model.safetensors" ] ||
  { fail "the test's HF files"; ls -R "$WORK"; finish; }

train() {  # NAME ARGS...
  local name=$1; shift
  retry_port_clash "$WORK/out-$name" launch --nproc-per-node 1 --strategy ddp --master-port 0 --batch-size 4 \
    --model torchscript --model-path "$WORK/gpt2.pt" --data tensors --data-path "$WORK/data.pt" \
    --set model.loss=lm_cross_entropy --set model.trust_code=true --set train.threads=1 \
    --work-dir "$WORK/wd-$name" "$@"
}
train main --max-steps 3 --set checkpoint.interval=3 --set optim.lr=0.05 \
  --set model.hf_config="$WORK/cfg/config.json"
expect_rc 0 "the traced GPT2LMHeadModel (dropouts 0.0, tied) trains 3 steps under ddp x1"
[ "$rc" -eq 0 ] || { sed 's/^/    | /' "$WORK/out-main" | tail -20; finish; }
ck=$(ls -d "$WORK"/wd-main/checkpoints/step_* | tail -1)

run_mtrain "$WORK/cons" checkpoint consolidate "$ck" -o "$WORK/hf" --format hf --hf-config "$WORK/cfg/config.json"
expect_rc 0 "consolidate --format hf"
expect_in "$WORK/cons" "names without 'model.'"
cmp -s "$WORK/cfg/config.json" "$WORK/hf/config.json" && ok "config.json copied as it is" || fail "config.json differs"
run_mtrain "$WORK/cons2" checkpoint consolidate "$ck" -o "$WORK/hf2" --format hf
expect_rc 2 "--format hf without --hf-config is refused"
expect_in "$WORK/cons2" "--format hf needs --hf-config"
run_mtrain "$WORK/cons3" checkpoint consolidate "$ck" -o "$WORK/hf3" --format hf --hf-config "$WORK/cfg/config.json" \
  --hf-prefix transformer
expect_rc 2 "--hf-prefix that the names lack is refused"
expect_in "$WORK/cons3" "do not start with it"

cat >"$WORK/check.py" <<'PYEOF'
import sys, torch
from safetensors.torch import load_file
from transformers import AutoModelForCausalLM
sys.path.insert(0, sys.argv[1])
from gpt2 import Wrapper, hf
w = Wrapper(hf(7)).eval()
w.load_state_dict(load_file(f"{sys.argv[1]}/wd-main/model.safetensors"))  # mtrain's, wrapper names
m, info = AutoModelForCausalLM.from_pretrained(sys.argv[2], output_loading_info=True,
                                               attn_implementation="eager")
m.eval()
bad = {k: v for k, v in info.items() if v}
print("loading info:", bad or "no missing, unexpected or mismatched keys")
ids = torch.randint(0, 128, (3, 16), generator=torch.Generator().manual_seed(3))
with torch.no_grad():
    d = (m(input_ids=ids).logits - w(ids)).abs().max().item()
print(f"logits max |d| {d:.3g}")
tied = m.lm_head.weight.data_ptr() == m.transformer.wte.weight.data_ptr()
print("tied:", tied)
sys.exit(0 if not bad and d <= 1e-5 and tied else 1)
PYEOF
for dir in hf wd-main/hf; do  # consolidate's, and the end of training's (model.hf_config)
  if "$PEERS" "$WORK/check.py" "$WORK" "$WORK/$dir" >"$WORK/check" 2>&1; then
    ok "from_pretrained($dir): $(grep -E '^(loading info|logits|tied)' "$WORK/check" | tr '\n' ';')"
  else
    fail "from_pretrained($dir)"; sed 's/^/    | /' "$WORK/check"
  fi
done

# The reverse: save_pretrained's model.safetensors as model.init, 0 steps.
train init --max-steps 0 --set model.init="$WORK/pretrained/model.safetensors"
expect_rc 0 "a Hugging Face model.safetensors as model.init"
expect_in "$WORK/out-init" "read with it added back"
expect_in "$WORK/out-init" "model.lm_head.weight"
cat >"$WORK/init.py" <<'PYEOF'
import sys
from safetensors.torch import load_file
src = load_file(f"{sys.argv[1]}/pretrained/model.safetensors")
got = load_file(f"{sys.argv[1]}/wd-init/model.safetensors")
assert "lm_head.weight" not in src
worst = max((got["model." + k] - v).abs().max().item() for k, v in src.items())
worst = max(worst, (got["model.lm_head.weight"] - src["transformer.wte.weight"]).abs().max().item())
print(f"{len(src)} tensors, max |d| {worst:.3g}")
sys.exit(0 if worst == 0.0 else 1)
PYEOF
if "$PEERS" "$WORK/init.py" "$WORK" >"$WORK/init" 2>&1; then
  ok "model.init of HF names: the wrapper's weights equal the file's, lm_head from its twin ($(tail -1 "$WORK/init"))"
else
  fail "model.init of HF names"; sed 's/^/    | /' "$WORK/init"
fi
finish
