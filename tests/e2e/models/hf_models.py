"""Tiny Hugging Face models for tests/e2e/models/test_hf_strategies.sh (issue 44 items 1 and 2).

  make DIR KIND...   in DIR/KIND for each KIND:
                  KIND gpt2 | llama | bert: a tiny transformers model (2 layers, hidden 32, vocab 64,
                  16 tokens, every dropout 0.0) wrapped to return its logits, traced in training
                  mode into net.pt; token data data.pt; and PyTorch's own weights after
                  STEPS steps on GLOBAL rows per step in file order, with SGD (DIR/ref_sgd.pt) and
                  with AdamW (DIR/ref_adamw.pt), the wrapper's state_dict. bert is masked-LM: every
                  row has exactly MASKED positions replaced by [MASK] with their token as target and
                  -100 (ignored) elsewhere — the same count per row, so the mean over a rank's
                  targets averaged over ranks is the mean over the global batch's, as in PyTorch at
                  world 1.
                  KIND bert_ragged: bert's model on masked-LM rows of 1 to 5 masked tokens each (as
                  random masking gives), and DIR/ref_sgd.pt trained with DDP's loss at world 3: the
                  mean over ranks of each rank's mean over its counted targets — which is what
                  mtrain computes, and not the global batch's mean (the world-1 reference; the two
                  must differ by 1e-5 at least, else the run could not tell them apart), and that
                  world-1 reference, the global batch's mean over every masked token
                  (train.average_tokens_across_ranks), in DIR/ref_global.pt.
                  KIND gpt2_padded: GPT-2 in docs/your-model.md's MaskedWrapper (input [B, 2, T]:
                  the ids, then the 0/1 attention mask), traced; rows of 6 to 16 tokens left-padded
                  to 16, targets -100 at the padding; DIR/ref_sgd.pt trained with DDP's loss at world
                  2 (the references with the mask all ones must differ by 1e-5 at least).
                  KIND gpt2_dropout: GPT-2 with every dropout 0.1, one model object traced twice,
                  after .train() (DIR/net.pt) and after .eval() (DIR/net_eval.pt): the pair
                  model.path / model.eval_path; learnable token data (each token determines the
                  next) DIR/data.pt and DIR/val.pt. No reference training: dropout's masks are
                  random.
  check RUNS DIR PAIRS   every comparison, in one Python start (importing transformers costs
                  seconds on CI's two cores):
                  for each line LABEL, REF, GOT, TOL, START (tab-separated) of RUNS: max |REF - GOT|
                  over the tensors of mtrain's model.pt GOT (a plain dict), within TOL, and how far
                  REF moved from START (the traced file's weights), at least 10 x TOL: a comparison
                  of weights that did not move would prove nothing;
                  for each line LABEL, WD (tab-separated) of PAIRS, the run of DIR's pair in WD: the
                  last validation loss mtrain logged equals PyTorch's eval-mode loss of mtrain's
                  model.pt on DIR/val.pt (bound 1e-6), and the training loss fell (by 0.1 at least).
                  Prints ok/FAIL per run; exits with the number of failures.
"""
import glob
import json
import sys
import warnings

import torch
import torch.nn as nn
import torch.nn.functional as F

warnings.simplefilter("ignore")
torch.set_num_threads(1)
STEPS, GLOBAL, T, VOCAB, MASKED = 5, 6, 16, 64, 3
SGD_LR = 0.1
ADAMW = dict(lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01)


class Wrapper(nn.Module):  # what the user traces: one Tensor in, the logits out
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, ids):
        return self.model(input_ids=ids).logits


class MaskedWrapper(nn.Module):  # docs/your-model.md's padded data: ids and the 0/1 mask in one tensor
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x):  # [B, 2, T]
        return self.model(input_ids=x[:, 0], attention_mask=x[:, 1]).logits


