#!/usr/bin/env bash
# Chapter 5's CPU experiments: regenerate results/cpu-far-relation/, results/cpu-ablation/ and
# results/interior-holdout/ on a 2-core CPU (budget: about 2.5 hours at the eager epoch of
# benchmarks/cpu_options.json; the measured times are in the headers and results/README.md).
#
# Run from a clean commit (results.json records the commit and whether the tree was dirty), from
# the repository root, after `pip install -e .`. Each folder's predictions.md was committed before
# the commit the run is made from, and a publish carries it over unchanged.
#
#     bash results/run_cpu_ablation.sh
#
# The plans (results/README.md says why they are sized so):
#   cpu-far-relation: the far-relation-heldout task (direction between two objects; training pairs
#     in the left 6 of 8 patch columns; tested at distance 2 on seen and on never-seen positions,
#     and at distance 1); pos none, abs, rel, abs+rel; seeds 0-9; 40 epochs, the first 5 on the
#     distance-1 images only (--curriculum-epochs 5); controlled variants none and rel with
#     pool-merge, seeds 0-4.
#   cpu-ablation: the grid-cell and relation tasks; pos none, abs, rel, abs+rel; seeds 0-9;
#     20 epochs; controlled variants on seeds 0-4, each beside a positive control (an encoding
#     that can succeed under the same variant): grid-cell none/rel/abs with torus, rel with
#     no-shift, rel and abs+rel with abs-offset-bias; relation none/rel/abs with pool-merge.
#   interior-holdout: the far-relation-interior task (the same question with a 2 x 2 block of
#     patches at the centre of the grid held out of training; tested at distance 2 inside the
#     uncut interior shifted window with and without an object in the block, and at distance 1);
#     pos none, abs, rel, abs+rel; seeds 0-9; 40 epochs, the first 5 at distance 1; no variants.
#   All: tiny-cpu, 2000 training / 1000 test images per split, batch 16, lr 1e-3 with 2 warm-up
#   epochs, no label smoothing; 2 runs at a time, 1 thread each.
# Stopping and starting again is safe: finished runs are kept (in runs/ablation/), but only with
# the same settings and code; FRESH=1 passes --fresh, which discards the saved runs.
#
# For a smoke test only (never publish it): RESULTS_DIR=/tmp/smoke-results with tiny EPOCHS,
# FAR_EPOCHS, CURRICULUM, WARMUP, TRAIN, TEST, SEEDS, EXTRA_SEEDS, e.g.
#   RESULTS_DIR=/tmp/smoke EPOCHS=1 FAR_EPOCHS=2 CURRICULUM=1 WARMUP=0.5 TRAIN=64 TEST=32 \
#       SEEDS="0 1" EXTRA_SEEDS=0 bash results/run_cpu_ablation.sh
set -euo pipefail
cd "$(dirname "$0")/.."

PY=${PYTHON:-python}
RESULTS_DIR=${RESULTS_DIR:-results}
SEEDS=${SEEDS:-"0 1 2 3 4 5 6 7 8 9"}
EXTRA_SEEDS=${EXTRA_SEEDS:-"0 1 2 3 4"}
EPOCHS=${EPOCHS:-20}
FAR_EPOCHS=${FAR_EPOCHS:-40}
CURRICULUM=${CURRICULUM:-5}
WARMUP=${WARMUP:-2}
TRAIN=${TRAIN:-2000}
TEST=${TEST:-1000}
FRESH_FLAG=${FRESH:+--fresh}
PLAIN=(--results-dir "$RESULTS_DIR" --config tiny-cpu --pos none abs rel abs+rel --seeds $SEEDS
       --train-size "$TRAIN" --test-size "$TEST" --batch-size 16 --lr 1e-3
       --warmup-epochs "$WARMUP" --label-smoothing 0 --threads 1 --jobs 2 --device cpu $FRESH_FLAG)
COMMON=("${PLAIN[@]}" --extra-seeds $EXTRA_SEEDS)

"$PY" -m companion.commands.ablation --name cpu-far-relation "${COMMON[@]}" \
    --datasets far-relation-heldout --epochs "$FAR_EPOCHS" --curriculum-epochs "$CURRICULUM" \
    --extra far-relation-heldout:none:pool-merge far-relation-heldout:rel:pool-merge

"$PY" -m companion.commands.ablation --name cpu-ablation "${COMMON[@]}" \
    --datasets grid-cell relation --epochs "$EPOCHS" \
    --extra grid-cell:none:torus grid-cell:rel:torus grid-cell:abs:torus grid-cell:rel:no-shift \
            grid-cell:rel:abs-offset-bias grid-cell:abs+rel:abs-offset-bias \
            relation:none:pool-merge relation:rel:pool-merge relation:abs:pool-merge

"$PY" -m companion.commands.ablation --name interior-holdout "${PLAIN[@]}" \
    --datasets far-relation-interior --epochs "$FAR_EPOCHS" --curriculum-epochs "$CURRICULUM"
