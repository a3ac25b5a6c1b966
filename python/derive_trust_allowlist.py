"""Derives the operators a TorchScript model may call without `model.trust_code` (issue 40 item 1).

    .venv/bin/python python/derive_trust_allowlist.py > lib/trainer/model/trust_allowlist.inc

An allowlist, not a denylist: an operator is in it only when one of three sources puts it there,
and then only when no overload of it names a file (docs/reliability.md, "The TorchScript
allowlist"):
  A. PyTorch's public tensor API: the public names of torch, torch.Tensor, torch.nn.functional,
     torch.linalg, torch.special and torch.fft that are aten operators (linalg_*, special_*,
     fft_* as registered).
  B. The operators TorchScript's compiler emits for the Python it accepts: every aten operator
     none of whose overloads takes or returns a Tensor (list, dict, str, int and float builtins,
     `__getitem__`, `len`, `format` …), and the interpreter's prim operators (python_print writes
     them `ops.prim.X`), less the distributed ones.
  C. The operators in the graphs of a corpus of real models, scripted and traced by this PyTorch:
     torch.nn's layers, torchvision's resnet18 and vit_b_16 (when installed), transformers'
     GPT-2, Llama and BERT (tiny configs), which adds the internal ops layers lower to
     (`aten::_convolution`, `aten::_native_multi_head_attention`, …).
Never in it, whatever a source says: an operator with an argument that names a file
(`filename`, `path`, `f`: str), and the serialization, RPC and process-group operators below.
"""
import inspect
import sys
import warnings

import torch
import torch.nn as nn
import torch.nn.functional as F

warnings.filterwarnings("ignore")

NEVER = {
    "aten::from_file", "aten::save", "aten::load", "aten::_save_for_mobile", "aten::_load_for_mobile",
    "aten::_save_parameters", "aten::_load_parameters", "aten::_save_jit_module",
    # RPC and collectives reach other processes and hosts.
    "aten::rpc_async", "aten::rpc_sync", "aten::rpc_remote", "aten::to_here", "aten::local_value",
    "aten::owner", "aten::owner_name", "aten::confirmed_by_owner", "aten::dist_backward",
    "prim::rpc_async", "prim::rpc_sync", "prim::rpc_remote",
}
FILE_ARGS = {"filename", "path", "f", "file", "filepath"}

schemas = torch._C._jit_get_all_schemas()
by_name = {}
for s in schemas:
    by_name.setdefault(s.name, []).append(s)


def names_a_file(name):
    for s in by_name.get(name, []):
        for a in s.arguments:
            if a.name in FILE_ARGS and "str" in str(a.type):
                return True
    return False


def has_tensor(s):
    for a in list(s.arguments) + list(s.returns):
        t = str(a.type)
        if "Tensor" in t or "Storage" in t or t in ("t", "Any") or "Future" in t or "RRef" in t:
            return True
    return False


allowed = set()
# A: the public tensor API.
for mod, prefix in ((torch, ""), (torch.Tensor, ""), (F, ""), (torch.linalg, "linalg_"),
                    (torch.special, "special_"), (torch.fft, "fft_")):
    for n in dir(mod):
        if n.startswith("_") and not (n.startswith("__") and n.endswith("__")):
            continue
        q = f"aten::{prefix}{n}"
        if q in by_name:
            allowed.add(q)
        if f"aten::{n}" in by_name and mod is not torch.Tensor:
            allowed.add(f"aten::{n}")
# B: the compiler's own builtins.
for name, ss in by_name.items():
    ns = name.split("::")[0]
    if ns == "aten" and not any(has_tensor(s) for s in ss):
        allowed.add(name)
    elif ns == "prim":
        allowed.add(name)


# C: the corpus.
def graph_ops(g, out):
    for node in g.nodes():
        k = node.kind()
        if k.startswith("aten::") or k.startswith("prim::"):
            out.add(k)
        for b in node.blocks():
            graph_ops(b, out)


def module_ops(m, out):
    for name in m._c._method_names():
        g = m._c._get_method(name).graph.copy()
        torch._C._jit_pass_inline(g)
        graph_ops(g, out)
    for _, sub in m.named_children():
        module_ops(sub, out)


