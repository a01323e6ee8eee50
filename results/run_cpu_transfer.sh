#!/usr/bin/env bash
# Chapter 6's resolution-transfer experiment on a CPU, as committed in results/cpu-transfer/ and the two
# reference folders: every position code trained at 32 px (chapter 5's per-run settings, seeds 0-2), each run
# moved to 48 px (window kept and grown) in both renderings (scaled: the 32-px scene with more pixels; world: a
# larger canvas, objects as at 32 px) and tested as moved and after a 50-step fine-tune (batch 32); then the
# references, the codes the planned comparisons read trained at 48 px with the same settings and seeds; last,
# an exploratory follow-up decided after the planned references were seen: the same references with the
# window grown to 6 (the 32-px model's layout). Predictions: results/<name>/predictions.md, each committed
# before its run's commit. The measured wall times are in the five headers (results/README.md adds them up).
# Run from a clean checkout, repository root (PYTHON=.venv/bin/python to use the venv).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python}
FRESH_FLAG=${FRESH:+--fresh}
COMMON=(--results-dir results --config tiny-cpu --seeds 0 1 2
    --train-size 2000 --test-size 1000 --epochs 20 --batch-size 16 --lr 1e-3
    --warmup-epochs 2 --label-smoothing 0 --threads 1 --jobs 2 --device cpu)
"$PY" -m companion.commands.ablation --name cpu-transfer "${COMMON[@]}" $FRESH_FLAG \
    --datasets grid-cell relation --pos none abs rel abs+rel cpb rope-axial rope-mixed \
    --replace-derived  # the experiment below computes transfer.json again from these runs
"$PY" -m companion.commands.resolution_experiment --name cpu-transfer --sizes 48 --renderings scaled world \
    --finetune-steps 50 --finetune-batch-size 32 --jobs 2 --threads 1 --replace
"$PY" -m companion.commands.ablation --name cpu-transfer-48-world "${COMMON[@]}" $FRESH_FLAG \
    --img-size 48 --rendering world --datasets grid-cell relation --pos abs rel cpb
"$PY" -m companion.commands.ablation --name cpu-transfer-48-scaled "${COMMON[@]}" $FRESH_FLAG \
    --img-size 48 --rendering scaled --datasets relation --pos abs rel cpb
"$PY" -m companion.commands.ablation --name cpu-transfer-48-world-w6 "${COMMON[@]}" $FRESH_FLAG \
    --img-size 48 --window-size 6 --rendering world --datasets grid-cell relation --pos abs rel cpb
