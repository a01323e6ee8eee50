"""Chapter 6's reader: the far-relation transfer (every code trained at 32 px, moved to 48 px,
beside the references trained at 48 px, :mod:`~companion.experiments.far_transfer`), read by the
rules its predictions fixed before the run.

A moved model is read against its **reference** (the same code trained at 48 px in the same
rendering) as a difference, moved − reference accuracy in points, never as a ratio: the share of
the reference's lift kept has no scale where the reference learnt little. Every gap is paired by
seed and test image (:mod:`~companion.experiments.bootstrap`), on the seeds both sides have (the
measured text says so where they differ); a moved cell's test images, so their labels and the
constant answer, are its reference's.

The planned comparisons (kinds in ``predictions.TRANSFER_KINDS``; ``"window-grown"`` read as the
code's own grown condition, :func:`~companion.experiments.resolution_transfer.grown_condition`):

* ``count``: the 32-px ``cell`` solved (test accuracy >= ``solved.threshold``) in ``expect =
  [low, high]`` seeds; ``moved-count``: the same of a moved ``cell``;
* ``lift-change``: the moved cell's lift over the constant answer minus the same seeds' lift at
  32 px; ``moved-gap``: moved − reference, not readable (held ``None``) where fewer than
  ``learned.seeds`` of the reference's seeds reach ``learned.threshold``; ``code-gap``: moved
  ``a`` − moved ``b``, in one rendering; ``window-gain``: the code-gap of one code under two
  conditions (window grown − kept), checked to be so.

A gap ``expect``s ``"above X"``, ``"below X"`` or ``"within X"`` (fractions), printed in points.
The exploratory family (:func:`exploratory_family`) is every comparison the predictions did not
plan that the chapter prints, read as its note says; a code whose 32-px cell split is read on the
seeds that solved it (the others had nothing to keep).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

import numpy as np

from companion._checks import check_choice
from companion.experiments.bootstrap import Interval, gap_interval, lift_gap_interval
from companion.experiments.far_transfer import BLIND, DATASET, Cell, FarTransfer
from companion.experiments.far_transfer import far_glance as far_glance
from companion.experiments.far_transfer import load_blind_far_transfer as load_blind_far_transfer
from companion.experiments.far_transfer import load_far_transfer as load_far_transfer
from companion.experiments.paper import markdown_table
from companion.experiments.pilots import find_pilot_twins as find_pilot_twins
from companion.experiments.pilots import twins_table as twins_table
from companion.experiments.predictions import (
    VERDICT,
    count_text,
    expected_text,
    meets,
    p_text,
    points,
    seed_rows,
)
from companion.experiments.resolution_transfer import WINDOW_GROWN, WINDOW_KEPT, grown_condition
from companion.experiments.stats import holm_bounds

#: A count prediction whose text says so is held only by more than half of the seeds read: the
#: plan's ``expect`` range was written for five seeds, its word for any number of them.
MOST = "in most seeds"
#: The code the family sets every other beside.
AGAINST = "rel"
#: A gap read: ``(kind, cells, seeds)``; the family's None where it reads none.
Reading = tuple[str, list[Cell], list[int]]
Gap = Reading | None
#: A moved cell whose seeds split: ``(name, seeds that solved, seeds read)``.
Split = tuple[str, list[int], int]
#: Whether a planned reading held, in the seed-by-seed readings and in the predictions' tables.
OUTCOME = {True: "held", False: "failed", None: "not readable"}


def learned_line(far: FarTransfer) -> str:
    """One sentence: each reference's count of seeds that learned (:meth:`FarTransfer.seeds`)."""
    learned, parts = far.plan["learned"], []
    for rendering in far.references:
        for pos in (pos for pos in far.codes if far.accuracies(Cell(pos, rendering))):
            won, every = far.seeds(pos, rendering)
            note = " (not learned)" * (len(won) < learned["seeds"])
            parts.append(f"{rendering} {pos} {len(won)}/{len(every)}{note}")
    return (
        f"Trained at {far.plan['size']} px, seeds reaching {100 * learned['threshold']:g} % test "
        f"accuracy (learned: at least {learned['seeds']}): {', '.join(parts)}."
    )


def verdict_line(far: FarTransfer, seeds: str = "on all seeds") -> str:
    """``"On all seeds, 10 of the 13 predictions held; failed: P3, P7, P13."``"""
    found = {p["id"]: check_far_transfer_prediction(far, p)[1] for p in far.plan["predictions"]}
    failed = [i for i, held in found.items() if held is False]
    unread = [i for i, held in found.items() if held is None]
    text = f"{seeds[0].upper()}{seeds[1:]}, {sum(h is True for h in found.values())} of the "
    text += f"{len(found)} predictions held; failed: {', '.join(failed) or 'none'}"
    return text + (f"; not readable: {', '.join(unread)}" if unread else "") + "."


