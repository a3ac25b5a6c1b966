# The estimate's accuracy (sourced by test_accuracy_*.sh after lib.sh): for one model, at worlds
# 1-4 and every strategy (fsdp in each single-node sharding mode), `mtrain estimate`'s peak per
# rank against the peak the run itself measures (summary.json peak_memory_bytes: the fullest
# rank's resident high-water mark). Each row must be within 10%. Rows are appended to
# $ESTIMATE_TABLE (when set) as TSV: model, world, strategy, estimate MiB, measured MiB, ratio;
# tests/e2e/estimate/make_table.py turns them into docs/estimate-accuracy.md.
#
# accuracy_model NAME STEPS ARGS...: ARGS are the model's launch flags.
STRATEGIES=${STRATEGIES:-"ddp zero1 zero2 zero3 fsdp/FULL_SHARD fsdp/SHARD_GRAD_OP fsdp/NO_SHARD"}
WORLDS=${WORLDS:-"1 2 3 4"}
TOLERANCE=${TOLERANCE:-0.10}
# Rows known to be beyond the tolerance and open in issue 31, "model:strategy" (worlds 2 and up):
# measured and printed as "open", not failed, until the cause is found (docs/estimate.md, Accuracy).
OPEN=${OPEN:-}

accuracy_model() {
  local name=$1 steps=$2; shift 2
  local w s strategy sharding est
  for w in $WORLDS; do
    est="$WORK/est_${name}_$w.json"
    "$MTRAIN" estimate --format json --nproc-per-node "$w" "$@" >"$est" 2>"$WORK/est.err" ||
      { fail "$name world $w: mtrain estimate failed: $(tail -3 "$WORK/est.err")"; continue; }
    for s in $STRATEGIES; do
      strategy=${s%%/*}
      sharding=FULL_SHARD
      [ "$strategy" != "$s" ] && sharding=${s#*/}
      local wd="$WORK/run_${name}_${w}_${strategy}_${sharding}"
      local extra=()
      [ "$strategy" = fsdp ] && extra=(--set "fsdp.sharding_strategy=$sharding")
      run_mtrain "$WORK/run.out" launch --nproc-per-node "$w" --master-port 0 --strategy "$strategy" "${extra[@]}" \
        --force --max-steps "$steps" --work-dir "$wd" --set train.log_interval=100 "$@"
      if [ "$rc" -ne 0 ]; then
        fail "$name world $w $s: the run failed (exit $rc)"; sed 's/^/    | /' "$WORK/run.out" | tail -15; continue
      fi
      local summary
      summary=$(find "$wd" -name summary.json | head -1)
      local label=$strategy
      [ "$strategy" = fsdp ] && label="fsdp/$sharding"
      local line
      line=$("$PY" - "$est" "$summary" "$label" "$TOLERANCE" <<'PYEOF'
import json, sys
est, summ, label, tol = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), sys.argv[3], float(sys.argv[4])
row = next(r for r in est["rows"] if r["label"] == label)
e = row["bytes_per_rank"]["total"]
m = summ["peak_memory_bytes"]
ratio = e / m
print(f"{e / 2**20:.0f}\t{m / 2**20:.0f}\t{ratio:.3f}\t{'ok' if abs(ratio - 1) <= tol else 'OUT'}")
PYEOF
)
      local e_mib m_mib ratio verdict
      IFS=$'\t' read -r e_mib m_mib ratio verdict <<<"$line"
      [ -n "${ESTIMATE_TABLE:-}" ] && printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$w" "$label" "$e_mib" "$m_mib" "$ratio" >>"$ESTIMATE_TABLE"
      if [ "$verdict" = ok ]; then ok "$name world $w $label: estimate $e_mib MiB, measured $m_mib MiB (x$ratio)"
      elif [ "$w" -ge 2 ] && [[ " $OPEN " == *" $name:$label "* ]]; then
        echo "open - $name world $w $label: estimate $e_mib MiB, measured $m_mib MiB (x$ratio, beyond ${TOLERANCE}; issue 31)"
      else fail "$name world $w $label: estimate $e_mib MiB, measured $m_mib MiB (x$ratio, beyond ${TOLERANCE})"; fi
      rm -rf "$wd"
    done
  done
}
