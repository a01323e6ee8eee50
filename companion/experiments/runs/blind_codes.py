"""The codes of a published experiment with fewer than five blind seeds: step 5 of
``results/run_cpu_transfer_far.sh`` trains one more seed of exactly these::

    python -m companion.experiments.runs.blind_codes --pilots results/pilots/out/transfer \\
        results/cpu-transfer-far results/cpu-transfer-far-more

prints them on one line, separated by spaces (nothing when every cell has five). A seed is blind
when its run is no pilot's twin: its per-image results equal no run of a pilot folder under
``--pilots`` (:func:`companion.experiments.pilots.pilot_twins`, read from the sealed records).
The folders given are read together, as one experiment's cells.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from companion.experiments.pilots import BLIND_SEEDS, lacking_blind_seeds, pilot_folders


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m companion.experiments.runs.blind_codes",
        description=__doc__.split("\n\n")[0],
    )
    parser.add_argument("folders", type=Path, nargs="+", help="published ablation folders")
    parser.add_argument(
        "--pilots", type=Path, required=True, help="a folder of pilot folders (results.json each)"
    )
    args = parser.parse_args(argv)
    pilots = pilot_folders(args.pilots)
    if not pilots:
        parser.error(f"--pilots {args.pilots}: no pilot folder (*/results.json) in it")
    print(" ".join(lacking_blind_seeds(args.folders, pilots, BLIND_SEEDS)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
