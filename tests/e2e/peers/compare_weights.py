# compare_weights.py A B [ATOL]: two saved state dicts (torch.save or safetensors) hold the same
# tensors: bitwise by default, or within ATOL. Prints the largest difference.
import sys

import torch


def load(p):
    if p.endswith(".safetensors"):
        from safetensors.torch import load_file
        return load_file(p)
    sd = torch.load(p, map_location="cpu", weights_only=False)
    return sd.get("state_dict", sd) if isinstance(sd, dict) and "state_dict" in sd else sd


a, b = load(sys.argv[1]), load(sys.argv[2])
atol = float(sys.argv[3]) if len(sys.argv) > 3 else 0.0
assert sorted(a) == sorted(b), (sorted(a), sorted(b))
worst = 0.0
for k in a:
    ta, tb = a[k].float(), b[k].float()
    assert ta.shape == tb.shape, (k, ta.shape, tb.shape)
    worst = max(worst, (ta - tb).abs().max().item() if ta.numel() else 0.0)
print(f"{len(a)} tensors, largest difference {worst:g}")
sys.exit(0 if worst <= atol else 1)
