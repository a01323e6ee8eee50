"""The codes whose 32-px cell split in a published far-relation transfer ablation: step 2 of
``results/run_cpu_transfer_far.sh`` trains seeds 5-9 of exactly these (a split cell is read as a
count, which needs ten seeds)::

    python -m companion.experiments.runs.split_codes results/cpu-transfer-far

prints them on one line, separated by spaces (nothing when no cell split). "Solved" is the
folder's own ``predictions.md`` rule (its ``solved.threshold`` on the test split).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from companion.experiments.far_transfer_predictions import load_far_transfer_predictions
from companion.experiments.predictions import correct_by_seed
from companion.experiments.results import load_results


def split_codes(results: dict[str, Any], threshold: float) -> list[str]:
    """The ``pos`` of every main-grid cell (the Swin itself, no variant) some of whose seeds reach
    ``threshold`` test accuracy and some do not, in the plan's order."""
    found = []
    for dataset in results["plan"]["datasets"]:
        for pos in results["plan"]["pos"]:
            accuracies = [
                c.mean() for c in correct_by_seed(results, f"{dataset}:{pos}", "test").values()
            ]
            solved = sum(a >= threshold for a in accuracies)
            if 0 < solved < len(accuracies) and pos not in found:
                found.append(pos)
    return found


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m companion.experiments.runs.split_codes",
        description=__doc__.split("\n\n")[0],
    )
    parser.add_argument(
        "folder", type=Path, help="a published ablation folder with its predictions"
    )
    args = parser.parse_args(argv)
    threshold = load_far_transfer_predictions(args.folder)["solved"]["threshold"]
    print(" ".join(split_codes(load_results(args.folder), threshold)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
