"""Every planned reading's outcome, pinned: the verdicts (and the numbers printed beside them) of
chapter 1's ViT predictions V1-V6, chapter 5's three predictions files (G/R, F, I) with their
seed-by-seed readings of split cells and G/R on the seeds they did not know, and chapter 6's
P1-P13 with the rule for its references and its seed-by-seed readings, on all seeds and on the
blind ones.

``planned_verdicts.json`` was written by this file's ``outcomes()`` before the experiments layer
was rewritten, so a refactor that moves a verdict fails here. A change that moves one on
purpose rewrites the file (``python tests/test_planned_verdicts.py``) and names each verdict that
moved in its commit.
"""

import json
import sys
from pathlib import Path
from typing import Any

from companion.experiments import chapter1, chapter5, chapter6, learned_embedding

SNAPSHOT = Path(__file__).with_name("planned_verdicts.json")
CHAPTER5 = (
    "cpu-ablation",
    "cpu-far-relation",
    "interior-holdout",
    "gpu-ablation",
    "gpu-far-relation",
)


def _rows(markdown: str) -> dict[str, list[str]]:
    """``{id: [the row's cells after the prediction's text]}`` of a predictions table."""
    found = {}
    for line in markdown.splitlines()[2:]:
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        found[cells[0]] = cells[2:]
    return found


def outcomes() -> dict[str, Any]:
    """Every planned reading the chapters print, as read by the code of this commit."""
    found: dict[str, Any] = {}
    vit, _ = chapter1.load_vit_embedding()
    table, grid = learned_embedding.grid_table(vit)
    plan = chapter1.similarity_predictions()
    read = chapter1.check_similarity_predictions(table, grid, plan)
    vit_table = chapter1.similarity_outcomes_markdown(read, plan["alpha"])
    found["chapter 1: learned-vit"] = _rows(vit_table)
    for name in CHAPTER5:
        folder = chapter5.find_results(name)
        results, plan = chapter5.load_results(folder), chapter5.load_predictions(folder)
        found[f"chapter 5: {name}"] = _rows(chapter5.predictions_table(results, plan))
        seeds = chapter5.split_seed_readings(results, plan)
        found[f"chapter 5: {name}, split cells seed by seed"] = seeds.splitlines()
        if name in chapter5.KNOWN_BEFORE:
            both = chapter5.blind_predictions_table(results, plan, chapter5.KNOWN_BEFORE[name])
            found[f"chapter 5: {name}, all seeds and blind seeds"] = _rows(both)
    far = chapter6.load_far_transfer()
    table = chapter6.far_transfer_predictions_table(far)
    found["chapter 6: cpu-transfer-far"] = _rows(table)
    learned = chapter6.learned_line(far)
    found["chapter 6: cpu-transfer-far, references learned"] = learned.splitlines()
    seeds = chapter6.far_split_readings(far)
    found["chapter 6: cpu-transfer-far, split cells seed by seed"] = seeds.splitlines()
    blind = chapter6.load_blind_far_transfer(far)
    both = chapter6.blind_predictions_table(far, blind)
    found["chapter 6: cpu-transfer-far, all seeds and blind seeds"] = _rows(both)
    seeds = chapter6.far_split_readings(blind)
    found["chapter 6: cpu-transfer-far, blind seeds, split cells seed by seed"] = seeds.splitlines()
    return found


def test_every_planned_reading_keeps_its_verdict_and_numbers():
    expected = json.loads(SNAPSHOT.read_text(encoding="utf-8"))
    got = outcomes()
    assert sorted(got) == sorted(expected)
    for reading_name, value in expected.items():
        assert got[reading_name] == value, reading_name


if __name__ == "__main__":  # rewrite the snapshot (a change that moves a verdict on purpose)
    text = json.dumps(outcomes(), indent=1, ensure_ascii=False) + "\n"
    SNAPSHOT.write_text(text, encoding="utf-8")
    sys.stdout.write(f"wrote {SNAPSHOT}\n")
