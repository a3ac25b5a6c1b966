#!/usr/bin/env bash
# Scenario (issue 17 item 5): a checkpoint resumed into another model or optimiser, and a
# manifest edited after it was written. Before: a 4-layer checkpoint resumed into 2 layers
# silently dropped two trained layers (exit 0), AdamW → SGD resumed silently, and a tensor's
# dtype changed float32 → float64 in manifest.json passed `verify` (consolidate wrote garbage).
# Now resume refuses with a table of the differing tensors / the two optimisers, and the
# manifest's own checksum fails `verify` and `consolidate`; a manifest of an older format
# (format_version 2, before the checksum was required) without a checksum still verifies, with a
# notice. Issue 29: a current (format 3) manifest whose checksum was removed is refused, so an
# edit cannot pass by dropping it.
. "$(dirname "$0")/lib.sh"
need_verify
# A small gpt: its blocks all have one shape, so fewer layers read without a shape error.
gpt_args() {  # WORK_DIR [extra...]
  local wd=$1; shift
  echo --nproc-per-node 2 --master-port 0 --model gpt --batch-size 4 --work-dir "$wd" --set model.n_embd=32 \
    --set model.block_size=16 "$@"
}
wd=$WORK/run
run_mtrain 300 "$WORK/train.out" launch $(gpt_args "$wd" --max-steps 2 --checkpoint-interval 2 --set model.n_layer=4)
expect_rc 0 "train a 4-layer gpt with AdamW"
ck=$wd/checkpoints/step_2
expect_file "$ck/COMPLETE" "checkpoint step_2"
resume() {  # NAME EXTRA-ARGS...
  local name=$1; shift
  run_mtrain 300 "$WORK/$name.out" launch $(gpt_args "$WORK/$name" --max-steps 4 --resume "$ck" "$@")
}
resume fewer --set model.n_layer=2
expect_rc_not "resume into 2 layers"
expect_in "$WORK/fewer.out" "only in the checkpoint"
expect_in "$WORK/fewer.out" "model/blocks.3."
resume wider --set model.n_layer=4 --set model.n_embd=64
expect_rc_not "resume into another width"
expect_in "$WORK/wider.out" "of another shape"
resume sgd --set model.n_layer=4 --set optim.name=sgd
expect_rc_not "resume with another optimiser"
expect_in "$WORK/sgd.out" "optimizer 'adamw'"
expect_in "$WORK/sgd.out" "'sgd'"
resume same --set model.n_layer=4
expect_rc 0 "resume with the same model and optimiser"

# The manifest edited: one tensor's dtype float32 → float64 (its checksum left as it was).
cp -r "$ck" "$WORK/edited"
"$PY" - "$WORK/edited/manifest.json" <<'PY'
import json, sys
p = sys.argv[1]; m = json.load(open(p))
name = next(n for n in m["tensors"] if n.startswith("model/"))
m["tensors"][name]["dtype"] = "float64"
json.dump(m, open(p, "w"), indent=1)
PY
run_mtrain 60 "$WORK/verify_edited.out" checkpoint verify "$WORK/edited"
expect_rc_not "verify of the edited manifest"
expect_in "$WORK/verify_edited.out" "does not match its checksum"
run_mtrain 60 "$WORK/cons_edited.out" checkpoint consolidate "$WORK/edited" -o "$WORK/edited.pt"
expect_rc_not "consolidate of the edited manifest"
[ -e "$WORK/edited.pt" ] && fail "no output from the edited manifest" "absent" "written" || ok "no output from the edited manifest" "absent" "absent"

# Issue 29: a current manifest with its checksum removed (and a dtype edited): refused.
cp -r "$ck" "$WORK/dropped"
"$PY" -c 'import json,sys; p=sys.argv[1]; m=json.load(open(p)); m.pop("checksum", None); t=next(iter(m["tensors"].values())); t["dtype"]="float64"; json.dump(m, open(p,"w"))' "$WORK/dropped/manifest.json"
run_mtrain 60 "$WORK/verify_dropped.out" checkpoint verify "$WORK/dropped"
expect_rc_not "verify of a format-3 manifest without its checksum"
expect_in "$WORK/verify_dropped.out" 'requires a "checksum"'

# An older manifest (format 2, no checksum): accepted, with a notice.
cp -r "$ck" "$WORK/old"
"$PY" -c 'import json,sys; p=sys.argv[1]; m=json.load(open(p)); m.pop("checksum", None); m["format_version"]=2; json.dump(m, open(p,"w"))' "$WORK/old/manifest.json"
run_mtrain 60 "$WORK/verify_old.out" checkpoint verify "$WORK/old"
expect_rc 0 "verify of a manifest without a checksum"
expect_in "$WORK/verify_old.out" "has no checksum of its own"
no_survivors
finish
