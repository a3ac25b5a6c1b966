#!/usr/bin/env bash
# `--data tokens` through the real launcher at world 2: a file missing or whose size disagrees
# with its llm.c header fails before any rank starts (exit 2, naming the setting and the file);
# an llm.c uint32 file and a nanoGPT uint16 file of the same ids train to the same weights; a run
# stopped at step 5 and resumed ends bit-identical to an uninterrupted one; an id at or above
# model.vocab_size stops the job with its position.
. "$(dirname "$0")/../lib.sh"
[ -x "${MTRAIN_BIN_DIR}/mtrain-worker" ] || skip "mtrain-worker is not built (LibTorch build off)"
"$PY" -c 'import numpy' 2>/dev/null || skip "/usr/bin/python3 has no numpy"
GEN="$(dirname "$0")/token_files.py"
export TMPDIR="$WORK"
small=(--nproc-per-node 2 --master-port 0 --model gpt --data tokens
       --set model.n_layer=1 --set model.n_head=2 --set model.n_embd=32 --set model.block_size=32
       --set model.vocab_size=1000 --set train.batch_size=4 --set sched.name=constant
       --set train.log_interval=5)

# Bad input: refused by the launcher, nothing started, no work dir.
"$PY" "$GEN" llmc16 "$WORK/cut.bin" 20000 --vocab 1000 --header-count 25000
run_mtrain "$WORK/missing" launch "${small[@]}" --data-path "$WORK/none.bin" --max-steps 2 --work-dir "$WORK/wd_bad"
expect_rc 2 "a missing token file is refused"
expect_in "$WORK/missing" "data.path"
expect_in "$WORK/missing" "$WORK/none.bin"
run_mtrain "$WORK/cut" launch "${small[@]}" --data-path "$WORK/cut.bin" --max-steps 2 --work-dir "$WORK/wd_bad"
expect_rc 2 "an llm.c file shorter than its header says is refused"
expect_in "$WORK/cut" "has 41024 bytes, but its header says 25000 tokens: expected 1024 + 25000 × 2 = 51024 bytes"
"$PY" "$GEN" nanogpt "$WORK/ok.bin" 20000 --vocab 1000
run_mtrain "$WORK/noval" launch "${small[@]}" --data-path "$WORK/ok.bin" --max-steps 2 \
  --set data.val_path="$WORK/noval.bin" --work-dir "$WORK/wd_bad"
expect_rc 2 "a missing validation file is refused"
expect_in "$WORK/noval" "data.val_path"
expect_not_in "$WORK/noval" "mtrain-worker:"
[ ! -e "$WORK/wd_bad" ] && ok "nothing was written for refused jobs" || fail "work dir created for a refused job"

# The same 40000 ids as nanoGPT uint16 and llm.c uint32: the same weights after 6 steps.
"$PY" "$GEN" nanogpt "$WORK/ids16.bin" 40000 --vocab 1000 --seed 7
"$PY" "$GEN" llmc32 "$WORK/ids32.bin" 40000 --vocab 1000 --seed 7
run_mtrain "$WORK/u16" launch "${small[@]}" --data-path "$WORK/ids16.bin" --max-steps 6 --work-dir "$WORK/wd16"
expect_rc 0 "nanoGPT uint16 file trains"
expect_in "$WORK/u16" "model gpt (tokens data)"
run_mtrain "$WORK/u32" launch "${small[@]}" --data-path "$WORK/ids32.bin" --max-steps 6 --work-dir "$WORK/wd32"
expect_rc 0 "llm.c uint32 file trains"
same_weights() {
  "$PY" - "$1" "$2" <<'PYEOF'
import sys, torch
a, b = torch.load(sys.argv[1]), torch.load(sys.argv[2])
assert a.keys() == b.keys() and len(a) > 0, (a.keys(), b.keys())
diff = [k for k in a if not torch.equal(a[k], b[k])]
assert not diff, diff
PYEOF
}
same_weights "$WORK/wd16/model.pt" "$WORK/wd32/model.pt" \
  && ok "uint16 and uint32 files of the same ids give identical weights" || fail "weights differ between formats"

# Resume: 6 steps, then on to 12, equals 12 straight (constant schedule: max_steps does not shape it).
run_mtrain "$WORK/straight" launch "${small[@]}" --data-path "$WORK/ids32.bin" --max-steps 12 --work-dir "$WORK/wd_straight"
expect_rc 0 "12 steps straight"
run_mtrain "$WORK/r6" launch "${small[@]}" --data-path "$WORK/ids32.bin" --max-steps 6 --work-dir "$WORK/wd_resumed"
expect_rc 0 "6 steps, checkpointed at the end"
run_mtrain "$WORK/r12" launch "${small[@]}" --data-path "$WORK/ids32.bin" --max-steps 12 --work-dir "$WORK/wd_resumed" --resume auto
expect_rc 0 "resumed from step 6 to 12"
expect_in "$WORK/r12" "Resumed from $WORK/wd_resumed/checkpoints/step_6 at step 6"
same_weights "$WORK/wd_straight/model.pt" "$WORK/wd_resumed/model.pt" \
  && ok "the resumed run ends bit-identical to the straight one" || fail "resumed weights differ"

# An id beyond the vocabulary: the job stops with the file and the position.
"$PY" "$GEN" nanogpt "$WORK/wide.bin" 40000 --vocab 5000
run_mtrain "$WORK/wide" launch "${small[@]}" --data-path "$WORK/wide.bin" --max-steps 4 --work-dir "$WORK/wd_wide"
[ "$rc" -ne 0 ] && ok "ids beyond model.vocab_size fail the job (exit $rc)" || fail "ids beyond the vocabulary trained"
expect_in "$WORK/wide" "wide.bin"
expect_in "$WORK/wide" "but model.vocab_size is 1000"
grep -qE "has token id [0-9]+ at position [0-9]+ \(byte offset [0-9]+\)" "$WORK/wide" \
  && ok "the error names the id, its position and byte offset" || fail "error lacks the position"
no_survivors "mtrain-worker --job $WORK"
finish
