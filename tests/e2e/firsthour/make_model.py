# The new user's own model and data (tests/e2e/firsthour/test_first_hour.sh, docs/first-hour.md):
# a 2-layer nn.MultiheadAttention classifier, scripted, and a tensors file it can learn from.
import sys

import torch
import torch.nn as nn

class Block(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.ln = nn.LayerNorm(d)
        self.attn = nn.MultiheadAttention(d, heads, batch_first=True)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x):
        h = self.ln(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        return x + self.mlp(x)

class Classifier(nn.Module):
    def __init__(self, features=16, d=32, heads=4, classes=5):
        super().__init__()
        self.inp = nn.Linear(features, d)
        self.blocks = nn.ModuleList([Block(d, heads) for _ in range(2)])
        self.head = nn.Linear(d, classes)

    def forward(self, x):                      # x: [batch, sequence, features]
        h = self.inp(x)
        for b in self.blocks:
            h = b(h)
        return self.head(h.mean(dim=1))        # logits [batch, classes]

torch.manual_seed(0)
torch.jit.script(Classifier()).save("net.pt")
# The class is the feature (of the first 5) with the largest mean over the sequence.
features = int(sys.argv[1]) if len(sys.argv) > 1 else 16
X = torch.randn(4096, 12, features)
Y = X.mean(dim=1)[:, :5].argmax(dim=1)
torch.save({"input": X, "target": Y}, "train.pt" if features == 16 else "wrong.pt")
