#!/usr/bin/env bash
# Second pilots for chapter 6's transfer on far-relation (single runs, seed 0; facts, not results):
# the first pilots' references trained from scratch at 48 px in the world rendering did not learn
# with rel (window 4: 24.9 %, window 6: 24.3 %) where abs did with window 6 (94.8 %). Which change of
# the references' training lets rel learn at 48 px: a longer distance-1 curriculum (10 epochs), or
# twice the training images (4000, so twice the steps per epoch)? Run from a clean checkout at the
# repository root, after results/pilots/transfer_pilots.sh.
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=${PYTHON:-python}
OUT=results/pilots/out/transfer
COMMON=(--results-dir "$OUT" --work-dir runs/pilots-transfer --config tiny-cpu --datasets far-relation
    --seeds 0 --test-size 1000 --batch-size 16 --lr 1e-3 --warmup-epochs 2 --label-smoothing 0
    --threads 1 --jobs 2 --device cpu --epochs 40 --img-size 48 --rendering world --window-size 6)
"$PY" -m companion.ablation --name ref-48-world-w6-cur10 "${COMMON[@]}" --train-size 2000 \
    --curriculum-epochs 10 --pos rel rope-mixed
"$PY" -m companion.ablation --name ref-48-world-w6-4000 "${COMMON[@]}" --train-size 4000 \
    --curriculum-epochs 5 --pos rel rope-mixed
