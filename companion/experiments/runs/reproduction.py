"""Did a regenerated ablation folder reproduce an earlier one? Run by run, bit by bit.

    python -m companion.experiments.runs.reproduction OLD_FOLDER NEW_FOLDER

Two folders reproduce each other when they hold the same runs with the same per-image test bits,
final metrics, best test accuracy and per-epoch curve, and equal bias tables (timings and hashes
say when and how a run was made, not what it learned). A folder published before folders were
hashed (no ``SHA256SUMS``) is checked against the ``record_sha256`` each run sealed instead.
"""

from __future__ import annotations

import argparse
import functools
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch

from companion.experiments.integrity import (
    DECODERS,
    MANIFEST,
    ResultsError,
    read_folder,
    verified,
)
from companion.experiments.results import check_results, run_key
from companion.train.cli import add_debug_flag, run_reporting_errors

#: Per-epoch fields that measure the machine, not the run.
TIMING = frozenset({"epoch_time_s", "images_per_s"})
#: A run record's fields that say what the run learned (``final`` without its timings).
LEARNED = ("splits", "final", "best_test_acc")


def _untimed(epoch: dict[str, Any] | None) -> dict[str, Any]:
    return {k: v for k, v in (epoch or {}).items() if k not in TIMING}


def _read(folder: Path, name: str) -> Any:
    """``folder/name`` of a folder published before folders were hashed, read as it is."""
    try:
        return DECODERS[Path(name).suffix]((folder / name).read_bytes())
    except Exception as exc:  # any reason the reader gives: one line naming the file
        raise ResultsError(f"{folder / name} cannot be read ({type(exc).__name__})") from None


def _reader(folder: Path) -> Callable[[Path, str], Any]:
    """How ``folder``'s files are read: from one reading checked against its ``SHA256SUMS``, or,
    where it has none, each as it is (its runs' ``record_sha256`` are checked on top)."""
    if (folder / MANIFEST).is_file():
        return functools.partial(verified, files=read_folder(folder))
    return _read


def _runs(folder: Path) -> tuple[dict[str, dict[str, Any]], dict[str, list[dict[str, Any]]]]:
    """Every run of ``folder`` (read checked) by run key, with its curve."""
    results, curves = check_results(folder, read=_reader(folder))
    if "hashed" in results.get("header", {}) and not (folder / MANIFEST).is_file():
        raise ResultsError(f"{folder / MANIFEST} is missing from a hashed folder: restore it")
    runs = {
        run_key(r["dataset"], r["pos"], r["seed"], r.get("variant", "swin")): r
        for r in results["runs"]
    }
    return runs, curves


def _equal(a: Any, b: Any) -> bool:
    """Nested dicts, lists and tensors compared exactly (tensors element for element)."""
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        same = isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.shape == b.shape
        return same and a.dtype == b.dtype and torch.equal(a, b)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def differences(old: str | Path, new: str | Path) -> list[str]:
    """What differs between two ablation folders' learned results, one line per difference."""
    old, new = Path(old), Path(new)
    for folder in (old, new):
        if not (folder / "results.json").is_file():
            raise FileNotFoundError(f"no results.json in {folder} (not an ablation folder)")
    (a, curves_a), (b, curves_b) = _runs(old), _runs(new)
    found = [f"run {k} only in {old}" for k in sorted(a.keys() - b.keys())]
    found += [f"run {k} only in {new}" for k in sorted(b.keys() - a.keys())]
    for key in sorted(a.keys() & b.keys()):
        for field in LEARNED:
            pair = [r.get(field) for r in (a[key], b[key])]
            if not _equal(*(map(_untimed, pair) if field == "final" else pair)):
                found.append(f"{key}: {field} differs")
        if list(map(_untimed, curves_a[key])) != list(map(_untimed, curves_b[key])):
            found.append(f"{key}: curve differs")
    tables = [{p.name for p in (f / "bias").glob("*.pt")} for f in (old, new)]
    found += [f"bias/{n} only in one folder" for n in sorted(tables[0] ^ tables[1])]
    read_old, read_new = _reader(old), _reader(new)
    for name in sorted(tables[0] & tables[1]):
        if not _equal(read_old(old, f"bias/{name}"), read_new(new, f"bias/{name}")):
            found.append(f"bias/{name} differs")
    return found


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m companion.experiments.runs.reproduction",
        description="Compare two ablation folders run by run (exit status 1 if they differ).",
    )
    p.add_argument("old", type=Path)
    p.add_argument("new", type=Path)
    add_debug_flag(p)
    args = p.parse_args(argv)
    found: list[str] = []

    def work() -> None:
        found.extend(differences(args.old, args.new))
        runs = len(_runs(args.new)[0])
        for line in found:
            print(line)
        verdict = "reproduces" if not found else f"does not reproduce ({len(found)} differences)"
        print(f"{args.new} {verdict} {args.old}: {runs} runs compared")

    code = run_reporting_errors(p.prog, work, args.debug)
    return code if code or not found else 1


if __name__ == "__main__":
    sys.exit(main())
