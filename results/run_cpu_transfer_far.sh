#!/usr/bin/env bash
# Chapter 6's resolution transfer on far-relation, a task on which the position codes already
# differ at 32 px (results/cpu-transfer-far/predictions.md says why each step is there and what
# it predicts; committed before the run). Five steps, 2 runs at a time, 1 thread each:
#   1. cpu-transfer-far: every code trained at 32 px on far-relation with chapter 5's schedule,
#      seeds 0-4, then every run moved to 48 px in both renderings (window kept and grown, as
#      moved and after a 50-step fine-tune).
#   2. cpu-transfer-far-more: seeds 5-9 of every code whose 32-px cell split (some seeds solved
#      the test split, accuracy >= 0.9, some did not), trained and moved the same way; skipped
#      when no cell split. The reading merges the two folders.
#   3. cpu-transfer-far-48-world: the references, abs, rel and rope-mixed trained at 48 px in the
#      world rendering with window 6, seeds 0-4, the first 10 epochs at distance 1 (the window
#      and the curriculum chosen from results/pilots, section 4).
#   4. cpu-transfer-far-48-scaled: abs and rel, the same in the scaled rendering.
#   5. Blind seeds (added after the run): the seed-0 runs of steps 1 and 3 that came out
#      bit for bit as pilot runs (results/pilots/out/transfer, run before predictions.md was
#      written) were known when the predictions were written. Every cell left with fewer than five
#      seeds that are no pilot's twin (companion.experiments.runs.blind_codes, read from the sealed
#      records) gets seed 5 with the same settings, in new folders: cpu-transfer-far-blind (32 px,
#      then moved like step 1) and cpu-transfer-far-48-world-blind / -48-scaled-blind (references);
#      a step with no such cell is skipped. predictions.md is unchanged; the reading takes each
#      cell's five seeds that are no pilot's beside all its seeds.
# Budget: about 2 hours at the eager epoch of benchmarks/cpu_options.json (3.27 s); the measured
# wall times are in the headers and results/README.md.
# Run from a clean checkout at the repository root (PYTHON=.venv/bin/python to use the venv);
# STEPS="5" runs only the steps listed (default: all five).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python}
STEPS=" ${STEPS:-1 2 3 4 5} "
step() { [[ "$STEPS" == *" $1 "* ]]; }
FRESH_FLAG=${FRESH:+--fresh}
CODES=(none abs rel abs+rel cpb rope-axial rope-mixed)
COMMON=(--results-dir results --config tiny-cpu --datasets far-relation --test-size 1000
    --batch-size 16 --lr 1e-3 --warmup-epochs 2 --label-smoothing 0 --threads 1 --jobs 2
    --device cpu --epochs 40 $FRESH_FLAG)
MOVE=(--sizes 48 --renderings scaled world --finetune-steps 50 --finetune-batch-size 32 --jobs 2
    --threads 1)

if step 1; then
    "$PY" -m companion.commands.ablation --name cpu-transfer-far "${COMMON[@]}" --train-size 2000 \
        --curriculum-epochs 5 --seeds 0 1 2 3 4 --pos "${CODES[@]}" --replace-derived
    "$PY" -m companion.commands.resolution_experiment --name cpu-transfer-far "${MOVE[@]}" --replace
fi

# 2. The codes whose cell split on seeds 0-4, by the predictions' own rule.
if step 2; then
    SPLIT=$("$PY" -m companion.experiments.runs.split_codes results/cpu-transfer-far)
    if [[ -n "$SPLIT" ]]; then
        "$PY" -m companion.commands.ablation --name cpu-transfer-far-more "${COMMON[@]}" --train-size 2000 \
            --curriculum-epochs 5 --seeds 5 6 7 8 9 --pos $SPLIT --replace-derived
        "$PY" -m companion.commands.resolution_experiment --name cpu-transfer-far-more "${MOVE[@]}" --replace
    fi
fi

if step 3; then
    "$PY" -m companion.commands.ablation --name cpu-transfer-far-48-world "${COMMON[@]}" --img-size 48 \
        --rendering world --window-size 6 --train-size 2000 \
        --curriculum-epochs 10 --seeds 0 1 2 3 4 --pos abs rel rope-mixed
fi
if step 4; then
    "$PY" -m companion.commands.ablation --name cpu-transfer-far-48-scaled "${COMMON[@]}" --img-size 48 \
        --rendering scaled --window-size 6 --train-size 2000 \
        --curriculum-epochs 10 --seeds 0 1 2 3 4 --pos abs rel
fi

# 5. Blind seeds: seed 5 of every cell with fewer than five seeds that are no
#    pilot's twin, the settings of the step whose cell it is.
if step 5; then
    PILOTS=results/pilots/out/transfer
    BLIND=$("$PY" -m companion.experiments.runs.blind_codes --pilots "$PILOTS" \
        results/cpu-transfer-far results/cpu-transfer-far-more)
    if [[ -n "$BLIND" ]]; then
        "$PY" -m companion.commands.ablation --name cpu-transfer-far-blind "${COMMON[@]}" \
            --train-size 2000 --curriculum-epochs 5 --seeds 5 --pos $BLIND --replace-derived
        "$PY" -m companion.commands.resolution_experiment --name cpu-transfer-far-blind "${MOVE[@]}" \
            --replace
    fi
    BLIND=$("$PY" -m companion.experiments.runs.blind_codes --pilots "$PILOTS" \
        results/cpu-transfer-far-48-world)
    if [[ -n "$BLIND" ]]; then
        "$PY" -m companion.commands.ablation --name cpu-transfer-far-48-world-blind "${COMMON[@]}" \
            --img-size 48 --rendering world --window-size 6 --train-size 2000 \
            --curriculum-epochs 10 --seeds 5 --pos $BLIND
    fi
    BLIND=$("$PY" -m companion.experiments.runs.blind_codes --pilots "$PILOTS" \
        results/cpu-transfer-far-48-scaled)
    if [[ -n "$BLIND" ]]; then
        "$PY" -m companion.commands.ablation --name cpu-transfer-far-48-scaled-blind "${COMMON[@]}" \
            --img-size 48 --rendering scaled --window-size 6 --train-size 2000 \
            --curriculum-epochs 10 --seeds 5 --pos $BLIND
    fi
fi
