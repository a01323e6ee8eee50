#!/usr/bin/env bash
# Chapter 5's CPU ablation: regenerates results/cpu-ablation/ on a 2-core CPU (about 30 minutes).
#
# Run from a clean commit (results.json records the commit and whether the tree was dirty), from
# the repository root, after `pip install -e .`:
#
#     bash results/run_cpu_ablation.sh
#
# The plan (chosen from pilot runs; the results README says why):
#   model tiny-cpu; tasks grid-cell and relation; pos none, abs, rel, abs+rel; seeds 0-4;
#   2000 training / 1000 test images, 20 epochs, batch 16, lr 1e-3 with 2 warm-up epochs, no label
#   smoothing; 2 runs at a time, 1 thread each;
#   plus the controlled variants (companion.swin.VARIANTS), each for the same 5 seeds:
#   grid-cell: none+torus, rel+torus, rel+no-shift, rel+abs-offset-bias;
#   relation: none+pool-merge, rel+pool-merge.
# results.json's header records the hardware, this command and the wall time of the whole
# ablation (header.wall_s; header.compute_s sums the runs). Stopping and starting again is safe:
# finished runs are kept (in runs/ablation/), but only with the same settings and code; FRESH=1
# passes --fresh, which discards this name's saved runs.
#
# For a smoke test only (never publish it): NAME=... RESULTS_DIR=... with tiny EPOCHS, WARMUP,
# TRAIN, TEST, SEEDS, e.g.
#   NAME=smoke RESULTS_DIR=/tmp/smoke-results EPOCHS=1 WARMUP=0.5 TRAIN=32 TEST=16 SEEDS=0 \
#       bash results/run_cpu_ablation.sh
set -euo pipefail
cd "$(dirname "$0")/.."

PY=${PYTHON:-python}
NAME=${NAME:-cpu-ablation}
RESULTS_DIR=${RESULTS_DIR:-results}
SEEDS=${SEEDS:-"0 1 2 3 4"}
EPOCHS=${EPOCHS:-20}
WARMUP=${WARMUP:-2}
TRAIN=${TRAIN:-2000}
TEST=${TEST:-1000}
FRESH_FLAG=${FRESH:+--fresh}

"$PY" -m companion.ablation --name "$NAME" --results-dir "$RESULTS_DIR" --config tiny-cpu \
    --datasets grid-cell relation --pos none abs rel abs+rel --seeds $SEEDS \
    --extra grid-cell:none:torus grid-cell:rel:torus grid-cell:rel:no-shift \
            grid-cell:rel:abs-offset-bias relation:none:pool-merge relation:rel:pool-merge \
    --train-size "$TRAIN" --test-size "$TEST" --epochs "$EPOCHS" --batch-size 16 --lr 1e-3 \
    --warmup-epochs "$WARMUP" --label-smoothing 0 --threads 1 --jobs 2 --device cpu $FRESH_FLAG
