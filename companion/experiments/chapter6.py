"""Chapter 6's reader: the far-relation transfer (every code trained at 32 px, moved to 48 px,
beside the references trained at 48 px; one :class:`FarTransfer`, :func:`load_far_transfer`),
read by the rules its predictions fixed before the run.

The planned comparisons (kinds in ``predictions.TRANSFER_KINDS``; a moved cell as
:mod:`~companion.experiments.transfer_gaps` reads it, ``"window-grown"`` read as the code's own
grown condition, :func:`~companion.experiments.resolution_transfer.grown_condition`):

* ``count``: the 32-px ``cell`` solved (test accuracy >= ``solved.threshold``) in ``expect =
  [low, high]`` seeds; ``moved-count``: the same of a moved ``cell``;
* ``lift-change``, ``moved-gap`` and ``code-gap``: the gaps of
  :func:`~companion.experiments.transfer_gaps.kind_gap`; a ``moved-gap`` is not readable (held
  ``None``) where fewer than ``learned.seeds`` of the reference's seeds reach
  ``learned.threshold``; ``window-gain`` is the code-gap of one code under two conditions
  (window grown - kept), checked to be so.

Gaps ``expect`` ``"above X"``/``"below X"``/``"within X"`` (fractions) and print in points, on
the seeds both sides have (the measured text says so where they differ).

The exploratory family (:func:`exploratory_family`) is every comparison the predictions did not
plan that the chapter prints: what each code kept of its 32-px lift, with the window kept and
grown, what growing the window gained, and each code beside ``against``, in each rendering;
two-stage bootstrap intervals in points, Holm's adjustment over the whole family. A code whose
32-px cell split is read on the seeds that solved it (the others had nothing to keep) and says
so. A gap that reads a moved cell whose seeds split at 48 px (``†``) is a mean over solved and
unsolved seeds: :func:`family_split_readings` prints it seed by seed, to be read as a count.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

from companion.experiments.far_transfer import BLIND, DATASET, FarTransfer
from companion.experiments.far_transfer import far_glance as far_glance
from companion.experiments.far_transfer import load_blind_far_transfer as load_blind_far_transfer
from companion.experiments.far_transfer import load_far_transfer as load_far_transfer
from companion.experiments.paper import markdown_table
from companion.experiments.pilots import find_pilot_twins as find_pilot_twins
from companion.experiments.pilots import twins_table as twins_table
from companion.experiments.predictions import in_points, meets, p_text
from companion.experiments.resolution_transfer import WINDOW_GROWN, WINDOW_KEPT, grown_condition
from companion.experiments.stats import binomial_interval, holm_bounds
from companion.experiments.transfer_gaps import kind_gap, points

#: A count prediction whose text says so is held only by more than half of the seeds read: the
#: plan's ``expect`` range was written for five seeds, its word for any number of them.
MOST = "in most seeds"
#: A gap of the exploratory family: ``(kind, cells, seeds)``, or None where none is read.
Gap = tuple[str, list[dict[str, str]], list[int]] | None
#: Whether a planned reading held (``None``: not readable), in the seed-by-seed readings and in the
#: predictions' tables.
OUTCOME = {True: "held", False: "failed", None: "not readable"}
VERDICT = {True: "yes", False: "**no**", None: "not readable"}


def learned_line(far: FarTransfer) -> str:
    """``"Trained at 48 px, seeds reaching 90 % ...: world abs 4/4, world rel 2/4 (not
    learned)."``: each reference's count of seeds that learned (:meth:`FarTransfer.seeds`)."""
    need, parts = far.plan["learned"]["seeds"], []
    for rendering in far.references:
        for pos in (pos for pos in far.codes if far.accuracies(pos, rendering)):
            won, every = far.seeds(pos, rendering)
            parts.append(f"{rendering} {pos} {len(won)}/{len(every)}"
                         f"{' (not learned)' * (len(won) < need)}")  # fmt: skip
    return (f"Trained at {far.plan['size']} px, seeds reaching "
            f"{100 * far.plan['learned']['threshold']:g} % test accuracy (learned: at least "
            f"{need}): {', '.join(parts)}.")  # fmt: skip


def verdict_line(far: FarTransfer, seeds: str = "on all seeds") -> str:
    """``"On all seeds, 10 of the 13 predictions held; failed: P3, P7, P13."``: the count by
    the plan's own rules, with the ids that failed and those not readable."""
    found = {p["id"]: check_far_transfer_prediction(far, p)[1] for p in far.plan["predictions"]}
    failed = [i for i, held in found.items() if held is False]
    unread = [i for i, held in found.items() if held is None]
    text = f"{seeds[0].upper()}{seeds[1:]}, {sum(h is True for h in found.values())} of the "
    text += f"{len(found)} predictions held; failed: {', '.join(failed) or 'none'}"
    return text + (f"; not readable: {', '.join(unread)}" if unread else "") + "."


