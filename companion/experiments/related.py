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


def _refuse_unless_alike(
    first: dict, other: dict, who: str, code: dict, skip: Sequence[str] = ()
) -> None:
    """Refuse ``other`` unless it ran ``code``'s code (commit and companion hash) and ``first``'s
    result settings and variant, but ``skip``."""
    heads = [r["header"] for r in (other, code)]
    ran = [(head["git"]["commit"], head.get("companion_sha256")) for head in heads]
    ta, tb = other["plan"]["train"], first["plan"]["train"]
    keys = [k for k in RESULT_SETTINGS if k not in skip and ta.get(k) != tb.get(k)]
    diff = [f"{k} {json.dumps(ta.get(k))} vs {json.dumps(tb.get(k))}" for k in keys]
    variants = [r["plan"].get("variant", "swin") for r in (other, first)]
    diff += [f"variant {variants[0]} vs {variants[1]}"] if variants[0] != variants[1] else []
    names = f"{other['plan']['name']} cannot be read with {first['plan']['name']}"
    if ran[0] != ran[1]:
        raise ResultsError(f"{names}: {who} ran other code ({ran[0][0][:10]} vs {ran[1][0][:10]})")
    if diff:
        raise ResultsError(f"{names}: other settings ({'; '.join(diff)})")


def check_one_run(
    records: Sequence[dict[str, Any]], references: Sequence[dict[str, Any]] = ()
) -> None:
    """Refuse records of one run of a script (``references``: but their size) that disagree."""
    for other in records[1:]:
        _refuse_unless_alike(records[0], other, "they", records[0])
    for other in references:
        _refuse_unless_alike(records[0], other, "they", records[0], REFERENCE_CHANGES)


def check_added_seeds(*pairs: tuple[dict[str, Any], dict[str, Any]]) -> None:
    """Refuse seeds added after a run (pairs: the records extended and added) that disagree."""
    for extended, added in pairs:
        _refuse_unless_alike(extended, added, "seeds added together", pairs[0][1])
