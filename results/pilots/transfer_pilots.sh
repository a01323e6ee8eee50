#!/usr/bin/env bash
# Pilots for chapter 6's resolution transfer on far-relation (single runs, seed 0; facts, not results).
# Questions: at 32 px, does every code chapter 6 compares learn far-relation with chapter 5's schedule
# (40 epochs, the first 5 on distance 1)? Does a move to 48 px run for each? At 48 px, which window layout
# lets a reference trained there learn, in each rendering (world: window 4 keeps the training's token
# geometry, 6 its image fraction; scaled: 6 keeps both)? Run from a clean checkout at the repository root.
# Folders go to results/pilots/out/transfer/; results/pilots/transfer_table.py summarises them.
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=${PYTHON:-python}
OUT=results/pilots/out/transfer
COMMON=(--results-dir "$OUT" --work-dir runs/pilots-transfer --config tiny-cpu --datasets far-relation
    --seeds 0 --train-size 2000 --test-size 1000 --batch-size 16 --lr 1e-3 --warmup-epochs 2
    --label-smoothing 0 --threads 1 --jobs 2 --device cpu --epochs 40 --curriculum-epochs 5)
"$PY" -m companion.ablation --name codes-32 "${COMMON[@]}" \
    --pos none abs rel abs+rel cpb rope-axial rope-mixed
"$PY" -m companion.resolution_experiment --name codes-32 --results-dir "$OUT" \
    --work-dir runs/pilots-transfer --sizes 48 --renderings scaled world \
    --finetune-steps 50 --finetune-batch-size 32 --jobs 2 --threads 1
"$PY" -m companion.ablation --name ref-48-world-w4 "${COMMON[@]}" --img-size 48 --rendering world \
    --pos abs rel
"$PY" -m companion.ablation --name ref-48-world-w6 "${COMMON[@]}" --img-size 48 --rendering world \
    --window-size 6 --pos abs rel
"$PY" -m companion.ablation --name ref-48-scaled-w6 "${COMMON[@]}" --img-size 48 --rendering scaled \
    --window-size 6 --pos abs rel