def hf_model(kind, p=0.0):
    torch.manual_seed(0)
    if kind == "gpt2":
        from transformers import GPT2Config, GPT2LMHeadModel
        cfg = GPT2Config(n_layer=2, n_embd=32, n_head=2, vocab_size=VOCAB, n_positions=T, resid_pdrop=p,
                         embd_pdrop=p, attn_pdrop=p, tie_word_embeddings=True, use_cache=False,
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


def data(kind, n, seed=1):
    g = torch.Generator().manual_seed(seed)
    if kind == "gpt2_dropout":  # each token determines the next: a model can learn it in a few steps
        seq = torch.empty((n, T + 1), dtype=torch.long)
        seq[:, 0] = torch.randint(0, VOCAB, (n,), generator=g)
        for t in range(T):
            seq[:, t + 1] = (seq[:, t] * 5 + 3) % VOCAB
        return {"input": seq[:, :T].contiguous(), "target": seq[:, 1:].contiguous()}
    if kind not in ("bert", "bert_ragged"):
        seq = torch.randint(0, VOCAB, (n, T + 1), generator=g)
        return {"input": seq[:, :T].contiguous(), "target": seq[:, 1:].contiguous()}
    tokens = torch.randint(1, VOCAB, (n, T), generator=g)
    target = torch.full((n, T), -100, dtype=torch.long)
    inp = tokens.clone()
    for i in range(n):  # bert_ragged: 1 to 5 masked tokens per row, as random masking gives
        k = MASKED if kind == "bert" else int(torch.randint(1, 6, (1,), generator=g))
        pos = torch.randperm(T, generator=g)[:k]
        target[i, pos] = tokens[i, pos]
        inp[i, pos] = 0  # the [MASK] id of this tiny vocabulary
    return {"input": inp, "target": target}


def lm_loss(logits, y):
    return F.cross_entropy(logits.reshape(-1, logits.size(-1)), y.reshape(-1))  # ignore_index -100


def reference(kind, dd, opt_name, world=1, wrap=Wrapper):
    """PyTorch's training; with world > 1, DDP's loss: the mean over ranks of each rank's mean, rank r
    reading rows r, r + world, ... of each step (mtrain's sampler in file order)."""
    ref = wrap(hf_model(kind)).train()  # the traced file's initial weights, eager PyTorch
    opt = (torch.optim.SGD(ref.parameters(), lr=SGD_LR) if opt_name == "sgd"
           else torch.optim.AdamW(ref.parameters(), **ADAMW))
    losses = []
    for s in range(STEPS):
        x, y = dd["input"][s * GLOBAL:(s + 1) * GLOBAL], dd["target"][s * GLOBAL:(s + 1) * GLOBAL]
        opt.zero_grad()
        logits = ref(x)
        loss = sum(lm_loss(logits[r::world], y[r::world]) for r in range(world)) / world
        loss.backward()
        opt.step()
        losses.append(loss.item())
    print(kind, opt_name, *([f"world {world}"] if world > 1 else []), "reference losses", " ".join(f"{l:.4f}" for l in losses))
    return {k: v.detach().clone() for k, v in ref.state_dict().items()}


def make(kind, d):
    if kind == "gpt2_dropout":
        w = Wrapper(hf_model("gpt2", p=0.1))
        ex = (torch.zeros((2, T), dtype=torch.long),)
        torch.jit.save(torch.jit.trace(w.train(), ex, check_trace=False), f"{d}/net.pt")
        torch.jit.save(torch.jit.trace(w.eval(), ex, check_trace=False), f"{d}/net_eval.pt")
        torch.save(data(kind, 8 * GLOBAL), f"{d}/data.pt")
        torch.save(data(kind, 12, seed=2), f"{d}/val.pt")
        return
    if kind == "gpt2_padded":  # left-padded rows of 6 to 16 tokens, the mask in the input
        g = torch.Generator().manual_seed(3)
        seq = torch.randint(1, VOCAB, (STEPS * GLOBAL, T + 1), generator=g)
        length = torch.randint(6, T + 1, (STEPS * GLOBAL, 1), generator=g)
        mask = (torch.arange(T)[None] >= T - length).long()
        target = seq[:, 1:].masked_fill(mask == 0, -100)
        dd = {"input": torch.stack([seq[:, :T] * mask, mask], 1), "target": target}
        torch.jit.save(torch.jit.trace(MaskedWrapper(hf_model("gpt2")).train(), (dd["input"][:2],), check_trace=False),
                       f"{d}/net.pt")
        torch.save(dd, f"{d}/data.pt")
        ref = reference("gpt2", dd, "sgd", world=2, wrap=MaskedWrapper)
        unmasked = dict(dd, input=torch.stack([dd["input"][:, 0], torch.ones_like(mask)], 1))
        apart, _ = max_diff(ref, reference("gpt2", unmasked, "sgd", world=2, wrap=MaskedWrapper))
        print(f"gpt2_padded: the references with and without the attention mask differ by {apart:.1e}")
        if apart < 1e-5:  # else the run's comparison could not tell whether the mask was applied
            sys.exit("gpt2_padded: the data does not show the mask")
        torch.save(ref, f"{d}/ref_sgd.pt")
        return
    if kind == "bert_ragged":  # masked-LM rows of unequal masked counts: the mean of ranks' means
        dd = data(kind, STEPS * GLOBAL)
        torch.jit.save(torch.jit.trace(Wrapper(hf_model("bert")).train(), (dd["input"][:2],), check_trace=False),
                       f"{d}/net.pt")
        torch.save(dd, f"{d}/data.pt")
        ddp, single = reference("bert", dd, "sgd", world=3), reference("bert", dd, "sgd")
        apart, _ = max_diff(ddp, single)
        print(f"bert_ragged: the world-3 (per-rank mean) and world-1 (global mean) references differ by {apart:.1e}")
        if apart < 1e-5:  # else the run's comparison could not tell the two means apart
            sys.exit("bert_ragged: the data does not separate the two means")
        torch.save(ddp, f"{d}/ref_sgd.pt")
        torch.save(single, f"{d}/ref_global.pt")
        return
    w = Wrapper(hf_model(kind)).train()
    dd = data(kind, STEPS * GLOBAL)
    torch.jit.save(torch.jit.trace(w, (dd["input"][:2],), check_trace=False), f"{d}/net.pt")
    torch.save(dd, f"{d}/data.pt")
    for opt_name in ("sgd", "adamw"):
        torch.save(reference(kind, dd, opt_name), f"{d}/ref_{opt_name}.pt")


def max_diff(a, b):
    worst, where = 0.0, ""
    for k, v in a.items():
        if not v.is_floating_point():
            continue
        d = (v.double() - b[k].double()).abs().max().item()
        if d > worst:
            worst, where = d, k
    return worst, where


def compare(runs_path):
    """Each line of RUNS: LABEL<TAB>REF<TAB>GOT<TAB>TOL<TAB>START. Prints ok/FAIL per run; returns the failures."""
    starts = {}
    fails = 0
    for line in open(runs_path):
        label, ref_path, got_path, tol, start_path = line.rstrip("\n").split("\t")
        tol = float(tol)
        if start_path not in starts:
            starts[start_path] = torch.jit.load(start_path).state_dict()
        start = starts[start_path]
        ref, got = torch.load(ref_path), torch.load(got_path)  # model.pt: a plain dict (weights_only)
        missing = sorted(set(ref) - set(got))
        if missing:
            print(f"FAIL - {label}: {got_path} lacks {', '.join(missing)}")
            fails += 1
            continue
        worst, where = max_diff(ref, got)
        moved, _ = max_diff(ref, start)
        good = worst <= tol and moved > 10 * tol
        fails += not good
        print(f"{'ok' if good else 'FAIL'} - {label}: max |d| {worst:.1e} ({where or 'every tensor equal'}), tolerance {tol:g}; "
              f"the weights moved {moved:.1e}")
    return fails


def dropout(d, runs_path):
    """Each line of RUNS: LABEL<TAB>WD. Prints ok/FAIL per run; returns the failures."""
    m = torch.jit.load(f"{d}/net_eval.pt")
    val = torch.load(f"{d}/val.pt")
    fails = 0
    for line in open(runs_path):
        label, wd = line.rstrip("\n").split("\t")
        m.load_state_dict(torch.load(f"{wd}/model.pt"))
        m.eval()
        with torch.no_grad():
            want = lm_loss(m(val["input"]), val["target"]).item()
        rows = [json.loads(r) for f in glob.glob(f"{wd}/**/metrics.jsonl", recursive=True) for r in open(f)]
        got = [r["loss"] for r in rows if r["mode"] == "val"][-1]
        train = [r["loss"] for r in rows if r["mode"] == "train"]
        good = abs(got - want) <= 1e-6 and train[-1] < train[0] - 0.1
        fails += not good
        print(f"{'ok' if good else 'FAIL'} - {label}: validation loss {got:.7f}, PyTorch's eval-mode loss of "
              f"model.pt {want:.7f} (|d| {abs(got - want):.1e}, bound 1e-6); training loss {train[0]:.3f} -> "
              f"{train[-1]:.3f}")
    return fails


if __name__ == "__main__":
    if sys.argv[1] == "make":
        import os
        for kind in sys.argv[3:]:
            os.makedirs(f"{sys.argv[2]}/{kind}", exist_ok=True)
            make(kind, f"{sys.argv[2]}/{kind}")
    elif sys.argv[1] == "check":
        sys.exit(min(compare(sys.argv[2]) + dropout(sys.argv[3], sys.argv[4]), 100))
