#!/usr/bin/env bash
# transformers' GPT2LMHeadModel (tied embeddings) under ddp x1, fsdp x2 (units: GPT2Block) and
# zero3 x3: with every dropout 0.0, SGD and AdamW equal to PyTorch's own training of the same model
# on the same batches; with every dropout 0.1, the pair of traces (model.path, model.eval_path)
# validates exactly as PyTorch's eval mode does on mtrain's weights and its training loss falls
# (hf_strategies.sh; issue 44 items 1 and 2).
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/hf_strategies.sh"
hf_make gpt2 gpt2_dropout
hf_matrix gpt2 GPT2Block
hf_dropout_pair GPT2Block
finish