def far_transfer_predictions_table(far: FarTransfer) -> str:
    """Markdown: id | prediction | expected | measured | held, for every prediction."""
    plan = far.plan["predictions"]
    rows = [(p["id"], p["text"], expected_text(p, True), *_measured(far, p)) for p in plan]
    return markdown_table(["id", "prediction", "expected", "measured", "held"], rows, align="lllll")


def blind_predictions_table(far: FarTransfer, blind: FarTransfer) -> str:
    """Markdown: every prediction read on all seeds and on the blind seeds, by the same rules."""
    head = ["id", "expected", "all seeds", "held", f"{BLIND} blind seeds", "held"]
    plan = far.plan["predictions"]
    rows = [
        (p["id"], expected_text(p, True), *_measured(far, p), *_measured(blind, p)) for p in plan
    ]
    return markdown_table(head, rows, align="l" * len(head))


def _measured(far: FarTransfer, prediction: Mapping[str, Any]) -> tuple[str, str]:
    measured, held = check_far_transfer_prediction(far, prediction)
    return measured, VERDICT[held]


def _read_seeds(far: FarTransfer, pos: str) -> tuple[list[int], str]:
    """The seeds a code is read on (its solved ones where its 32-px cell split) and the note."""
    solved, every = far.seeds(pos)
    if 0 < len(solved) < len(every):
        return solved, f" ({len(solved)} solved of {len(every)})"
    return every, ""


def _family(far: FarTransfer, renderings: Sequence[str]) -> list[tuple[str, str, list[Gap]]]:
    """``(rendering, code, gaps)``: each code's lift change with the window kept and grown, the
    window's gain and the gap beside :data:`AGAINST` (None for it and for ``none``)."""
    found = []
    for rendering in renderings:
        for pos in far.codes:
            kept = Cell(pos, rendering, WINDOW_KEPT)
            grown = kept._replace(condition=grown_condition(pos))
            seeds = _read_seeds(far, pos)[0]
            gaps: list[Gap] = [("lift-change", [kept], seeds), ("lift-change", [grown], seeds)]
            gaps += [("window-gain", [grown, kept], seeds), None]
            if pos not in (AGAINST, "none"):
                other = Cell(AGAINST, rendering, grown_condition(AGAINST))
                both = sorted(set(seeds) & set(_read_seeds(far, AGAINST)[0]))
                gaps[3] = ("code-gap", [grown, other], both)
            found.append((rendering, pos, gaps))
    return found


def exploratory_family(far: FarTransfer, renderings: Sequence[str] = ("scaled", "world")) -> str:
    """Markdown, one table per rendering of :func:`_family`'s gaps, read as its note says."""
    entries = _family(far, renderings)
    gaps = [gap for *_, row in entries for gap in row if gap is not None]
    read = [kind_gap(far, *gap)[0] for gap in gaps]
    adjusted = holm_bounds([i.p for i in read], [i.floor for i in read])
    shown = iter(
        points(interval) + "\\*" * (p < 0.05) + " †" * bool(_moved_split(far, *gap[1:]))
        for interval, (p, _), gap in zip(read, adjusted, gaps, strict=True)
    )
    head = f"code | kept: lift change | grown: lift change | grown − kept | grown: − `{AGAINST}` |"
    tables = {r: [f"| `{r}`: {head}", "|---" * 5 + "|"] for r in renderings}
    for rendering, pos, row in entries:
        cells = " | ".join("—" if gap is None else next(shown) for gap in row)
        tables[rendering].append(f"| `{pos}`{_read_seeds(far, pos)[1]} | {cells} |")
    size = far.plan["size"]
    note = (
        f"*Points [95 % two-stage bootstrap interval over seeds and test images], as moved to "
        f"{size} px (a bias table resized geometrically when the window grows). `*`: p below "
        f"0.05 after Holm's adjustment over all {len(read)} gaps. A code whose 32-px seeds split "
        f"is read on the seeds that solved it, and beside `{AGAINST}` on the seeds both are read "
        f"on. †: a moved cell it reads split at {size} px (some seeds solved, some did not), so "
        f"the gap is a mean over both: read the cell by its count and seeds (the glance table).*"
    )
    return "\n\n".join("\n".join(lines) for lines in tables.values()) + "\n\n" + note + "\n"


