"""Which planned runs the predictions knew: a planned run equal to a run made before them.

A pilot (``results/pilots/``) ran before the predictions were written. A planned run that comes
out bit for bit as a pilot did (the same runner, seed and settings) was therefore known when the
predictions were written, whatever its name says: it is not a blind seed. Such runs are found
from the sealed records themselves (every folder read verified, pilots included), never from
names: a planned run is a pilot's *twin* when some pilot run has the same :func:`fingerprint`,
and a twin's moves (its ``transfer.json`` rows) are compared with its pilot's row by row.
Chapter 5's predictions knew an earlier committed run instead (:data:`KNOWN_BEFORE`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from companion.experiments.predictions import cell_of
from companion.experiments.results import (
    DERIVED,
    find_results,
    load_results,
    load_transfer,
    run_key,
)

#: Where chapter 6's transfer pilots are, under ``results/`` (each subfolder one pilot folder).
TRANSFER_PILOTS = "pilots/out/transfer"


@dataclass(frozen=True)
class Known:
    """The runs of a planned folder that its predictions knew: an earlier run of the same grid
    (committed at ``commit``) was seen before they were written, and its runs, seeds ``seeds``
    of each of its ``cells``, came out equal in the planned folder."""

    commit: str
    seeds: tuple[int, ...]
    cells: tuple[str, ...]

    def blind(self, results: dict[str, Any], cells: Sequence[str]) -> list[int]:
        """The seeds every one of ``cells`` ran on and none of them had in the earlier run."""
        ran = [{r["seed"] for r in results["runs"] if cell_of(r) == c} for c in cells]
        known = self.seeds if set(cells) & set(self.cells) else ()
        return sorted(set.intersection(*ran) - set(known))


#: The earlier runs chapter 5's predictions were written after: the 5-seed grid at 59772f9, its
#: four encodings on both tasks and six variants (not the three positive controls, new in the
#: plan). ``tests/test_known_seeds.py`` finds exactly these runs again, from the git history.
KNOWN_BEFORE = {
    "cpu-ablation": Known("59772f9", (0, 1, 2, 3, 4), tuple(
        [f"{d}:{p}" for d in ("grid-cell", "relation") for p in ("none", "abs", "rel", "abs+rel")]
        + [f"grid-cell:{c}" for c in ("none:torus", "rel:torus", "rel:no-shift",
                                      "rel:abs-offset-bias")]
        + ["relation:none:pool-merge", "relation:rel:pool-merge"])),
}  # fmt: skip


@dataclass(frozen=True)
class PilotTwin:
    """A planned run equal to a pilot run: ``folder``/``run`` (a run key) and ``pilot``/
    ``pilot_run``; ``moves``: how many of its moves equal the pilot run's, of ``of`` (both 0
    where either folder has no moves)."""

    folder: str
    run: str
    pilot: str
    pilot_run: str
    moves: int
    of: int


def _key(run: dict[str, Any]) -> str:
    return run_key(run["dataset"], run["pos"], run["seed"], run.get("variant", "swin"))


def fingerprint(run: dict[str, Any]) -> tuple[Any, ...]:
    """What a run learned: every split's test images (``labels_sha256``) and per-image bits, and
    the final test loss (a fingerprint of the weights: two runs that merely agree image by image,
    as two that give the constant answer do, differ there)."""
    splits = tuple(
        (name, split["labels_sha256"], split["correct"])
        for name, split in sorted(run["splits"].items())
    )
    return splits, run["final"]["test_loss"]


def _moves(folder: Path) -> dict[str, dict[tuple[Any, ...], tuple[Any, ...]]]:
    """``{run key: {(size, rendering, condition): per-image bits as moved and fine-tuned}}``
    of a folder's moves (empty without a ``transfer.json``)."""
    if not (folder / DERIVED[0]).is_file():
        return {}
    found: dict[str, dict[tuple[Any, ...], tuple[Any, ...]]] = {}
    for row in load_transfer(folder, load_results(folder))["rows"]:
        if row["condition"] != "trained":
            where = (row["size"], row["rendering"], row["condition"])
            bits = (row["correct"], row.get("correct_finetuned"))
            found.setdefault(_key(row), {})[where] = bits
    return found


def pilot_twins(
    planned: Sequence[str | Path],
    pilots: Sequence[str | Path],
    same: Callable[[dict[str, Any]], tuple[Any, ...]] = fingerprint,
    read_pilot: Callable[[Path], dict[str, Any]] = load_results,
) -> list[PilotTwin]:
    """Every run of the ``planned`` folders equal (by ``same``) to a run of one of the ``pilots``
    folders (each read by ``read_pilot``), with how many of its moves equal that pilot's, in the
    folders' order and each folder's run order."""
    seen: dict[tuple[Any, ...], tuple[Path, str]] = {}
    for folder in map(Path, pilots):
        for run in read_pilot(folder)["runs"]:
            seen.setdefault(same(run), (folder, _key(run)))
    twins = []
    for folder in map(Path, planned):
        moves = _moves(folder)
        for run in load_results(folder)["runs"]:
            if same(run) not in seen:
                continue
            pilot, pilot_run = seen[same(run)]
            mine, theirs = moves.get(_key(run), {}), _moves(pilot).get(pilot_run, {})
            equal = sum(theirs.get(where) == bits for where, bits in mine.items())
            twins.append(PilotTwin(folder.name, _key(run), pilot.name, pilot_run, equal, len(mine)))
    return twins


def pilot_folders(root: str | Path) -> list[Path]:
    """The pilot folders below ``root`` (each with a ``results.json``), sorted."""
    return sorted(p.parent for p in Path(root).glob("*/results.json"))


def find_pilot_twins(planned: Sequence[str], pilots: str = TRANSFER_PILOTS) -> list[PilotTwin]:
    """:func:`pilot_twins` of the results folders named ``planned`` (:func:`find_results`)
    against every pilot folder under ``results/<pilots>`` beside them."""
    folders = [find_results(name) for name in planned]
    found = pilot_folders(folders[0].parent / pilots)
    if not found:
        raise FileNotFoundError(f"no pilot folder (*/results.json) in {folders[0].parent / pilots}")
    return pilot_twins(folders, found)


def twins_table(twins: Sequence[PilotTwin]) -> str:
    """The twins as a markdown table, one row per planned run."""
    lines = [
        "| planned folder | run | equal to the pilot run in | moves equal |",
        "|---|---|---|---|",
    ]
    for t in twins:
        moves = f"{t.moves} of {t.of}" if t.of else "—"
        # The pilot's run name is the planned one (the usual case) or given after its folder.
        pilot = t.pilot if t.pilot_run == t.run else f"{t.pilot}/{t.pilot_run}"
        lines.append(f"| `{t.folder}` | `{t.run}` | `{pilot}` | {moves} |")
    return "\n".join(lines) + "\n"
