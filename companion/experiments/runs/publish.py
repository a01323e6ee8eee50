"""Publishing a results folder as one unit: staged, hashed (``SHA256SUMS``), swapped in whole, one
publisher at a time; and the ablation's folder, written from its runs' own records once every run
has finished."""

from __future__ import annotations

import ctypes
import glob
import json
import os
import shutil
import sys
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from companion._io import atomic_write_json, atomic_write_text, file_sha256
from companion.data import num_classes
from companion.data.tasks import IMAGE_SIZE
from companion.experiments.evaluation import evaluation_splits, labels_record, load_split
from companion.experiments.integrity import (
    MANIFEST,
    file_hashes,
    folder_lock,
    manifest_differences,
    write_manifest,
)
from companion.experiments.records import refresh_table
from companion.experiments.related import RESULT_SETTINGS
from companion.experiments.results import (
    DERIVED,
    bias_file,
    cell_label,
    load_results,
    mean_std,
    run_key,
    run_sources,
    summarize,
)
from companion.experiments.runs.ablation_plan import GRID, AblationPlan
from companion.train.checkpoint import settings_differences
from companion.train.config import recorded_settings

#: Files written before the runs (the predictions), carried over unchanged by every publish.
KEPT = ("predictions.md",)


@contextmanager
def publish_lock(folder: Path) -> Iterator[Path]:
    """Hold the lock that serialises every publish to ``folder`` (``integrity.folder_lock``;
    readers a swap overtook take it shared) and yield a staging folder of this process's own,
    removed afterwards, as are those a killed publisher left (under the lock nobody uses them)."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    with folder_lock(folder):
        staging = folder.with_name(f".{folder.name}.staging-{os.getpid()}")
        try:
            for stale in folder.parent.glob(f".{glob.escape(folder.name)}.staging-*"):
                shutil.rmtree(stale, ignore_errors=True)
            check_intact(folder)
            yield staging
        finally:
            shutil.rmtree(staging, ignore_errors=True)


def check_intact(folder: Path) -> None:
    """Refuse to publish over ``folder`` when its files differ from its ``SHA256SUMS``: what a
    publish carries over or keeps would otherwise be hashed again as if the runs wrote it."""
    if not (folder / MANIFEST).is_file():
        return
    differences = manifest_differences(folder)
    if differences:
        raise ValueError(
            f"{folder} was changed since it was published ({differences[0]}"
            f"{f', and {len(differences) - 1} more' if len(differences) > 1 else ''}): restore "
            f"it (e.g. git checkout -- {folder}), or publish under another --name"
        )


def finish_staging(
    staging: Path, folder: Path, dropped: Iterable[str] = (), replace: bool = False
) -> None:
    """Hash ``staging``, refuse it if a file of ``folder`` (but ``dropped``; any, to ``replace``
    it) would be lost, swap it in and rebuild the record table of its results tree."""
    before = file_hashes(folder) if folder.is_dir() and not replace else {}
    lost = sorted(set(before) - set(file_hashes(staging)) - set(dropped))
    if lost:
        raise ValueError(
            f"publishing would remove {len(lost)} file(s) from {folder} ({', '.join(lost[:4])}"
            f"{', ...' if len(lost) > 4 else ''}): publish under another --name, or remove "
            f"{folder} first if this is meant to replace it"
        )
    write_manifest(staging)
    swap_in(staging, folder)
    refresh_table(folder)


def derived_state(folder: Path, sources: dict[str, Any] | None) -> str:
    """``"none"`` (no derived results in ``folder``), ``"current"`` (computed from exactly the
    runs ``sources`` names, by content hash) or ``"stale"`` (always, for ``sources=None``)."""
    path = folder / DERIVED[0]
    if not path.is_file():
        return "none"
    try:
        recorded = json.loads(path.read_text()).get("sources")
    except (ValueError, AttributeError, OSError):
        return "stale"
    return "current" if sources is not None and recorded == sources else "stale"


def swap_in(staging: Path, folder: Path) -> None:
    """Make ``staging`` the new ``folder``: with Linux's ``renameat2(RENAME_EXCHANGE)`` the two
    swap in one step, so ``folder`` is never missing; elsewhere two renames (``folder`` is then
    briefly absent; :func:`restore_interrupted_swap` repairs a kill between them)."""
    if folder.exists() and _exchange(staging, folder):
        shutil.rmtree(staging)  # now the previous folder
        return
    old = folder.with_name(f".{folder.name}.old")
    shutil.rmtree(old, ignore_errors=True)
    if folder.exists():
        os.replace(folder, old)
    os.replace(staging, folder)
    shutil.rmtree(old, ignore_errors=True)


def _exchange(a: Path, b: Path) -> bool:
    """Swap the paths ``a`` and ``b`` atomically; ``False`` where the OS cannot."""
    if sys.platform != "linux":
        return False
    try:
        renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):
        return False
    at_fdcwd, rename_exchange = -100, 2
    return renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0


def restore_interrupted_swap(folder: Path) -> None:
    """A kill between the two renames of :func:`swap_in` leaves only ``.<name>.old``."""
    old = folder.with_name(f".{folder.name}.old")
    if old.is_dir() and not folder.exists():
        os.replace(old, folder)


# --------------------------------------------------------------------------- the ablation's


def tables_intact(record: dict[str, Any], tables: Path) -> bool:
    """Whether ``tables`` (a run's ``.bias.pt``) is the file its run sealed (``bias_sha256``;
    ``None``: the model has no tables)."""
    expected = record["bias_sha256"]
    return expected is None or (tables.is_file() and file_sha256(tables) == expected)


def _common(values: list[Any], what: str) -> Any:
    """The one value every run has for ``what`` (hardware may be mixed; nothing else may)."""
    texts = {json.dumps(v, sort_keys=True) for v in values}
    if len(texts) == 1:
        return values[0]
    if what == "hardware":
        return "mixed: " + " | ".join(sorted(texts))
    raise ValueError(f"the runs disagree on {what} ({sorted(texts)}); nothing was published")


def results_record(
    plan: AblationPlan, records: list[dict[str, Any]], header: dict[str, Any]
) -> dict:
    """``results.json``'s content, from the runs' own records (never from the command line)."""
    shared = [k for k in records[0]["settings"] if k not in GRID and k != "variant"]
    train = {k: _common([r["settings"][k] for r in records], k) for k in shared}
    for key in ("cpu", "cpu_count", "gpu", "torch", "python", "platform"):
        header[key] = _common([r["hardware"][key] for r in records], "hardware")
    header["companion_sha256"] = _common([r["code_sha256"] for r in records], "code_sha256")
    header["threads_per_run"] = train.get("threads") or "torch default"
    header["compute_s"] = sum(r["wall_s"] for r in records)
    datasets = list(dict.fromkeys(r["dataset"] for r in records))
    runs = [{k: v for k, v in r.items() if k != "epochs"} for r in records]
    drawn = (
        train["test_size"],
        train["data_seed"],
        train["img_size"] or IMAGE_SIZE,
        train["rendering"],
    )
    test_sets = {
        d: {
            split: labels_record(load_split(d, split, *drawn).labels)
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
            "train": train,
        },
        "chance": {d: 1 / num_classes(d) for d in datasets},
        "test_sets": test_sets,
        "summary": summarize(runs),
        "runs": runs,
    }


def results_table(summary: Sequence[dict[str, Any]], chance: dict[str, float]) -> str:
    """Markdown: one row per cell (``pos``, then ``pos:variant`` for the controlled variants),
    one column per dataset, cells ``mean ± std`` in percent."""
    datasets = list(dict.fromkeys(r["dataset"] for r in summary))
    cell = {(r["dataset"], cell_label(r["pos"], r.get("variant", "swin"))): r for r in summary}
    labels = sorted(dict.fromkeys(name for _, name in cell), key=lambda c: ":" in c)
    ns = sorted({r["n"] for r in summary})
    head = "| pos | " + " | ".join(f"{d} (chance {100 * chance[d]:.1f})" for d in datasets) + " |"
    lines = [head, "|---" * (len(datasets) + 1) + "|"]
    for label in labels:
        rows = [cell.get((d, label)) for d in datasets]
        cells = ["" if r is None else mean_std(r, 100, ".1f") for r in rows]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    lines.append("")
    n = "/".join(str(k) for k in ns)
    seeds = "seed" if ns == [1] else "seeds"
    note = "; `pos:variant` rows are controlled variants (companion.swin.VARIANTS)"
    extra = note if any(":" in c for c in labels) else ""
    spread = "" if ns == [1] else " ± sample std"
    lines.append(f"*Final test accuracy (%), mean{spread} over {n} {seeds}{extra}.*")
    return "\n".join(lines) + "\n"


def publish_ablation(
    plan: AblationPlan, results: dict[str, Any], records: list[dict[str, Any]]
) -> None:
    """Publish ``results/<name>/``: ``results.json``, ``results.md``, ``curves/<key>.json``, the
    first seed's ``bias/`` tables, the predictions and derived results computed from exactly
    these runs."""
    folder = plan.folder
    with publish_lock(folder) as staging:
        check_publishable(plan, records, results["plan"]["train"])
        bias_files = []
        for r in records:
            key = run_key(r["dataset"], r["pos"], r["seed"], r["variant"])
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
                rel = bias_file(r["dataset"], r["pos"], r["variant"])
                (staging / "bias").mkdir(parents=True, exist_ok=True)
                shutil.copyfile(tables, staging / rel)
                bias_files.append(rel)
        results["bias_files"] = bias_files
        results["header"]["hashed"] = "at publish"
        atomic_write_json(staging / "results.json", results)
        atomic_write_text(
            staging / "results.md", results_table(results["summary"], results["chance"])
        )
        kept = not plan.replace and derived_state(folder, run_sources(results)) == "current"
        for name in KEPT + (DERIVED if kept else ()):
            if (folder / name).is_file():
                shutil.copyfile(folder / name, staging / name)
        finish_staging(staging, folder, dropped=() if kept else DERIVED, replace=plan.replace)


def check_publishable(
    plan: AblationPlan,
    records: list[dict[str, Any]] | None = None,
    train: dict[str, Any] | None = None,
) -> None:
    """Unless ``--replace``, refuse to publish over a folder changed since it was published, over
    runs trained with other result settings (:data:`~companion.experiments.related.RESULT_SETTINGS`
    and the variant) than ``train`` (``None``: the plan's), or (unless ``--replace-derived``)
    over derived results that would no longer match. Before training (``records=None``) what is
    already certain is refused, published runs the plan lacks too; under the lock, again."""
    folder = plan.folder
    if plan.replace:
        return
    check_intact(folder)  # an edited folder is refused as such, not as unreadable
    published = load_results(folder) if (folder / "results.json").is_file() else None
    if published is not None:
        now = recorded_settings(plan.base, ("result",)) if train is None else train
        before = {**published["plan"]["train"], "variant": published["plan"].get("variant", "swin")}
        compared = {k: now[k] for k in RESULT_SETTINGS if k in now and k in before}
        diff = settings_differences(before, {**compared, "variant": plan.base.variant})
        if diff:
            raise ValueError(
                f"{folder} holds runs trained with other settings ({'; '.join(diff)}): pass "
                f"--replace to publish over them (the folder is replaced whole, its predictions "
                f"kept; add --fresh if --work-dir saved runs with the old settings), or publish "
                f"under another --name"
            )
    planned = {run_key(d, p, s, v) for d, p, v, s in plan.runs()}
    if records is not None:
        stale = derived_state(folder, run_sources({"runs": records})) == "stale"
    else:
        sources = None if published is None else run_sources(published)
        state = derived_state(folder, sources)
        changes = plan.fresh or sources is None or set(sources) != planned
        stale = state == "stale" or (state == "current" and changes)
    if stale and not plan.replace_derived:
        raise ValueError(
            f"{folder / DERIVED[0]} was computed from other runs than the ones this ablation "
            f"would publish; pass --replace-derived to publish and remove it (then run python -m "
            f"companion.commands.resolution_experiment --name {folder.name} again), or choose a "
            f"new --name"
        )
    dropped = sorted({p.stem for p in (folder / "curves").glob("*.json")} - planned)
    if records is None and dropped:
        raise ValueError(
            f"{folder} holds {len(dropped)} published run(s) this plan does not have "
            f"({', '.join(dropped[:3])}{', ...' if len(dropped) > 3 else ''}): publish under "
            f"another --name, or remove {folder} first if this is meant to replace it"
        )
