#!/usr/bin/env bash
# Chapter 5's experiments on one CUDA GPU: the design of results/run_cpu_ablation.sh, at GPU scale.
#
# Run from the repository root of a clean commit, after `pip install -e .`, on a machine with a
# CUDA GPU:
#
#     bash results/run_gpu_ablation.sh
#
# Run once so far, at the CPU runs' settings on blind seeds (each folder's predictions.md says
# why), on one NVIDIA H200 with 16 host cores and CUDA's multi-process service (MPS) running:
#     PARTS=2 (then PARTS=1) SEEDS="10 11 12 13 14 15 16 17 18 19" EXTRA_SEEDS="10 11 12 13 14" \
#         TRAIN=2000 BATCH=16 PRECISION=fp32 JOBS=16 bash results/run_gpu_ablation.sh
# wrote results/gpu-ablation/ and results/gpu-far-relation/ (their results.json headers hold the
# command, commit, hardware and wall time). Part 3 (gpu-interior-holdout) has not run: its
# predictions.md is committed, its results are not.
#
# What it runs (chapter 5's current design, the same cells as run_cpu_ablation.sh):
#   1. gpu-far-relation: the far-relation-heldout task (direction between two objects; training
#      pairs in the left 6 of 8 patch columns; tested at distance 2 on seen and on never-seen
#      positions, and at distance 1: the splits seen, unseen, near); pos none, abs, rel, abs+rel;
#      FAR_EPOCHS epochs, the first CURRICULUM on the distance-1 images only; controlled variants
#      none and rel with pool-merge on EXTRA_SEEDS.
#   2. gpu-ablation: grid-cell and relation; pos none, abs, rel, abs+rel; EPOCHS epochs;
#      controlled variants on EXTRA_SEEDS, each beside a positive control: grid-cell
#      none/rel/abs with torus, rel with no-shift, rel and abs+rel with abs-offset-bias;
#      relation none/rel/abs with pool-merge.
#   3. gpu-interior-holdout: the far-relation-interior task (a 2 x 2 block at the centre of the
#      grid held out of training; splits seen, unseen, near); pos none, abs, rel, abs+rel;
#      FAR_EPOCHS epochs, the first CURRICULUM at distance 1; no variants.
#   4. Only with CIFAR=1: gpu-cifar10, the four encodings on CIFAR-10 with the cifar Swin.
# The model is the book's tiny-cpu Swin (CONFIG): the tasks' design and their exact bounds
# (companion.data.far_relation_bounds) are about its 4-px patches, 4-patch windows and one
# patch merging. "GPU scale" is more images per epoch in larger batches: with the defaults each
# run takes as many optimiser steps as on the CPU (8000 / 64 = 2000 / 16 = 125 per epoch), with
# four times the images. A run made so is a new experiment: write its predictions.md into
# results/<name>/ and commit it before the run (the publish carries it over unchanged).
#
# Nothing is downloaded: the generated tasks are drawn by the package, and a lent GPU machine
# may have no network. CIFAR=1 reads CIFAR-10 from DATA_DIR; DOWNLOAD=1 lets it fetch the
# archive there first (about 170 MB, MD5-checked).
#
# Budget knobs (environment variables), with their defaults:
#   SEEDS="0 1 2 3 4 5 6 7 8 9"  EXTRA_SEEDS="0 1 2 3 4"   seeds of the main cells, of the variants
#   EPOCHS=20  FAR_EPOCHS=40  CURRICULUM=5  WARMUP=2       epochs (grid-cell/relation, far-relation)
#   TRAIN=8000  TEST=1000                                  training images; test images per split
#   BATCH=64  LR=1e-3                                      images per step; peak learning rate
#   JOBS=12                                                runs at a time, one process each
#   CIFAR_EPOCHS=30  CIFAR_WARMUP=2  CIFAR_BATCH=256       part 4 only
#   CONFIG=tiny-cpu  DEVICE=cuda  PRECISION=auto  RESULTS_DIR=results  WORK_DIR=runs/ablation
#   NAME_SUFFIX=  (appended to every results name)  FRESH=1 (discard this name's saved runs)
#   PARTS="1 2 3"                                          which of parts 1-3 to run
# Sizing. Parts 1 to 3 are 215 runs and, with the defaults, 762,500 optimiser steps (the script
# prints the count before it starts). This small model's step is bound by its kernel launches,
# not by the GPU's arithmetic, so the pace is set by the host's cores and by how many processes
# share the GPU: measured on the H200 above with MPS and JOBS=16, an epoch of 125 steps took
# about 2 s per process, and part 2 (125 runs of 20 epochs) and part 1 (50 runs of 40) took
# about 5 minutes each (the headers' wall_s), so all three parts take about 15 minutes there.
# Without MPS the processes take turns on the GPU and it is slower. If a part runs long, cut in
# this order: TRAIN with BATCH (steps per epoch), then JOBS up to the host's cores, then EPOCHS;
# the seeds last, since chapter 5 reads split cells as counts over 10 seeds. Start MPS with
# `nvidia-cuda-mps-control -d` (as root; `echo quit | nvidia-cuda-mps-control` stops it).
# Stopping and starting again is safe: finished runs are kept (in WORK_DIR) and reused, but only
# with the same settings and code; FRESH=1 passes --fresh.
#
# Smoke test on a CPU (what tests/test_gpu_ablation_script.py runs; never publish it):
#   ALLOW_CPU=1 RESULTS_DIR=/tmp/smoke WORK_DIR=/tmp/smoke-runs SEEDS=0 EXTRA_SEEDS=0 EPOCHS=1 \
#       FAR_EPOCHS=2 CURRICULUM=1 WARMUP=0.5 TRAIN=32 TEST=16 BATCH=16 JOBS=1 \
#       bash results/run_gpu_ablation.sh
set -euo pipefail
cd "$(dirname "$0")/.."

