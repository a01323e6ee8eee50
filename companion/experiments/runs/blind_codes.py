"""The codes of published experiments with fewer than five blind seeds, on one line (step 5 of
``results/run_cpu_transfer_far.sh`` trains one more seed of these). A seed is blind when no pilot
run under ``--pilots`` has its run's :func:`~companion.experiments.pilots.fingerprint`.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from companion.experiments.pilots import fingerprint, pilot_folders
from companion.experiments.results import load_results

#: The blind seeds a cell needs: the predictions' five.
BLIND_SEEDS = 5


def lacking_blind_seeds(planned: Sequence[str | Path], pilots: Sequence[str | Path]) -> list[str]:
    """The codes of ``planned`` with fewer than :data:`BLIND_SEEDS` blind seeds, in their order."""
    known = {fingerprint(run) for folder in pilots for run in load_results(folder)["runs"]}
    blind: dict[tuple[str, str], int] = {}
    for folder in planned:
        for run in load_results(folder)["runs"]:
            if run.get("variant", "swin") == "swin":
                cell = (run["dataset"], run["pos"])
                blind[cell] = blind.get(cell, 0) + (fingerprint(run) not in known)
    return list(dict.fromkeys(pos for (_, pos), n in blind.items() if n < BLIND_SEEDS))


def main(argv: Sequence[str] | None = None) -> int:
    prog = "python -m companion.experiments.runs.blind_codes"
    parser = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n\n")[0])
    parser.add_argument("folders", type=Path, nargs="+", help="published ablation folders")
    parser.add_argument("--pilots", type=Path, required=True, help="a folder of pilot folders")
    args = parser.parse_args(argv)
    pilots = pilot_folders(args.pilots)
    if not pilots:
        parser.error(f"--pilots {args.pilots}: no pilot folder (*/results.json) in it")
    print(" ".join(lacking_blind_seeds(args.folders, pilots)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
