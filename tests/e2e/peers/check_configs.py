# Configs read by their real readers (issue 28, item 6):
#   check_configs.py deepspeed FILE KEY=VALUE...   DeepSpeed's own DeepSpeedConfig parses FILE
#   check_configs.py accelerate FILE KEY=VALUE...  accelerate's load_config_from_file parses FILE
#   check_configs.py mmengine-dump OUT              MMEngine's Config.dump of a ds_config dict
# KEY=VALUE: attributes of the parsed object that must print as VALUE (dotted paths into dicts).
import enum
import logging
import os
import sys

logging.disable(logging.WARNING)
os.environ.setdefault("DS_ACCELERATOR", "cpu")


def attr(obj, path):
    for part in path.split("."):
        obj = obj[part] if isinstance(obj, dict) else getattr(obj, part)
    return obj


def check(obj, pairs, what):
    bad = []
    for kv in pairs:
        k, v = kv.split("=", 1)
        got = attr(obj, k)
        got = got.value if isinstance(got, enum.Enum) else got
        try:
            same = float(got) == float(v) and not isinstance(got, bool)
        except (TypeError, ValueError):
            same = False
        if not same and str(got) != v:
            bad.append(f"{k}={got!r} (expected {v})")
    if bad:
        sys.exit(f"{what}: " + ", ".join(bad))
    print(f"{what}: " + ", ".join(pairs))


mode, path = sys.argv[1], sys.argv[2]
if mode == "deepspeed":
    from deepspeed.runtime.config import DeepSpeedConfig
    check(DeepSpeedConfig(path), sys.argv[3:], f"DeepSpeedConfig({os.path.basename(path)}) accepted")
elif mode == "accelerate":
    from accelerate.commands.config.config_args import load_config_from_file
    check(load_config_from_file(path), sys.argv[3:], f"accelerate load_config_from_file({os.path.basename(path)}) accepted")
elif mode == "mmengine-dump":
    from mmengine.config import Config
    cfg = Config(dict(train_micro_batch_size_per_gpu=4, gradient_accumulation_steps=2, gradient_clipping=1.0,
                      bf16=dict(enabled=True), zero_optimization=dict(stage=3, overlap_comm=True,
                                                                     offload_optimizer=dict(device="cpu")),
                      optimizer=dict(type="AdamW", params=dict(lr=3e-4, weight_decay=0.01))))
    cfg.dump(path)
    print(f"MMEngine Config.dump wrote {os.path.basename(path)}")