PY=${PYTHON:-python}
SEEDS=${SEEDS:-"0 1 2 3 4 5 6 7 8 9"}
EXTRA_SEEDS=${EXTRA_SEEDS:-"0 1 2 3 4"}
EPOCHS=${EPOCHS:-20}
FAR_EPOCHS=${FAR_EPOCHS:-40}
CURRICULUM=${CURRICULUM:-5}
WARMUP=${WARMUP:-2}
TRAIN=${TRAIN:-8000}
TEST=${TEST:-1000}
BATCH=${BATCH:-64}
LR=${LR:-1e-3}
JOBS=${JOBS:-12}
CIFAR_EPOCHS=${CIFAR_EPOCHS:-30}
CIFAR_WARMUP=${CIFAR_WARMUP:-2}
CIFAR_BATCH=${CIFAR_BATCH:-256}
CONFIG=${CONFIG:-tiny-cpu}
DEVICE=${DEVICE:-cuda}
PRECISION=${PRECISION:-auto}
RESULTS_DIR=${RESULTS_DIR:-results}
WORK_DIR=${WORK_DIR:-runs/ablation}
DATA_DIR=${DATA_DIR:-$HOME/.cache/vit-position-book}
SUFFIX=${NAME_SUFFIX:-}
PARTS=${PARTS:-"1 2 3"}
FRESH_FLAG=${FRESH:+--fresh}

if [[ -n "${ALLOW_CPU:-}" ]]; then
    DEVICE=cpu
    PRECISION=fp32
else
    "$PY" -c "import sys, torch; sys.exit(0 if torch.cuda.is_available() else
        'run_gpu_ablation.sh: no CUDA GPU here (ALLOW_CPU=1 runs it on the CPU, as a smoke test)')"
    "$PY" -c "import torch; print('GPU:', torch.cuda.get_device_name(0))"
fi