def family_split_readings(far: FarTransfer, renderings: Sequence[str] = ("scaled", "world")) -> str:
    """Every gap of the family's last two columns marked ``†``, seed by seed, and on how many
    seeds (as printed) it is above a point, below minus a point, and within a point."""
    entries, blocks = _family(far, renderings), []
    for rendering in renderings:
        for column in (2, 3):
            for pos, gap in ((p, row[column]) for r, p, row in entries if r == rendering):
                if gap is None or not (moved_split := _moved_split(far, *gap[1:])):
                    continue
                if column == 2:
                    title = f"{rendering}, window grown − kept, as moved: {pos}"
                    ahead, behind = "growing the window gains", "loses more than a point on"
                else:
                    title = f"{rendering}, window grown, as moved: {pos} − {AGAINST}"
                    ahead, behind = f"{pos} ahead by", "behind on"
                lines, values = _seed_lines(far, gap, [], moved_split)
                shown = [round(100 * v, 1) for v in values]  # counted as printed
                above, below = sum(x > 1 for x in shown), sum(x < -1 for x in shown)
                lines.append(
                    f"  {ahead} more than a point on {above} of {len(shown)} seeds, {behind} "
                    f"{below}, within a point on {len(shown) - above - below}"
                )
                blocks.append("\n".join([title, *lines]))
    return "\n\n".join(blocks)


def far_split_readings(far: FarTransfer) -> str:
    """For every planned gap that reads a code whose 32-px seeds split, or a moved cell whose seeds
    split at the new size: whether each seed solved the task (at 32 px, and moved), the gap seed
    by seed, and where a 32-px cell split, the gap on the seeds where every code it reads solved
    (exploratory: the rule fixed before the run asks for both readings). Each block names the
    planned verdict first, so the exploratory line after it changes none. A gap against a
    reference is read only on the reference's seeds that learned; the others are named."""
    blocks = []
    for p in far.plan["predictions"]:
        if p["kind"] in ("count", "moved-count"):
            continue
        cells = _cells(p)
        codes = list(dict.fromkeys(cell.pos for cell in cells))
        split = [pos for pos in codes if _read_seeds(far, pos)[1]]
        moved_split = _moved_split(far, cells)
        if not split and not moved_split:
            continue
        held = check_far_transfer_prediction(far, p)[1]
        if held is None:  # a moved-gap whose reference did not learn
            continue
        seeds = sorted(set.intersection(*(set(far.seeds(pos)[1]) for pos in codes)))
        lines = [f"{p['id']}  {p['text']}", f"  planned reading: {OUTCOME[held]}"]
        if p["kind"] == "moved-gap":  # read only on the reference's seeds that learned
            learned, every = far.seeds(cells[0].pos, cells[0].rendering)
            if dropped := [str(s) for s in seeds if s in every and s not in learned]:
                named = ", ".join(dropped)
                lines.append(f"  not readable on seed {named}: the reference did not learn there")
            seeds = [s for s in seeds if s in learned]
        lines += _seed_lines(far, (p["kind"], cells, seeds), split, moved_split)[0]
        if split:  # else only the moved cells split: nothing solved at 32 px to read apart
            kept = [s for s in seeds if all(s in far.seeds(pos)[0] for pos in codes)]
            where = "every code solved" + " and the reference learned" * (p["kind"] == "moved-gap")
            lines.append(
                f"  exploratory, on the {len(kept)} seeds where {where}: "
                f"{points(kind_gap(far, p['kind'], cells, kept)[0])} (seeds chosen after the "
                "run: no verdict)"
            )
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def _seed_lines(
    far: FarTransfer, gap: Reading, split: Sequence[str], moved: list[Split]
) -> tuple[list[str], list[float]]:
    """A gap ``(kind, cells, seeds)`` seed by seed: a ``seed`` header, whether each seed solved for
    each code of ``split`` and each :func:`_moved_split` cell, and the gap in points; and the gap's
    values (fractions)."""
    kind, cells, seeds = gap
    labelled = [(f"{pos} solved", far.seeds(pos)[0]) for pos in split]
    labelled += [(f"{name} at {far.plan['size']} solved", won) for name, won, _ in moved]
    values = [kind_gap(far, kind, cells, [s])[0].estimate for s in seeds]
    width = max([14, *(len(label) + 1 for label, _ in labelled)])
    return seed_rows(seeds, dict(labelled), values, f"  {{:{width}}}"), values


