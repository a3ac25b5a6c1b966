"""mtrain's exporter: the user's nn.Module, exported with torch.export and compiled ahead of time
by AOTInductor into one package directory the worker trains with no Python in the ranks
(docs/your-model.md). Run as `python -m mtrain_export MODULE.py:FACTORY --example ...`."""
FORMAT = "mtrain-compiled"
FORMAT_VERSION = 2  # 2: a unit's forward returns the activations its backward takes
