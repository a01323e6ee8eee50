"""Chapter 5's seeds its predictions knew: a planned run equal to a run committed before the
predictions (an earlier version of its folder, in the git history) is no blind seed, and the
chapter says which seeds those are and reads the planned comparisons without them too."""

import json
import subprocess
from pathlib import Path
from typing import Any

from companion.experiments.chapter5 import KNOWN_BEFORE, blind_predictions_table, load_results
from companion.experiments.pilots import fingerprint, pilot_folders
from companion.experiments.predictions import cell_of, load_predictions

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "results"
CHAPTER = ROOT / "book" / "05_train_swin.ipynb"
PLANNED = (
    "cpu-ablation",
    "cpu-far-relation",
    "interior-holdout",
    "gpu-ablation",
    "gpu-far-relation",
)


def _git(*args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout


def final_metrics(run: dict[str, Any]) -> tuple[Any, ...]:
    """What a run recorded before runs kept per-image bits: its final test and train accuracy
    and loss (the losses, to float precision, a fingerprint of the weights)."""
    return tuple(run["final"][k] for k in ("test_acc", "test_loss", "train_acc", "train_loss"))


def known_runs(name: str) -> dict[str, set[tuple[str, int]]]:
    """``{commit: {(cell, seed)}}``: each version of ``results/<name>/results.json`` committed
    before the folder's ``predictions.md`` was, and the planned runs equal to one of its runs
    (by per-image bits where it kept them, else by its final accuracies and losses)."""
    plan = f"results/{name}/predictions.md"
    first = _git("log", "--format=%H", "--diff-filter=A", "--", plan).split()[-1]
    found = {}
    earlier = _git("log", "--format=%H", f"{first}~1", "--", f"results/{name}/results.json")
    for commit in earlier.split():
        # An earlier record as git holds it (git's object hash is its check; it has no seal).
        runs = json.loads(_git("show", f"{commit}:results/{name}/results.json"))["runs"]
        same = fingerprint if all("splits" in run for run in runs) else final_metrics
        before = {same(run) for run in runs}
        twins = [run for run in load_results(RESULTS / name)["runs"] if same(run) in before]
        if twins:
            found[commit[:7]] = {(cell_of(run), run["seed"]) for run in twins}
    return found


def test_the_runs_chapter_5_calls_known_are_those_equal_to_a_run_before_the_predictions():
    found = {name: known_runs(name) for name in PLANNED}
    declared = {
        name: {k.commit: {(c, s) for c in k.cells for s in k.seeds}}
        for name, k in KNOWN_BEFORE.items()
    }
    assert {name: runs for name, runs in found.items() if runs} == declared


def test_chapter_5_says_which_seeds_its_predictions_knew_and_reads_them_without_those():
    cells = json.loads(CHAPTER.read_text(encoding="utf-8"))["cells"]
    source = ["".join(c["source"]) for c in cells]
    for name, known in KNOWN_BEFORE.items():
        at = [i for i, s in enumerate(source)
              if cells[i]["cell_type"] == "code" and "blind_predictions_table(" in s]  # fmt: skip
        assert len(at) == 1, "chapter 5 has no (or more than one) reading without the known seeds"
        printed = ["".join(o["data"]["text/markdown"]) for o in cells[at[0]]["outputs"]
                   if "text/markdown" in o.get("data", {})]  # fmt: skip
        folder = RESULTS / name
        table = blind_predictions_table(load_results(folder), load_predictions(folder), known)
        assert printed == [table], "the committed output is not what the records give"
        prose = "\n".join(source[i] for i in range(at[0]) if cells[i]["cell_type"] == "markdown")
        span = f"{known.seeds[0]}–{known.seeds[-1]}"
        for words in (known.commit, f"seeds {span}", "knew"):
            assert words in prose, words


def test_a_killed_publishs_hidden_pilot_folders_are_not_pilots(tmp_path):
    for name in ("codes-32", ".codes-32.old", ".codes-32.staging"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "results.json").write_text("{}")
    assert pilot_folders(tmp_path) == [tmp_path / "codes-32"]
