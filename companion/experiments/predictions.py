"""Predictions written before a run, checked against its results by rules fixed with them.

``results/<name>/predictions.md`` is prose for the reader plus one fenced ``json`` block that
this module reads: what "solved" means per dataset (a split and a threshold), and a list of
predictions, each of one kind:

* ``count``: ``cell`` solved in ``expect = [low, high]`` of its seeds (inclusive);
* ``gap``: ``cell`` minus ``against`` (another cell, or ``"constant"``: the constant answer on the
  same images) on ``split``, read with the two-stage bootstrap interval
  (:mod:`companion.experiments.bootstrap`); ``expect`` is ``"above X"`` (the interval's low end
  above X), ``"below X"`` (its high end below X) or ``"within X"`` (inside ``(-X, X)``);
* ``lift-gap``: how much more ``cell`` scores above the constant answer on split ``second``
  than on split ``first`` (held-out positions against seen ones), ``expect`` as for ``gap``;
* ``count-gap``: ``cell`` solved in more seeds than ``against``, Fisher's exact ``p < 0.05``
  (``expect`` is ``"more"``).

A cell is ``"dataset:pos"`` or ``"dataset:pos:variant"``. Cells compared are paired on the seeds
both have (a controlled variant runs on fewer seeds than the Swin it changes).

What is printed beside a gap says what it tests: the bootstrap p-value is for "the gap is 0", so
it is printed only beside a prediction whose threshold is 0 (and then says "against 0"), and at
its floor as a bound (:func:`companion.experiments.stats.format_p`). A gap or lift-gap that reads
a cell whose seeds split is also read seed by seed and on the solved seeds alone
(:func:`split_seed_readings`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from companion.experiments.bootstrap import Interval, gap_interval, lift_gap_interval
from companion.experiments.evaluation import labels_from_text, unpack_bits
from companion.experiments.integrity import verified_bytes
from companion.experiments.stats import binomial_interval, fisher_exact, format_p

KINDS = ("count", "gap", "lift-gap", "count-gap")
PREDICTIONS = "predictions.md"
_BLOCK = re.compile(r"```json\n(.*?)\n```", re.DOTALL)


def load_predictions(folder: str | Path, kinds: Sequence[str] = KINDS) -> dict[str, Any]:
    """The ``json`` block of ``folder/predictions.md``: ``{"solved", "predictions"}`` (chapter
    6's transfer predictions have kinds of their own, ``transfer_reading.KINDS``), checked
    against the folder's ``SHA256SUMS`` (``companion.experiments.integrity``)."""
    path = Path(folder) / PREDICTIONS
    return parse_predictions(verified_bytes(folder, PREDICTIONS).decode("utf-8"), path, kinds)


def parse_predictions(
    text: str, where: str | Path = PREDICTIONS, kinds: Sequence[str] = KINDS
) -> dict[str, Any]:
    """The one ``json`` block of a predictions file's ``text`` (``where`` names it in errors),
    each prediction's kind one of ``kinds``: also for a file whose run has not been made (its
    folder has no ``SHA256SUMS`` yet)."""
    blocks = _BLOCK.findall(text.replace("\r\n", "\n"))  # a CRLF copy reads the same
    if len(blocks) != 1:
        raise ValueError(f"{where} must hold exactly one ```json block, found {len(blocks)}")
    try:  # a malformed block is one line naming the file, not a bare KeyError
        found = json.loads(blocks[0])
        entries = [(p["id"], p["kind"]) for p in found["predictions"]]
    except (ValueError, KeyError, TypeError) as exc:
        raise ValueError(
            f"{where}: the json block must be an object whose 'predictions' list holds objects "
            f"with an 'id' and a 'kind' ({type(exc).__name__}: {exc})"
        ) from None
    for pid, kind in entries:
        if kind not in kinds:
            raise ValueError(f"prediction {pid}: kind must be one of {tuple(kinds)}, got {kind!r}")
    return found


def parse_cell(cell: str) -> tuple[str, str, str]:
    """``"grid-cell:rel"`` -> ``("grid-cell", "rel", "swin")``."""
    parts = cell.split(":")
    if len(parts) not in (2, 3):
        raise ValueError(f"cell must be dataset:pos or dataset:pos:variant, got {cell!r}")
    return parts[0], parts[1], parts[2] if len(parts) == 3 else "swin"


def correct_by_seed(results: dict[str, Any], cell: str, split: str) -> dict[int, np.ndarray]:
    """``{seed: (images,) bool}``: which test images of ``split`` each run of ``cell`` got right."""
    dataset, pos, variant = parse_cell(cell)
    runs = [
        r
        for r in results["runs"]
        if (r["dataset"], r["pos"], r.get("variant", "swin")) == (dataset, pos, variant)
    ]
    if not runs:
        raise ValueError(f"cell {cell!r} has no runs in these results")
    return {
        r["seed"]: unpack_bits(r["splits"][split]["correct"], r["splits"][split]["n"]) for r in runs
    }


def test_labels(results: dict[str, Any], dataset: str, split: str) -> np.ndarray:
    """The labels of a test split, as kept once in the results."""
    return labels_from_text(results["test_sets"][dataset][split]["labels"])


def solved_seeds(results: dict[str, Any], cell: str, solved: dict[str, Any]) -> dict[int, bool]:
    """``{seed: solved}`` by the predictions' own rule for the cell's dataset."""
    rule = solved[parse_cell(cell)[0]]
    return {
        seed: bool(c.mean() >= rule["threshold"])
        for seed, c in correct_by_seed(results, cell, rule["split"]).items()
    }


def _paired(a: dict[int, np.ndarray], b: dict[int, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    seeds = sorted(set(a) & set(b))
    return np.stack([a[s] for s in seeds]), np.stack([b[s] for s in seeds])


def meets(interval: Interval, expect: str) -> bool:
    word, x = expect.split()[0], threshold_of(expect)
    if word == "above":
        return interval.low > x
    if word == "below":
        return interval.high < x
    if word == "within":
        return -x < interval.low and interval.high < x
    raise ValueError(f"expect must be 'above X', 'below X' or 'within X', got {expect!r}")


def check_prediction(
    results: dict[str, Any], prediction: dict[str, Any], solved: dict[str, Any]
) -> tuple[str, bool]:
    """``(what was measured, whether the prediction held)`` for one prediction."""
    kind, cell = prediction["kind"], prediction["cell"]
    if kind == "count":
        flags = solved_seeds(results, cell, solved)
        k, n = sum(flags.values()), len(flags)
        low, high = binomial_interval(k, n)
        lo, hi = prediction["expect"]
        return f"solved {k} of {n} (rate {low:.2f}-{high:.2f})", lo <= k <= hi
    if kind == "count-gap":
        flags = solved_seeds(results, cell, solved)
        other = solved_seeds(results, prediction["against"], solved)
        ka, na = sum(flags.values()), len(flags)
        kb, nb = sum(other.values()), len(other)
        p = fisher_exact(ka, na, kb, nb)
        return f"{ka} of {na} against {kb} of {nb}, Fisher p = {p:.2g}", ka > kb and p < 0.05
    interval = prediction_interval(results, prediction)
    return f"{interval}{p_text(interval, prediction['expect'])}", meets(
        interval, prediction["expect"]
    )


def _gap_cells(prediction: dict[str, Any]) -> list[str]:
    """The cells a gap or lift-gap prediction reads (not the constant answer)."""
    cells = [prediction["cell"]]
    if prediction["kind"] == "gap" and prediction["against"] != "constant":
        cells.append(prediction["against"])
    return cells


def _gap_matrices(
    results: dict[str, Any], prediction: dict[str, Any], seeds: Sequence[int] | None
) -> tuple[list[int], list[np.ndarray]]:
    """The seeds a gap or lift-gap prediction is read on (those all its cells have, or the
    given ``seeds``) and its ``(seeds, images)`` arrays: ``[a]`` against the constant answer,
    ``[a, b]`` for two cells, ``[first, second]`` for a lift-gap."""
    cell = prediction["cell"]
    if prediction["kind"] == "lift-gap":
        found = [correct_by_seed(results, cell, prediction[k]) for k in ("first", "second")]
    else:
        found = [correct_by_seed(results, c, prediction["split"]) for c in _gap_cells(prediction)]
    common = sorted(set.intersection(*(set(f) for f in found)))
    if seeds is not None:
        missing = sorted(set(seeds) - set(common))
        if missing or not seeds:
            raise ValueError(f"seeds must be some of {common} (the cells' common seeds), got "
                             f"{list(seeds)}")  # fmt: skip
        common = sorted(seeds)
    return common, [np.stack([f[s] for s in common]) for f in found]


def prediction_interval(
    results: dict[str, Any], prediction: dict[str, Any], seeds: Sequence[int] | None = None
) -> Interval:
    """The bootstrap interval a ``gap`` or ``lift-gap`` prediction is read with, on the seeds
    its cells share (the planned reading) or on ``seeds`` only."""
    if prediction["kind"] not in ("gap", "lift-gap"):
        raise ValueError(f"prediction must be a gap or lift-gap, got kind {prediction['kind']!r}")
    dataset = parse_cell(prediction["cell"])[0]
    _, arrays = _gap_matrices(results, prediction, seeds)
    if prediction["kind"] == "lift-gap":
        first, second = prediction["first"], prediction["second"]
        return lift_gap_interval(
            arrays[0], test_labels(results, dataset, first),
            arrays[1], test_labels(results, dataset, second),
        )  # fmt: skip
    if len(arrays) == 1:
        return gap_interval(arrays[0], labels=test_labels(results, dataset, prediction["split"]))
    return gap_interval(arrays[0], arrays[1])


def per_seed(results: dict[str, Any], prediction: dict[str, Any]) -> dict[int, float]:
    """``{seed: the statistic of a gap or lift-gap prediction on that seed alone}`` (a fraction):
    the cell's accuracy minus the constant answer or the other cell's, or for a lift-gap the
    change of the cell's lift over the constant answer from ``first`` to ``second``."""
    dataset = parse_cell(prediction["cell"])[0]
    seeds, arrays = _gap_matrices(results, prediction, None)

    def constant(split: str) -> float:
        labels = test_labels(results, dataset, split)
        return float(np.bincount(labels).max() / len(labels))

    if prediction["kind"] == "lift-gap":
        first, second = arrays[0].mean(1), arrays[1].mean(1)
        values = (second - constant(prediction["second"])) - (first - constant(prediction["first"]))
    elif len(arrays) == 1:
        values = arrays[0].mean(1) - constant(prediction["split"])
    else:
        values = arrays[0].mean(1) - arrays[1].mean(1)
    return dict(zip(seeds, (float(v) for v in values), strict=True))


def threshold_of(expect: str) -> float:
    """The number a gap's ``expect`` names (``"above -0.05"`` -> -0.05)."""
    word, value = expect.split()
    if word not in ("above", "below", "within"):
        raise ValueError(f"expect must be 'above X', 'below X' or 'within X', got {expect!r}")
    return float(value)


def p_text(interval: Interval, expect: str) -> str:
    """The bootstrap p-value beside a gap, only where it tests what the prediction names.

    The p-value is for "the gap is 0". Beside "above 0.05" or "within 0.05" it would answer a
    question the prediction did not ask, so it is left out; beside "above 0" or "below 0" it
    tests the prediction's own threshold, and says so."""
    word = expect.split()[0]
    if word == "within" or threshold_of(expect) != 0.0:
        return ""
    return f" (against 0: {format_p(interval.p, interval.floor)})"


def split_cells(
    results: dict[str, Any], prediction: dict[str, Any], solved: dict[str, Any]
) -> list[str]:
    """The cells a gap or lift-gap prediction reads whose seeds split into solved and unsolved
    by ``solved``'s rule (a count or count-gap reads its cells as counts: never listed)."""
    if prediction["kind"] not in ("gap", "lift-gap"):
        return []
    found = []
    for cell in _gap_cells(prediction):
        flags = solved_seeds(results, cell, solved).values()
        if 0 < sum(flags) < len(flags):
            found.append(cell)
    return found


def expected_text(prediction: dict[str, Any]) -> str:
    expect = prediction["expect"]
    return expect if isinstance(expect, str) else "{}-{} seeds".format(*expect)


def chosen(predictions: dict[str, Any], ids: Sequence[str] | None) -> list[dict[str, Any]]:
    if ids is None:
        return list(predictions["predictions"])
    known = {p["id"]: p for p in predictions["predictions"]}
    unknown = [i for i in ids if i not in known]
    if unknown:
        raise ValueError(f"ids: {unknown} are not predictions; allowed: {sorted(known)}")
    return [known[i] for i in ids]


def predictions_list(predictions: dict[str, Any], ids: Sequence[str] | None = None) -> str:
    """A Markdown table of the predictions as written (before any result): id, text, expected."""
    lines = ["| id | prediction | expected |", "|---|---|---|"]
    lines += [f"| {p['id']} | {p['text']} | {expected_text(p)} |" for p in chosen(predictions, ids)]
    return "\n".join(lines)


def predictions_table(
    results: dict[str, Any], predictions: dict[str, Any], ids: Sequence[str] | None = None
) -> str:
    """A Markdown table: every prediction (or those in ``ids``), what it expected, what was
    measured, whether it held."""
    lines = ["| id | prediction | expected | measured | held |", "|---|---|---|---|---|"]
    for p in chosen(predictions, ids):
        measured, held = check_prediction(results, p, predictions["solved"])
        split = split_cells(results, p, predictions["solved"])
        if split:
            measured += f" (split cell: {', '.join(c.split(':', 1)[1] for c in split)})"
        lines.append(
            f"| {p['id']} | {p['text']} | {expected_text(p)} | {measured} | "
            f"{'yes' if held else '**no**'} |"
        )
    return "\n".join(lines)


def _statistic_name(prediction: dict[str, Any]) -> str:
    """What :func:`per_seed` measures, in words."""
    if prediction["kind"] == "lift-gap":
        first, second = prediction["first"], prediction["second"]
        return f"change in lift over the constant answer, `{second}` minus `{first}`"
    label = prediction["cell"].split(":", 1)[1]
    against = prediction["against"]
    other = "the constant answer" if against == "constant" else against.split(":", 1)[1]
    return f"{label} minus {other} on `{prediction['split']}`"


def _in_points(expect: str) -> str:
    """``"above -0.05"`` -> ``"above -5 points"``."""
    word = expect.split()[0]
    return f"{word} {100 * threshold_of(expect):g} points"


def split_seed_readings(
    results: dict[str, Any], predictions: dict[str, Any], ids: Sequence[str] | None = None
) -> str:
    """For every gap or lift-gap prediction (of ``ids``) that reads a split cell (its seeds
    split into solved and unsolved by the predictions' rule): its statistic seed by seed, the
    planned reading over every seed, and the same reading on the seeds where every cell it
    reads solved the task (exploratory: no prediction named it). Points throughout."""
    solved = predictions["solved"]
    blocks = []
    for p in chosen(predictions, ids):
        split = split_cells(results, p, solved)
        if not split:
            continue
        values = per_seed(results, p)
        seeds = sorted(values)
        flags = {c: solved_seeds(results, c, solved) for c in _gap_cells(p)}
        rule = solved[parse_cell(p["cell"])[0]]
        kept = [s for s in seeds if all(f[s] for f in flags.values())]
        lines = [f"{p['id']}  {p['text']} (expected: {_in_points(p['expect'])})"]
        for cell in split:
            k, n = sum(flags[cell].values()), len(flags[cell])
            lines.append(
                f"    {cell.split(':', 1)[1]} solved `{rule['split']}` in {k} of {n} seeds"
            )
        lines.append(f"    {_statistic_name(p)}, per seed (points):")
        lines.append("    " + f"{'seed':18}" + "".join(f"{s:>7}" for s in seeds))
        for cell, f in flags.items():
            name = f"{cell.split(':', 1)[1]} solved"
            lines.append("    " + f"{name:18}" + "".join(
                f"{'yes' if f[s] else 'no':>7}" for s in seeds))  # fmt: skip
        lines.append("    " + f"{'points':18}" + "".join(f"{100 * values[s]:+7.1f}" for s in seeds))
        for what, chosen_seeds in (
            (f"all {len(seeds)} seeds (the planned reading)", None),
            (f"the {len(kept)} solved seeds (exploratory)", kept),
        ):
            if chosen_seeds is not None and len(chosen_seeds) == 0:
                lines.append(f"    {what}: none")
                continue
            i = prediction_interval(results, p, chosen_seeds)
            verdict = "yes" if meets(i, p["expect"]) else "no"
            lines.append(
                f"    {what:42} {100 * i.estimate:+6.1f} [{100 * i.low:+6.1f}, "
                f"{100 * i.high:+6.1f}]  {_in_points(p['expect'])}: {verdict}"
            )
        blocks.append("\n".join(lines))
    if not blocks:
        return "no gap prediction here reads a split cell"
    return "\n\n".join(blocks)