corpus = set()
layers = [
    nn.Linear(4, 4), nn.Conv1d(2, 2, 3), nn.Conv2d(2, 2, 3), nn.Conv3d(2, 2, 3), nn.ConvTranspose2d(2, 2, 3),
    nn.BatchNorm1d(4), nn.BatchNorm2d(2), nn.LayerNorm(4), nn.GroupNorm(1, 2), nn.InstanceNorm2d(2),
    nn.RMSNorm(4) if hasattr(nn, "RMSNorm") else nn.Identity(), nn.Embedding(5, 4), nn.EmbeddingBag(5, 4),
    nn.Dropout(0.1), nn.Dropout2d(0.1), nn.ReLU(), nn.GELU(), nn.SiLU(), nn.Tanh(), nn.Sigmoid(), nn.Softmax(-1),
    nn.LogSoftmax(-1), nn.Mish(), nn.Hardswish(), nn.LeakyReLU(), nn.ELU(), nn.PReLU(), nn.Softplus(),
    nn.MaxPool2d(2), nn.AvgPool2d(2), nn.AdaptiveAvgPool2d(1), nn.AdaptiveMaxPool2d(1), nn.Flatten(),
    nn.Unflatten(1, (2, 2)), nn.Upsample(scale_factor=2), nn.PixelShuffle(2), nn.Identity(),
    nn.MultiheadAttention(4, 2, batch_first=True), nn.TransformerEncoderLayer(8, 2, 16, batch_first=True),
    nn.TransformerDecoderLayer(8, 2, 16, batch_first=True), nn.LSTM(4, 4), nn.GRU(4, 4), nn.RNN(4, 4),
    nn.CrossEntropyLoss(), nn.MSELoss(), nn.L1Loss(), nn.NLLLoss(), nn.BCEWithLogitsLoss(), nn.SmoothL1Loss(),
    nn.KLDivLoss(), nn.CosineSimilarity(), nn.PairwiseDistance(),
]
for layer in layers:
    try:
        module_ops(torch.jit.script(layer), corpus)
    except Exception as e:  # a layer this PyTorch cannot script adds nothing
        print(f"# not scripted: {type(layer).__name__}: {str(e).splitlines()[0][:80]}", file=sys.stderr)
try:
    import torchvision
    for make, shape in ((torchvision.models.resnet18, (1, 3, 32, 32)), (torchvision.models.vit_b_16, None)):
        m = make()
        module_ops(torch.jit.script(m), corpus)
        if shape:
            module_ops(torch.jit.trace(m.eval(), torch.randn(*shape)), corpus)
except Exception as e:
    print(f"# torchvision corpus skipped: {e}", file=sys.stderr)
try:
    import transformers as tf
    cfgs = [
        (tf.GPT2LMHeadModel, tf.GPT2Config(n_layer=1, n_embd=16, n_head=2, vocab_size=64, n_positions=32)),
        (tf.LlamaForCausalLM, tf.LlamaConfig(num_hidden_layers=1, hidden_size=16, num_attention_heads=2,
                                             num_key_value_heads=1, intermediate_size=32, vocab_size=64)),
        (tf.BertForMaskedLM, tf.BertConfig(num_hidden_layers=1, hidden_size=16, num_attention_heads=2,
                                           intermediate_size=32, vocab_size=64)),
    ]

    class Logits(nn.Module):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, x):
            return self.m(x).logits

    for cls, cfg in cfgs:
        m = Logits(cls(cfg))
        for mode in (True, False):
            m.train(mode)
            module_ops(torch.jit.trace(m, torch.randint(0, 64, (2, 8)), check_trace=False), corpus)
except Exception as e:
    print(f"# transformers corpus skipped: {e}", file=sys.stderr)
allowed |= corpus

removed = sorted(n for n in allowed if n in NEVER or names_a_file(n))
allowed = sorted(n for n in allowed if n not in NEVER and not names_a_file(n))
print(f"// Generated by python/derive_trust_allowlist.py with PyTorch {torch.__version__}: {len(allowed)} operators.")
print("// Do not edit by hand; rerun the script (docs/reliability.md, \"The TorchScript allowlist\").")
print(f"// Left out although a source named them: {', '.join(removed) or 'none'}.")
for n in allowed:
    print(f'"{n}",')
