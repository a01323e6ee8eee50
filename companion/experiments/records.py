"""One record table: every run the book's experiments published, as rows of one tidy table.

``results/records.csv`` is derived from the sealed folders, never edited: one row per run and
test split (for a moved model, per condition and metric), so that a reading is a filter and a
group-by over it. Every publish rebuilds it (:func:`refresh_table`); ``python -m
companion.experiments.records`` rebuilds it byte-identically from the folders (``--check``: only
compares), with its hash in ``records.csv.sha256``, which :func:`load_table` checks.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import io
import sys
from pathlib import Path
from typing import Any

from companion._io import atomic_write_text
from companion.experiments.evaluation import unpack_bits
from companion.experiments.integrity import ResultsError, folder_lock, read_folder, verified
from companion.experiments.resolution_transfer import condition_name
from companion.experiments.results import find_results
from companion.swin_configs import CONFIGS

TABLE = "records.csv"
TABLE_HASH = "records.csv.sha256"
#: The command that rebuilds the table.
REBUILD = "python -m companion.experiments.records"
#: The table's columns: what each row holds.
COLUMNS = (
    "experiment",  # the folder under results/ (cpu-ablation, learned-vit-seeds/seed-2, ...)
    "record",  # the file the row comes from: results, transfer or provenance
    "task",  # the dataset (grid-cell, far-relation-heldout, ...)
    "code",  # the position code as the record names it (Position.parse reads it)
    "variant",  # swin, a controlled variant (torus, pool-merge, ...) or vit
    "rendering",  # scaled or world: how the task is drawn at its size
    "size",  # the image size in pixels
    "condition",  # trained, or how a model was moved to its size, by today's name (window-kept)
    "metric",  # acc (as trained or as moved) or acc_finetuned (after the short fine-tune)
    "seed",
    "split",  # the test split (test, seen, unseen, near)
    "correct",  # test images answered right
    "total",  # test images
    "bits_sha256",  # of the per-image bits as recorded (empty where only the accuracy is kept)
    "wall_s",  # training time (a move's fine-tune time for acc_finetuned; empty without one)
    "commit",  # the commit the run was made at
)
INTEGER_COLUMNS = ("size", "seed", "correct", "total")


def results_root() -> Path:
    """The ``results/`` folder the chapters read."""
    return find_results("cpu-ablation").parent


def _bits_row(bits: str, total: int) -> dict[str, Any]:
    sha256 = hashlib.sha256(bits.encode("ascii")).hexdigest()
    return {"correct": int(unpack_bits(bits, total).sum()), "total": total, "bits_sha256": sha256}


def _ablation_rows(name: str, record: dict[str, Any]) -> list[dict[str, Any]]:
    commit = record["header"]["git"]["commit"]
    rows = []
    for run in record["runs"]:
        settings = run["settings"]
        size = settings["img_size"] or CONFIGS[settings["config"]]["img_size"]
        for split, result in run["splits"].items():
            rows.append({
                "experiment": name, "record": "results", "task": run["dataset"],
                "code": run["pos"], "variant": run.get("variant", "swin"),
                "rendering": settings.get("rendering", "scaled"), "size": size,
                "condition": "trained", "metric": "acc", "seed": run["seed"], "split": split,
                **_bits_row(result["correct"], result["n"]),
                "wall_s": run["wall_s"], "commit": commit,
            })  # fmt: skip
    return rows


def _transfer_rows(name: str, record: dict[str, Any], before: dict[str, Any]) -> list[dict]:
    """A ``transfer.json``'s rows: each move's test images are its 32-px run's test split."""
    commit = record["header"]["git"]["commit"]
    total = {d: sets["test"]["n"] for d, sets in before["test_sets"].items()}
    rows = []
    for row in record["rows"]:
        for metric, bits in (("acc", "correct"), ("acc_finetuned", "correct_finetuned")):
            if row.get(bits) is None:
                continue
            rows.append({
                "experiment": name, "record": "transfer", "task": row["dataset"],
                "code": row["pos"], "variant": row.get("variant", "swin"),
                "rendering": row.get("rendering", "scaled"), "size": row["size"],
                "condition": condition_name(row["condition"]), "metric": metric,
                "seed": row["seed"], "split": "test",
                **_bits_row(row[bits], total[row["dataset"]]),
                "wall_s": row.get("finetune_s") if metric == "acc_finetuned" else None,
                "commit": commit,
            })  # fmt: skip
    return rows


def _provenance_rows(name: str, record: dict[str, Any]) -> list[dict[str, Any]]:
    """A single embedding run (chapter 1): only its accuracy is kept, a whole number of images."""
    settings, total = record["settings"], record["settings"]["test_size"]
    vit = "model" in record and record["model"]["class"].endswith("VisionTransformer")
    return [{
        "experiment": name, "record": "provenance", "task": settings["dataset"],
        "code": settings.get("pos", "abs"), "variant": "vit" if vit else "swin",
        "rendering": "scaled", "size": record["model"]["img_size"] if vit
        else CONFIGS[settings["config"]]["img_size"],
        "condition": "trained", "metric": "acc", "seed": settings["seed"], "split": "test",
        "correct": round(record["final_test_acc"] * total), "total": total, "bits_sha256": "",
        "wall_s": record["wall_s"], "commit": record["git"]["commit"],
    }]  # fmt: skip


