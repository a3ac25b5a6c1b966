#!/usr/bin/env bash
# The TorchScript golden test against PyTorch with adamw (golden_run.sh).
OPT=adamw
. "$(dirname "$0")/golden_run.sh"
