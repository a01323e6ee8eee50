"""Hash a results folder published before folders were hashed: checked first, hashed once.

    python -m companion.experiments.runs.hash_results results/cpu-ablation [FOLDER ...]

An ablation folder (``results.json``) is checked as the readers check it, without a hash list:
every run with its curve against the ``record_sha256`` the run sealed, the summary against the
runs, a ``transfer.json`` against the runs it names. Only then is its header marked
``"hashed": "after the run"`` and its ``SHA256SUMS`` written (``companion.experiments.integrity``);
from then on it loads verified. Another results folder (one ``provenance.json`` beside its files,
as ``results/learned-abs``) is marked in that record and hashed. A folder that is already hashed
is checked against its ``SHA256SUMS`` and left as it is.
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
    path = folder / name
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise ResultsError(f"{path} cannot be read as JSON ({type(exc).__name__})") from None


def _refuse_hashed(path: Path, record: dict[str, Any]) -> None:
    """A folder hashed once (at publish, or by this command) is never hashed again: its
    ``SHA256SUMS`` is missing, so whatever changed since could not be told apart."""
    if "hashed" in record:
        raise ResultsError(
            f"{path} says it was hashed {record['hashed']}, but its {MANIFEST} is missing: "
            f"restore the folder (e.g. from version control); it is not hashed again"
        )


def hash_folder(folder: str | Path) -> str:
    """Check ``folder``, mark it and write its ``SHA256SUMS``; returns what was done, one line."""
    folder = Path(folder)
    if (folder / MANIFEST).is_file():
        differences = manifest_differences(folder)
        if differences:
            raise ResultsError(f"{folder} is already hashed and differs: {differences[0]}")
        return f"{folder}: already hashed, intact"
    try:
        if (folder / "results.json").is_file():
            results, _ = check_results(folder, read=_plain_json)
            _refuse_hashed(folder / "results.json", results["header"])
            if (folder / DERIVED[0]).is_file():
                derived = _plain_json(folder, DERIVED[0])
                if derived.get("sources") != run_sources(results):
                    raise ResultsError(f"{folder / DERIVED[0]} was computed from other runs")
            results["header"]["hashed"] = AFTER_THE_RUN
            atomic_write_json(folder / "results.json", results)
        elif (folder / "provenance.json").is_file():
            record = _plain_json(folder, "provenance.json")
            _refuse_hashed(folder / "provenance.json", record)
            record["hashed"] = AFTER_THE_RUN
            atomic_write_json(folder / "provenance.json", record)
        else:
            raise ResultsError(f"{folder} holds neither results.json nor provenance.json")
    except (KeyError, TypeError, AttributeError) as exc:
        raise ResultsError(
            f"{folder} is not a results folder as the runs write one ({type(exc).__name__}: {exc})"
        ) from None
    hashes = write_manifest(folder)
    if (folder / "results.json").is_file():
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
