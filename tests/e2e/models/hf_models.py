"""Tiny Hugging Face models for tests/e2e/models/test_hf_strategies.sh (issue 44 item 2).

  make DIR        for each KIND gpt2 | llama | bert, in DIR/KIND: a tiny transformers model (2 layers, hidden 32, vocab
                  64, 16 tokens, every dropout 0.0) wrapped to return its logits, traced in training
                  mode into DIR/net.pt; token data DIR/data.pt; and PyTorch's own weights after STEPS
                  SGD steps on GLOBAL rows per step in file order (DIR/ref_sgd.pt, the wrapper's
                  state_dict). bert is masked-LM: every row has exactly MASKED positions replaced by
                  [MASK] with their token as target and -100 (ignored) elsewhere — the same count
                  per row, so the mean over a rank's targets averaged over ranks is the mean over
                  the global batch's, as in PyTorch at world 1.
  compare REF GOT TOL   max |REF - GOT| over the tensors of mtrain's model.pt (a plain dict)
"""
import sys
import warnings

import torch
import torch.nn as nn
import torch.nn.functional as F

warnings.simplefilter("ignore")
torch.set_num_threads(1)
STEPS, GLOBAL, T, VOCAB, MASKED = 5, 6, 16, 64, 3
LAYER_CLASS = {"gpt2": "GPT2Block", "llama": "LlamaDecoderLayer", "bert": "BertLayer"}


class Wrapper(nn.Module):  # what the user traces: one Tensor in, the logits out
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, ids):
        return self.model(input_ids=ids).logits


def hf_model(kind):
    torch.manual_seed(0)
    if kind == "gpt2":
        from transformers import GPT2Config, GPT2LMHeadModel
        cfg = GPT2Config(n_layer=2, n_embd=32, n_head=2, vocab_size=VOCAB, n_positions=T, resid_pdrop=0.0,
                         embd_pdrop=0.0, attn_pdrop=0.0, tie_word_embeddings=True, use_cache=False,
                         bos_token_id=0, eos_token_id=0)
        return GPT2LMHeadModel._from_config(cfg, attn_implementation="eager")
    if kind == "llama":
        from transformers import LlamaConfig, LlamaForCausalLM
        cfg = LlamaConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
                          num_key_value_heads=2, vocab_size=VOCAB, max_position_embeddings=T, use_cache=False,
                          attention_dropout=0.0, tie_word_embeddings=False)
        return LlamaForCausalLM._from_config(cfg, attn_implementation="eager")
    from transformers import BertConfig, BertForMaskedLM
    cfg = BertConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
                     vocab_size=VOCAB, max_position_embeddings=T, hidden_dropout_prob=0.0,
                     attention_probs_dropout_prob=0.0, tie_word_embeddings=True)
    return BertForMaskedLM._from_config(cfg, attn_implementation="eager")


def data(kind):
    g = torch.Generator().manual_seed(1)
    n = STEPS * GLOBAL
    if kind != "bert":
        seq = torch.randint(0, VOCAB, (n, T + 1), generator=g)
        return {"input": seq[:, :T].contiguous(), "target": seq[:, 1:].contiguous()}
    tokens = torch.randint(1, VOCAB, (n, T), generator=g)
    target = torch.full((n, T), -100, dtype=torch.long)
    inp = tokens.clone()
    for i in range(n):
        pos = torch.randperm(T, generator=g)[:MASKED]
        target[i, pos] = tokens[i, pos]
        inp[i, pos] = 0  # the [MASK] id of this tiny vocabulary
    return {"input": inp, "target": target}


def make(kind, d):
    w = Wrapper(hf_model(kind)).train()
    dd = data(kind)
    torch.jit.save(torch.jit.trace(w, (dd["input"][:2],), check_trace=False), f"{d}/net.pt")
    torch.save(dd, f"{d}/data.pt")
    ref = Wrapper(hf_model(kind)).train()  # the same initial weights, eager PyTorch
    opt = torch.optim.SGD(ref.parameters(), lr=0.1)
    losses = []
    for s in range(STEPS):
        x, y = dd["input"][s * GLOBAL:(s + 1) * GLOBAL], dd["target"][s * GLOBAL:(s + 1) * GLOBAL]
        opt.zero_grad()
        logits = ref(x)
        loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), y.reshape(-1))  # ignore_index -100
        loss.backward()
        opt.step()
        losses.append(loss.item())
    torch.save({k: v.detach().clone() for k, v in ref.state_dict().items()}, f"{d}/ref_sgd.pt")
    print(kind, "reference losses", " ".join(f"{l:.4f}" for l in losses))


def compare(ref_path, got_path, tol):
    ref, got = torch.load(ref_path), torch.load(got_path)  # model.pt: a plain dict (weights_only)
    worst, where = 0.0, ""
    for k, v in ref.items():
        if not v.is_floating_point():
            continue
        if k not in got:
            print(f"{got_path}: missing {k}")
            return 1
        d = (v.double() - got[k].double()).abs().max().item()
        if d > worst:
            worst, where = d, k
    print(f"max |d| {worst:.3e} ({where}) over {len(ref)} tensors, tolerance {tol:g}")
    return 0 if worst <= tol else 1


if __name__ == "__main__":
    if sys.argv[1] == "make":
        import os
        for kind in LAYER_CLASS:
            os.makedirs(f"{sys.argv[2]}/{kind}", exist_ok=True)
            make(kind, f"{sys.argv[2]}/{kind}")
    elif sys.argv[1] == "compare":
        sys.exit(compare(sys.argv[2], sys.argv[3], float(sys.argv[4])))
