#!/usr/bin/env bash
# Chapter 6's resolution-transfer experiment on a CPU, as committed in results/cpu-transfer/:
# every position code trained at 32 px (chapter 5's per-run settings, 5 seeds), then each run moved
# to 48 and 64 px with the window kept and grown, and tested on the task rendered at that size,
# as moved and after a 50-step fine-tune (batch 32) on the training split rendered at that size.
# Run from a clean checkout, repository root (PYTHON=.venv/bin/python to use the venv).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python}
FRESH_FLAG=${FRESH:+--fresh}
"$PY" -m companion.ablation --name cpu-transfer --results-dir results --config tiny-cpu \
    --datasets grid-cell relation --pos none abs rel abs+rel cpb rope-axial rope-mixed \
    --seeds 0 1 2 3 4 \
    --train-size 2000 --test-size 1000 --epochs 20 --batch-size 16 --lr 1e-3 \
    --warmup-epochs 2 --label-smoothing 0 --threads 1 --jobs 2 --device cpu $FRESH_FLAG \
    --replace-derived  # the experiment below computes transfer.json again from these runs
"$PY" -m companion.resolution_experiment --name cpu-transfer --finetune-steps 50 \
    --finetune-batch-size 32 --jobs 2 --threads 1
