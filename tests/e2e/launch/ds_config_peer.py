# A DeepSpeed-style script: finds --deepspeed_config FILE among its arguments (as
# deepspeed.add_config_arguments parses it) and checks the JSON against the keys and value types
# of DeepSpeed's configuration reference, and against the values the test expects (EXPECT_*).
import json
import os
import sys

args = sys.argv[1:]
assert "--deepspeed_config" in args, f"no --deepspeed_config in {args}"
path = args[args.index("--deepspeed_config") + 1]
with open(path) as f:
    ds = json.load(f)
e = os.environ
world, rank = int(e["WORLD_SIZE"]), int(e["RANK"])


def is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def is_num(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


micro, accum = ds["train_micro_batch_size_per_gpu"], ds["gradient_accumulation_steps"]
assert is_int(micro) and micro >= 1 and is_int(accum) and accum >= 1, (micro, accum)
# DeepSpeed: train_batch_size = micro batch x accumulation x world size.
assert ds["train_batch_size"] == micro * accum * world, (ds["train_batch_size"], micro, accum, world)
assert is_num(ds["gradient_clipping"]) and is_int(ds["steps_per_print"])
for p in ("fp16", "bf16"):
    assert isinstance(ds[p], dict) and isinstance(ds[p]["enabled"], bool), ds[p]
assert not (ds["fp16"]["enabled"] and ds["bf16"]["enabled"])
if ds["fp16"]["enabled"]:
    for k in ("loss_scale", "initial_scale_power", "loss_scale_window", "hysteresis", "min_loss_scale"):
        assert is_num(ds["fp16"][k]), k
z = ds["zero_optimization"]
assert is_int(z["stage"]) and 0 <= z["stage"] <= 3
for k in ("overlap_comm", "contiguous_gradients", "stage3_gather_16bit_weights_on_model_save"):
    assert isinstance(z[k], bool), k
for k in ("allgather_bucket_size", "reduce_bucket_size", "stage3_prefetch_bucket_size",
          "stage3_param_persistence_threshold", "stage3_max_live_parameters", "stage3_max_reuse_distance"):
    assert is_int(z[k]) and z[k] >= 0, (k, z[k])
for k in ("offload_optimizer", "offload_param"):
    if k in z:
        assert z[k]["device"] in ("cpu", "nvme"), z[k]
assert ds["optimizer"]["type"] in ("AdamW", "Adam", "SGD") and isinstance(ds["optimizer"]["params"], dict)
assert is_num(ds["optimizer"]["params"]["lr"])
if "scheduler" in ds:
    assert ds["scheduler"]["type"] in ("WarmupLR", "WarmupDecayLR", "WarmupCosineLR"), ds["scheduler"]
    assert is_int(ds["scheduler"]["params"]["warmup_num_steps"])
# What the job said.
assert z["stage"] == int(e["EXPECT_STAGE"]), (z["stage"], e["EXPECT_STAGE"])
if e["EXPECT_PRECISION"] == "fp32":
    assert not ds["fp16"]["enabled"] and not ds["bf16"]["enabled"]
else:
    assert ds[e["EXPECT_PRECISION"]]["enabled"] is True
assert ds["gradient_clipping"] == float(e["EXPECT_CLIP"]), ds["gradient_clipping"]
assert z.get("offload_optimizer", {}).get("device", "none") == e["EXPECT_OFFLOAD"], z
print(f"ds_config ok rank {rank}: stage {z['stage']}, train_batch_size {ds['train_batch_size']}", flush=True)