def far_transfer_predictions_table(far: FarTransfer) -> str:
    """Markdown: id | prediction | expected | measured | held, for every prediction: gaps in
    points with their 95 % interval, "not readable" where held is ``None``."""
    rows = [(p["id"], p["text"], _expected(p), *_measured(far, p)) for p in far.plan["predictions"]]
    return markdown_table(["id", "prediction", "expected", "measured", "held"], rows, align="lllll")


def blind_predictions_table(far: FarTransfer, blind: FarTransfer) -> str:
    """Markdown: every prediction read on all seeds (the pilots' included) and on the blind seeds
    (:func:`load_blind_far_transfer`), each with its outcome, by the same rules and thresholds."""
    head = ["id", "expected", "all seeds", "held", f"{BLIND} blind seeds", "held"]
    rows = [(p["id"], _expected(p), *_measured(far, p), *_measured(blind, p))
            for p in far.plan["predictions"]]  # fmt: skip
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


def _family(
    far: FarTransfer, renderings: Sequence[str], against: str
) -> list[tuple[str, str, list[Gap]]]:
    """``(rendering, code, gaps)``: the family's four gaps of each code (the module docstring), on
    the seeds :func:`_read_seeds` gives; the last None for ``against`` itself and for ``none``."""
    found = []
    for rendering in renderings:
        for pos in far.codes:
            kept = {"dataset": DATASET, "pos": pos, "rendering": rendering,
                    "condition": WINDOW_KEPT, "metric": "acc"}  # fmt: skip
            grown = {**kept, "condition": grown_condition(pos)}
            seeds = _read_seeds(far, pos)[0]
            gaps: list[Gap] = [("lift-change", [kept], seeds), ("lift-change", [grown], seeds),
                               ("window-gain", [grown, kept], seeds), None]  # fmt: skip
            if pos not in (against, "none"):
                other = {**grown, "pos": against, "condition": grown_condition(against)}
                both = sorted(set(seeds) & set(_read_seeds(far, against)[0]))
                gaps[3] = ("code-gap", [grown, other], both)
            found.append((rendering, pos, gaps))
    return found


def exploratory_family(
    far: FarTransfer, renderings: Sequence[str] = ("scaled", "world"), against: str = "rel"
) -> str:
    """Markdown, one table per rendering of :func:`_family`'s gaps, read as its note says."""
    entries = _family(far, renderings, against)
    read = [[None if g is None else (kind_gap(far, *g)[0], bool(_moved_split(far, g[1], g[2])))
             for g in gaps] for *_, gaps in entries]  # fmt: skip
    tested = [g[0] for gaps in read for g in gaps if g is not None]
    adjusted = iter(holm_bounds([i.p for i in tested], [i.floor for i in tested]))
    starred = [[None if g is None else next(adjusted)[0] < 0.05 for g in gaps] for gaps in read]
    tables: list[str] = []
    for rendering in renderings:
        lines = [f"| `{rendering}`: code | kept: lift change | grown: lift change | grown − kept "
                 f"| grown: − `{against}` |", "|---|---|---|---|---|"]  # fmt: skip
        for (drawn, pos, _), gaps, stars in zip(entries, read, starred, strict=True):
            if drawn == rendering:
                cells = ["—" if g is None else points(g[0]) + "\\*" * bool(star) + " †" * g[1]
                         for g, star in zip(gaps, stars, strict=True)]  # fmt: skip
                lines.append(f"| `{pos}`{_read_seeds(far, pos)[1]} | " + " | ".join(cells) + " |")
        tables.append("\n".join(lines))
    note = (
        f"*Points [95 % two-stage bootstrap interval over seeds and test images], as moved to "
        f"{far.plan['size']} px (a bias table resized geometrically when the window grows). "
        f"`*`: p below 0.05 after Holm's adjustment over all {len(tested)} gaps. A code whose "
        f"32-px seeds split is read on the seeds that solved it, and beside `{against}` on the "
        f"seeds both are read on. †: a moved cell it reads split at {far.plan['size']} px (some "
        f"seeds solved, some did not), so the gap is a mean over both: read the cell by its count "
        f"and seeds (the glance table).*"
    )
    return "\n\n".join(tables) + "\n\n" + note + "\n"