def published_folders(root: str | Path) -> list[Path]:
    """Every sealed folder at any depth under ``root`` but ``pilots/`` and hidden ones (a killed
    publish's staging or old folder), in path order."""
    root = Path(root)
    found = [p.parent.relative_to(root).parts for p in root.rglob("SHA256SUMS")]
    kept = [parts for parts in found if parts[0] != "pilots" and not _hidden(parts)]
    return sorted(root.joinpath(*parts) for parts in kept)


def _hidden(parts: tuple[str, ...]) -> bool:
    return any(part.startswith(".") for part in parts)


def record_rows(root: str | Path) -> list[dict[str, Any]]:
    """Every published run under ``root`` as rows, each folder verified."""
    rows: list[dict[str, Any]] = []
    for folder in published_folders(root):
        files, name = read_folder(folder), folder.relative_to(root).as_posix()
        if "results.json" in files:
            before = verified(folder, "results.json", files)
            rows += _ablation_rows(name, before)
            if "transfer.json" in files:
                rows += _transfer_rows(name, verified(folder, "transfer.json", files), before)
        elif "provenance.json" in files:
            rows += _provenance_rows(name, verified(folder, "provenance.json", files))
    return rows


def table_text(rows: list[dict[str, Any]]) -> str:
    """The rows as CSV text: a header, ``\\n`` line ends, numbers as Python prints them."""
    out = io.StringIO()
    writer = csv.DictWriter(out, COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue()


def _hash_line(text: str) -> str:
    return f"{hashlib.sha256(text.encode('utf-8')).hexdigest()}  {TABLE}\n"


def write_table(root: str | Path) -> Path:
    """Rebuild ``root/records.csv`` and its hash from the folders under ``root``."""
    text = table_text(record_rows(root))
    with folder_lock(Path(root) / TABLE):  # one rebuild at a time writes the two files
        atomic_write_text(Path(root) / TABLE, text)
        atomic_write_text(Path(root) / TABLE_HASH, _hash_line(text))
    return Path(root) / TABLE


def results_tree(folder: str | Path) -> Path | None:
    """The results tree ``folder`` lies in: the nearest folder above it holding ``records.csv``."""
    return next((p for p in Path(folder).resolve().parents if (p / TABLE).is_file()), None)


def refresh_table(folder: str | Path) -> Path | None:
    """Rebuild the table of ``folder``'s results tree after a publish; ``None``: not rebuilt."""
    root = results_tree(folder)
    if root is None:
        return None
    try:
        return write_table(root)
    except (ResultsError, OSError) as error:
        print(f"{root / TABLE} not rebuilt ({error}): run `{REBUILD}`", file=sys.stderr)
        return None


def load_table(root: str | Path | None = None) -> list[dict[str, Any]]:
    """The rows of ``records.csv`` under ``root`` (the chapters'), checked against its hash."""
    root = results_root() if root is None else Path(root)
    try:
        text = (root / TABLE).read_bytes().decode("utf-8")
        recorded = (root / TABLE_HASH).read_text(encoding="utf-8")
    except FileNotFoundError as error:
        raise ResultsError(f"{error.filename} is missing: rebuild it with `{REBUILD}`") from None
    if recorded != _hash_line(text):
        raise ResultsError(
            f"{root / TABLE} does not match {TABLE_HASH}: changed or damaged; rebuild it with "
            f"`{REBUILD}`"
        )
    rows = csv.DictReader(io.StringIO(text))
    return [{**row, **{c: int(row[c]) for c in INTEGER_COLUMNS}} for row in rows]


def check_against_table(
    folder: str | Path, record: dict[str, Any], before: dict[str, Any] | None = None
) -> None:
    """Refuse a record a chapter reads (a ``results.json``, a provenance record, or a
    ``transfer.json`` with its 32-px ``before``) unless its rows are the table's: every count and
    per-image bits' hash a bootstrap reads is the table's."""
    folder, root = Path(folder).resolve(), results_tree(folder)
    if root is None:
        raise ResultsError(f"no {TABLE} above {folder}: build it with `{REBUILD}`")
    name = folder.relative_to(root).as_posix()
    if before is not None:
        kind, rows = "transfer", _transfer_rows(name, record, before)
    elif "runs" in record:
        kind, rows = "results", _ablation_rows(name, record)
    else:
        kind, rows = "provenance", _provenance_rows(name, record)
    held = [r for r in load_table(root) if r["experiment"] == name and r["record"] == kind]
    if table_text(rows) != table_text(held):
        raise ResultsError(
            f"{folder}: its {kind}.json does not agree with {root / TABLE}: rebuild it with "
            f"`{REBUILD}`"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=REBUILD, description="Rebuild results/records.csv.")
    parser.add_argument("--results-dir", type=Path, help="default: the one the chapters read")
    parser.add_argument("--check", action="store_true", help="only compare the committed table")
    args = parser.parse_args(argv)
    root = args.results_dir or results_root()
    try:
        if not args.check:
            print(f"wrote {write_table(root)} and {TABLE_HASH}")
            return 0
        load_table(root)  # refuses a table that does not match its own hash
        if (root / TABLE).read_text(encoding="utf-8") != table_text(record_rows(root)):
            raise ResultsError(f"{root / TABLE} is not what the folders give: rebuild it")
    except (ResultsError, OSError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    print(f"{root / TABLE} is what the folders give")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
