#!/usr/bin/env bash
# The first hour with your own model, done as a new user does it after README.md and
# docs/your-model.md (issue 45's Must show): a scripted nn.MultiheadAttention classifier and a
# tensors file; a first mistake (data of the wrong width: PyTorch's own message comes first); the
# estimate; fsdp x2 with the blocks as units; Ctrl-C mid-run (a checkpoint, exit 130); --resume
# auto to the end; `mtrain runs` (one run, its two segments joined) and `mtrain runs plot`.
# MTRAIN_UPDATE_DOCS=1 writes the transcript, commands and their real outputs, to
# docs/first-hour.md and the plot to docs/images/first-hour.png; otherwise the doc's commands are
# checked to be the ones this test runs.
. "$(dirname "$0")/../lib.sh"
SRC=${MTRAIN_SOURCE_DIR:?}
TPY=${MTRAIN_PEERS_PYTHON:-${MTRAIN_TORCH_PYTHON:-}}
[ -n "$TPY" ] && "$TPY" -c "import torch" 2>/dev/null || skip "no Python with torch (MTRAIN_PEERS_PYTHON / MTRAIN_TORCH_PYTHON)"
[ -x "${MTRAIN_BIN_DIR}/mtrain-worker" ] || skip "mtrain-worker is not built"
cd "$WORK"
cp "$SRC/tests/e2e/firsthour/make_model.py" .
transcript=$WORK/transcript.md
commands=$WORK/commands.txt
: >"$transcript"
: >"$commands"
say() { printf '%s\n' "$@" >>"$transcript"; }
# step EXPECTED_RC ARGS...: runs `mtrain ARGS` here, records the command and its output (the
# launch logs cut to their head and tail), checks the exit code.
step() {
  local want=$1; shift
  timeout -k 5 180 "$MTRAIN" "$@" >"$WORK/out" 2>&1
  rc=$?
  echo "mtrain $*" >>"$commands"
  { echo '```'; echo "\$ mtrain $*"
    local first_error
    first_error=$(grep -n -m1 'error:' "$WORK/out" | cut -d: -f1)
    if [ "$want" -ne 0 ] && [ -n "$first_error" ]; then  # a failure: from its first error on
      [ "$first_error" -gt 1 ] && echo "…"
      tail -n "+$first_error" "$WORK/out" | head -n 30
    elif [ "$(wc -l <"$WORK/out")" -gt 24 ]; then head -n 14 "$WORK/out"; echo "…"; tail -n 8 "$WORK/out"; else cat "$WORK/out"; fi
    echo '```'; } | sed -e "s|$WORK/||g" -e "s|$WORK|.|g" -e 's/pid [0-9]*/pid N/g' \
      -e 's|File "/[^"]*/site-packages/|File ".../site-packages/|g' >>"$transcript"
  expect_rc "$want" "mtrain $1 ($*)"
}
model=(--model torchscript --model-path net.pt --set model.loss=cross_entropy --data tensors)
fsdp=(--nproc-per-node 2 --strategy fsdp --set fsdp.wrap_module_types=Block --set train.log_interval=50
      --work-dir work_dirs/first --max-steps 1000)

say "# The first hour with your own model" "" \
  "A transcript of what a new user does after README.md and [your-model.md](your-model.md), with the" \
  "commands' real output (the launch logs cut to their head and tail; temporary paths shortened)." \
  "It is made by \`tests/e2e/firsthour/test_first_hour.sh\`, which checks every step; \`MTRAIN_UPDATE_DOCS=1\`" \
  "re-runs and rewrites it." "" \
  "## 1. Your model and your data" "" \
  "A 2-layer \`nn.MultiheadAttention\` classifier, scripted, and a tensors file (\`make_model.py\`):" "" '```python'
sed -n '/^class Block/,$p' make_model.py >>"$transcript"
say '```' "" '```' '$ python make_model.py && python make_model.py 10    # train.pt, and wrong.pt: 10 features, not 16' '```'
"$TPY" -W ignore make_model.py >/dev/null 2>&1 && "$TPY" -W ignore make_model.py 10 >/dev/null 2>&1
[ -f net.pt ] && [ -f train.pt ] && [ -f wrong.pt ] && ok "model and data written" || { fail "make_model.py"; finish; }

say "" "## 2. A first mistake: data the model cannot take" "" \
  "PyTorch's own message comes first, with the TorchScript line it points at and the input's shape:" ""
