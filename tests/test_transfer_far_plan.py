"""Chapter 6's far-relation transfer plan: its predictions (results/cpu-transfer-far/predictions.md,
committed before the run) read cells that results/run_cpu_transfer_far.sh trains and moves, and the
references they name are the ones the script trains."""

from __future__ import annotations

import shlex
from pathlib import Path

from companion.experiments.predictions import TRANSFER_KINDS as KINDS
from companion.experiments.predictions import parse_far_transfer_predictions
from companion.experiments.resolution_transfer import WINDOW_GROWN, WINDOW_KEPT, transfer_conditions

ROOT = Path(__file__).resolve().parents[1]
PREDICTIONS = ROOT / "results" / "cpu-transfer-far" / "predictions.md"
SCRIPT = ROOT / "results" / "run_cpu_transfer_far.sh"


def _ablations() -> dict[str, list[str]]:
    """``{--name: words}`` of each ``-m companion.commands.ablation`` line of the run script."""
    text = SCRIPT.read_text().replace("\\\n", " ")
    found = {}
    for line in text.splitlines():
        if "-m companion.commands.ablation" in line:
            words = shlex.split(line.split("-m companion.commands.ablation", 1)[1])
            found[words[words.index("--name") + 1]] = words
    return found


def _values(words: list[str], flag: str) -> list[str]:
    rest = words[words.index(flag) + 1 :]
    end = next((i for i, w in enumerate(rest) if w.startswith("--")), len(rest))
    return rest[:end]


def test_the_predictions_read_cells_the_run_script_trains_and_moves():
    plan = parse_far_transfer_predictions(PREDICTIONS.read_text(), PREDICTIONS)
    runs = _ablations()
    codes = {"none", "abs", "rel", "abs+rel", "cpb", "rope-axial", "rope-mixed"}
    assert "${CODES[@]}" in runs["cpu-transfer-far"]
    assert "CODES=(none abs rel abs+rel cpb rope-axial rope-mixed)" in SCRIPT.read_text()
    assert set(plan["references"].values()) <= set(runs)
    for rendering, name in plan["references"].items():
        assert _values(runs[name], "--rendering") == [rendering]
    ids = [p["id"] for p in plan["predictions"]]
    assert ids == [f"P{k}" for k in range(1, len(ids) + 1)]
    for p in plan["predictions"]:
        assert p["kind"] in KINDS
        cells = [p[k] for k in ("cell", "a", "b") if k in p]
        for cell in cells:
            if isinstance(cell, str):
                assert cell.split(":")[1] in codes, p["id"]
                continue
            assert cell["pos"] in codes and cell["rendering"] in ("scaled", "world"), p["id"]
            moved = {c.name for c in transfer_conditions(cell["pos"])} | {WINDOW_GROWN}
            assert cell["condition"] in moved | {WINDOW_KEPT}, p["id"]
        if p["kind"] == "moved-gap":
            name = plan["references"][p["cell"]["rendering"]]
            assert p["cell"]["pos"] in _values(runs[name], "--pos"), p["id"]


def test_the_32px_runs_use_chapter_5s_far_relation_schedule():
    words = _ablations()["cpu-transfer-far"]
    text = SCRIPT.read_text().replace("\\\n", " ")
    for setting in ("--epochs 40", "--batch-size 16", "--lr 1e-3", "--warmup-epochs 2",
                    "--label-smoothing 0", "--test-size 1000"):  # fmt: skip
        assert setting in " ".join(text.split()), setting
    assert _values(words, "--curriculum-epochs") == ["5"]
    assert _values(words, "--seeds") == ["0", "1", "2", "3", "4"]
