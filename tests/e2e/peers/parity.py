#!/usr/bin/env python3
# Launcher parity against the real tools (issue 28, item 2). Every case of parity_cases.txt is a
# command line as users write it for torchrun, `python -m torch.distributed.launch`, `accelerate
# launch` or `deepspeed`; it runs under that tool and under `mtrain launch` with the same words, on
# the one recording script record_rank.py. Each rank's argv, interpreter, working directory and
# every variable the launcher set or changed are compared field by field; a failing rank's case
# compares the launcher's exit code and that both report the rank's error (TORCHELASTIC_ERROR_FILE
# under @record). A difference passes only when parity_differences.txt lists it with its reason.
# The table of cases (tool, command line, fields compared, differences) is rendered as Markdown for
# docs/peers.md.
#
# usage: parity.py --mtrain BIN --python PEERS_PYTHON --tools torchrun,launch --work DIR
#                  [--table OUT.md] [--only ID,ID]
import argparse
import fnmatch
import json
import os
import shlex
import shutil
import socket
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
TOOL_TITLES = {
    "torchrun": "torchrun",
    "launch": "python -m torch.distributed.launch",
    "accelerate": "accelerate launch",
    "deepspeed": "deepspeed",
}
# The launchers' own bookkeeping in a rank's environment that no program reads and no launcher
# documents (compared as present/absent only would be noise): none so far. Python's own variables
# are never launcher output.
NEVER_COMPARED = {"PWD", "OLDPWD", "SHLVL", "_", "PARITY_OUT", "PARITY_FAIL_RANK", "PARITY_FAIL_HOW"}


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def load_cases(path):
    cases = []
    for n, line in enumerate(open(path), 1):
        line = line.rstrip("\n")
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        parts = [p.strip() for p in line.split("|")]
        if len(parts) < 3:
            sys.exit(f"{path}:{n}: want 'id | tool | words [| options]'")
        opts = {}
        for o in (parts[3].split() if len(parts) > 3 else []):
            k, _, v = o.partition("=")
            opts[k] = v
        cases.append({"id": parts[0], "tool": parts[1], "words": parts[2], "opts": opts})
    return cases


def load_differences(path):
    rows = []
    for n, line in enumerate(open(path), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        parts = [p.strip() for p in line.rstrip("\n").split("|")]
        if len(parts) != 4 or parts[2] not in ("value", "mtrain-only", "tool-only", "any"):
            sys.exit(f"{path}:{n}: want 'tools | field | value|mtrain-only|tool-only|any | reason'")
        rows.append({"tools": parts[0].split(","), "field": parts[1], "kind": parts[2], "reason": parts[3], "used": 0})
    return rows


def allowed(diffs, tool, case_id, field, kind):
    for d in diffs:
        if (tool in d["tools"] or case_id in d["tools"] or "*" in d["tools"]) and fnmatch.fnmatchcase(field, d["field"]) and d["kind"] in (kind, "any"):
            d["used"] += 1
            return d
    return None


class Runner:
    def __init__(self, a):
        self.a = a
        self.venv_bin = os.path.dirname(a.python)
        base = {k: v for k, v in os.environ.items()
                if not k.startswith(("MTRAIN_", "TORCHELASTIC_", "ACCELERATE_", "FSDP_", "MASTER_", "PARITY_"))
                and k not in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK", "ROLE_RANK",
                              "CUDA_VISIBLE_DEVICES", "OMP_NUM_THREADS", "PYTHONPATH", "VIRTUAL_ENV")}
        # As a user with the peers environment activated: its python, torchrun, accelerate and
        # deepspeed first on PATH; accelerate with no saved default config.
        base["PATH"] = self.venv_bin + ":" + base.get("PATH", "/usr/bin:/bin")
        base["VIRTUAL_ENV"] = os.path.dirname(self.venv_bin)
        base["HF_HOME"] = os.path.join(a.work, "hf_home")
        base["PYTHONDONTWRITEBYTECODE"] = "1"
        self.base = base

    def prefix(self, tool):
        if tool == "mtrain":
            return [self.a.mtrain, "launch"]
        if tool == "launch":
            return ["python", "-m", "torch.distributed.launch"]
        if tool == "accelerate":
            return ["accelerate", "launch"]
        return [tool]

    def run(self, case, tool, ports, cwd):
        """Runs one launcher (or two, one per node) of a case; returns (rc, output, records)."""
        cache = os.path.join(cwd, tool + ".result.json")
        if self.a.reuse and tool != "mtrain" and os.path.exists(cache):
            with open(cache) as f:
                return tuple(json.load(f))
        result = self._run(case, tool, ports, cwd)
        with open(cache, "w") as f:
            json.dump(result, f)
        return result

    def _run(self, case, tool, ports, cwd):
        out_dir = os.path.join(cwd, "out-" + tool)
        shutil.rmtree(out_dir, ignore_errors=True)
        nodes = int(case["opts"].get("nodes", "1"))
        env = dict(self.base)
        env["PARITY_OUT"] = out_dir
        env.update(case_env(case))
        if "fail" in case["opts"]:
            r, _, how = case["opts"]["fail"].partition(":")
            env["PARITY_FAIL_RANK"] = r
            env["PARITY_FAIL_HOW"] = how or "record"
        procs = []
        for node in range(nodes):
            words = case["words"].format(node=node, **ports)
            argv = self.prefix(tool) + shlex.split(words)
            logf = open(os.path.join(cwd, f"{tool}.node{node}.log"), "w+")
            procs.append((subprocess.Popen(argv, cwd=cwd, env=env, stdout=logf, stderr=subprocess.STDOUT,
                                           start_new_session=True), logf))
        rcs, output = [], ""
        deadline = time.time() + self.a.timeout
        for p, logf in procs:
            try:
                rcs.append(p.wait(timeout=max(1, deadline - time.time())))
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, 9)
                rcs.append(p.wait())
                output += f"[parity: {tool} killed after {self.a.timeout} s]\n"
            logf.seek(0)
            output += logf.read()
            logf.close()
        records = []
        if os.path.isdir(out_dir):
            for f in sorted(os.listdir(out_dir)):
                if f.endswith(".json"):
                    records.append(json.load(open(os.path.join(out_dir, f))))
        return max(rcs, key=abs), output, records