step 2 launch "${fsdp[@]}" "${model[@]}" --data-path wrong.pt
grep -q "mat1 and mat2 shapes cannot be multiplied" "$WORK/out" && ok "PyTorch's message is shown" || fail "no PyTorch message"
grep -q "frame #" "$WORK/out" && fail "a C++ backtrace reached the console" || ok "no backtrace on the console"

say "" "## 3. What it needs" "" "\`mtrain estimate\` measures the model on this machine (one forward and backward) and says" \
  "what each strategy needs per rank:" ""
step 0 estimate "${fsdp[@]}" "${model[@]}" --data-path train.pt
grep -q "parameters (26.0K)" "$WORK/out" && grep -q "(MiB per rank)" "$WORK/out" && ok "sizes in sensible units" || fail "estimate units"

say "" "## 4. Train with FSDP on 2 ranks, and press Ctrl-C" "" \
  "The blocks are FSDP's units (\`fsdp.wrap_module_types=Block\`). Ctrl-C (SIGINT) stops every rank at the" \
  "same step after a checkpoint:" ""
"$MTRAIN" launch "${fsdp[@]}" "${model[@]}" --data-path train.pt >"$WORK/out" 2>&1 &
launcher=$!
bound $launcher 150
wait_for work_dirs/first/metrics.jsonl '"step": *(1[5-9][0-9]|[2-9][0-9][0-9])' 100 || fail "training never reached step 150"
kill -INT $launcher
wait $launcher; rc=$?; kill $watchdog 2>/dev/null
echo "mtrain launch ${fsdp[*]} ${model[*]} --data-path train.pt" >>"$commands"
{ echo '```'; echo "\$ mtrain launch ${fsdp[*]} ${model[*]} --data-path train.pt"; head -n 12 "$WORK/out"; echo "…"
  echo "^C"; tail -n 4 "$WORK/out"; echo '```'; } | sed -e "s|$WORK/||g" >>"$transcript"
expect_rc 130 "Ctrl-C: the launch ends as interrupted"
stopped=$(ls work_dirs/first/checkpoints)
[ -n "$stopped" ] && grep -q "preempted by SIGINT at step" "$WORK/out" && ok "a checkpoint at the interrupted step ($stopped)" \
  || fail "no checkpoint on SIGINT"

say "" "## 5. Resume where it stopped" "" "\`--resume auto\` takes the newest checkpoint of this work dir and trains to the end:" ""
step 0 launch "${fsdp[@]}" "${model[@]}" --data-path train.pt --resume auto
grep -q "Resumed from" "$WORK/out" && ok "resumed" || fail "not resumed"
grep -q "Iter(train) \[1000/1000\]" "$WORK/out" && ok "trained to step 1000" || fail "did not reach step 1000"

say "" "## 6. The run, as one run" "" "The interrupted and the resumed launch are one run with two segments; the failed first" \
  "attempt of step 2 stays a row of its own (it wrote no checkpoint, so nothing of it was resumed):" ""
step 0 runs work_dirs/first
grep -q "1000/1000 (2 segments" "$WORK/out" && ok "one row, the segments joined" || fail "runs: segments not joined"
step 0 runs plot work_dirs/first -o first-hour.png
[ -s first-hour.png ] && ok "the loss curve is plotted" || fail "no plot"
say "" "![The loss of the run, both segments](images/first-hour.png)"

if [ -n "${MTRAIN_UPDATE_DOCS:-}" ]; then
  mkdir -p "$SRC/docs/images"
  cp "$transcript" "$SRC/docs/first-hour.md"
  cp first-hour.png "$SRC/docs/images/first-hour.png"
  ok "docs/first-hour.md and docs/images/first-hour.png written"
else
  # The doc shows what this test runs: the same commands, in the same order.
  grep -E '^\$ mtrain ' "$SRC/docs/first-hour.md" | sed 's/^\$ //' >"$WORK/doc_commands.txt"
  diff "$WORK/doc_commands.txt" "$commands" >"$WORK/diff" && ok "docs/first-hour.md shows the commands this test runs" \
    || { fail "docs/first-hour.md is stale (MTRAIN_UPDATE_DOCS=1 rewrites it)"; sed 's/^/    | /' "$WORK/diff"; }
  [ -s "$SRC/docs/images/first-hour.png" ] && ok "its plot is there" || fail "docs/images/first-hour.png is missing"
fi
no_survivors "mtrain-worker --job $WORK"
finish
