"""Folders read together come from one results tree and from one experiment.

A chapter merges folders: chapter 6 reads ``cpu-transfer-far`` with the seeds added to it
(``-more``, ``-blind``) and its 48-px references. A merge is only honest when its folders belong
together, so every folder a reader needs is taken from the **same** ``results/`` tree as the
first (:func:`related_folder`, :func:`refuse_other_trees`), never from another checkout or the
installed package, and their records must say they belong together:

* the folders one run of an experiment's script wrote (a folder, its ``-more`` seeds, its
  references) ran the same code (commit and companion hash) with the same result settings, a
  reference differing only in how it draws the task at its size (:func:`check_one_run`);
* seeds added after the run (``-blind``) ran at their own, later commit, but with the settings of
  the folder they extend, and all at one commit (:func:`check_added_seeds`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from companion.experiments.integrity import ResultsError
from companion.train.config import RECORDED_AS, config_fields

#: The record table that marks a results tree (``records.TABLE``; not imported from there, as
#: ``records`` itself reads through ``results``).
TREE_MARK = "records.csv"
#: The settings that decide what a run learns (``TrainConfig``'s "result" settings), but the
#: grid's axes, which each run of a folder sets for itself; by their recorded names.
RESULT_SETTINGS = tuple(
    RECORDED_AS.get(f.name, f.name)
    for f in config_fields("result")
    if f.name not in ("dataset", "pos", "seed", "variant")
)
#: What a reference trained at the new size changes by design: the size, how the task is drawn
#: there, its window, and the curriculum chosen for that size.
REFERENCE_CHANGES = ("img_size", "rendering", "window_size", "curriculum_epochs")


def refuse_other_trees(place: str | Path, name: str) -> None:
    """Stop a search for ``name`` at the first results tree (``place`` holding ``records.csv``)
    that lacks it: a folder missing there is never taken from another tree."""
    if (Path(place) / TREE_MARK).is_file():
        raise FileNotFoundError(
            f"no results {name!r} in {place}, the results tree found first: the folders a chapter "
            f"reads together come from one tree, never from another checkout or the installed "
            f"package; publish {name} there, or run from a tree that has it"
        )


def related_folder(folder: str | Path, name: str) -> Path:
    """The folder ``name`` beside ``folder`` (in its results tree), which must have been
    published (a ``results.json``)."""
    found = Path(folder).parent / name
    if not (found / "results.json").is_file():
        raise ResultsError(
            f"{found} is missing: {Path(folder).name} is read with it, and it is taken only from "
            f"the same results tree ({Path(folder).parent}), never from another"
        )
    return found


def _refuse(first: dict[str, Any], other: dict[str, Any], what: str) -> None:
    raise ResultsError(f"{other['plan']['name']} cannot be read with {first['plan']['name']}: "
                       f"{what}; they are not one experiment")  # fmt: skip


def _code(record: dict[str, Any]) -> tuple[str, str]:
    return record["header"]["git"]["commit"], record["header"].get("companion_sha256", "")


def _same_code(first: dict[str, Any], other: dict[str, Any], who: str) -> None:
    """Refuse ``other`` if it ran other code than ``first`` (commit and companion hash)."""
    if _code(other) != _code(first):
        commits = f"{_code(other)[0][:10]} vs {_code(first)[0][:10]}"
        _refuse(first, other, f"{who} ran other code (commit {commits})")


def _same_settings(first: dict[str, Any], other: dict[str, Any], skip: Sequence[str] = ()) -> None:
    """Refuse ``other`` if a result setting (but ``skip``) or its variant is not ``first``'s."""
    ta, tb = other["plan"]["train"], first["plan"]["train"]
    diff = [
        f"{k} {json.dumps(ta.get(k))} vs {json.dumps(tb.get(k))}"
        for k in RESULT_SETTINGS
        if k not in skip and ta.get(k) != tb.get(k)
    ]
    variants = [r["plan"].get("variant", "swin") for r in (other, first)]
    if variants[0] != variants[1]:
        diff.append(f"variant {variants[0]} vs {variants[1]}")
    if diff:
        _refuse(first, other, f"other settings ({'; '.join(diff)})")


def check_one_run(
    records: Sequence[dict[str, Any]], references: Sequence[dict[str, Any]] = ()
) -> None:
    """Refuse the records (``results.json``) of one run of an experiment's script that do not
    agree (module docstring); ``references`` may differ in :data:`REFERENCE_CHANGES`."""
    try:
        for others, skip in ((records[1:], ()), (references, REFERENCE_CHANGES)):
            for other in others:
                _same_code(records[0], other, "they")
                _same_settings(records[0], other, skip)
    except (KeyError, TypeError) as exc:
        raise ResultsError(f"a record lacks its provenance ({type(exc).__name__}: {exc})") from None


def check_added_seeds(*pairs: tuple[dict[str, Any], dict[str, Any]]) -> None:
    """Refuse seeds added after a run (pairs of ``results.json``: the folder extended, the added
    folder) that do not agree (module docstring)."""
    try:
        for extended, added in pairs:
            _same_settings(extended, added)
            _same_code(pairs[0][1], added, "seeds added together")
    except (KeyError, TypeError) as exc:
        raise ResultsError(f"a record lacks its provenance ({type(exc).__name__}: {exc})") from None