def case_env(case):
    """Variables a case sets for both launchers (option env:NAME=VALUE), as a user's shell would."""
    return {k[4:]: v for k, v in case["opts"].items() if k.startswith("env:")}


def changed_env(rec, base):
    return {k: v for k, v in rec["env"].items() if base.get(k) != v and k not in NEVER_COMPARED}


def rank_key(rec):
    e = rec["env"]
    return (int(e.get("TORCHELASTIC_RESTART_COUNT", "0") or 0), int(e.get("RANK", "-1")))


def interpreter(rec):
    return os.path.realpath(rec["executable"])


def py_options(rec):
    """The interpreter's own options before the script or module (-u, -m)."""
    opts = []
    for w in rec["orig_argv"][1:]:
        if not w.startswith("-"):
            break
        opts.append(w)
        if w == "-m":
            break
    return opts


def compare(case, tool, diffs, base, real, mine, cwd):
    """Fields compared and differences found (each allowed or not)."""
    fields, found = set(), []

    def diff(field, kind, detail):
        d = allowed(diffs, tool, case["id"], field, kind)
        found.append({"field": field, "kind": kind, "detail": detail, "allowed": d})

    (rc_t, out_t, rec_t), (rc_m, out_m, rec_m) = real, mine
    fields.add("exit code")
    if rc_t != rc_m:
        diff("exit code", "value", f"{tool} {rc_t}, mtrain {rc_m}")
    by_t = {rank_key(r): r for r in rec_t}
    by_m = {rank_key(r): r for r in rec_m}
    fields.add("ranks (restart, RANK)")
    if sorted(by_t) != sorted(by_m):
        diff("ranks (restart, RANK)", "value", f"{tool} {sorted(by_t)}, mtrain {sorted(by_m)}")
    if not by_t:
        diff("ranks (restart, RANK)", "value", f"{tool} started no rank")
    for key in sorted(set(by_t) & set(by_m)):
        t, m = by_t[key], by_m[key]
        where = f"restart {key[0]} rank {key[1]}"
        for name, vt, vm in (("argv", t["argv"], m["argv"]), ("interpreter", interpreter(t), interpreter(m)),
                             ("python options", py_options(t), py_options(m)),
                             ("cwd", t["cwd"], m["cwd"])):
            fields.add(name)
            if vt != vm:
                diff(name, "value", f"{where}: {tool} {vt!r}, mtrain {vm!r}")
        et, em = changed_env(t, base), changed_env(m, base)
        for k in sorted(set(et) | set(em)):
            fields.add(k)
            if k in et and k not in em:
                diff(k, "tool-only", f"{where}: {tool} {k}={et[k]!r}, mtrain unset")
            elif k in em and k not in et:
                diff(k, "mtrain-only", f"{where}: mtrain {k}={em[k]!r}, {tool} unset")
            elif et[k] != em[k]:
                diff(k, "value", f"{where}: {tool} {et[k]!r}, mtrain {em[k]!r}")
    if "fail" in case["opts"]:
        r, _, how = case["opts"]["fail"].partition(":")
        if (how or "record") == "record":
            msg = f"parity: rank {r} fails on purpose"
            fields.add("error reported")
            has_t, has_m = msg in out_t, msg in out_m
            if has_t != has_m:
                diff("error reported", "value", f"the rank's error in {tool}'s output: {has_t}, in mtrain's: {has_m}")
            fields.add("error file")
            files = {}
            for label, recs in ((tool, rec_t), ("mtrain", rec_m)):
                paths = [x["env"].get("TORCHELASTIC_ERROR_FILE") for x in recs if x["env"].get("RANK") == r]
                files[label] = bool(paths and paths[-1] and os.path.exists(paths[-1]))
            # torchrun removes its own folder of error files at exit; where it kept it, both must.
            if files[tool] and not files["mtrain"]:
                diff("error file", "value", f"{tool} kept the failing rank's error file, mtrain did not")
    return fields, found


