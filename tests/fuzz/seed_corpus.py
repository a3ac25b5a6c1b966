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
    ("torchscript_archive", "tests/data/torchscript/*.pt"),  # torch.jit.save by PyTorch 2.15 (code deflated)
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


# --- Issue 29: files users download (safetensors, torch.save zips, tensors files, token files) ---

def st_file(entries, header=None, data=None, metadata=None):
    """A safetensors file: entries (name, dtype, shape, bytes) laid out in order."""
    import struct
    h, off, buf = {}, 0, b""
    if metadata is not None:
        h["__metadata__"] = metadata
    for name, dt, shape, raw in entries:
        h[name] = {"dtype": dt, "shape": shape, "data_offsets": [off, off + len(raw)]}
        off += len(raw)
        buf += raw
    text = (header if header is not None else json.dumps(h)).encode()
    return struct.pack("<Q", len(text)) + text + (data if data is not None else buf)


def safetensors_seeds():
    import struct
    f32 = struct.pack("<4f", 1, 2, 3, 4)
    good = st_file([("w", "F32", [2, 2], f32), ("b", "I64", [1], struct.pack("<q", 7))], metadata={"format": "pt"})
    return [good,
            st_file([("w", "F32", [2, 2], f32), ("w2", "BF16", [0], b"")]),
            st_file([], header='{"w": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16]}, '
                               '"w": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16]}}', data=f32),
            st_file([], header='{"w": {"dtype": "F32", "shape": [4], "data_offsets": [0, 20]}}', data=f32),
            st_file([], header='{"w": {"dtype": "F32", "shape": [[4]], "data_offsets": [0, 16]}}', data=f32),
            st_file([], header="[" * 3000),
            st_file([], header='{"a": {"dtype": "U64", "shape": [1], "data_offsets": [0, 8]}}', data=b"\0" * 8),
            st_file([], header='{"a": {"dtype": "F32", "shape": [4611686018427387904, 4], "data_offsets": [0, 16]}}', data=f32),
            struct.pack("<Q", 1 << 40) + b"{}",  # a length past the end
            st_file([(f"t{i}", "F32", [1], f32[:4]) for i in range(200)])]


def pk_str(s):
    b = s.encode()
    return (b"\x8c" + bytes([len(b)]) if len(b) < 256 else b"X" + len(b).to_bytes(4, "little")) + b


def pk_int(v):
    if 0 <= v < 256:
        return b"K" + bytes([v])
    if -(1 << 31) <= v < (1 << 31):
        return b"J" + v.to_bytes(4, "little", signed=True)
    return b"\x8a\x08" + v.to_bytes(8, "little", signed=True)  # LONG1


def pk_tuple(items):
    return b"(" + b"".join(items) + b"t"


def pk_tensor(key, numel, shape, stride=None, storage="FloatStorage", offset=0):
    """torch._utils._rebuild_tensor_v2 over a persistent ('storage', torch.<T>, key, 'cpu', numel)."""
    if stride is None:
        stride, acc = [], 1
        for d in reversed(shape):
            stride.insert(0, acc)
            acc *= d
    pid = pk_tuple([pk_str("storage"), b"ctorch\n" + storage.encode() + b"\n", pk_str(key), pk_str("cpu"), pk_int(numel)])
    args = pk_tuple([pid + b"Q", pk_int(offset), pk_tuple([pk_int(d) for d in shape]),
                     pk_tuple([pk_int(d) for d in stride]), b"\x89", b"ccollections\nOrderedDict\n)R"])
    return b"ctorch._utils\n_rebuild_tensor_v2\n" + args + b"R"


def pk_dict(pairs, ordered=False):
    head = b"ccollections\nOrderedDict\n)R" if ordered else b"}"
    return head + b"(" + b"".join(pk_str(k) + v for k, v in pairs) + b"u"


def pickle_of(body):
    return b"\x80\x02" + body + b"."