count() { set -- $1; echo $#; }
n_seeds=$(count "$SEEDS")
n_extra=$(count "$EXTRA_SEEDS")
steps_per_epoch=$(( (TRAIN + BATCH - 1) / BATCH ))
part() { [[ " $PARTS " == *" $1 "* ]]; }
runs_of() { if part "$1"; then echo "$2"; else echo 0; fi; }
far_runs=$(( $(runs_of 1 $(( 4 * n_seeds + 2 * n_extra ))) + $(runs_of 3 $(( 4 * n_seeds ))) ))
task_runs=$(runs_of 2 $(( 8 * n_seeds + 9 * n_extra )))
steps=$(( (far_runs * FAR_EPOCHS + task_runs * EPOCHS) * steps_per_epoch ))
echo "plan: parts $PARTS, $far_runs + $task_runs runs, $steps optimiser steps ($steps_per_epoch per epoch), $JOBS at a time on $DEVICE"

PLAIN=(--results-dir "$RESULTS_DIR" --work-dir "$WORK_DIR" --config "$CONFIG"
       --pos none abs rel abs+rel --seeds $SEEDS
       --train-size "$TRAIN" --test-size "$TEST" --batch-size "$BATCH" --lr "$LR"
       --warmup-epochs "$WARMUP" --label-smoothing 0 --jobs "$JOBS" --device "$DEVICE"
       --precision "$PRECISION" $FRESH_FLAG)
COMMON=("${PLAIN[@]}" --extra-seeds $EXTRA_SEEDS)

start=$SECONDS
if part 1; then
    "$PY" -m companion.commands.ablation --name "gpu-far-relation$SUFFIX" "${COMMON[@]}" \
        --datasets far-relation-heldout --epochs "$FAR_EPOCHS" --curriculum-epochs "$CURRICULUM" \
        --extra far-relation-heldout:none:pool-merge far-relation-heldout:rel:pool-merge
    echo "part 1 done at $(( SECONDS - start )) s"
fi
if part 2; then
    "$PY" -m companion.commands.ablation --name "gpu-ablation$SUFFIX" "${COMMON[@]}" \
        --datasets grid-cell relation --epochs "$EPOCHS" \
        --extra grid-cell:none:torus grid-cell:rel:torus grid-cell:abs:torus grid-cell:rel:no-shift \
                grid-cell:rel:abs-offset-bias grid-cell:abs+rel:abs-offset-bias \
                relation:none:pool-merge relation:rel:pool-merge relation:abs:pool-merge
    echo "part 2 done at $(( SECONDS - start )) s"
fi
if part 3; then
    "$PY" -m companion.commands.ablation --name "gpu-interior-holdout$SUFFIX" "${PLAIN[@]}" \
        --datasets far-relation-interior --epochs "$FAR_EPOCHS" --curriculum-epochs "$CURRICULUM"
    echo "part 3 done at $(( SECONDS - start )) s"
fi

# 4. CIFAR-10 (optional): all 50 000 training images, random crop + flip, label smoothing,
#    stochastic depth (the cifar config's own drop_path_rate of 0.1); no controlled variant.
if [[ -n "${CIFAR:-}" ]]; then
    DOWNLOAD_FLAG=${DOWNLOAD:+--download}
    "$PY" -m companion.commands.ablation --name "gpu-cifar10$SUFFIX" --results-dir "$RESULTS_DIR" \
        --work-dir "$WORK_DIR" --config cifar --datasets cifar10 --pos none abs rel abs+rel \
        --seeds $SEEDS --epochs "$CIFAR_EPOCHS" --batch-size "$CIFAR_BATCH" --lr "$LR" \
        --warmup-epochs "$CIFAR_WARMUP" --label-smoothing 0.1 --jobs "$JOBS" \
        --device "$DEVICE" --precision "$PRECISION" --data-dir "$DATA_DIR" ${DOWNLOAD_FLAG:-} \
        $FRESH_FLAG
    echo "all four parts took $(( SECONDS - start )) s"
fi
