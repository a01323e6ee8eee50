"""Hash a results folder published before folders were hashed: checked first, hashed once.

    python -m companion.experiments.runs.hash_results results/cpu-ablation [FOLDER ...]

An ablation folder is checked as the readers check it, without a hash list (every run and curve
against its ``record_sha256``, the summary against the runs, a ``transfer.json`` against the runs
it names); only then is its header marked ``"hashed": "after the run"`` and its ``SHA256SUMS``
written. Another folder (one ``provenance.json``) is marked in that record and hashed. A hashed
folder is checked and left as it is; one marked hashed without its hash list is never hashed again.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from companion._io import atomic_write_json
from companion.experiments.integrity import (
    MANIFEST,
    ResultsError,
    manifest_differences,
    write_manifest,
)
from companion.experiments.results import DERIVED, check_results, load_results, run_sources
from companion.train.cli import add_debug_flag, run_reporting_errors

#: The mark a folder hashed by this command carries (one published since says "at publish").
AFTER_THE_RUN = "after the run"


def _plain_json(folder: Path, name: str) -> Any:
    try:
        return json.loads((folder / name).read_text())
    except (OSError, ValueError) as exc:
        raise ResultsError(
            f"{folder / name} cannot be read as JSON ({type(exc).__name__})"
        ) from None


def hash_folder(folder: str | Path) -> str:
    """Check ``folder``, mark it and write its ``SHA256SUMS``; returns what was done, one line."""
    folder = Path(folder)
    if (folder / MANIFEST).is_file():
        differences = manifest_differences(folder)
        if differences:
            raise ResultsError(f"{folder} is already hashed and differs: {differences[0]}")
        return f"{folder}: already hashed, intact"
    name = "results.json" if (folder / "results.json").is_file() else "provenance.json"
    try:
        if name == "results.json":
            record, _ = check_results(folder, read=_plain_json)
            derived = _plain_json(folder, DERIVED[0]) if (folder / DERIVED[0]).is_file() else {}
            if derived and derived.get("sources") != run_sources(record):
                raise ResultsError(f"{folder / DERIVED[0]} was computed from other runs")
            marked = record["header"]
        elif (folder / name).is_file():
            record = marked = _plain_json(folder, name)
        else:
            raise ResultsError(f"{folder} holds neither results.json nor provenance.json")
        if "hashed" in marked:
            raise ResultsError(
                f"{folder / name} says it was hashed {marked['hashed']}, but its {MANIFEST} is "
                f"missing: restore the folder (e.g. from version control); it is not hashed again"
            )
        marked["hashed"] = AFTER_THE_RUN
    except (KeyError, TypeError, AttributeError) as exc:
        raise ResultsError(
            f"{folder} is not a results folder as the runs write one ({type(exc).__name__}: {exc})"
        ) from None
    atomic_write_json(folder / name, record)
    hashes = write_manifest(folder)
    if name == "results.json":
        load_results(folder)  # reads back as every chapter will
    return f"{folder}: checked and hashed {len(hashes)} files into {folder / MANIFEST}"


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m companion.experiments.runs.hash_results",
        description="Check results folders published before folders were hashed, then hash them.",
    )
    p.add_argument("folders", nargs="+", type=Path)
    add_debug_flag(p)
    args = p.parse_args(argv)

    def work() -> None:
        for folder in args.folders:
            print(hash_folder(folder))

    return run_reporting_errors(p.prog, work, args.debug)


if __name__ == "__main__":
    sys.exit(main())
