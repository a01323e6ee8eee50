"""What chapter 5's CPU ablation costs, and what each way of making it cheaper would save.

    .venv/bin/python benchmarks/ablation_budget.py --out benchmarks/ablation_budget.json

Reads the committed records of ``results/cpu-far-relation`` and ``results/cpu-ablation`` (each
run's per-epoch curve holds its epoch time and training speed) and prices the plan as run, and
as it would be with

* ``relation-short``: the ``relation`` runs trained only for as many epochs as every one of them
  needed to come within one point of its final test accuracy in these records (a cosine schedule
  over fewer epochs is another schedule, so this is an estimate of time, not of outcome);
* ``test-every-2``: the per-epoch test pass (the curves' points) on every second epoch only,
  which leaves every run's training, and so its final per-image bits, unchanged;
* ``without relation``: the ``relation`` runs left out altogether. No plan runs that; it is the
  floor under every plan that keeps the ``grid-cell`` and ``far-relation-heldout`` runs as
  planned, however cheap its ``relation`` runs are made.

A run's time is split into training (images seen / training speed) and the rest of its epoch
(the per-epoch test and the checkpoint). The plan's wall time is the runs' summed time divided
by the runs in parallel, plus each folder's measured overhead (its header's wall time minus
that). Nothing here trains: it prices the records.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

from companion._io import atomic_write_json
from companion.experiments.results import load_curves, load_results

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("cpu-far-relation", "cpu-ablation")


def run_curves(folder: Path) -> list[tuple[dict, list[dict]]]:
    """Every run of ``folder`` with its per-epoch records."""
    curves = load_curves(folder, variant=None)
    return [
        (r, curves[(r["dataset"], r["pos"], r.get("variant", "swin"), r["seed"])])
        for r in load_results(folder)["runs"]
    ]


def epochs_to_final(curves: list[list[dict]], within: float = 0.01) -> int:
    """The first epoch by which every curve is within ``within`` of its last test accuracy."""
    return max(
        next(i + 1 for i, e in enumerate(c) if e["test_acc"] >= c[-1]["test_acc"] - within)
        for c in curves
    )


def price(results_dir: Path) -> dict:
    folders = {name: run_curves(results_dir / name) for name in FOLDERS}
    by_dataset: dict[str, list[list[dict]]] = {}
    for runs in folders.values():
        for run, curve in runs:
            by_dataset.setdefault(run["dataset"], []).append(curve)
    relation = by_dataset["relation"]
    short = epochs_to_final(relation)
    full = len(relation[0])
    scenarios = dict.fromkeys(
        ("as run", "relation-short", "test-every-2", "both", "without relation"), 0.0
    )
    epoch_times = [e["epoch_time_s"] for runs in folders.values() for _, c in runs for e in c]
    report: dict = {
        "relation_epochs_to_final": short, "relation_epochs": full, "folders": {},
        "epochs_to_final": {d: [epochs_to_final(c), len(c[0])] for d, c in by_dataset.items()},
    }  # fmt: skip
    for name, runs in folders.items():
        header = json.loads((results_dir / name / "results.json").read_text())["header"]
        jobs = header["jobs"]
        sums = dict.fromkeys(scenarios, 0.0)
        for run, curve in runs:
            settings = run["settings"]
            seen = settings["train_size"] // settings["batch_size"] * settings["batch_size"]
            times = []  # (training, the rest) per epoch
            for e in curve:
                # A curriculum epoch sees fewer images: all of its time is counted as training.
                curriculum = e["epoch"] <= settings["curriculum_epochs"]
                train = e["epoch_time_s"] if curriculum else seen / e["images_per_s"]
                times.append((train, e["epoch_time_s"] - train))
            total = sum(t + rest for t, rest in times)
            every2 = sum(t + (rest if i % 2 or i + 1 == len(times) else 0.0)
                         for i, (t, rest) in enumerate(times))  # fmt: skip
            scale = short / full if run["dataset"] == "relation" else 1.0
            sums["as run"] += total
            sums["relation-short"] += total * scale
            sums["test-every-2"] += every2
            sums["both"] += every2 * scale
            sums["without relation"] += 0.0 if run["dataset"] == "relation" else total
        overhead = header["wall_s"] - sums["as run"] / jobs
        report["folders"][name] = {
            "runs": len(runs), "jobs": jobs, "wall_min": header["wall_s"] / 60,
            "overhead_min": overhead / 60,
        }  # fmt: skip
        for key in scenarios:
            scenarios[key] += (sums[key] / jobs + overhead) / 60
    report["run_epochs"] = len(epoch_times)
    report["median_epoch_s"] = statistics.median(epoch_times)
    report["scenarios_min"] = scenarios
    return report


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--results-dir", type=Path, default=ROOT / "results")
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args()
    report = price(args.results_dir)
    print(json.dumps(report, indent=1))
    if args.out is not None:
        atomic_write_json(args.out, report)


if __name__ == "__main__":
    main()
