#!/usr/bin/python3
"""Token files for the tokens e2e tests, in the layouts the tools that make them write.

  token_files.py FORMAT PATH TOKENS [--vocab V] [--seed S] [--dense-mib M] [--header-count N]

FORMAT: nanogpt (raw uint16, as nanoGPT's prepare.py: np.array(ids, np.uint16).tofile),
llmc16 / llmc32 (llm.c: 256 int32 of header — magic, version, count — then uint16 / uint32 ids,
as dev/data/data_common.py write_datafile). The ids are uniform in [0, V) from numpy's generator
seeded with S, so two calls with the same TOKENS, V and S write the same ids in any format.

--dense-mib M writes real ids only in the first and the last M MiB of the tokens and leaves the
middle a hole (a sparse file: token id 0 there), so a corpus of several GiB costs no disk and no
time. --header-count N writes N into the llm.c header instead of the true count (a mismatch).
"""
import argparse

import numpy as np

MAGIC = {"llmc16": (20240520, 1, np.uint16), "llmc32": (20240801, 7, np.uint32)}


def ids(rng, n, vocab, dtype):
    return rng.integers(0, vocab, size=n, dtype=np.int64).astype(dtype)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("format", choices=["nanogpt", "llmc16", "llmc32"])
    ap.add_argument("path")
    ap.add_argument("tokens", type=int)
    ap.add_argument("--vocab", type=int, default=50257)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--dense-mib", type=float, default=None)
    ap.add_argument("--header-count", type=int, default=None)
    a = ap.parse_args()
    dtype = np.uint16 if a.format in ("nanogpt", "llmc16") else np.uint32
    itemsize = np.dtype(dtype).itemsize
    rng = np.random.default_rng(a.seed)
    with open(a.path, "wb") as f:
        header = 0
        if a.format != "nanogpt":
            magic, version, _ = MAGIC[a.format]
            h = np.zeros(256, dtype=np.int32)
            h[0], h[1] = magic, version
            h[2] = a.tokens if a.header_count is None else a.header_count
            f.write(h.tobytes())
            header = h.nbytes
        if a.dense_mib is None:
            # In chunks, so that a large file never sits whole in this process either.
            left = a.tokens
            while left > 0:
                n = min(left, 1 << 22)
                f.write(ids(rng, n, a.vocab, dtype).tobytes())
                left -= n
        else:
            dense = min(a.tokens // 2, int(a.dense_mib * (1 << 20)) // itemsize)
            f.write(ids(rng, dense, a.vocab, dtype).tobytes())
            f.seek(header + (a.tokens - dense) * itemsize)
            f.write(ids(rng, dense, a.vocab, dtype).tobytes())
        f.truncate(header + a.tokens * itemsize)


if __name__ == "__main__":
    main()
