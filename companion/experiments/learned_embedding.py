"""The layout of a learned absolute position embedding, read against a null (chapters 1, 4).

Chapter 1 draws each embedding as the ViT paper's Figure 7 does (the cosine similarity of each
patch's embedding with every other one). Any structure read from that picture ("neighbours look
alike") is a number set against a null: the same number on the *same* vectors dealt out to the
grid cells in a random order, which keeps every vector and destroys only the layout.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, get_args

import torch
import torch.nn.functional as F
from torch import Tensor

from companion._checks import check_choice, check_positive_int, to_pair
from companion.data.tasks import CELL, PATCH
from companion.experiments.stats import format_p
from companion.relative import flatten_coordinates, grid_coordinates

#: ``grid-cell``'s cells in patches of the small models (8-px cells, 4-px patches): 2 x 2 patches,
#: the same blocks as the Swin's patch-merging groups.
TASK_CELL = CELL // PATCH

Alternative = Literal["two-sided", "greater", "less"]
ALTERNATIVES: tuple[Alternative, ...] = get_args(Alternative)
Grid = tuple[int, int]


def _not_a(name: str, value: object, expected: str) -> ValueError:
    got = tuple(value.shape) if isinstance(value, Tensor) else type(value).__name__
    return ValueError(f"{name} must be {expected}, got {got}")


def _cells(grid_size: int | Grid) -> Tensor:
    """``(2, N)``: the row and the column of each cell, row-major."""
    return flatten_coordinates(grid_coordinates(to_pair("grid_size", grid_size)))


def _alike(key: Tensor) -> Tensor:
    return (key[:, None] == key[None]) & ~torch.eye(len(key), dtype=torch.bool)


def grid_table(pos_embed: Tensor) -> tuple[Tensor, Grid]:
    """``(1, h, w, D)`` (Swin's layout) -> the ``(h*w, D)`` table and ``(h, w)``."""
    if not isinstance(pos_embed, Tensor) or pos_embed.dim() != 4 or pos_embed.shape[0] != 1:
        raise _not_a("pos_embed", pos_embed, "a (1, h, w, D) tensor")
    _, h, w, d = pos_embed.shape
    return pos_embed.reshape(h * w, d), (h, w)


def neighbour_pairs(grid_size: int | Grid) -> Tensor:
    """``(N, N)`` bool: cells that touch along a row or a column (4-neighbours)."""
    rows, cols = _cells(grid_size)
    return (rows[:, None] - rows[None]).abs() + (cols[:, None] - cols[None]).abs() == 1


def same_parity_pairs(grid_size: int | Grid) -> Tensor:
    """``(N, N)`` bool: distinct cells in the same slot of their 2 x 2 patch-merging group."""
    rows, cols = _cells(grid_size)
    return _alike(rows % 2 * 2 + cols % 2)


def _same_cell_pairs(grid: Grid) -> Tensor:
    """Distinct cells in one ``TASK_CELL`` block (one ``grid-cell`` label, one merging group)."""
    rows, cols = _cells(grid)
    return _alike(rows // TASK_CELL * grid[1] + cols // TASK_CELL)


def cosine_matrix(table: Tensor) -> Tensor:
    """``(N, D)`` -> ``(N, N)``: the cosine similarity of every row with every row."""
    if not isinstance(table, Tensor) or table.dim() != 2:
        raise _not_a("table", table, "an (N, D) tensor")
    unit = F.normalize(table.detach().float(), dim=1)
    return unit @ unit.T


def _pair_gap(sim: Tensor, related: Tensor) -> float:
    n = sim.shape[0]
    if related.shape != (n, n):
        raise ValueError(f"related must have shape ({n}, {n}), got {tuple(related.shape)}")
    return float(sim[related].mean() - sim[~torch.eye(n, dtype=torch.bool)].mean())


def similarity_gap(table: Tensor, related: Tensor) -> float:
    """Mean cosine similarity of the ``related`` pairs of ``table``'s rows minus that of all pairs
    of distinct rows: exactly 0 in expectation under the shuffle null, which sends each related
    pair to a pair of distinct cells drawn uniformly."""
    return _pair_gap(cosine_matrix(table), related)


def _shuffles(n: int, draws: int, seed: int) -> list[Tensor]:
    check_positive_int("draws", draws)
    gen = torch.Generator().manual_seed(seed)
    return [torch.randperm(n, generator=gen) for _ in range(draws)]


def shuffled_null(table: Tensor, related: Tensor, draws: int = 1000, seed: int = 0) -> Tensor:
    """``(draws,)`` values of :func:`similarity_gap` with the rows dealt to random cells."""
    perms = _shuffles(table.shape[0], draws, seed)
    return torch.tensor([similarity_gap(table[p], related) for p in perms])


def permutation_p_value(
    observed: float, null: Tensor, alternative: Alternative = "two-sided"
) -> float:
    """``(k + 1) / (B + 1)``, ``k`` of the ``B`` null draws at least as extreme as ``observed``:
    ``|draw - m| >= |observed - m|`` with ``m`` the draws' mean (``"two-sided"``, for a direction
    not fixed before the statistic was seen), ``draw >= observed`` (``"greater"``) or
    ``draw <= observed`` (``"less"``). Counting ``observed`` as a draw keeps p valid, never 0."""
    check_choice("alternative", alternative, ALTERNATIVES)
    if not isinstance(null, Tensor) or null.dim() != 1 or null.numel() == 0:
        raise _not_a("null", null, "a non-empty 1-D tensor of draws")
    if alternative == "greater":
        k = int((null >= observed).sum())
    elif alternative == "less":
        k = int((null <= observed).sum())
    else:
        m = float(null.mean())
        k = int(((null - m).abs() >= abs(observed - m)).sum())
    return (1 + k) / (1 + null.numel())


# Each layout statistic takes the (N, N) cosine similarities of an (h, w) grid's rows (row-major).
def _neighbour_gap(sim: Tensor, grid: Grid) -> float:
    return _pair_gap(sim, neighbour_pairs(grid))


def _distance_correlation(sim: Tensor, grid: Grid) -> float:
    """Pearson correlation, over pairs of distinct cells, of similarity and Euclidean distance."""
    rows, cols = _cells(grid)
    dist = torch.hypot((rows[:, None] - rows[None]).float(), (cols[:, None] - cols[None]).float())
    upper = torch.triu(torch.ones_like(sim, dtype=torch.bool), diagonal=1)
    x, y = sim[upper] - sim[upper].mean(), dist[upper] - dist[upper].mean()
    return float((x * y).sum() / (x.norm() * y.norm()))


def _nearest_neighbour_rate(sim: Tensor, grid: Grid) -> float:
    """Share of cells whose most similar other cell is a 4-neighbour (chance on 8 x 8: 0.056)."""
    others = sim.masked_fill(torch.eye(sim.shape[0], dtype=torch.bool), float("-inf"))
    nearest = others.argmax(dim=1)
    return float(neighbour_pairs(grid)[torch.arange(sim.shape[0]), nearest].float().mean())


def _cell_gap(sim: Tensor, grid: Grid) -> float:
    """Among 4-neighbours: mean similarity inside one ``TASK_CELL`` block minus across a border."""
    near, same = neighbour_pairs(grid), _same_cell_pairs(grid)
    return float(sim[near & same].mean() - sim[near & ~same].mean())


def _axis_gap(sim: Tensor, grid: Grid) -> float:
    """Among pairs in different ``TASK_CELL`` blocks: mean similarity of those sharing a row or a
    column minus those sharing neither, at the same ``|dr| + |dc|`` (a pair in one row is farther
    apart than a diagonal pair, so a similarity that only falls with Euclidean distance gives a
    negative gap), averaged over the distances weighted by their row-or-column pairs."""
    rows, cols = _cells(grid)
    dr, dc = (rows[:, None] - rows[None]).abs(), (cols[:, None] - cols[None]).abs()
    apart = ~_same_cell_pairs(grid) & ~torch.eye(sim.shape[0], dtype=torch.bool)
    axis = (dr == 0) | (dc == 0)
    total, weight = 0.0, 0
    for d in range(1, grid[0] + grid[1] - 1):
        on, off = apart & axis & (dr + dc == d), apart & ~axis & (dr + dc == d)
        if on.any() and off.any():
            n = int(on.sum())
            total += n * float(sim[on].mean() - sim[off].mean())
            weight += n
    return total / weight if weight else 0.0


def _merge_slot_gap(sim: Tensor, grid: Grid) -> float:
    """The gap of ``|cos|`` over :func:`same_parity_pairs`: alike up to sign (the Swin's code)."""
    return _pair_gap(sim.abs(), same_parity_pairs(grid))


#: The layout statistics by name (what ``predictions.md`` names).
POSITION_STATISTICS: dict[str, Callable[[Tensor, Grid], float]] = {
    "neighbour_gap": _neighbour_gap,
    "distance_correlation": _distance_correlation,
    "nearest_neighbour_rate": _nearest_neighbour_rate,
    "cell_gap": _cell_gap,
    "axis_gap": _axis_gap,
    "merge_slot_gap": _merge_slot_gap,
}


@dataclass(frozen=True)
class PermutationTest:
    """A layout statistic, its ``(B,)`` values on random layouts of the same vectors, and p."""

    statistic: str
    observed: float
    null: Tensor
    alternative: Alternative
    p_value: float

    @property
    def quantiles(self) -> dict[float, float]:
        """``{q: the null's q-quantile}`` at the 2.5, 50 and 97.5 % the book prints."""
        levels = (0.025, 0.5, 0.975)
        values = torch.quantile(self.null.double(), torch.tensor(levels).double())
        return {q: float(v) for q, v in zip(levels, values, strict=True)}

    def p_text(self, name: str = "p") -> str:
        """``"p = 0.77"``, or ``"p < 0.001"`` at the floor ``1 / (B + 1)`` no shuffle reached."""
        return format_p(self.p_value, 1 / (self.null.numel() + 1), name).strip()

    def line(self) -> str:
        """One printed line: observed, the null's 2.5 / 50 / 97.5 % quantiles, p."""
        q = self.quantiles
        return (
            f"{self.statistic:22} observed {self.observed:+.3f}   null [2.5%, 50%, 97.5%] = "
            f"[{q[0.025]:+.3f}, {q[0.5]:+.3f}, {q[0.975]:+.3f}]   {self.p_text()} "
            f"({self.alternative}, {self.null.numel()} shuffles)"
        )


def permutation_test(
    table: Tensor,
    grid_size: int | Grid,
    statistic: str,
    draws: int = 1000,
    seed: int = 0,
    alternative: Alternative = "two-sided",
) -> PermutationTest:
    """``statistic`` of the ``(N, D)`` ``table`` on its grid against ``draws`` seeded shuffles."""
    grid = to_pair("grid_size", grid_size)
    measure = POSITION_STATISTICS[check_choice("statistic", statistic, list(POSITION_STATISTICS))]
    check_choice("alternative", alternative, ALTERNATIVES)
    sim = cosine_matrix(table)
    if sim.shape[0] != grid[0] * grid[1]:
        raise ValueError(
            f"table must have h * w = {grid[0] * grid[1]} rows for grid_size={grid}, "
            f"got {sim.shape[0]}"
        )
    observed = measure(sim, grid)
    perms = _shuffles(grid[0] * grid[1], draws, seed)
    null = torch.tensor([measure(sim[p][:, p], grid) for p in perms], dtype=torch.float64)
    return PermutationTest(
        statistic, observed, null, alternative, permutation_p_value(observed, null, alternative)
    )
