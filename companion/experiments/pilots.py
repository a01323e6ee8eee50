"""Which planned runs chapter 6's predictions knew: a run equal bit for bit to a pilot's (which ran
before them) is no blind seed, whatever its name says. Found from the sealed records, verified."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from companion.experiments.results import (
    DERIVED,
    find_results,
    load_results,
    load_transfer,
    run_key,
)

#: Where chapter 6's transfer pilots are, under ``results/`` (each subfolder one pilot folder).
TRANSFER_PILOTS = "pilots/out/transfer"
Moves = dict[str, dict[tuple[Any, ...], tuple[Any, ...]]]


@dataclass(frozen=True)
class PilotTwin:
    """Planned ``folder``/``run`` equal to ``pilot``/``pilot_run``, and ``moves`` of ``of``."""

    folder: str
    run: str
    pilot: str
    pilot_run: str
    moves: int
    of: int


def _key(run: dict[str, Any]) -> str:
    return run_key(run["dataset"], run["pos"], run["seed"], run.get("variant", "swin"))


def fingerprint(run: dict[str, Any]) -> tuple[Any, ...]:
    """What a run learned: each split's test images and per-image bits, and the final test loss
    (a fingerprint of the weights: two runs that both give the constant answer differ there)."""
    splits = sorted(run["splits"].items())
    return tuple((n, s["labels_sha256"], s["correct"]) for n, s in splits), run["final"][
        "test_loss"
    ]


def _moves(folder: Path) -> Moves:
    """``{run key: {(size, rendering, condition): bits as moved and fine-tuned}}``."""
    found: Moves = {}
    if (folder / DERIVED[0]).is_file():
        for row in load_transfer(folder, load_results(folder))["rows"]:
            if row["condition"] != "trained":
                where = (row["size"], row["rendering"], row["condition"])
                bits = (row["correct"], row.get("correct_finetuned"))
                found.setdefault(_key(row), {})[where] = bits
    return found


def pilot_twins(planned: Sequence[Path], pilots: Sequence[Path]) -> list[PilotTwin]:
    """Every run of the ``planned`` folders equal to a run of one of the ``pilots`` folders."""
    seen: dict[tuple[Any, ...], tuple[Path, str]] = {}
    for folder in pilots:
        for run in load_results(folder)["runs"]:
            seen.setdefault(fingerprint(run), (folder, _key(run)))
    twins, pilot_moves = [], {}  # each pilot's moves read once, when it has a twin
    for folder in planned:
        moves = _moves(folder)
        for run in load_results(folder)["runs"]:
            if fingerprint(run) in seen:
                key, (pilot, pilot_run) = _key(run), seen[fingerprint(run)]
                if pilot not in pilot_moves:
                    pilot_moves[pilot] = _moves(pilot)
                mine, theirs = moves.get(key, {}), pilot_moves[pilot].get(pilot_run, {})
                equal = sum(theirs.get(where) == bits for where, bits in mine.items())
                twins.append(PilotTwin(folder.name, key, pilot.name, pilot_run, equal, len(mine)))
    return twins


def pilot_folders(root: str | Path) -> list[Path]:
    """The pilot folders below ``root`` with a ``results.json`` (not a killed publish's), sorted."""
    return sorted(p.parent for p in Path(root).glob("[!.]*/results.json"))


def find_pilot_twins(planned: Sequence[str]) -> list[PilotTwin]:
    """:func:`pilot_twins` of the results folders named ``planned`` against the transfer pilots."""
    folders = [find_results(name) for name in planned]
    pilots = pilot_folders(folders[0].parent / TRANSFER_PILOTS)
    if not pilots:  # else every planned run would pass for blind
        raise FileNotFoundError(f"no pilot folder in {folders[0].parent / TRANSFER_PILOTS}")
    return pilot_twins(folders, pilots)


def twins_table(twins: Sequence[PilotTwin]) -> str:
    """The twins as a markdown table, one row per planned run."""
    lines = ["| planned folder | run | equal to the pilot run in | moves equal |", "|---" * 4 + "|"]
    for t in twins:
        moves = f"{t.moves} of {t.of}" if t.of else "—"
        # The pilot's run name is the planned one (the usual case) or given after its folder.
        pilot = t.pilot if t.pilot_run == t.run else f"{t.pilot}/{t.pilot_run}"
        lines.append(f"| `{t.folder}` | `{t.run}` | `{pilot}` | {moves} |")
    return "\n".join(lines) + "\n"
