#!/usr/bin/env bash
# First-use rough edges, one check each (each failed before its fix): the nproc-per-node rule,
# offline --dry-run with a hostfile, launch.master_port 0|auto in job files, did-you-mean for
# commands, the Slurm script's rank count and output folder, where --log-dir put the logs, the
# Python of `mtrain env`, `--set model.<Tab>` in fish, a hostfile colon, --nproc spellings.
. "$(dirname "$0")/../lib.sh"
SRC=${MTRAIN_SOURCE_DIR:?}
BIN=$(dirname "$MTRAIN")
json_of() { "$PY" -c "import json,sys; print(json.load(sys.stdin)$1)"; }

# 1. nproc-per-node: one rule (absent = auto = one per selected GPU, else 1), said the same way in
#    docs/settings.md, `launch --help` and `config show`.
rule="auto, the default (one per selected GPU, else 1)"
grep -qF "$rule" "$SRC/docs/settings.md" && ok "docs/settings.md states the rule" || fail "docs/settings.md lacks '$rule'"
"$MTRAIN" launch --help >"$WORK/help" 2>&1
tr -s ' \n' ' ' <"$WORK/help" | grep -qF "$rule" && ok "launch --help states the rule" || fail "launch --help lacks the rule"
"$MTRAIN" config show --format json >"$WORK/show.json" 2>&1
[ "$(json_of '["launch"]["nproc_per_node"]' <"$WORK/show.json")" = auto ] && ok "config show: launch.nproc_per_node auto" || fail "config show nproc"
absent=$("$MTRAIN" launch --dry-run --format json -- /bin/true | json_of '["world_size"]')
auto=$("$MTRAIN" launch --nproc-per-node auto --dry-run --format json -- /bin/true | json_of '["world_size"]')
[ "$absent" = "$auto" ] && ok "absent and auto plan the same world ($auto)" || fail "absent plans $absent ranks, auto $auto"

# 2. A hostfile of hosts this machine cannot resolve: --dry-run plans offline.
printf 'worker-0.invalid slots=2\nworker-1.invalid slots=2\n' >"$WORK/hosts"
run_mtrain "$WORK/offline" launch --hostfile "$WORK/hosts" --dry-run --format json -- /bin/true
expect_rc 0 "--dry-run with unresolvable hosts"
[ "$(grep -v '^mtrain: note' "$WORK/offline" | json_of '["world_size"]')" = 4 ] && ok "the offline plan has 4 ranks" || fail "offline plan"
# The bundled trainer over ssh (no program): each agent runs mtrain-worker (this was refused
# with "no program to launch" before the ssh launcher learnt to plan it).
run_mtrain "$WORK/offline_trainer" launch --hostfile "$WORK/hosts" --dry-run --strategy zero3
expect_rc 0 "--dry-run of the bundled trainer over ssh"
expect_in "$WORK/offline_trainer" "mtrain-worker --job"

# 3. launch.master_port 0 | auto in a job file: validate, show and launch accept it.
for port in auto 0; do
  printf 'launch:\n  master_port: %s\n' "$port" >"$WORK/port.yaml"
  run_mtrain "$WORK/validate" config validate "$WORK/port.yaml"
  expect_rc 0 "config validate accepts master_port: $port"
  run_mtrain "$WORK/show" config show --config "$WORK/port.yaml"
  expect_rc 0 "config show accepts master_port: $port"
  expect_in "$WORK/show" "$port"
  run_mtrain "$WORK/launch_port" launch --config "$WORK/port.yaml" --nproc-per-node 1 -- /bin/true
  expect_rc 0 "launch --config with master_port: $port"
done

# 4. A misspelt command.
run_mtrain "$WORK/typo" lauch --nproc-per-node 2
expect_rc 2 "mtrain lauch"
expect_in "$WORK/typo" "Did you mean 'launch'?"