def zip_of(records, prefix="archive/", method=None, sizes=None, crcs=None):
    """A stored zip like torch.save's (records: name -> bytes); method/sizes/crcs override one record."""
    import struct
    import zlib
    out, central = b"", b""
    for name, data in records.items():
        full = (prefix + name).encode()
        m = (method or {}).get(name, 0)
        usize = (sizes or {}).get(name, len(data))
        crc = (crcs or {}).get(name, zlib.crc32(data))
        off = len(out)
        out += struct.pack("<IHHHHHIIIHH", 0x04034b50, 20, 0, m, 0, 0, crc, len(data), usize, len(full), 0) + full + data
        central += struct.pack("<IHHHHHHIIIHHHHHII", 0x02014b50, 20, 20, 0, m, 0, 0, crc, len(data), usize,
                               len(full), 0, 0, 0, 0, 0, off) + full
    eocd = struct.pack("<IHHHHIIH", 0x06054b50, 0, 0, len(records), len(records), len(central), len(out), 0)
    return out + central + eocd


def directory_heavy(records, extra, prefix="archive/"):
    """zip_of(records) plus `extra` directory entries at the last record's header, closed by zip64
    end records: a zip that is nearly all central directory (tests/zip_bytes.hpp's twin)."""
    import struct
    plain = zip_of(records, prefix)
    eocd = plain[-22:]
    cd_size, cd_off = struct.unpack("<II", eocd[12:20])
    body = plain[:-22]
    last = cd_off - 30 - len((prefix + list(records)[-1]).encode()) - len(list(records.values())[-1])
    for i in range(extra):
        full = f"{prefix}x/{i}".encode()
        body += struct.pack("<IHHHHHHIIIHHHHHII", 0x02014b50, 20, 20, 0, 0, 0, 0, 0, 0, 0, len(full), 0, 0, 0, 0, 0,
                            last) + full
    end, n = len(body), len(records) + extra
    body += struct.pack("<IQHHIIQQQQ", 0x06064b50, 44, 45, 45, 0, 0, n, n, end - cd_off, cd_off)
    body += struct.pack("<IIQI", 0x07064b50, 0, end, 1)
    return body + struct.pack("<IHHHHIIH", 0x06054b50, 0, 0, 0xffff, 0xffff, 0xffffffff, 0xffffffff, 0)


