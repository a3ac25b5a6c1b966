#!/usr/bin/env python3
# The recording script of the launcher parity tests (parity.py): one rank writes what its launcher
# gave it (argv, interpreter, environment, working directory) to $PARITY_OUT/<pid>.json and exits 0,
# so the same file can be run by torchrun, torch.distributed.launch, accelerate launch, deepspeed and
# mtrain launch with the same words. With PARITY_FAIL_RANK=R, rank R then fails: by an exception
# under torch.distributed.elastic's @record (PARITY_FAIL_HOW=record, which writes
# TORCHELASTIC_ERROR_FILE) or by exit code N (PARITY_FAIL_HOW=exit:N). It imports no torch unless it
# fails through @record, so a launch costs what the launcher costs.
import json
import os
import sys

out = os.environ["PARITY_OUT"]
os.makedirs(out, exist_ok=True)
record = {
    "argv": sys.argv[1:],
    "orig_argv": list(getattr(sys, "orig_argv", [])),
    "executable": sys.executable,
    "module": __name__ if __name__ != "__main__" else None,
    "spec": __spec__.name if __spec__ is not None else None,
    "cwd": os.getcwd(),
    "env": dict(os.environ),
}
with open(os.path.join(out, f"{os.getpid()}.json.tmp"), "w") as f:
    json.dump(record, f)
os.replace(os.path.join(out, f"{os.getpid()}.json.tmp"), os.path.join(out, f"{os.getpid()}.json"))

# Arrival marks (not *.json): a failing rank first waits, at most 30 s, until every rank of its
# attempt has recorded, so that what is compared does not depend on how fast a launcher tears the
# others down (mtrain stops them within milliseconds of the failure, torchrun after seconds).
attempt = os.environ.get("TORCHELASTIC_RESTART_COUNT", "0")
marks = os.path.join(out, "arrived")
os.makedirs(marks, exist_ok=True)
open(os.path.join(marks, f"{attempt}.{os.environ.get('RANK', '0')}"), "w").close()

fail_rank = os.environ.get("PARITY_FAIL_RANK")
if fail_rank is not None and os.environ.get("RANK") == fail_rank:
    import time
    world = int(os.environ.get("WORLD_SIZE", "1"))
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and sum(f.startswith(attempt + ".") for f in os.listdir(marks)) < world:
        time.sleep(0.02)
    how = os.environ.get("PARITY_FAIL_HOW", "record")
    if how == "record":
        from torch.distributed.elastic.multiprocessing.errors import record as elastic_record

        @elastic_record
        def main():
            raise RuntimeError(f"parity: rank {fail_rank} fails on purpose")

        main()
    else:
        sys.exit(int(how.split(":", 1)[1]))
