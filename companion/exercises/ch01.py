"""Solutions to the exercises of chapter 1, *Absolute position embedding*."""

from __future__ import annotations

import itertools

import torch
from torch import Tensor

from companion._checks import check_positive_int, to_pair
from companion.absolute import (
    ClassTokenPositionEmbedding,
    resample_position_embedding,
    sincos_2d_position_embedding,
)

#: The values each exercise's solution prints as its answer, ``{exercise: (value, ...)}``: a
#: number (matched by value) or a literal. Nothing a reader meets before the exercise prints or
#: states them (tests/test_exercise_answers.py); an empty tuple is a question whose answer is no
#: value a reader could meet before (a yes or no, a picture, a quantity the exercise names).
ANSWERS: dict[int, tuple[str, ...]] = {
    1: ("151,296", "443,136"),  # ViT-B/16's position values at 224 and 384 px
    2: ("(1, 577, 768)",),
    3: ("152064 -> 151296",),  # D = 768 fewer, stated by the exercise itself
    4: (),  # yes: the spread is float32 rounding
    5: ("0.9864",),
}


def vit_position_embedding_params(
    img_size: int | tuple[int, int],
    patch_size: int | tuple[int, int],
    embed_dim: int,
    class_token_slot: bool = True,
) -> int:
    """Exercise 1: number of learned values in a ViT's position embedding.

    ``(1 + N) * D`` with a class-token slot (ViT, ``"concat-then-add"``), ``N * D`` without,
    where ``N = (H / ph) * (W / pw)``. ViT-B/16 (``D = 768``): 151,296 at 224 px and 443,136 at
    384 px.
    """
    h, w = to_pair("img_size", img_size)
    ph, pw = to_pair("patch_size", patch_size)
    check_positive_int("embed_dim", embed_dim)
    if h % ph or w % pw:
        raise ValueError(
            f"img_size must be a multiple of patch_size, got img_size={(h, w)}, "
            f"patch_size={(ph, pw)}"
        )
    num_patches = (h // ph) * (w // pw)
    return (int(class_token_slot) + num_patches) * embed_dim


def resample_vit_position_embedding(
    pos_embed: Tensor,
    patch_size: int | tuple[int, int],
    old_img_size: int | tuple[int, int],
    new_img_size: int | tuple[int, int],
    num_prefix_tokens: int = 1,
) -> Tensor:
    """Exercise 2: adapt a ViT's ``(1, P + N, D)`` embedding from one image size to another.

    The grids are the image sizes divided by the patch size; e.g. ViT-B/16 from 224 px (14 x 14)
    to 384 px (24 x 24) turns ``(1, 197, 768)`` into ``(1, 577, 768)``.
    """
    ph, pw = to_pair("patch_size", patch_size)
    oh, ow = to_pair("old_img_size", old_img_size)
    nh, nw = to_pair("new_img_size", new_img_size)
    for name, (h, w) in (("old_img_size", (oh, ow)), ("new_img_size", (nh, nw))):
        if h % ph or w % pw:
            raise ValueError(
                f"{name} must be a multiple of patch_size={(ph, pw)}, got {name}={(h, w)}"
            )
    return resample_position_embedding(
        pos_embed, (oh // ph, ow // pw), (nh // ph, nw // pw), num_prefix_tokens
    )


def fold_class_token_slot(module: ClassTokenPositionEmbedding) -> ClassTokenPositionEmbedding:
    """Exercise 3: an ``"add-then-concat"`` module computing exactly what ``module`` computes.

    In ``"concat-then-add"`` the class token always receives ``pos_embed[:, 0]``; adding that
    slot into the class token once, and keeping the patch rows, gives the same outputs with
    ``D`` fewer parameters.
    """
    if module.order != "concat-then-add":
        raise ValueError(f"module.order must be 'concat-then-add', got {module.order!r}")
    folded = ClassTokenPositionEmbedding(module.num_patches, module.dim, order="add-then-concat")
    with torch.no_grad():
        folded.cls_token.copy_(module.cls_token + module.pos_embed[:, :1])
        folded.pos_embed.copy_(module.pos_embed[:, 1:])
    return folded


def sincos_dot_product_spread(grid_size: int | tuple[int, int], dim: int) -> float:
    """Exercise 4: do two sin-cos embeddings' dot product depend only on the cells' offset?

    Groups all pairs of cells by their offset ``(dr, dc)`` and returns the largest spread
    ``max - min`` of the dot products within one group. It is 0 up to float32 rounding,
    because ``sin(a) sin(b) + cos(a) cos(b) = cos(a - b)``: the fixed embedding already carries
    *relative* position in its dot products.
    """
    h, w = to_pair("grid_size", grid_size)
    table = sincos_2d_position_embedding((h, w), dim).double()
    dots = table @ table.T  # (N, N)
    by_offset: dict[tuple[int, int], list[float]] = {}
    for i, j in itertools.product(range(h * w), repeat=2):
        offset = (i // w - j // w, i % w - j % w)
        by_offset.setdefault(offset, []).append(dots[i, j].item())
    return max(max(values) - min(values) for values in by_offset.values())


def sincos_neighbour_similarities(
    grid_size: int | tuple[int, int], dim: int
) -> tuple[float, float]:
    """Exercise 5 (predict, then check): cosine similarity of cell ``(0, 0)``'s 2-D sin-cos
    vector with its right neighbour ``(0, 1)`` and with the cell below, ``(1, 0)``.

    Rows and columns get the same frequencies in channel blocks of equal size, so a step along a
    row and a step along a column change the vector by the same amount: the two are equal.
    """
    h, w = to_pair("grid_size", grid_size)
    if h < 2 or w < 2:
        raise ValueError(f"grid_size must be at least 2 x 2 to have both neighbours, got {(h, w)}")
    unit = torch.nn.functional.normalize(sincos_2d_position_embedding((h, w), dim), dim=1)
    return float(unit[0] @ unit[1]), float(unit[0] @ unit[w])
