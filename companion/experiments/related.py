"""Folders read together (chapter 6's experiment, its added seeds and its 48-px references) come
from one results tree, never from another checkout or the installed package, and from one
experiment: the folders one run of a script wrote ran one code (commit and companion hash) with
the same result settings, a reference differing only in how it draws the task at its size; seeds
added later keep the settings of the folder they extend, all at one commit."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from companion.experiments.integrity import ResultsError
from companion.train.config import RECORDED_AS, config_fields

#: The file that marks a results tree (``records.TABLE``, which imports this module).
TREE_MARK = "records.csv"
#: The settings that decide what a run learns, but the grid's axes, by their recorded names.
RESULT_SETTINGS = tuple(
    RECORDED_AS.get(f.name, f.name)
    for f in config_fields("result")
    if f.name not in ("dataset", "pos", "seed", "variant")
)
#: What a reference trained at the new size changes by design.
REFERENCE_CHANGES = ("img_size", "rendering", "window_size", "curriculum_epochs")


def refuse_other_trees(place: str | Path, name: str) -> None:
    """Stop a search for ``name`` at the first results tree (``place`` with ``records.csv``)."""
    if (Path(place) / TREE_MARK).is_file():
        raise FileNotFoundError(f"no results {name!r} in {place}, the results tree found first")


def related_folder(folder: str | Path, name: str) -> Path:
    """The published folder ``name`` beside ``folder``, in its results tree."""
    found = Path(folder).parent / name
    if not (found / "results.json").is_file():
        raise ResultsError(f"{found} is missing: it is read only from the same results tree")
    return found


def _refuse(first: dict[str, Any], other: dict[str, Any], what: str) -> None:
    names = other["plan"]["name"], first["plan"]["name"]
    raise ResultsError(f"{names[0]} cannot be read with {names[1]}: {what}")


def _code(record: dict[str, Any]) -> tuple[str, str]:
    return record["header"]["git"]["commit"], record["header"].get("companion_sha256", "")


def _same_code(first: dict[str, Any], other: dict[str, Any], who: str) -> None:
    if _code(other) != _code(first):
        commits = f"{_code(other)[0][:10]} vs {_code(first)[0][:10]}"
        _refuse(first, other, f"{who} ran other code (commit {commits})")


def _same_settings(first: dict[str, Any], other: dict[str, Any], skip: Sequence[str] = ()) -> None:
    ta, tb = other["plan"]["train"], first["plan"]["train"]
    keys = [k for k in RESULT_SETTINGS if k not in skip and ta.get(k) != tb.get(k)]
    diff = [f"{k} {json.dumps(ta.get(k))} vs {json.dumps(tb.get(k))}" for k in keys]
    variants = [r["plan"].get("variant", "swin") for r in (other, first)]
    diff += [f"variant {variants[0]} vs {variants[1]}"] if variants[0] != variants[1] else []
    if diff:
        _refuse(first, other, f"other settings ({'; '.join(diff)})")


def check_one_run(
    records: Sequence[dict[str, Any]], references: Sequence[dict[str, Any]] = ()
) -> None:
    """Refuse ``results.json`` records of one run of a script that disagree (module docstring);
    ``references`` may differ in :data:`REFERENCE_CHANGES`."""
    for others, skip in ((records[1:], ()), (references, REFERENCE_CHANGES)):
        for other in others:
            _same_code(records[0], other, "they")
            _same_settings(records[0], other, skip)


def check_added_seeds(*pairs: tuple[dict[str, Any], dict[str, Any]]) -> None:
    """Refuse seeds added after a run (pairs of ``results.json``: extended, added) that
    disagree (module docstring)."""
    for extended, added in pairs:
        _same_settings(extended, added)
        _same_code(pairs[0][1], added, "seeds added together")