def torch_zip_seeds():
    import struct
    import zlib
    f32 = struct.pack("<6f", 1, 2, 3, 4, 5, 6)
    sd = pickle_of(pk_dict([("fc.weight", pk_tensor("0", 6, [2, 3])), ("fc.bias", pk_tensor("1", 2, [2]))], ordered=True))
    good = zip_of({"data.pkl": sd, "data/0": f32, "data/1": f32[:8], "version": b"3\n"})
    wrapped = zip_of({"data.pkl": pickle_of(pk_dict([("state_dict", pk_dict([("w", pk_tensor("0", 6, [3, 2], [1, 3]))])),
                                                     ("epoch", pk_int(3))])), "data/0": f32})
    deflated = zlib.compress(f32)[2:-4]
    nested = pickle_of(b")" + b"\x85" * 100000)
    memo = pickle_of(b"]q\x00(" + b"h\x00" * 20000 + b"e")
    return [good, wrapped, sd, nested, memo,
            zip_of({"data.pkl": sd, "data/0": deflated, "data/1": f32[:8]}, method={"data/0": 8}, sizes={"data/0": 24}),
            zip_of({"data.pkl": sd, "data/0": f32[:8], "data/1": f32[:8]}),                 # record shorter than storage
            zip_of({"data.pkl": sd, "data/0": b"\0" * 64, "data/1": f32[:8]}, method={"data/0": 8}, sizes={"data/0": 1 << 31}),  # bomb
            zip_of({"data.pkl": pickle_of(pk_dict([("w", pk_tensor("0", 10 ** 12, [2]))])), "data/0": f32}),
            zip_of({"data.pkl": sd, "data.pkl2": sd}, prefix=""),
            good[: len(good) // 2], b"\x80\x02\x8a\x0al\xfc\x9cF\xf9 j\xa8P\x19.",
            directory_heavy({"data.pkl": sd, "data/0": f32, "data/1": f32[:8]}, 200)]


def tensors_file_seeds():
    import struct
    x = struct.pack("<6f", 1, 2, 3, 4, 5, 6)
    y = struct.pack("<2q", 0, 1)
    pair = pk_dict([("input", pk_tensor("0", 6, [2, 3])), ("target", pk_tensor("1", 2, [2], storage="LongStorage"))])
    only_input = pickle_of(b"}" + pk_str("input") + pk_tensor("0", 6, [2, 3]) + b"s")  # SETITEM ('s', 0x73)
    tup = pickle_of(pk_tuple([pk_tensor("0", 6, [2, 3]), pk_tensor("1", 2, [2], storage="LongStorage")]))
    return [zip_of({"data.pkl": pickle_of(pair), "data/0": x, "data/1": y}),
            zip_of({"data.pkl": tup, "data/0": x, "data/1": y}),
            zip_of({"data.pkl": only_input, "data/0": x}),
            zip_of({"data.pkl": pickle_of(pair), "data/0": x[:8], "data/1": y}),  # storage larger than its record
            zip_of({"data.pkl": pickle_of(b")" + b"\x85" * 100000), "data/0": x}),
            pickle_of(pair), only_input]


def torchscript_archive_seeds():
    """torch.jit.save archives: code records stored and deflated (PyTorch 2.x deflates them), a
    __setstate__ that reads a file, a bomb, a lying size, a torch.save file (no code)."""
    import zlib
    code = (b"class Net(Module):\n  __parameters__ = [\"w\", ]\n  w : Tensor\n"
            b"  def forward(self: __torch__.Net, x: Tensor) -> Tensor:\n"
            b"    y = torch.linear(x, self.w)\n    return ops.prim.device(torch.relu(y))\n")
    evil = (b"class Net(Module):\n  def __setstate__(self: __torch__.Net, state: Tuple[Tensor]) -> None:\n"
            b"    self.w = torch.from_file(\"/etc/passwd\", True, 100)\n    return None\n")

    def deflate(b):
        c = zlib.compressobj(9, zlib.DEFLATED, -15)
        return c.compress(b) + c.flush()

    def archive(code_bytes, deflated=False, sizes=None, extra=None):
        recs = {"data.pkl": pickle_of(b"}"), "code/__torch__.py": deflate(code_bytes) if deflated else code_bytes,
                "version": b"3\n", "byteorder": b"little", **(extra or {})}
        m = {"code/__torch__.py": 8} if deflated else {}
        sz = {"code/__torch__.py": len(code_bytes), **(sizes or {})} if deflated else sizes
        return zip_of(recs, prefix="net/", method=m, sizes=sz, crcs={"code/__torch__.py": zlib.crc32(code_bytes)})

    bomb = deflate(b"a" * 1000000)
    return [archive(code), archive(code, deflated=True), archive(evil), archive(evil, deflated=True),
            archive(code, deflated=True, sizes={"code/__torch__.py": 40}),   # inflates to more than declared
            zip_of({"data.pkl": pickle_of(b"}"), "code/x.py": bomb}, prefix="net/", method={"code/x.py": 8},
                   sizes={"code/x.py": 1000000}),                             # 1 MB from ~1 KB
            archive(code, extra={".data/version": b"3\n", "constants.pkl": pickle_of(b")")}),
            zip_of({"data.pkl": pickle_of(b"}"), "data/0": b"\0" * 8}, prefix="net/")]  # torch.save: no code


def token_file_seeds():
    import struct
    def case(size, head):
        return struct.pack("<Q", size) + head
    llmc = struct.pack("<3i", 20240520, 1, 100) + b"\0" * (1024 - 12)
    llmc32 = struct.pack("<3i", 20240801, 7, 10) + b"\0" * (1024 - 12)
    return [case(1024 + 200, llmc), case(1024 + 40, llmc32), case(1024 + 100, llmc),
            case(1024 + 200, struct.pack("<3i", 20240520, 2, 100) + b"\0" * 1012),
            case(7, b"\1\2\3\4\5\6\7"), case(10, b"\1\0\2\0\3\0\4\0\5\0"), case(0, b""),
            case((1 << 64) - 1, llmc), case(1024 + 2 * 0xffffffff, struct.pack("<3I", 20240520, 1, 0xffffffff) + b"\0" * 1012)]


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
    for target, seeds in [("safetensors", safetensors_seeds), ("torch_zip", torch_zip_seeds),
                          ("tensors_file", tensors_file_seeds), ("token_file", token_file_seeds),
                          ("torchscript_archive", torchscript_archive_seeds)]:
        for data in seeds():
            write(target, data)
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
