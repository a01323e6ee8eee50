"""The codes whose 32-px cell split in a published far-relation transfer ablation, on one line
(step 2 of ``results/run_cpu_transfer_far.sh`` trains seeds 5-9 of these). "Solved" is the
folder's own ``predictions.md`` rule (its ``solved.threshold`` on the test split).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from companion.experiments.predictions import (
    PREDICTIONS,
    is_split_cell,
    parse_far_transfer_predictions,
    with_counts,
)
from companion.experiments.records import load_table
from companion.experiments.results import load_results, read_text
from companion.train.cli import add_debug_flag, run_reporting_errors


def split_codes(results: dict[str, Any], threshold: float) -> list[str]:
    """The main-grid codes some of whose seeds reach ``threshold`` and some not, in plan order."""
    rule, plan = {"split": "test", "threshold": threshold}, results["plan"]
    cells = [(d, pos) for d in plan["datasets"] for pos in plan["pos"]]
    counted = with_counts(results, load_table())
    return list(dict.fromkeys(p for d, p in cells if is_split_cell(counted, f"{d}:{p}", rule)))


def main(argv: Sequence[str] | None = None) -> int:
    prog = "python -m companion.experiments.runs.split_codes"
    parser = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", type=Path, help="a published ablation folder")
    add_debug_flag(parser)
    args = parser.parse_args(argv)

    def work() -> None:
        text = read_text(args.folder, PREDICTIONS)
        plan = parse_far_transfer_predictions(text, args.folder / PREDICTIONS)
        print(" ".join(split_codes(load_results(args.folder), plan["solved"]["threshold"])))

    return run_reporting_errors(prog, work, args.debug)  # a bad folder: one line


if __name__ == "__main__":
    raise SystemExit(main())
