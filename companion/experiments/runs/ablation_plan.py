"""The ablation's plan: the grid ``datasets x pos x seeds`` plus controlled-variant cells, every
run's configuration built and checked when the plan is."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import MISSING, dataclass, field, replace
from pathlib import Path
from typing import Any

from companion._checks import check_type
from companion.experiments.results import run_key
from companion.position import Position
from companion.swin_configs import canonical_variant
from companion.train import TrainConfig
from companion.train.config import (
    MAX_PROCESSES,
    check_fields,
    check_setting,
    config_fields,
    setting,
)

RESULTS_DIR = "results"  # where results/<name>/ goes
WORK_DIR = "runs/ablation"  # the runs' checkpoints and records (not committed)
#: The grid's axes: each per-run setting that takes several values, by its flag.
GRID = {f.name: f.metadata["grid"][0] for f in config_fields() if f.metadata["grid"]}
_GRID_DEFAULT = {f.name: f.metadata["grid"][1] for f in config_fields() if f.metadata["grid"]}


class StaleRunError(ValueError):
    """A saved run whose settings or code differ from the request; the message says what to do."""


@dataclass(frozen=True)
class AblationPlan:
    """The grid ``datasets x pos x seeds`` (the model of ``base.variant``), plus each ``extra``
    cell ``(dataset, pos, variant)`` for every seed of ``extra_seeds``, each run with ``base``'s
    other settings."""

    name: str = setting(MISSING, "results/<name>/ receives the results", kind="process")
    datasets: tuple[str, ...] = _GRID_DEFAULT["dataset"]
    pos: tuple[Position, ...] = _GRID_DEFAULT["pos"]  # names are read into Positions
    seeds: tuple[int, ...] = _GRID_DEFAULT["seed"]
    base: TrainConfig = field(default_factory=lambda: TrainConfig(progress=False))
    results_dir: str = setting(RESULTS_DIR, "where results/<name>/ goes", kind="process")
    work_dir: str = setting(WORK_DIR, "checkpoints and run records (not committed)", kind="process")
    jobs: int = setting(1, "runs in parallel", kind="process", low=1, high=MAX_PROCESSES)
    fresh: bool = setting(False, "discard this --name's saved runs and train anew", kind="process")
    replace_derived: bool = setting(False, "remove derived results of other runs", kind="process")
    extra: tuple[tuple[str, Position, str], ...] = ()
    #: The seeds of the ``extra`` cells (None: ``seeds``); a subset of ``seeds``, so that every
    #: variant run has its baseline run (same dataset, pos and seed) to be compared with.
    extra_seeds: tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        if not self.name or "/" in self.name or self.name.startswith("."):
            raise ValueError(f"name must be a plain folder name, got {self.name!r}")
        check_grid({"dataset": self.datasets, "pos": self.pos, "seed": self.seeds})
        for name in ("datasets", "seeds"):
            object.__setattr__(self, name, tuple(getattr(self, name)))
        object.__setattr__(self, "pos", tuple(map(Position.parse, self.pos)))
        variant = canonical_variant(self.base.variant)  # one model, one name (and one row)
        object.__setattr__(self, "base", replace(self.base, variant=variant))
        object.__setattr__(self, "extra", tuple(map(check_extra_cell, self.extra)))
        if self.extra_seeds is not None:
            seeds = tuple(self.extra_seeds)
            object.__setattr__(self, "extra_seeds", seeds)
            if not seeds or set(seeds) - set(self.seeds) or len(set(seeds)) < len(seeds):
                raise ValueError(
                    f"extra_seeds must be distinct values of seeds {list(self.seeds)} (each "
                    f"variant run needs its baseline run), got {list(seeds)}"
                )
        cells = [(d, p, variant) for d in self.datasets for p in self.pos]
        for cell in self.extra:
            if cell in cells:
                raise ValueError(f"extra: cell {':'.join(map(str, cell))} is already in the plan")
            cells.append(cell)
        check_fields(self)
        for dataset, pos, variant in cells:  # each cell's settings together, as its runs get them
            try:
                replace(self.base, dataset=dataset, pos=pos, variant=variant)
            except (TypeError, ValueError) as exc:
                raise type(exc)(f"cell {dataset}:{pos}:{variant}: {exc}") from None

    @property
    def folder(self) -> Path:
        return Path(self.results_dir) / self.name

    @property
    def work(self) -> Path:
        return Path(self.work_dir) / self.name

    def runs(self) -> list[tuple[str, Position, str, int]]:
        """Every ``(dataset, pos, variant, seed)``, seed-major: the first seed's cells all come
        first, so an early look (or an interrupted ablation) already compares every cell."""
        extra_seeds = self.seeds if self.extra_seeds is None else self.extra_seeds
        main = [(d, p, self.base.variant) for d in self.datasets for p in self.pos]
        return [
            (d, p, v, s)
            for s in self.seeds
            for d, p, v in main + [c for c in self.extra if s in extra_seeds]
        ]

    def config(self, dataset: str, pos: Position, seed: int, variant: str = "swin") -> TrainConfig:
        out = str(self.work / run_key(dataset, pos, seed, variant))
        cell = replace(self.base, dataset=dataset, pos=pos, variant=variant, seed=seed)
        return replace(cell, out=out, progress=False)


def check_grid(grid: Mapping[str, Sequence[Any]]) -> None:
    """Check the grid's axes (``{"dataset": ..., "pos": ..., "seed": ...}``) by their flags."""
    for axis, values in grid.items():
        repeated = sorted({v for v in values if list(values).count(v) > 1}, key=str)
        if repeated:
            raise ValueError(
                f"{GRID[axis]}: {', '.join(map(str, repeated))} given more than once "
                f"(each value counts once: a repeat would inflate n)"
            )
        for value in values:
            try:
                check_setting(axis, value)
            except (TypeError, ValueError) as exc:
                raise type(exc)(f"{GRID[axis]}: {exc}") from None


def check_extra_cell(cell: Sequence[Any]) -> tuple[str, Position, str]:
    """Check an extra cell ``(dataset, pos, variant)``: a controlled variant, not ``"swin"``."""
    check_type("extra: a cell", cell, (tuple, list), "a (dataset, pos, variant) tuple")
    if len(cell) != 3:
        got = ":".join(map(str, cell))
        raise ValueError(f"extra: a cell is dataset:pos:variant (grid-cell:rel:torus), got {got!r}")
    dataset, pos, variant = cell
    try:  # the dataset is checked with the cell's configuration (AblationPlan)
        pos = Position.parse(pos)
        variant = canonical_variant(variant)  # torus+torus and torus are one model, one cell
        if variant == "swin":
            raise ValueError("variant 'swin' is the main grid's (--datasets, --pos)")
    except (TypeError, ValueError) as exc:
        raise type(exc)(f"extra cell {dataset}:{pos}:{variant}: {exc}") from None
    return dataset, pos, variant
