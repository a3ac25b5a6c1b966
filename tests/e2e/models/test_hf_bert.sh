#!/usr/bin/env bash
# transformers' BertForMaskedLM (decoder weight tied to the word embeddings, its bias to the
# head's) under ddp x1, fsdp x2 (units: BertLayer) and zero3 x3, SGD and AdamW, equal to PyTorch's
# own training of the same model on the same batches; masked-LM targets: the masked tokens' ids,
# -100 elsewhere (no loss, not counted), as BertForMaskedLM's own loss (hf_strategies.sh; issue 44
# item 2). Under ZeRO-3 it found the engine's defect of an operator reading two units
# (sharded_engine.hpp).
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/hf_strategies.sh"
hf_make bert
hf_matrix bert BertLayer
finish