def render(results, tools):
    lines = ["| tool | command line (the same words after `mtrain launch`) | fields compared | differences (allowed, see below) |",
             "|---|---|---|---|"]
    for r in results:
        c = r["case"]
        fail = f" (rank {c['opts']['fail'].split(':')[0]} fails)" if "fail" in c["opts"] else ""
        nodes = " (2 launchers, node 0 and 1)" if c["opts"].get("nodes") == "2" else ""
        nodes += "".join(f" (with {k}={v})" for k, v in case_env(c).items())
        words = c["words"].replace("{node}", "N").replace("{port}", "P").replace("{port2}", "P2")
        shown = " ".join(["`" + " ".join(TOOL_TITLES[c["tool"]].split()[:2]) + " " + words + "`"])
        env_fields = sorted(f for f in r["fields"] if f.isupper() or "_" in f and f.upper() == f)
        other = sorted(f for f in r["fields"] if f not in env_fields)
        diffs = sorted({d["field"] + (" (" + d["kind"] + ")" if d["kind"] != "value" else "") for d in r["found"]})
        lines.append(f"| {TOOL_TITLES[c['tool']]} | {shown}{fail}{nodes} | {len(r['fields'])}: "
                     f"{', '.join(other + env_fields)} | {', '.join(diffs) or 'none'} |")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mtrain", required=True)
    ap.add_argument("--python", required=True)
    ap.add_argument("--tools", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--table")
    ap.add_argument("--only")
    ap.add_argument("--doc")
    ap.add_argument("--section")
    ap.add_argument("--update", action="store_true")
    ap.add_argument("--reuse", action="store_true", help="development: keep the real tools' runs of an earlier --work")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=90)
    a = ap.parse_args()
    tools = a.tools.split(",")
    cases = [c for c in load_cases(os.path.join(HERE, "parity_cases.txt")) if c["tool"] in tools]
    if a.only:
        cases = [c for c in cases if c["id"] in a.only.split(",")]
    diffs = load_differences(os.path.join(HERE, "parity_differences.txt"))
    runner = Runner(a)

    def one(case):
        cwd = os.path.join(a.work, case["id"])
        os.makedirs(cwd, exist_ok=a.reuse)
        shutil.copy(os.path.join(HERE, "record_rank.py"), cwd)
        os.chmod(os.path.join(cwd, "record_rank.py"), 0o755)
        with open(os.path.join(cwd, "hostfile"), "w") as f:
            f.write("localhost slots=2\n")
        with open(os.path.join(cwd, "accelerate_config.yaml"), "w") as f:
            f.write("compute_environment: LOCAL_MACHINE\ndistributed_type: MULTI_GPU\nmixed_precision: bf16\n"
                    "num_machines: 1\nnum_processes: 2\nmachine_rank: 0\nuse_cpu: false\nmain_training_function: main\n"
                    "rdzv_backend: static\nsame_network: true\n")
        t0 = time.time()
        ports = {"port": free_port(), "port2": free_port()}
        if a.reuse and os.path.exists(os.path.join(cwd, "ports.json")):
            ports = json.load(open(os.path.join(cwd, "ports.json")))
        json.dump(ports, open(os.path.join(cwd, "ports.json"), "w"))
        real = runner.run(case, case["tool"], ports, cwd)
        t1 = time.time()
        mine = runner.run(case, "mtrain", ports, cwd)
        t2 = time.time()
        fields, found = compare(case, case["tool"], diffs, {**runner.base, **case_env(case)}, real, mine, cwd)
        return {"case": case, "fields": fields, "found": found, "real": real, "mine": mine,
                "times": (t1 - t0, t2 - t1)}

    with ThreadPoolExecutor(max_workers=a.jobs) as pool:
        results = list(pool.map(one, cases))

    bad = 0
    for r in results:
        c = r["case"]
        tt, tm = r["times"]
        head = f"{c['id']}: {TOOL_TITLES[c['tool']]} {c['words']}  ({c['tool']} {tt:.1f} s, mtrain {tm:.1f} s)"
        unexpected = [d for d in r["found"] if not d["allowed"]]
        if unexpected:
            bad += 1
            print(f"FAIL - {head}")
            for d in unexpected:
                print(f"    unlisted difference in {d['field']} ({d['kind']}): {d['detail']}")
            for label, res in ((c["tool"], r["real"]), ("mtrain", r["mine"])):
                print(f"    --- {label} exit {res[0]}, output:")
                print("".join("    | " + l + "\n" for l in res[1].splitlines()[-25:]), end="")
        else:
            print(f"ok - {head}: {len(r['fields'])} fields, {len(r['found'])} allowed differences")
        for d in r["found"]:
            if d["allowed"]:
                print(f"    allowed: {d['field']} ({d['kind']}): {d['detail']}")
    table = render(results, tools) + "\n" + render_differences(diffs, results, tools)
    if a.table:
        with open(a.table, "w") as f:
            f.write(table)
    print(f"{len(results)} cases, {bad} with unlisted differences")
    if a.doc and not a.only:
        bad += sync_doc(a.doc, a.section, table, a.update)
    return 1 if bad else 0