def family_split_readings(
    far: FarTransfer, renderings: Sequence[str] = ("scaled", "world"), against: str = "rel"
) -> str:
    """Every gap of the family's last two columns marked ``†``, seed by seed: whether each seed's
    moved cells solved the task, the gap in points, and on how many seeds (as printed) it is above
    a point, below minus a point, and within a point."""
    entries, blocks = _family(far, renderings, against), []
    for rendering in renderings:
        for column in (2, 3):
            for pos, gap in ((pos, gaps[column]) for r, pos, gaps in entries if r == rendering):
                if gap is None:
                    continue
                if column == 2:
                    title = f"{rendering}, window grown − kept, as moved: {pos}"
                    counted = ("growing the window gains", "loses more than a point on")
                else:
                    title = f"{rendering}, window grown, as moved: {pos} − {against}"
                    counted = (f"{pos} ahead by", "behind on")
                blocks.append(_split_block(far, title, *gap, counted))
    return "\n\n".join(b for b in blocks if b)


def _split_block(
    far: FarTransfer, title: str, kind: str, cells: list[dict[str, str]], seeds: Sequence[int],
    counted: tuple[str, str],
) -> str:  # fmt: skip
    """One block of :func:`family_split_readings` (``""`` where no moved cell splits on ``seeds``),
    its count line worded by ``counted`` (above a point, below minus a point)."""
    moved_split = _moved_split(far, cells, seeds)
    if not moved_split:
        return ""
    labelled = [(f"{name} at {far.plan['size']} solved", won) for name, won, _ in moved_split]
    values = [kind_gap(far, kind, cells, [s])[0].estimate for s in seeds]
    shown = [round(100 * v, 1) for v in values]  # counted as printed
    above, below = sum(x > 1 for x in shown), sum(x < -1 for x in shown)
    return "\n".join([
        title,
        *_seed_lines(seeds, labelled, values),
        f"  {counted[0]} more than a point on {above} of {len(seeds)} seeds, "
        f"{counted[1]} {below}, within a point on {len(seeds) - above - below}",
    ])  # fmt: skip


def far_split_readings(far: FarTransfer) -> str:
    """For every planned gap that reads a code whose 32-px seeds split, or a moved cell whose seeds
    split at the new size: whether each seed solved the task (at 32 px, and moved), the gap seed
    by seed, and where a 32-px cell split, the gap on the seeds where every code it reads solved
    (exploratory: the rule fixed before the run asks for both readings). Points. Each block
    names the planned verdict first, so the exploratory line after it changes none. A gap
    against a reference is read only on the reference's seeds that learned; the others are named
    as not readable."""
    blocks = []
    for p in far.plan["predictions"]:
        if p["kind"] in ("count", "moved-count"):
            continue
        cells = _cells(p)
        codes = list(dict.fromkeys(c["pos"] for c in cells))
        split = [pos for pos in codes if _read_seeds(far, pos)[1]]
        moved_split = _moved_split(far, cells)
        if not split and not moved_split:
            continue
        held = check_far_transfer_prediction(far, p)[1]
        if held is None:  # a moved-gap whose reference did not learn: not readable
            continue
        seeds = sorted(set.intersection(*(set(far.seeds(pos)[1]) for pos in codes)))
        if p["kind"] == "moved-gap":  # read only on the reference's seeds that learned
            learned, every = far.seeds(cells[0]["pos"], cells[0]["rendering"])
            dropped = [s for s in seeds if s in every and s not in learned]
            seeds = [s for s in seeds if s in learned]
        else:
            dropped = []
        solved = {pos: far.seeds(pos)[0] for pos in codes}
        lines = [f"{p['id']}  {p['text']}", f"  planned reading: {OUTCOME[held]}"]
        if dropped:
            named = ", ".join(map(str, dropped))
            lines.append(f"  not readable on seed {named}: the reference did not learn there")
        labelled = [(f"{pos} solved", solved[pos]) for pos in split]
        labelled += [(f"{name} at {far.plan['size']} solved", won) for name, won, _ in moved_split]
        values = [kind_gap(far, p["kind"], cells, [s])[0].estimate for s in seeds]
        lines += _seed_lines(seeds, labelled, values)
        if not split:  # only the moved cells split: nothing solved at 32 px to read apart
            blocks.append("\n".join(lines))
            continue
        kept = [s for s in seeds if all(s in solved[pos] for pos in codes)]
        where = "every code solved" + " and the reference learned" * (p["kind"] == "moved-gap")
        lines.append(
            f"  exploratory, on the {len(kept)} seeds where {where}: "
            f"{points(kind_gap(far, p['kind'], cells, kept)[0])} (seeds chosen after the run: no "
            "verdict)"
        )
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def _seed_lines(
    seeds: Sequence[int], labelled: Sequence[tuple[str, Sequence[int]]], values: Sequence[float]
) -> list[str]:
    """The seed-by-seed lines of a split reading: a ``seed`` header, a yes/no row per
    ``(label, seeds that solved)``, and the gap ``values`` (fractions) in points."""
    width = max([14, *(len(label) + 1 for label, _ in labelled)])
    lines = [f"  {'seed':{width}}" + "".join(f"{s:>7}" for s in seeds)]
    for label, won in labelled:
        lines.append(f"  {label:{width}}" + "".join(
            f"{'yes' if s in won else 'no':>7}" for s in seeds))  # fmt: skip
    lines.append(f"  {'points':{width}}" + "".join(f"{100 * v:+7.1f}" for v in values))
    return lines


