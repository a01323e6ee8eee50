"""The codes whose 32-px cell split in a published far-relation transfer ablation, on one line
(nothing when no cell split): step 2 of ``results/run_cpu_transfer_far.sh`` trains seeds 5-9 of
exactly these, as a split cell is read as a count over ten seeds::

    python -m companion.experiments.runs.split_codes results/cpu-transfer-far

"Solved" is the folder's own ``predictions.md`` rule (its ``solved.threshold`` on the test split).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from companion.experiments.predictions import PREDICTIONS, parse_far_transfer_predictions
from companion.experiments.results import load_results, read_text
from companion.experiments.split_reading import split_codes
from companion.train.cli import add_debug_flag, run_reporting_errors


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m companion.experiments.runs.split_codes",
        description=__doc__.split("\n\n")[0],
    )
    parser.add_argument(
        "folder", type=Path, help="a published ablation folder with its predictions"
    )
    add_debug_flag(parser)
    args = parser.parse_args(argv)

    def work() -> None:
        text = read_text(args.folder, PREDICTIONS)
        plan = parse_far_transfer_predictions(text, args.folder / PREDICTIONS)
        threshold = plan["solved"]["threshold"]
        print(" ".join(split_codes(load_results(args.folder), threshold)))

    return run_reporting_errors(parser.prog, work, args.debug)  # a bad folder: one line


if __name__ == "__main__":
    raise SystemExit(main())