def render_differences(diffs, results, tools):
    lines = ["Intentional differences (tests/e2e/peers/parity_differences.txt) and the cases that show them:", "",
             "| tools | field | difference | why | seen in |", "|---|---|---|---|---|"]
    kinds = {"value": "another value", "mtrain-only": "set by mtrain only", "tool-only": "set by the tool only",
             "any": "any"}
    for d in diffs:
        case_ids = {r["case"]["id"] for r in results}
        if "*" not in d["tools"] and not set(d["tools"]) & (set(tools) | case_ids):
            continue
        seen = sorted({r["case"]["id"] for r in results for f in r["found"] if f["allowed"] is d})
        shown = ", ".join("all" if t == "*" else TOOL_TITLES.get(t, t) for t in d["tools"]
                          if t in tools or t == "*" or t in case_ids)
        lines.append(f"| {shown} | `{d['field']}` | {kinds[d['kind']]} | {d['reason']} | {', '.join(seen) or 'not seen here'} |")
    return "\n".join(lines) + "\n"


def sync_doc(doc, section, table, update):
    """The generated section of docs/peers.md: checked, or rewritten with --update."""
    begin = f"<!-- parity:{section} begin (generated by tests/e2e/peers/parity.py; MTRAIN_UPDATE_DOCS=1 rewrites it) -->"
    end = f"<!-- parity:{section} end -->"
    text = open(doc).read() if os.path.exists(doc) else ""
    block = begin + "\n" + table + end
    if begin in text and end in text:
        new = text[:text.index(begin)] + block + text[text.index(end) + len(end):]
    else:
        new = text + ("\n" if text and not text.endswith("\n") else "") + block + "\n"
    if new == text:
        print(f"ok - {doc} section '{section}' is the generated table")
        return 0
    if update:
        with open(doc, "w") as f:
            f.write(new)
        print(f"ok - {doc} section '{section}' rewritten")
        return 0
    print(f"FAIL - {doc} section '{section}' differs from the generated table (MTRAIN_UPDATE_DOCS=1 rewrites it):")
    import difflib
    for l in difflib.unified_diff(text.splitlines(), new.splitlines(), "doc", "generated", lineterm="", n=0):
        print("    " + l)
    return 1


if __name__ == "__main__":
    sys.exit(main())