# 5. Slurm script: --nproc-per-node 4 is the node's rank count, and the --output folder is created.
run_mtrain "$WORK/sbatch" slurm script --nodes 2 --output "$WORK/slurm-logs/%x-%j.out" --nproc-per-node 4
expect_rc 0 "slurm script --nodes 2 --nproc-per-node 4"
expect_in "$WORK/sbatch" "starts the node's 4 rank(s)"
expect_in "$WORK/sbatch" "--nproc-per-node 4"
[ -d "$WORK/slurm-logs" ] && ok "slurm script created the --output folder" || fail "slurm-logs/ was not created"

# 6. --log-dir says where the logs went.
run_mtrain "$WORK/logdir" launch --nproc-per-node 1 --master-port 0 --log-dir "$WORK/logs" -- /bin/echo hello
expect_rc 0 "launch --log-dir"
expect_in "$WORK/logdir" "rank logs go to $WORK/logs/"
expect_in "$WORK/logdir" "rank logs are in $WORK/logs/"

# 7. mtrain env names the python3 ranks run and its PyTorch.
run_mtrain "$WORK/env" env
expect_rc 0 "mtrain env"
expect_in "$WORK/env" "python3:        $(command -v python3)"
if python3 -c 'import torch' 2>/dev/null; then
  expect_in "$WORK/env" "PyTorch:        $(python3 -c 'import torch; print(torch.__version__)')"
else
  expect_in "$WORK/env" "PyTorch:        not importable"
fi

# 8. fish: --set model.<Tab>.
if command -v fish >/dev/null; then
  PATH="$BIN:$PATH" fish --no-config -c 'mtrain completion fish | source; complete -C "mtrain launch --set model."' >"$WORK/fish" 2>&1
  expect_in "$WORK/fish" "model.name="
  expect_in "$WORK/fish" "model.n_layer="
  PATH="$BIN:$PATH" fish --no-config -c 'mtrain completion fish | source; complete -C "mtrain launch --set model.name="' >"$WORK/fish2" 2>&1
  expect_in "$WORK/fish2" "model.name=resnet18"
fi

# 9. A hostfile line 'localhost: slots=2' is a parse error at the colon.
printf 'localhost: slots=2\n' >"$WORK/colon"
run_mtrain "$WORK/colon.out" launch --hostfile "$WORK/colon" --dry-run -- /bin/true
expect_rc 2 "hostfile with 'localhost:'"
expect_in "$WORK/colon.out" "$WORK/colon:1:10"
expect_in "$WORK/colon.out" "':' after host name 'localhost'"

# 10. Both spellings: launch --nproc, bench comm --nproc-per-node.
[ "$("$MTRAIN" launch --nproc 3 --dry-run --format json -- /bin/true | json_of '["world_size"]')" = 3 ] \
  && ok "launch --nproc 3" || fail "launch --nproc"
if [ -x "$BIN/mtrain-worker" ]; then
  run_mtrain "$WORK/comm" bench comm --nproc-per-node 1 --ops all_reduce --min-bytes 1K --max-bytes 1K --iters 1 --warmup 0
  expect_rc 0 "bench comm --nproc-per-node 1"
fi

# 11. The memory ledger says why params read 2.000 under a ZeRO-3 offload job (the persistence
#     threshold keeps the small mlp unsharded) and what offloading does on CPU ranks.
if [ -x "$BIN/mtrain-worker" ]; then
  run_mtrain "$WORK/ledger" launch --nproc-per-node 2 --master-port 0 --model mlp --max-steps 1 --work-dir "$WORK/wd_ledger" \
    --strategy zero3 --set zero.offload_param_device=cpu --set zero.offload_optimizer_device=cpu
  expect_rc 0 "zero3 with CPU offload"
  expect_in "$WORK/ledger" "2.000"
  expect_in "$WORK/ledger" "units smaller than zero.stage3_param_persistence_threshold (100000) stay unsharded"
  expect_in "$WORK/ledger" "offload: parameter shards, fp32 master and optimizer state in host memory"
fi
finish
