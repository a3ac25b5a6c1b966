#!/usr/bin/env python3
"""Regenerate the seed corpora of tests/fuzz/corpus/<target>/ from the test data.

Seeds: the string literals the unit tests hand to each parser, the files under tests/data/,
and a few hand-written inputs for formats no test spells out (rendezvous request sequences,
checkpoint manifests). Files are named seed-<sha1 prefix> so rerunning is idempotent; inputs
the fuzzer adds (scripts/fuzz merges them) live beside them under their own hashes.
Usage: tests/fuzz/seed_corpus.py   (from anywhere)
"""
import hashlib
import json
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests/fuzz/corpus"

# (target, unit-test glob, call regex whose first group is the first string literal argument)
LITERAL_SOURCES = [
    ("hostfile", "tests/unit/topology/test_hostfile.cpp", r'parse_hostfile\(\s*"((?:[^"\\]|\\.)*)"'),
    ("filter", "tests/unit/topology/test_filter.cpp", r'apply_(?:include|exclude)\([^,]*,\s*"((?:[^"\\]|\\.)*)"'),
    ("gpu_list", "tests/unit/topology/test_gpu_list.cpp", r'parse_(?:gpu_list|visible_devices)\(\s*"((?:[^"\\]|\\.)*)"'),
    ("slurm_hostlist", "tests/unit/slurm/test_*.cpp", r'expand_(?:hostlist|counts)\(\s*"((?:[^"\\]|\\.)*)"'),
    ("import_deepspeed", "tests/unit/config/test_import.cpp", r'R"\((\{.*?\})\)"'),
]

FILE_SOURCES = [
    ("job_yaml", "tests/data/config/invalid/*.yaml"),
    ("import_deepspeed", "tests/data/config/seeds/*.json"),
    ("import_accelerate", "tests/data/config/seeds/*.yaml"),
]

TOKEN = "fuzz-token-0123456789abcdef"  # fuzz_rdzv_protocol.cpp's kToken


