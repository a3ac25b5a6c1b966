"""Export and AOTInductor-compile one program, through a cache: the key is a hash of the exported
graph (its code and constants), the example shapes, the PyTorch version, the device and the
Inductor options below, so a second export of an unchanged model copies the compiled .pt2 instead
of compiling again."""
import hashlib
import os
import shutil
import tempfile
import time

import torch
from torch.fx.experimental.proxy_tensor import make_fx

from .trace import check_no_random


# Inductor specializes its C++ kernels to the exporting process's thread count unless told not
# to: exported on one thread (OMP_NUM_THREADS=1) they run serially, on N threads they start N
# whatever train.threads says. With dynamic threads each kernel runs on the calling thread's
# OpenMP team, which the worker sets from train.threads.
OPTIONS = {"cpp.dynamic_threads": True}


def cache_dir():
    base = os.environ.get("MTRAIN_EXPORT_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "mtrain", "export")
    return base


def _key(ep, args, device):
    h = hashlib.sha256()
    h.update(torch.__version__.encode())
    h.update(device.encode())
    h.update(repr(sorted(OPTIONS.items())).encode())
    h.update(str(ep.graph_module.code).encode())
    for a in args:
        h.update(f"{tuple(a.shape)}:{a.dtype}:{a.stride()};".encode())
    for name, c in sorted(ep.constants.items()):
        h.update(name.encode())
        if isinstance(c, torch.Tensor):
            h.update(c.detach().cpu().contiguous().numpy().tobytes())
    return h.hexdigest()[:32]


def compile_program(program, args, dest, device, stats):
    """Export PROGRAM (a Module of flat tensors) on ARGS and write its compiled package to DEST.
    STATS gains the export and compile seconds and whether the cache answered."""
    t0 = time.monotonic()
    # make_fx first: it flattens torch.func's transforms (vjp) into plain ATen ops, which
    # torch.export then takes as an ordinary graph (exporting the transform directly lifts
    # transform-wrapped tensors as constants). Real tensors the program reads besides its arguments
    # (non-persistent buffers) become the graph's constants.
    gm = make_fx(program, tracing_mode="fake", _allow_non_fake_inputs=True)(*args)
    check_no_random(gm.graph)
    ep = torch.export.export(gm, tuple(args), strict=False)
    t1 = time.monotonic()
    key = _key(ep, args, device)
    cached = os.path.join(cache_dir(), key + ".pt2")
    hit = os.path.isfile(cached)
    if not hit:
        os.makedirs(cache_dir(), exist_ok=True)
        fd, tmp = tempfile.mkstemp(suffix=".pt2", dir=cache_dir())
        os.close(fd)
        try:
            with torch._inductor.config.patch(OPTIONS):
                torch._inductor.aoti_compile_and_package(ep, package_path=tmp)
            os.replace(tmp, cached)  # atomic: a concurrent export never sees half a package
        except BaseException:
            os.unlink(tmp)
            raise
    shutil.copyfile(cached, dest)
    t2 = time.monotonic()
    stats.append({"export_s": round(t1 - t0, 2), "compile_s": round(t2 - t1, 2), "cached": hit})
    return key
