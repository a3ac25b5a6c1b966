#!/usr/bin/env bash
# A plain torchrun-style script (DDP over Gloo, errors through torch.distributed.elastic's @record)
# under torchrun 2.x and under `mtrain launch` with the same words: falling loss, exit 0, no rank
# left, identical weights; and a rank that raises: both exit 1 and report its error.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/peers_lib.sh"
need_peers torch
cp "$PEERS_DIR/train_plain.py" "$WORK/"
cd "$WORK" && mkdir a b fa fb
port=$(free_port)
TRAIN_OUT=$WORK/a run_peer o1 240 torchrun --nproc_per_node 2 --master_port "$port" "$WORK/train_plain.py"
expect_rc 0 "torchrun --nproc_per_node 2 train_plain.py"
falling_loss o1 "torchrun"
TRAIN_OUT=$WORK/b run_peer o2 240 "$MTRAIN" launch --nproc_per_node 2 --master_port "$port" "$WORK/train_plain.py"
expect_rc 0 "mtrain launch --nproc_per_node 2 train_plain.py"
falling_loss o2 "mtrain launch"
no_survivors "$WORK/train_plain.py"
same_weights a/weights.pt b/weights.pt "" "weights under torchrun and mtrain launch"

# A rank raises under @record: torchrun and mtrain exit 1 and both name the rank's exception.
TRAIN_FAIL_RANK=1 TRAIN_OUT=$WORK/fa run_peer f1 240 torchrun --nproc_per_node 2 --master_port "$port" "$WORK/train_plain.py"
expect_rc 1 "torchrun, rank 1 raises"
expect_in f1 "train_plain: rank 1 fails at step 5"
TRAIN_FAIL_RANK=1 TRAIN_OUT=$WORK/fb run_peer f2 240 "$MTRAIN" launch --nproc_per_node 2 --master_port "$port" "$WORK/train_plain.py"
expect_rc 1 "mtrain launch, rank 1 raises"
expect_in f2 "train_plain: rank 1 fails at step 5"
expect_in f2 "ValueError"
no_survivors "$WORK/train_plain.py"
finish
