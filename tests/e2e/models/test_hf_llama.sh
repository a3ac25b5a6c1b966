#!/usr/bin/env bash
# transformers' LlamaForCausalLM (untied head) under ddp x1, fsdp x2 (units: LlamaDecoderLayer) and
# zero3 x3, SGD and AdamW, equal to PyTorch's own training of the same model on the same batches
# (hf_strategies.sh; issue 44 item 2).
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/hf_strategies.sh"
hf_make llama
hf_matrix llama LlamaDecoderLayer
finish