def _moved_split(
    far: FarTransfer, cells: Sequence[Mapping[str, str]], seeds: Collection[int] | None = None
) -> list[tuple[str, list[int], int]]:
    """``(name, seeds that solved, seeds)`` of each moved cell whose seeds (of ``seeds``, or all)
    split at the plan's size (``name``: ``"rel grown-geometric"``, ``" ft"`` added after the
    fine-tune), counted on the record table's accuracies."""
    found = []
    for cell in dict.fromkeys(tuple(sorted(c.items())) for c in cells):
        moved = dict(cell)
        accuracy = far.accuracies(moved["pos"], moved["rendering"], moved["condition"],
                                  moved["metric"])  # fmt: skip
        read = [s for s in accuracy if seeds is None or s in seeds]
        won = [s for s in read if accuracy[s] >= far.threshold]
        if 0 < len(won) < len(read):
            name = f"{moved['pos']} {moved['condition'].removeprefix('window-')}"
            found.append((name + " ft" * (moved["metric"] == "acc_finetuned"), won, len(read)))
    return found


def _cells(prediction: Mapping[str, Any]) -> list[dict[str, str]]:
    """The moved cells a prediction reads (``cell``, or ``a`` and ``b``), each with its metric
    and its code's own grown condition filled in."""
    cells = [{"metric": "acc", **prediction[k]} for k in ("cell", "a", "b") if k in prediction]
    for cell in cells:
        if cell["condition"] == WINDOW_GROWN:
            cell["condition"] = grown_condition(cell["pos"])
    return cells


def check_far_transfer_prediction(
    far: FarTransfer, prediction: Mapping[str, Any]
) -> tuple[str, bool | None]:
    """``(what was measured, whether the prediction held)``; held is ``None`` (not readable) for
    a ``moved-gap`` whose reference did not learn, and the text names it with its count."""
    kind, size, plan = prediction["kind"], far.plan["size"], far.plan
    if kind in ("count", "moved-count"):
        if kind == "count":
            accuracy = far.accuracies(prediction["cell"].split(":")[1])
        else:
            cell = _cells(prediction)[0]
            accuracy = far.accuracies(cell["pos"], cell["rendering"], cell["condition"],
                                      cell["metric"])  # fmt: skip
        k, n = sum(a >= far.threshold for a in accuracy.values()), len(accuracy)
        (low, high), (lo, hi) = binomial_interval(k, n), prediction["expect"]
        text = f"solved {k} of {n} (rate {low:.2f}-{high:.2f})"
        if MOST in prediction["text"] and 2 * k <= n:  # the plan's own word: more than half
            return f"{text}: not most of {n}", False
        return text, lo <= k <= hi
    cells = _cells(prediction)
    named = [(c["pos"], c["condition"]) for c in cells]
    if kind == "window-gain" and (named[0][0] != named[1][0] or named[0][1] == named[1][1]):
        raise ValueError(f"prediction {prediction['id']}: a window-gain reads one code under two "
                         f"conditions, got {named}")  # fmt: skip
    if kind == "moved-gap":
        cell, learned = cells[0], plan["learned"]
        won, every = far.seeds(cell["pos"], cell["rendering"])
        if len(won) < learned["seeds"]:
            return (f"not readable: {cell['pos']} trained at {size} px in {cell['rendering']} "
                    f"({plan['references'][cell['rendering']]}) learned in {len(won)} of "
                    f"{len(every)} seeds, {learned['seeds']} needed"), None  # fmt: skip
    interval, note = kind_gap(far, kind, cells)
    text = points(interval) + p_text(interval, prediction["expect"]) + note
    split = [pos for pos in dict.fromkeys(c["pos"] for c in cells) if _read_seeds(far, pos)[1]]
    text += f" (split cell: {', '.join(split)})" * bool(split)
    moved_split = [f"{name} {len(won)} of {n}" for name, won, n in _moved_split(far, cells)]
    text += f" (split at {size} px: {', '.join(moved_split)})" * bool(moved_split)
    return text, meets(interval, prediction["expect"])


def _expected(prediction: Mapping[str, Any]) -> str:
    """``"2-4 seeds"``, or a gap's expectation in points (``"above 5 points"``)."""
    expect = prediction["expect"]
    return in_points(expect) if isinstance(expect, str) else "{}-{} seeds".format(*expect)