def rdzv_seeds():
    def req(op, node, **kw):
        return json.dumps({"op": op, "token": TOKEN, "node": node, **kw})
    three = "\n".join([req("join", "n0", host="worker-0", slots=2), req("join", "n1", host="worker-1", slots=1),
                       req("join", "n2", host="worker-2", slots=4, addr="10.0.0.3"), req("heartbeat", "n0"),
                       "+20", req("heartbeat", "n1"), req("leave", "n0"), req("leave", "n1"), req("leave", "n2")])
    expected = "\n".join(["E", req("join", "a", host="worker-1", slots=1), "+25", req("heartbeat", "a"),
                          req("join", "b", host="worker-0", slots=8), "+40", req("heartbeat", "b")])
    failing = "\n".join([req("join", "x", host="h", slots=1), req("fail", "x", reason="rank 0 exited 3"),
                         req("heartbeat", "x"), json.dumps({"op": "join", "token": "wrong", "node": "y"})])
    silent = "\n".join([req("join", "s", host="h1", slots=1), "+35", req("heartbeat", "s"), "+999"])
    frame = b"MTR1" + len(req("heartbeat", "n0")).to_bytes(4, "big") + req("heartbeat", "n0").encode()
    return [three.encode(), expected.encode(), failing.encode(), silent.encode(), frame,
            b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", b"MTR1\xff\xff\xff\xff"]


def manifest_seeds():
    m = {"format_version": 1, "strategy": "zero2", "world_size": 2, "step": 10,
         "state": {"sampler": {"epoch": 0, "position": 40}, "rng": "cpu"},
         "tensors": {"fc1.weight": {"shape": [4, 3], "dtype": "float32",
                                    "pieces": [{"rank": 0, "file": "shard_rank0.pt", "offset": 0, "numel": 6},
                                               {"rank": 1, "file": "shard_rank1.pt", "offset": 6, "numel": 6}]},
                     "step": {"shape": [], "dtype": "int64",
                              "pieces": [{"rank": 0, "file": "shard_rank0.pt", "offset": 0, "numel": 1}]}}}
    return [json.dumps(m, indent=1).encode(), json.dumps({**m, "format_version": 2}).encode(),
            json.dumps({k: v for k, v in m.items() if k != "tensors"}).encode()]


def filter_seeds():
    hosts = "worker-0 slots=4\nworker-1 slots=2\nalice@gpu-2 gpus=0,2,3\n"
    return [f"worker-0:1,2@gpu-2\nworker-1\n{hosts}".encode(), f"gpu-2:3\n\n{hosts}".encode(),
            b"\nworker-0:0\n"]


def unescape(s):
    return s.encode().decode("unicode_escape").encode("latin-1")


def write(target, data):
    d = CORPUS / target
    d.mkdir(parents=True, exist_ok=True)
    (d / ("seed-" + hashlib.sha1(data).hexdigest()[:16])).write_bytes(data)


def main():
    for target, pattern, rx in LITERAL_SOURCES:
        for f in sorted(ROOT.glob(pattern)):
            for lit in re.findall(rx, f.read_text(), flags=re.S):
                write(target, lit.encode() if target == "import_deepspeed" else unescape(lit))
    for target, pattern in FILE_SOURCES:
        for f in sorted(ROOT.glob(pattern)):
            write(target, f.read_bytes())
    for data in rdzv_seeds():
        write("rdzv_protocol", data)
    for data in manifest_seeds():
        write("checkpoint_manifest", data)
    for data in filter_seeds():
        write("filter", data)
    for data in [b"0,3", b"0, 2 ,5", b"GPU-8b3f1c2a-1111", b"MIG-GPU-x/1/0", b"", b"7"]:
        write("gpu_list", data)
    write("hostfile", b"# comment\nworker-0 slots=4\nalice@worker-1 slots=2\nworker-2 gpus=0,2,3\n")
    # A valid job file: the keys the README's quick start sets.
    write("job_yaml", b"strategy: zero2\nmodel:\n  name: gpt\n  n_layer: 4\n  n_head: 4\n  n_embd: 128\n"
                      b"train:\n  max_steps: 200\n  batch_size: 16\n  precision: bf16\n  work_dir: w\n"
                      b"optim:\n  name: adamw\n  lr: 0.001\nlaunch:\n  launcher: auto\n  nproc_per_node: auto\n")
    write("job_yaml", b"strategy: fsdp\nmodel: {name: mlp}\ntrain: {max_steps: 5, grad_accum: 2}\n")
    for data in [b"worker-0 slots=4\nworker-0 slots=2\n", b"bob@ slots=1\n", b"h\tgpus=0,,2 # c\n",
                 b"h slots=0\n", b"slots=2\n", b"h slots=99999999999999999999\n"]:
        write("hostfile", data)
    for data in [b"compute_environment: LOCAL_MACHINE\ndistributed_type: FSDP\nfsdp_config:\n"
                 b"  fsdp_sharding_strategy: 2\n  fsdp_auto_wrap_policy: SIZE_BASED_WRAP\nmixed_precision: bf16\n"
                 b"num_machines: 2\nnum_processes: 16\nmain_process_ip: 10.0.0.1\nmain_process_port: 29500\n",
                 b"distributed_type: DEEPSPEED\ndeepspeed_config:\n  zero_stage: 3\n  offload_optimizer_device: cpu\n"
                 b"  gradient_accumulation_steps: 4\n  deepspeed_hostfile: hosts\n  deepspeed_config_file: ds.json\n",
                 b"distributed_type: MULTI_GPU\ngpu_ids: 0,1\nuse_cpu: false\n"]:
        write("import_accelerate", data)
    for d in sorted(CORPUS.iterdir()):
        print(f"{d.name}: {len(list(d.iterdir()))} files")


if __name__ == "__main__":
    main()
