#!/usr/bin/env bash
# `cmake --install` into a temporary prefix, then the installed tree used as a user would: the
# layout, `mtrain --version` (git revision, the worker's LibTorch), the bundled trainer found in
# libexec/mtrain, bash completion from the installed file, and every man page rendering cleanly.
. "$(dirname "$0")/../lib.sh"
BUILD=$(dirname "${MTRAIN_BIN_DIR:?}")
[ -x "${MTRAIN_BIN_DIR}/mtrain-worker" ] || skip "mtrain-worker is not built (LibTorch build off)"
P=$WORK/prefix
timeout -k 5 240 cmake --build "$BUILD" --target mtrain_share >"$WORK/build.log" 2>&1 || { cat "$WORK/build.log"; fail "build mtrain_share"; finish; }
timeout -k 5 120 cmake --install "$BUILD" --prefix "$P" >"$WORK/install.log" 2>&1
rc=$?; expect_rc 0 "cmake --install into $P"

# 1. Layout.
for f in bin/mtrain libexec/mtrain/mtrain-worker \
         share/mtrain/templates/slurm/agent-per-node.sbatch share/mtrain/templates/slurm/task-per-gpu.sbatch \
         share/mtrain/examples/ddp.yaml share/mtrain/examples/zero1.yaml share/mtrain/examples/zero2.yaml \
         share/mtrain/examples/zero3.yaml share/mtrain/examples/fsdp.yaml share/mtrain/examples/hostfile \
         share/mtrain/examples/deepspeed-zero3.yaml share/mtrain/examples/export_model.py \
         share/bash-completion/completions/mtrain share/zsh/site-functions/_mtrain \
         share/fish/vendor_completions.d/mtrain.fish share/man/man1/mtrain.1 share/man/man1/mtrain-launch.1 \
         share/man/man1/mtrain-slurm-submit.1 share/doc/mtrain/README.md share/doc/mtrain/settings.md; do
  [ -e "$P/$f" ] && ok "installed $f" || fail "missing $f"
done
[ -x "$P/share/mtrain/examples/export_model.py" ] && ok "export_model.py is executable" || fail "export_model.py not executable"

# 2. The examples are valid jobs, the imported DeepSpeed one included.
for j in ddp zero1 zero2 zero3 fsdp deepspeed-zero3; do
  run_installed() { timeout -k 5 60 "$P/bin/mtrain" "$@" >"$WORK/out" 2>&1; rc=$?; }
  run_installed config validate "$P/share/mtrain/examples/$j.yaml"
  expect_rc 0 "example $j.yaml validates"
done
grep -q "strategy: zero3" "$P/share/mtrain/examples/deepspeed-zero3.yaml" && ok "imported DeepSpeed job is ZeRO-3" || fail "deepspeed-zero3.yaml lacks strategy: zero3"

# 3. --version: version, revision, the worker's LibTorch (asked from the installed worker).
timeout -k 5 60 "$P/bin/mtrain" --version >"$WORK/version" 2>&1; rc=$?
expect_rc 0 "mtrain --version"
expect_in "$WORK/version" "mtrain $(sed -n 's/^project(mtrain VERSION \([0-9.]*\).*/\1/p' "$MTRAIN_SOURCE_DIR/CMakeLists.txt") (git "
# The LibTorch of this tree's worker, from the build facts installed beside it.
libtorch=$(sed -n 's/^ *"libtorch": "\([^"]*\)".*/\1/p' "${MTRAIN_BIN_DIR}/mtrain-worker.facts.json")
expect_in "$WORK/version" "LibTorch $libtorch ("
expect_in "$WORK/version" "mtrain-worker $P/libexec/mtrain/mtrain-worker)"
# The installed worker finds its LibTorch without LD_LIBRARY_PATH (RPATH to a wheel's torch/lib).
env -u LD_LIBRARY_PATH timeout -k 5 60 "$P/libexec/mtrain/mtrain-worker" build-info >"$WORK/info" 2>&1; rc=$?
expect_rc 0 "the installed mtrain-worker starts without LD_LIBRARY_PATH"
expect_in "$WORK/info" "\"libtorch\":\"$libtorch\""

# 4. The installed bundled trainer.
PATH="$P/bin:$PATH" timeout -k 5 180 mtrain launch --model mlp --max-steps 5 --nproc-per-node 1 --master-port 0 \
  --work-dir "$WORK/wd" >"$WORK/train" 2>&1; rc=$?
expect_rc 0 "installed mtrain trains mlp for 5 steps"
expect_in "$WORK/train" "Iter(train) [5/5]"

# 5. Bash completion from the installed file.
bash --norc --noprofile -c "source '$P/share/bash-completion/completions/mtrain' && complete -p mtrain" >"$WORK/compl" 2>&1
rc=$?; expect_rc 0 "installed bash completion loads"
expect_in "$WORK/compl" "complete -F"
zsh -f -c "autoload -Uz compinit && compinit -u -d '$WORK/zcd' && fpath=('$P/share/zsh/site-functions' \$fpath) && autoload -Uz _mtrain && whence -w _mtrain" >"$WORK/zcompl" 2>&1 \
  && ok "zsh finds _mtrain in site-functions" || { fail "zsh _mtrain"; cat "$WORK/zcompl"; }

# 6. Every man page renders without a formatter warning, one page per visible command.
n=0
for page in "$P"/share/man/man1/*.1; do
  n=$((n + 1))
  name=$(basename "$page" .1)
  MANWIDTH=100 timeout 30 man -l "$page" >"$WORK/man.out" 2>"$WORK/man.err"
  if [ $? -eq 0 ] && [ ! -s "$WORK/man.err" ] && grep -q "^NAME" "$WORK/man.out" && grep -q "$name" "$WORK/man.out"; then
    :
  else
    fail "man -l $name.1 does not render cleanly"; cat "$WORK/man.err"
  fi
  groff -man -ww -z "$page" 2>"$WORK/groff.err"
  [ -s "$WORK/groff.err" ] && { fail "groff warnings in $name.1"; cat "$WORK/groff.err"; }
done
[ "$n" -ge 20 ] && ok "$n man pages render" || fail "only $n man pages"
MANWIDTH=100 man -l "$P/share/man/man1/mtrain-launch.1" >"$WORK/launch.man" 2>&1
expect_in "$WORK/launch.man" "--nproc-per-node"
grep -qE "mtrain-launch +- +Start +one +process +per +rank" "$WORK/launch.man" && ok "mtrain-launch(1) NAME line" || fail "mtrain-launch(1) NAME line"
finish
