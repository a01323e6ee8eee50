"""Reading a resolution-transfer record back, and the tables and gaps chapter 6 prints from it.

``results/<name>/transfer.json`` is written by
:mod:`companion.experiments.runs.resolution_experiment` (one row per run x rendering x size x
condition); read here: its mean ± std over seeds (:func:`transfer_summary`,
:func:`transfer_table`). :mod:`companion.experiments.results` reads the ablation's own records.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from companion.experiments.integrity import ResultsError, is_sealed, verified_json, whole_folders
from companion.experiments.resolution_transfer import (
    condition_name,
)
from companion.experiments.results import (
    DERIVED,
    cell_label,
    load_results,
    mean_std,
    run_sources,
    summarize,
)


def transfer_summary(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Mean and std over seeds per dataset x pos x rendering x size x condition (as moved, and
    fine-tuned), by ``companion.experiments.results.summarize`` with ``(pos, size, condition,
    rendering)`` in the place of ``pos`` (a row without a rendering, from a record written before
    there were two, is ``"scaled"``)."""
    out = []
    for metric in ("acc", "acc_finetuned"):
        records = [
            {
                "dataset": r["dataset"],
                "variant": r.get("variant", "swin"),
                "seed": r["seed"],
                "pos": (r["pos"], r["size"], r["condition"], r.get("rendering", "scaled")),
                "final": {metric: r[metric]},
            }
            for r in rows
            if metric in r
        ]
        for s in summarize(records, metric=metric):
            pos, size, condition, rendering = s["pos"]
            out.append({**s, "pos": pos, "size": size, "condition": condition,
                        "rendering": rendering, "metric": metric})  # fmt: skip
    return out


def transfer_table(summary: Sequence[dict[str, Any]]) -> str:
    """``transfer_summary`` as Markdown: one line per dataset x pos x size x condition (named as
    today, ``condition_name``, also when the summary comes from an older record)."""
    lines = [
        "| dataset | pos | rendering | size | condition | accuracy | after fine-tune |",
        "|---" * 7 + "|",
    ]
    cells: dict[tuple, dict[str, str]] = {}
    for s in summary:
        condition = condition_name(s["condition"])
        rendering = s.get("rendering", "scaled")
        key = (s["dataset"], cell_label(s["pos"], s["variant"]), rendering, s["size"], condition)
        cells.setdefault(key, {})[s["metric"]] = f"{mean_std(s)} (n={s['n']})"
    for (dataset, pos, rendering, size, condition), v in cells.items():
        after = v.get("acc_finetuned", "")
        lines.append(
            f"| {dataset} | {pos} | {rendering} | {size} | {condition} | {v['acc']} | {after} |"
        )
    return "\n".join(lines)


@whole_folders
def load_transfer(folder: str | Path) -> dict[str, Any]:
    """``transfer.json`` of an ablation folder (written by ``resolution_experiment.run_transfer``),
    checked against the folder's ``SHA256SUMS`` and against the runs of the ``results.json``
    beside it (``sources``), as recorded (a record's old condition names are mapped once, where
    the record table is built: ``companion.experiments.records``)."""
    results = verified_json(folder, DERIVED[0])
    if "record_sha256" in results and not is_sealed(results):  # sealed since records were
        raise ResultsError(f"{Path(folder) / DERIVED[0]} does not match its record_sha256")
    if results.get("sources") != run_sources(load_results(folder)):
        raise ResultsError(
            f"{Path(folder) / DERIVED[0]} was computed from other runs than the results.json "
            f"beside it holds"
        )
    return results
