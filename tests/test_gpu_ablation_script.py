"""results/run_gpu_ablation.sh runs chapter 5's current design (the cells of
run_cpu_ablation.sh), downloads nothing unless asked, and runs end to end on a CPU with tiny
budget knobs (a smoke test; the GPU folders it wrote on a lent GPU are in results/)."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from companion.experiments.results import load_results

ROOT = Path(__file__).resolve().parents[1]
GPU = ROOT / "results" / "run_gpu_ablation.sh"
CPU = ROOT / "results" / "run_cpu_ablation.sh"


def _commands(script: Path) -> list[list[str]]:
    """The ``python -m companion.commands.ablation`` command lines of a run script, as words."""
    text = script.read_text().replace("\\\n", " ")
    lines = [line for line in text.splitlines() if "-m companion.commands.ablation" in line]
    return [shlex.split(line.split("-m companion.commands.ablation", 1)[1]) for line in lines]


def _values(words: list[str], flag: str) -> list[str]:
    """The words after ``flag`` up to the next flag."""
    if flag not in words:
        return []
    rest = words[words.index(flag) + 1 :]
    end = next((i for i, w in enumerate(rest) if w.startswith("--")), len(rest))
    return rest[:end]


def test_the_gpu_script_runs_the_cpu_script_s_tasks_cells_and_schedule():
    cpu, gpu = _commands(CPU), _commands(GPU)
    assert len(cpu) == 3 and len(gpu) == 4  # the three parts, then CIFAR-10 behind its flag
    for mine, theirs in zip(gpu[:3], cpu, strict=True):
        for flag in ("--datasets", "--extra", "--pos"):
            assert _values(mine, flag) == _values(theirs, flag), flag
        assert ("--curriculum-epochs" in mine) == ("--curriculum-epochs" in theirs)
    assert "--label-smoothing 0 " in GPU.read_text()  # as on the CPU: no label smoothing


def test_the_gpu_script_downloads_nothing_unless_asked():
    text = GPU.read_text()
    assert "--download" in text
    assert re.search(r"DOWNLOAD_FLAG=\$\{DOWNLOAD:\+--download\}", text)
    assert re.search(r'if \[\[ -n "\$\{CIFAR:-\}" \]\]; then', text)
    for knob in ("SEEDS", "EPOCHS", "TRAIN", "BATCH", "JOBS"):  # documented in the header
        assert re.search(rf"^#.*\b{knob}=", text, re.MULTILINE), knob


def test_parts_chooses_which_experiments_run_and_the_plan_counts_only_those():
    # PYTHON=echo prints each command instead of running it: a dry run of the script.
    knobs = {"ALLOW_CPU": "1", "PYTHON": "echo", "PARTS": "2 3", "SEEDS": "10 11",
             "EXTRA_SEEDS": "10"}  # fmt: skip
    env = {k: v for k, v in os.environ.items() if k not in ("CIFAR", "DOWNLOAD", "FRESH")}
    done = subprocess.run(["bash", str(GPU)], env={**env, **knobs}, capture_output=True,
                          text=True, timeout=60, check=True)  # fmt: skip
    # Part 2: 8 x 2 + 9 x 1 runs of 20 epochs; part 3: 4 x 2 runs of 40; 8000 / 64 = 125 steps.
    assert "plan: parts 2 3, 8 + 25 runs, 102500 optimiser steps (125 per epoch)" in done.stdout
    names = re.findall(r"--name (\S+)", done.stdout)
    assert names == ["gpu-ablation", "gpu-interior-holdout"]


@pytest.mark.slow
def test_the_gpu_script_runs_end_to_end_on_a_cpu_with_tiny_knobs(tmp_path):
    knobs = {
        "ALLOW_CPU": "1", "PYTHON": sys.executable, "RESULTS_DIR": str(tmp_path / "results"),
        "WORK_DIR": str(tmp_path / "runs"), "SEEDS": "0", "EXTRA_SEEDS": "0", "EPOCHS": "1",
        "FAR_EPOCHS": "2", "CURRICULUM": "1", "WARMUP": "0.5", "TRAIN": "64", "TEST": "16",
        "BATCH": "16", "JOBS": "1", "OMP_NUM_THREADS": "1",
    }  # fmt: skip
    env = {k: v for k, v in os.environ.items() if k not in ("CIFAR", "DOWNLOAD", "FRESH")}
    done = subprocess.run(["bash", str(GPU)], env={**env, **knobs}, capture_output=True,
                          text=True, timeout=600)  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    # 4 + 2 far-relation runs and 4 interior ones, 8 + 9 on the two tasks; 64 / 16 = 4 steps
    # per epoch.
    plan = "plan: parts 1 2 3, 10 + 17 runs, 148 optimiser steps (4 per epoch), 1 at a time on cpu"
    assert plan in done.stdout
    found = sorted(p.name for p in (tmp_path / "results").iterdir() if p.is_dir())
    # No CIFAR-10 without CIFAR=1.
    assert found == ["gpu-ablation", "gpu-far-relation", "gpu-interior-holdout"]
    inner = load_results(tmp_path / "results" / "gpu-interior-holdout")
    assert set(inner["test_sets"]["far-relation-interior"]) == {"test", "seen", "unseen", "near"}
    far = load_results(tmp_path / "results" / "gpu-far-relation")
    assert far["plan"]["datasets"] == ["far-relation-heldout"]
    assert far["plan"]["train"]["curriculum_epochs"] == 1
    assert set(far["test_sets"]["far-relation-heldout"]) == {"test", "seen", "unseen", "near"}
    tasks = load_results(tmp_path / "results" / "gpu-ablation")
    assert tasks["plan"]["datasets"] == ["grid-cell", "relation"]
    assert len(tasks["plan"]["extra"]) == 9 and len(tasks["runs"]) == 17
    header = json.loads((tmp_path / "results" / "gpu-ablation" / "results.json").read_text())
    assert "--device cpu" in header["header"]["command"]
