"""A resolution-transfer run's summary, the mean ± std over seeds of its moved models, which
:mod:`companion.experiments.runs.resolution_experiment` writes into ``transfer.json`` and prints.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from companion.experiments.paper import markdown_table
from companion.experiments.results import cell_label, mean_std, summarize


def transfer_summary(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Mean and std over seeds per dataset x pos x rendering x size x condition and metric."""
    out = []
    for metric in ("acc", "acc_finetuned"):
        cells = [
            {**r, "pos": (r["pos"], r["size"], r["condition"], r["rendering"]), "final": r}
            for r in rows
            if metric in r
        ]
        for s in summarize(cells, metric=metric):
            pos, size, condition, rendering = s["pos"]
            place = {"pos": pos, "size": size, "condition": condition, "rendering": rendering}
            out.append({**s, **place, "metric": metric})
    return out


def transfer_table(summary: Sequence[dict[str, Any]]) -> str:
    """:func:`transfer_summary` as Markdown, one line per dataset x pos x rendering x size x
    condition."""
    cells: dict[tuple, dict[str, str]] = {}
    for s in summary:
        key = (s["dataset"], cell_label(s["pos"], s["variant"]), s["rendering"], s["size"])
        cells.setdefault((*key, s["condition"]), {})[s["metric"]] = f"{mean_std(s)} (n={s['n']})"
    head = ["dataset", "pos", "rendering", "size", "condition", "accuracy", "after fine-tune"]
    rows = [(*key, v["acc"], v.get("acc_finetuned", "")) for key, v in cells.items()]
    return markdown_table(head, rows, align="l" * len(head))
