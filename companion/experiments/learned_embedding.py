"""A learned absolute position embedding, trained by the book, and a null for reading it.

Chapter 1 draws the embedding the way the ViT paper's Figure 7 draws its own (the cosine
similarity of each patch's embedding with every other one). Any structure read from that picture
("neighbours look alike") is a number set against a null: the same number on the *same* vectors
dealt out to the grid cells in a random order, which keeps every vector and destroys only the
layout.

The run that writes the embedding is ``companion.experiments.runs.learned_embedding``
(``python -m companion.learned_embedding``); this module only reads what it saved.
"""

from __future__ import annotations

from pathlib import Path

import torch
from torch import Tensor

from companion._checks import check_positive_int, to_pair
from companion.experiments.integrity import (
    ResultsError,
    read_manifest,
    verified_json,
    verified_tensors,
)
from companion.train.provenance import PACKAGE_DIR

RESULT_NAME = "learned-abs"
EMBEDDING_FILE = "absolute_pos_embed.pt"
PROVENANCE_FILE = "provenance.json"


def load_learned_embedding(folder: str | Path | None = None) -> tuple[Tensor, dict]:
    """The saved ``(1, h, w, D)`` embedding and its provenance record, checked against the
    folder's ``SHA256SUMS`` (``companion.experiments.integrity``).

    Without ``folder``, ``results/learned-abs`` is looked for where chapter notebooks find their
    results: the current directory, its parent (notebooks run in ``book/``), the installed
    package's ``book_results`` (a plain install, as Colab's) and beside the package (a clone).
    """
    places = (
        [Path(folder)]
        if folder is not None
        else [
            Path.cwd() / "results" / RESULT_NAME,
            Path.cwd().parent / "results" / RESULT_NAME,
            PACKAGE_DIR / "book_results" / RESULT_NAME,
            PACKAGE_DIR.parent / "results" / RESULT_NAME,
        ]
    )
    for place in places:
        if (place / EMBEDDING_FILE).is_file() and (place / PROVENANCE_FILE).is_file():
            record = verified_json(place, PROVENANCE_FILE)
            embedding = verified_tensors(place, EMBEDDING_FILE)
            recorded = record.get("embedding_sha256")  # a run from before recorded none
            if recorded is not None and recorded != read_manifest(place)[EMBEDDING_FILE]:
                raise ResultsError(f"{place / EMBEDDING_FILE} is not the one its run recorded")
            return embedding, record
    raise FileNotFoundError(
        f"folder: no {EMBEDDING_FILE} with {PROVENANCE_FILE} in any of {[str(p) for p in places]}"
    )


def grid_table(pos_embed: Tensor) -> tuple[Tensor, tuple[int, int]]:
    """``(1, h, w, D)`` (Swin's layout) -> the ``(h*w, D)`` table and ``(h, w)``."""
    if not isinstance(pos_embed, Tensor) or pos_embed.dim() != 4 or pos_embed.shape[0] != 1:
        got = tuple(pos_embed.shape) if isinstance(pos_embed, Tensor) else type(pos_embed).__name__
        raise ValueError(f"pos_embed must be a (1, h, w, D) tensor, got {got}")
    _, h, w, d = pos_embed.shape
    return pos_embed.reshape(h * w, d), (h, w)


def neighbour_pairs(grid_size: int | tuple[int, int]) -> Tensor:
    """``(N, N)`` bool: cells that touch along a row or a column (4-neighbours)."""
    h, w = to_pair("grid_size", grid_size)
    rows, cols = torch.meshgrid(torch.arange(h), torch.arange(w), indexing="ij")
    dist = (rows.reshape(-1, 1) - rows.reshape(1, -1)).abs()
    dist = dist + (cols.reshape(-1, 1) - cols.reshape(1, -1)).abs()
    return dist == 1


def same_parity_pairs(grid_size: int | tuple[int, int]) -> Tensor:
    """``(N, N)`` bool: distinct cells with the same (row mod 2, column mod 2), i.e. the same
    slot in their 2 x 2 patch-merging group."""
    h, w = to_pair("grid_size", grid_size)
    rows, cols = torch.meshgrid(torch.arange(h), torch.arange(w), indexing="ij")
    slot = (rows % 2 * 2 + cols % 2).reshape(-1)
    return (slot[:, None] == slot[None, :]) & ~torch.eye(h * w, dtype=torch.bool)


def similarity_gap(table: Tensor, related: Tensor, magnitude: bool = False) -> float:
    """Mean cosine similarity of the ``related`` pairs minus that of all pairs of distinct cells.

    ``table``: ``(N, D)``; ``related``: ``(N, N)`` bool. Positive when related cells have more
    alike embeddings than two cells picked at random; about 0 when the relation leaves no trace.
    ``magnitude=True`` compares ``|cosine|`` instead: related vectors that are parallel *or*
    anti-parallel (bright and dark spots alike in a similarity map) then count as alike.
    """
    n = table.shape[0]
    if related.shape != (n, n):
        raise ValueError(f"related must have shape ({n}, {n}), got {tuple(related.shape)}")
    unit = torch.nn.functional.normalize(table.detach().float(), dim=1)
    sim = unit @ unit.T
    if magnitude:
        sim = sim.abs()
    return float(sim[related].mean() - sim[~torch.eye(n, dtype=torch.bool)].mean())


def shuffled_null(
    table: Tensor, related: Tensor, draws: int = 1000, seed: int = 0, magnitude: bool = False
) -> Tensor:
    """``(draws,)`` values of :func:`similarity_gap` with the rows dealt to random cells.

    The same ``N`` vectors, randomly permuted over the grid: what the statistic looks like when
    the embedding carries no layout at all.
    """
    check_positive_int("draws", draws)
    gen = torch.Generator().manual_seed(seed)
    perms = (torch.randperm(table.shape[0], generator=gen) for _ in range(draws))
    return torch.tensor([similarity_gap(table[p], related, magnitude) for p in perms])


def permutation_p_value(observed: float, null: Tensor) -> float:
    """One-sided p-value ``(1 + #{null >= observed}) / (1 + draws)`` (never exactly 0)."""
    return (1 + int((null >= observed).sum())) / (1 + null.numel())