def _moved_split(
    far: FarTransfer, cells: Sequence[Cell], seeds: Collection[int] | None = None
) -> list[Split]:
    """``(name, seeds that solved, seeds)`` of each moved cell whose seeds (of ``seeds``, or all)
    split at the plan's size (``name``: ``"rel grown-geometric"``, ``" ft"`` after fine-tuning)."""
    found = []
    for cell in dict.fromkeys(cells):
        accuracy = far.accuracies(cell)
        read = [s for s in accuracy if seeds is None or s in seeds]
        won = [s for s in read if accuracy[s] >= far.threshold]
        if 0 < len(won) < len(read):
            name = f"{cell.pos} {cell.condition.removeprefix('window-')}"
            name += " ft" * (cell.metric == "acc_finetuned")
            found.append((name, won, len(read)))
    return found


def _cells(prediction: Mapping[str, Any]) -> list[Cell]:
    """The cells a prediction reads (``cell``, or ``a`` and ``b``)."""
    cells: list[Cell] = []
    for cell in (prediction[k] for k in ("cell", "a", "b") if k in prediction):
        if isinstance(cell, str):  # "far-relation:rel": at 32 px
            dataset, pos = cell.split(":")
            cell = {"dataset": dataset, "pos": pos, "rendering": None, "condition": "trained"}
        check_choice("dataset", cell["dataset"], [DATASET])
        condition = cell["condition"]
        if condition == WINDOW_GROWN:
            condition = grown_condition(cell["pos"])
        cells.append(Cell(cell["pos"], cell["rendering"], condition, cell.get("metric", "acc")))
    return cells


def check_far_transfer_prediction(
    far: FarTransfer, prediction: Mapping[str, Any]
) -> tuple[str, bool | None]:
    """``(what was measured, whether the prediction held)``; held is ``None`` (not readable) for
    a ``moved-gap`` whose reference did not learn, and the text names it with its count."""
    kind, expect, cells = prediction["kind"], prediction["expect"], _cells(prediction)
    if kind in ("count", "moved-count"):
        accuracy = far.accuracies(cells[0]).values()
        k, n = sum(a >= far.threshold for a in accuracy), len(accuracy)
        text = f"solved {count_text(k, n)}"
        if MOST in prediction["text"] and 2 * k <= n:  # the plan's own word: more than half
            return f"{text}: not most of {n}", False
        return text, expect[0] <= k <= expect[1]
    a, b = cells[0], cells[-1]
    if kind == "window-gain" and (a.pos != b.pos or a.condition == b.condition):
        what = f"a window-gain reads one code under two conditions, got {cells}"
        raise ValueError(f"prediction {prediction['id']}: {what}")
    pos, rendering = a.pos, a.rendering
    (won, every), need = far.seeds(pos, rendering), far.plan["learned"]["seeds"]
    if kind == "moved-gap" and len(won) < need:
        where = f"{far.plan['size']} px in {rendering} ({far.plan['references'][rendering]})"
        learned = f"learned in {len(won)} of {len(every)} seeds, {need} needed"
        return f"not readable: {pos} trained at {where} {learned}", None
    interval, note = kind_gap(far, kind, cells)
    text = points(interval) + p_text(interval, expect) + note
    if split := [pos for pos in dict.fromkeys(c.pos for c in cells) if _read_seeds(far, pos)[1]]:
        text += f" (split cell: {', '.join(split)})"
    if moved := [f"{name} {len(won)} of {n}" for name, won, n in _moved_split(far, cells)]:
        text += f" (split at {far.plan['size']} px: {', '.join(moved)})"
    return text, meets(interval, expect)


def kind_gap(
    far: FarTransfer, kind: str, cells: list[Cell], seeds: Collection[int] | None = None
) -> tuple[Interval, str]:
    """The interval of a gap of ``kind`` (module docstring) on the seeds both sides have (of
    ``seeds`` if given), and the note naming them where a side has more."""
    pos, rendering = cells[0].pos, cells[0].rendering
    moved = far.correct(cells[0])
    if kind == "lift-change":
        other = far.correct(Cell(pos))
    elif kind == "moved-gap":
        other = far.correct(Cell(pos, rendering))
    elif cells[1].rendering != rendering:
        raise ValueError(f"cells must be moved in one rendering (one test set), got {cells}")
    else:
        other = far.correct(cells[1])
    both = set(moved) & set(other)
    note = f" (on the {len(both)} seeds both have)" if set(moved) != set(other) else ""
    if not (read := sorted(both if seeds is None else both & set(seeds))):
        raise ValueError(f"cells {cells} have no seed to read on both sides")
    a, b = np.stack([moved[s] for s in read]), np.stack([other[s] for s in read])
    if kind == "lift-change":
        return lift_gap_interval(b, far.labels(), a, far.labels(rendering)), note
    return gap_interval(a, b), note
