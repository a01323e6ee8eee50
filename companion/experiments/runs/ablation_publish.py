"""Publishing an ablation: ``results/<name>/`` written from the runs' own records (never from the
command line), built in a staging folder and swapped in only when every run has finished, with
the checks that nothing published is lost, that results derived from other runs are not kept,
and that runs trained with other settings are not published over (unless ``--replace``): the
same settings re-publish as before, idempotently.

``companion.experiments.runs.ablation`` trains the runs and calls :func:`publish_ablation`.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from companion._io import atomic_write_json, atomic_write_text, file_sha256
from companion.data import num_classes
from companion.data.tasks import IMAGE_SIZE
from companion.experiments.evaluation import evaluation_splits, labels_record
from companion.experiments.related import RESULT_SETTINGS
from companion.experiments.results import (
    DERIVED,
    bias_file,
    load_results,
    results_table,
    run_key,
    run_sources,
    summarize,
)
from companion.experiments.runs.ablation_plan import GRID, AblationPlan
from companion.experiments.runs.publish import (
    check_derived,
    check_intact,
    derived_state,
    finish_staging,
    publish_lock,
)
from companion.position import Position
from companion.train.checkpoint import settings_differences
from companion.train.config import recorded_settings

#: Files of a results folder written before its runs (the predictions), carried over unchanged
#: by every publish.
KEPT = ("predictions.md",)


def tables_intact(record: dict[str, Any], tables: Path) -> bool:
    """Whether ``tables`` (a run's ``.bias.pt``) is the file its run wrote: the hash the record
    sealed (``bias_sha256``; ``None``: the model had no tables), or, for a record from before
    runs recorded it, a file that loads (missing: only if the run's position has no table)."""
    if "bias_sha256" in record:
        expected = record["bias_sha256"]
        return expected is None or (tables.is_file() and file_sha256(tables) == expected)
    if not tables.is_file():
        return not Position.parse(record["pos"]).has_table
    try:
        torch.load(tables, map_location="cpu", weights_only=True)
    except Exception:  # any reason: the file is not one the run could have written
        return False
    return True


def _common(records: Sequence[dict[str, Any]], get, what: str) -> Any:
    values = {json.dumps(get(r), sort_keys=True) for r in records}
    if len(values) == 1:
        return get(records[0])
    if what == "hardware":
        return "mixed: " + " | ".join(sorted(values))
    raise ValueError(f"the runs disagree on {what} ({sorted(values)}); nothing was published")


def results_record(
    plan: AblationPlan, records: list[dict[str, Any]], header: dict[str, Any]
) -> dict:
    """``results.json``'s content, from the runs' own records (never from the command line)."""
    first = records[0]["settings"]
    shared = [k for k in first if k not in GRID and k != "variant"]
    train_settings = {k: _common(records, lambda r, k=k: r["settings"][k], k) for k in shared}
    code = _common(records, lambda r: r["code_sha256"], "code_sha256")
    for key in ("cpu", "cpu_count", "gpu", "torch", "python", "platform"):
        header[key] = _common(records, lambda r, key=key: r["hardware"][key], "hardware")
    header["companion_sha256"] = code
    header["threads_per_run"] = train_settings.get("threads") or "torch default"
    header["compute_s"] = sum(r["wall_s"] for r in records)
    datasets = list(dict.fromkeys(r["dataset"] for r in records))
    chance = {d: 1 / num_classes(d) for d in datasets}
    runs = [{k: v for k, v in r.items() if k != "epochs"} for r in records]
    summary = summarize(runs)
    # Records written before img_size and rendering were settings drew 32-px scaled images.
    drawn = (
        train_settings.get("img_size") or IMAGE_SIZE,
        train_settings.get("rendering", "scaled"),
    )
    test_sets = {
        d: {
            split: labels_record(
                d, split, train_settings["test_size"], train_settings["data_seed"], *drawn
            )
            for split in evaluation_splits(d)
        }
        for d in datasets
    }
    for r in records:  # every run was measured on the test images kept here
        for split, got in r["splits"].items():
            if got["labels_sha256"] != test_sets[r["dataset"]][split]["labels_sha256"]:
                raise ValueError(
                    f"run {run_key(r['dataset'], r['pos'], r['seed'], r['variant'])} was "
                    f"measured on other {split} images than the plan's; nothing was published"
                )
    return {
        "header": header,
        "plan": {
            "name": plan.name,
            "datasets": list(plan.datasets),
            "pos": [str(p) for p in plan.pos],
            "seeds": list(dict.fromkeys(r["seed"] for r in records)),
            "variant": plan.base.variant,
            "extra": [":".join(map(str, cell)) for cell in plan.extra],
            "extra_seeds": list(plan.extra_seeds or plan.seeds),
            "train": train_settings,
        },
        "chance": chance,
        "test_sets": test_sets,
        "summary": summary,
        "runs": runs,
    }


def publish_ablation(
    plan: AblationPlan, results: dict[str, Any], records: list[dict[str, Any]]
) -> None:
    """Write the results folder into a staging folder, then swap it in (one atomic exchange
    where the OS has one): the previous folder stays whole and readable until that moment.
    Results derived from the previous folder's runs (the resolution experiment's) are carried
    over when they were computed from exactly these records and checkpoints. One publisher at a
    time (``publish_lock``): derived results are checked again under the lock, and the new
    folder must keep every file of the old one (``finish_staging``)."""
    folder = plan.folder
    with publish_lock(folder) as staging:
        check_same_settings(plan, results["plan"]["train"])  # again: another may have published
        check_plan_derived(plan, records)  # again: another process may have published meanwhile
        bias_files = []
        for r in records:
            variant = r.get("variant", "swin")
            key = run_key(r["dataset"], r["pos"], r["seed"], variant)
            summary = {k: r[k] for k in ("final", "best_test_acc", "wall_s", "num_params")}
            atomic_write_json(
                staging / "curves" / f"{key}.json",
                {"summary": summary, "settings": r["settings"], "code_sha256": r["code_sha256"],
                 "epochs": r["epochs"]},
            )  # fmt: skip
            tables = plan.work / f"{key}.bias.pt"
            if r["seed"] == plan.seeds[0] and tables.is_file():
                if not tables_intact(r, tables):
                    raise ValueError(f"{tables} changed after its run: run the command again")
                rel = bias_file(r["dataset"], r["pos"], variant)
                (staging / "bias").mkdir(parents=True, exist_ok=True)
                shutil.copyfile(tables, staging / rel)
                bias_files.append(rel)
        results["bias_files"] = bias_files
        results["header"]["hashed"] = "at publish"
        atomic_write_json(staging / "results.json", results)
        table = results_table(results["summary"], results["chance"])
        atomic_write_text(staging / "results.md", table)
        for name in KEPT:  # written before the run (predictions); never rewritten by it
            if (folder / name).is_file():
                shutil.copyfile(folder / name, staging / name)
        kept = not plan.replace and derived_state(folder, run_sources(results)) == "current"
        for name in DERIVED if kept else ():
            if (folder / name).is_file():
                shutil.copyfile(folder / name, staging / name)
        finish_staging(staging, folder, dropped=() if kept else DERIVED, replace=plan.replace)


def check_keeps_published_runs(plan: AblationPlan) -> None:
    """Before any training: refuse a plan that would publish over ``plan.folder`` without some
    of the runs published there (``publish.check_nothing_lost`` would refuse it afterwards),
    unless it is to replace the folder (``--replace``)."""
    if plan.replace:
        return
    published = {p.stem for p in (plan.folder / "curves").glob("*.json")}
    dropped = sorted(published - {run_key(d, p, s, v) for d, p, v, s in plan.runs()})
    if dropped:
        raise ValueError(
            f"{plan.folder} holds {len(dropped)} published run(s) this plan does not have "
            f"({', '.join(dropped[:3])}{', ...' if len(dropped) > 3 else ''}): publish under "
            f"another --name, or remove {plan.folder} first if this is meant to replace it"
        )


def check_plan_derived(plan: AblationPlan, records: list[dict[str, Any]] | None) -> None:
    """:func:`~companion.experiments.runs.publish.check_derived` for ``plan`` (``--replace-derived``
    lets the publish remove derived results instead)."""
    if not (plan.replace_derived or plan.replace):
        keys = {run_key(d, p, s, v) for d, p, v, s in plan.runs()}
        check_derived(plan.folder, keys, plan.fresh, records)


def check_same_settings(plan: AblationPlan, train: dict[str, Any] | None = None) -> None:
    """Refuse to publish over ``plan.folder`` when its runs were trained with other result
    settings (:data:`~companion.experiments.related.RESULT_SETTINGS`, and the model variant)
    than ``train`` (the runs' shared settings, ``results.json``'s ``plan.train``; ``None``:
    the plan's own, before any training), unless ``plan.replace``: one line naming each
    setting that differs. The same settings publish again as they always did."""
    if plan.replace or not (plan.folder / "results.json").is_file():
        return
    check_intact(plan.folder)  # an edited folder is refused as such, not as unreadable
    published = load_results(plan.folder)
    now = recorded_settings(plan.base, ("result",)) if train is None else train
    before = {**published["plan"]["train"], "variant": published["plan"].get("variant", "swin")}
    compared = {k: now[k] for k in RESULT_SETTINGS if k in now and k in before}
    diff = settings_differences(before, {**compared, "variant": plan.base.variant})
    if diff:
        raise ValueError(
            f"{plan.folder} holds runs trained with other settings ({'; '.join(diff)}): pass "
            f"--replace to publish over them (the folder is replaced whole, its predictions "
            f"kept; add --fresh if --work-dir saved runs with the old settings), or publish "
            f"under another --name"
        )
