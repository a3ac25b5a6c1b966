# Shared by the tracking tests (sourced after ../lib.sh): the Python that has the pinned
# tensorboard and mlflow (python/requirements.txt). MTRAIN_TRACKING_PYTHON overrides it.
TRACK_PY=${MTRAIN_TRACKING_PYTHON:-${MTRAIN_SOURCE_DIR:?}/.venv/bin/python}
[ -x "${MTRAIN_BIN_DIR}/mtrain-worker" ] || skip "mtrain-worker is not built (LibTorch build off)"
need_tracking() {
  "$TRACK_PY" -c "import $1" 2>/dev/null ||
    skip "$TRACK_PY has no $1 (scripts/python-env installs python/requirements.txt; or set MTRAIN_TRACKING_PYTHON)"
}
# A small, quick GPT job on one CPU rank.
small=(--nproc-per-node 1 --set launch.device=cpu --set model.n_layer=2 --set model.n_embd=32
       --set model.block_size=16 --set train.batch_size=4 --master-port auto)
