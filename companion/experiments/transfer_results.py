"""A resolution-transfer run's summary: the mean ± std over seeds of its moved models, which
:mod:`companion.experiments.runs.resolution_experiment` writes into ``transfer.json`` and prints
as the folder's Markdown table. Chapter 6 reads the moves themselves
(:mod:`companion.experiments.far_transfer`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from companion.experiments.paper import markdown_table
from companion.experiments.results import cell_label, mean_std, summarize


def transfer_summary(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Mean and std over seeds per dataset x pos x rendering x size x condition (as moved, and
    fine-tuned), by ``companion.experiments.results.summarize`` with ``(pos, size, condition,
    rendering)`` in the place of ``pos``."""
    out = []
    for metric in ("acc", "acc_finetuned"):
        records = [
            {"dataset": r["dataset"], "variant": r["variant"], "seed": r["seed"],
             "pos": (r["pos"], r["size"], r["condition"], r["rendering"]),
             "final": {metric: r[metric]}}
            for r in rows
            if metric in r
        ]  # fmt: skip
        for s in summarize(records, metric=metric):
            pos, size, condition, rendering = s["pos"]
            out.append({**s, "pos": pos, "size": size, "condition": condition,
                        "rendering": rendering, "metric": metric})  # fmt: skip
    return out


def transfer_table(summary: Sequence[dict[str, Any]]) -> str:
    """``transfer_summary`` as Markdown: one line per dataset x pos x rendering x size x
    condition."""
    cells: dict[tuple, dict[str, str]] = {}
    for s in summary:
        key = (s["dataset"], cell_label(s["pos"], s["variant"]), s["rendering"], s["size"],
               s["condition"])  # fmt: skip
        cells.setdefault(key, {})[s["metric"]] = f"{mean_std(s)} (n={s['n']})"
    head = ["dataset", "pos", "rendering", "size", "condition", "accuracy", "after fine-tune"]
    rows = [(*key, v["acc"], v.get("acc_finetuned", "")) for key, v in cells.items()]
    return markdown_table(head, rows, align="l" * len(head))
