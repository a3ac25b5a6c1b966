#!/usr/bin/env bash
# The TorchScript golden test against PyTorch with sgd (golden_run.sh).
OPT=sgd
. "$(dirname "$0")/golden_run.sh"
