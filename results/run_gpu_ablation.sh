#!/usr/bin/env bash
# The GPU version of chapter 5's position-encoding ablation.
#
# NOT RUN YET: the committed results (results/cpu-ablation/, results/cpu-transfer/) come from a CPU. Run this on a machine
# with a CUDA GPU, from the repository root, after `pip install -e .`:
#
#     bash results/run_gpu_ablation.sh
#
# It writes results/gpu-tasks/ and results/gpu-cifar10/ (results.json with the GPU's name, the
# torch version, the git commit and this exact command line; results.md; curves; bias tables).
# Precision is "auto": bfloat16 on GPUs that support it (A100, H100, L4...), float16 with loss
# scaling on the others (T4, V100). Both parts can be stopped and started again: finished runs
# are kept and an interrupted run resumes from its checkpoint (in runs/ablation/), but only with
# the same settings and code; otherwise the ablation stops and says so (FRESH=1 passes --fresh,
# which discards that name's saved runs). A smoke test needs its own NAME_SUFFIX.
#
# Budget knobs (environment variables), with their defaults:
#   SEEDS="0 1 2"   TASK_EPOCHS=30   TASK_TRAIN=20000   TASK_WARMUP=3   BATCH=128
#   CIFAR_EPOCHS=100   CIFAR_WARMUP=5
#   DATA_DIR=~/.cache/vit-position-book (CIFAR-10 goes there, ~170 MB, MD5-checked)
#   SKIP_CIFAR=1 to run only the generated tasks; ALLOW_CPU=1 to smoke-test the script on a CPU
#   (with tiny budgets, e.g. TASK_EPOCHS=1 TASK_WARMUP=0.5 TASK_TRAIN=64 BATCH=16 SKIP_CIFAR=1
#   SEEDS=0 NAME_SUFFIX=-smoke).
set -euo pipefail
cd "$(dirname "$0")/.."

PY=${PYTHON:-python}
SEEDS=${SEEDS:-"0 1 2"}
TASK_EPOCHS=${TASK_EPOCHS:-30}
TASK_TRAIN=${TASK_TRAIN:-20000}
TASK_TEST=${TASK_TEST:-2000}
TASK_WARMUP=${TASK_WARMUP:-3}
CIFAR_EPOCHS=${CIFAR_EPOCHS:-100}
CIFAR_WARMUP=${CIFAR_WARMUP:-5}
BATCH=${BATCH:-128}
DATA_DIR=${DATA_DIR:-$HOME/.cache/vit-position-book}
SUFFIX=${NAME_SUFFIX:-}
FRESH_FLAG=${FRESH:+--fresh}

if [[ -z "${ALLOW_CPU:-}" ]]; then
    "$PY" -c "import sys, torch; sys.exit(0 if torch.cuda.is_available() else
        'run_gpu_ablation.sh: no CUDA GPU here (set ALLOW_CPU=1 for a CPU smoke test)')"
    "$PY" -c "import torch; print('GPU:', torch.cuda.get_device_name(0))"
fi

# 1. The two generated tasks (grid-cell needs absolute position, relation relative position),
#    with the CIFAR-sized Swin (2 x 2 patches: a 16 x 16 token grid, windows of 4 x 4).
"$PY" -m companion.ablation --name "gpu-tasks$SUFFIX" --config cifar \
    --datasets grid-cell relation --pos none abs rel abs+rel --seeds $SEEDS \
    --epochs "$TASK_EPOCHS" --train-size "$TASK_TRAIN" --test-size "$TASK_TEST" \
    --batch-size "$BATCH" --lr 1e-3 --warmup-epochs "$TASK_WARMUP" --label-smoothing 0 \
    --precision auto $FRESH_FLAG

# 2. CIFAR-10: all 50 000 training images, random crop + flip, label smoothing, stochastic depth
#    (the cifar config's own drop_path_rate of 0.1).
if [[ -z "${SKIP_CIFAR:-}" ]]; then
    "$PY" -m companion.ablation --name "gpu-cifar10$SUFFIX" --config cifar \
        --datasets cifar10 --pos none abs rel abs+rel --seeds $SEEDS \
        --epochs "$CIFAR_EPOCHS" --batch-size "$BATCH" --lr 1e-3 --warmup-epochs "$CIFAR_WARMUP" \
        --label-smoothing 0.1 --precision auto --data-dir "$DATA_DIR" --download $FRESH_FLAG
fi
