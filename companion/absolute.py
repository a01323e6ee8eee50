"""ViT's absolute position embedding: patchify, add a learned vector per position, resample.

A ViT cuts the image into an ``h x w`` grid of patches, turns each patch into a ``D``-dimensional
token (``PatchEmbed``) and adds to token ``i`` a learned vector ``pos[i]`` that belongs to grid
cell ``i`` and nothing else (``AbsolutePositionEmbedding``). Attention itself ignores order, so
this addition is the only place where the network learns where a patch was.

The class token gets a position slot in ViT (``order="concat-then-add"``) but none in DeiT-III
(``order="add-then-concat"``), see ``ClassTokenPositionEmbedding``. The fixed 2-D sin-cos
embedding (``sincos_2d_position_embedding``) is the parameter-free alternative, and
``resample_position_embedding`` adapts a learned embedding to a new grid (a new image size).
"""

from __future__ import annotations

from typing import Literal, get_args

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from companion._checks import check_choice, check_grid_embedding, check_positive_int, to_pair
from companion.layers import trunc_normal_

Size = int | tuple[int, int]
ClassTokenOrder = Literal["concat-then-add", "add-then-concat"]
CLASS_TOKEN_ORDERS: tuple[ClassTokenOrder, ...] = get_args(ClassTokenOrder)

#: Standard deviation of every learned embedding at initialisation (ViT, DeiT and Swin use it).
EMBED_INIT_STD = 0.02


def init_embedding_(param: Tensor, std: float = EMBED_INIT_STD) -> Tensor:
    """Fill ``param`` in place with ``trunc_normal_(std=std)``, timm's convention (its ViT, DeiT
    and Swin; the official Swin code imports it). The original JAX ViT draws a plain normal,
    ``nn.initializers.normal(stddev=0.02)``: at this ``std`` the two are the same in practice.

    ``trunc_normal_`` is ``companion.layers``'s (torch 2.14's algorithm under any torch
    version). Its default bounds ``a=-2, b=2`` are absolute values, far outside ``std=0.02``'s
    range.
    """
    return trunc_normal_(param, std=std)


def _check_grid_multiple(
    img_size: tuple[int, int], patch_size: tuple[int, int], name: str = "img_size"
) -> None:
    if img_size[0] % patch_size[0] or img_size[1] % patch_size[1]:
        raise ValueError(
            f"{name} must be a multiple of patch_size in both directions, got "
            f"{name}={img_size} and patch_size={patch_size}"
        )


def patchify(images: Tensor, patch_size: Size) -> Tensor:
    """Cut images into non-overlapping patches and flatten each one (no learned weights).

    ``(B, C, H, W)`` -> ``(B, N, C * ph * pw)`` with ``N = (H / ph) * (W / pw)``, patches in
    row-major order and each patch flattened channel-first (``c, i, j``), which is the order of
    ``Conv2d.weight.flatten(1)``: so ``PatchEmbed`` equals ``patchify(x) @ W.T + b``.
    """
    ph, pw = to_pair("patch_size", patch_size)
    if images.dim() != 4:
        raise ValueError(f"images must have shape (B, C, H, W), got {tuple(images.shape)}")
    b, c, height, width = images.shape
    _check_grid_multiple((height, width), (ph, pw), name="image size (H, W)")
    h, w = height // ph, width // pw
    patches = images.reshape(b, c, h, ph, w, pw).permute(0, 2, 4, 1, 3, 5)
    return patches.reshape(b, h * w, c * ph * pw)


def unpatchify(patches: Tensor, grid_size: Size, patch_size: Size) -> Tensor:
    """Inverse of ``patchify``: ``(B, N, C * ph * pw)`` -> ``(B, C, h * ph, w * pw)``."""
    h, w = to_pair("grid_size", grid_size)
    ph, pw = to_pair("patch_size", patch_size)
    if patches.dim() != 3 or patches.shape[1] != h * w or patches.shape[2] % (ph * pw):
        raise ValueError(
            f"patches must have shape (B, N={h * w}, C*{ph}*{pw}) for grid_size={(h, w)} and "
            f"patch_size={(ph, pw)}, got {tuple(patches.shape)}"
        )
    b, c = patches.shape[0], patches.shape[2] // (ph * pw)
    images = patches.reshape(b, h, w, c, ph, pw).permute(0, 3, 1, 4, 2, 5)
    return images.reshape(b, c, h * ph, w * pw)


def flatten_patch_grid(grid: Tensor) -> Tensor:
    """``(B, D, h, w)`` -> ``(B, N, D)``: the conv's feature map as ``N = h*w`` tokens.

    ``flatten(2)`` gives ``(B, D, N)`` with cell ``(r, c)`` at position ``r * w + c``
    (row-major); the transpose puts channels last, the layout attention expects.
    """
    if grid.dim() != 4:
        raise ValueError(f"grid must have shape (B, D, h, w), got {tuple(grid.shape)}")
    return grid.flatten(2).transpose(1, 2)


class PatchEmbed(nn.Module):
    """Split an image into patches and project each one to ``embed_dim`` channels.

    A ``Conv2d`` whose kernel and stride both equal the patch size sees every pixel exactly once
    and each patch on its own: it is one linear map applied to every flattened patch.

    Args:
        img_size: ``S`` or ``(H, W)``: the image size this module accepts.
        patch_size: ``P`` or ``(ph, pw)``; must divide ``img_size`` in both directions.
        in_chans: image channels ``C``.
        embed_dim: token channels ``D``.

    Attributes:
        grid_size: ``(h, w) = (H / ph, W / pw)``, patches per column and per row.
        num_patches: ``N = h * w``.
    """

    def __init__(
        self, img_size: Size, patch_size: Size, in_chans: int = 3, embed_dim: int = 768
    ) -> None:
        super().__init__()
        self.img_size = to_pair("img_size", img_size)
        self.patch_size = to_pair("patch_size", patch_size)
        self.in_chans = check_positive_int("in_chans", in_chans)
        self.embed_dim = check_positive_int("embed_dim", embed_dim)
        _check_grid_multiple(self.img_size, self.patch_size)
        self.grid_size = (
            self.img_size[0] // self.patch_size[0],
            self.img_size[1] // self.patch_size[1],
        )
        self.num_patches = self.grid_size[0] * self.grid_size[1]
        self.proj = nn.Conv2d(
            in_chans, embed_dim, kernel_size=self.patch_size, stride=self.patch_size
        )

    def project(self, x: Tensor) -> Tensor:
        """``(B, C, H, W)`` -> the grid of patch vectors ``(B, D, h, w)``; ``(H, W)`` must equal
        ``img_size``."""
        if x.dim() != 4 or x.shape[1] != self.in_chans:
            raise ValueError(
                f"x must have shape (B, in_chans={self.in_chans}, H, W), got {tuple(x.shape)}"
            )
        if tuple(x.shape[2:]) != self.img_size:
            # A conv would happily take other sizes, but the position embedding that follows has
            # exactly num_patches rows: fail here, where the cause is visible.
            raise ValueError(
                f"x has image size {tuple(x.shape[2:])}, but this PatchEmbed was built for "
                f"img_size={self.img_size} with patch_size={self.patch_size}; for another size "
                f"build PatchEmbed with that img_size (a multiple of patch_size) and resample the "
                f"position embedding with resample_position_embedding"
            )
        return self.proj(x)

    def forward(self, x: Tensor) -> Tensor:
        """``(B, C, H, W)`` -> ``(B, N, D)``: the grid flattened into a token sequence."""
        return flatten_patch_grid(self.project(x))

    def extra_repr(self) -> str:
        return (
            f"img_size={self.img_size}, patch_size={self.patch_size}, "
            f"grid_size={self.grid_size}, num_patches={self.num_patches}"
        )


def add_position_embedding(x: Tensor, pos_embed: Tensor) -> Tensor:
    """``x`` ``(B, L, D)`` + ``pos_embed`` ``(1, L, D)`` -> ``(B, L, D)``.

    Broadcasting repeats the single ``(L, D)`` table over the batch: every image gets the same
    vector at the same position, which is what makes the embedding *absolute*.
    """
    if pos_embed.dim() != 3 or pos_embed.shape[0] != 1:
        raise ValueError(f"pos_embed must have shape (1, L, D), got {tuple(pos_embed.shape)}")
    if x.dim() != 3 or x.shape[1:] != pos_embed.shape[1:]:
        raise ValueError(
            f"x must have shape (B, L={pos_embed.shape[1]}, D={pos_embed.shape[2]}) to match "
            f"pos_embed {tuple(pos_embed.shape)}, got {tuple(x.shape)}"
        )
    return x + pos_embed


class AbsolutePositionEmbedding(nn.Module):
    """One learned ``D``-vector per token position, added to the tokens.

    Args:
        num_patches: ``N``, the number of positions (``h * w`` for a grid of patches).
        dim: ``D``, channels per token.
        grid_size: ``(h, w)`` to keep the embedding as a grid ``(1, h, w, D)`` and add it to
            tokens kept as a map ``(B, h, w, D)`` (the Swin's layout, timm's too); ``None``: a
            sequence ``(1, N, D)`` added to ``(B, N, D)`` (the ViT's).

    Attributes:
        pos_embed: parameter ``(1, N, D)`` (or ``(1, h, w, D)``), initialised with
            ``trunc_normal_(std=0.02)``. The leading 1 is the batch axis it is broadcast over.
    """

    def __init__(self, num_patches: int, dim: int, grid_size: Size | None = None) -> None:
        super().__init__()
        self.num_patches = check_positive_int("num_patches", num_patches)
        self.dim = check_positive_int("dim", dim)
        self.grid_size = None if grid_size is None else to_pair("grid_size", grid_size)
        if self.grid_size is not None and self.grid_size[0] * self.grid_size[1] != num_patches:
            raise ValueError(
                f"grid_size must hold num_patches={num_patches} cells, got {self.grid_size}"
            )
        positions = (num_patches,) if self.grid_size is None else self.grid_size
        self.pos_embed = nn.Parameter(torch.zeros(1, *positions, dim))
        init_embedding_(self.pos_embed)

    def forward(self, x: Tensor) -> Tensor:
        """``(B, N, D)`` -> ``(B, N, D)``: ``x + pos_embed`` (a map ``(B, h, w, D)`` on a grid)."""
        if self.grid_size is None:
            return add_position_embedding(x, self.pos_embed)
        if x.shape[1:] != self.pos_embed.shape[1:]:
            raise ValueError(
                f"x must have shape (B, {', '.join(map(str, self.pos_embed.shape[1:]))}) to match "
                f"pos_embed {tuple(self.pos_embed.shape)}, got {tuple(x.shape)}"
            )
        return x + self.pos_embed

    def resize(self, grid_size: Size) -> None:
        """Resample a grid embedding to another ``(h', w')`` (bicubic,
        ``resample_position_embedding``); a model moved to larger images keeps its weights."""
        if self.grid_size is None:
            raise ValueError("resize needs an embedding built with a grid_size")
        grid = to_pair("grid_size", grid_size)
        if grid == self.grid_size:
            return
        old = self.pos_embed
        flat = old.detach().flatten(1, 2)  # (1, h*w, D)
        resized = resample_position_embedding(flat, self.grid_size, grid).view(1, *grid, -1)
        self.pos_embed = nn.Parameter(resized, requires_grad=old.requires_grad)
        self.grid_size, self.num_patches = grid, grid[0] * grid[1]

    def extra_repr(self) -> str:
        grid = "" if self.grid_size is None else f", grid_size={self.grid_size}"
        return f"num_patches={self.num_patches}, dim={self.dim}{grid}"


def prepend_class_token(x: Tensor, cls_token: Tensor) -> Tensor:
    """``x`` ``(B, N, D)`` and ``cls_token`` ``(1, 1, D)`` -> ``(B, 1 + N, D)``, class token first.

    ``expand`` makes a view of the one learned token for each image (no copy before ``cat``).
    """
    if cls_token.dim() != 3 or cls_token.shape[:2] != (1, 1):
        raise ValueError(f"cls_token must have shape (1, 1, D), got {tuple(cls_token.shape)}")
    if x.dim() != 3 or x.shape[2] != cls_token.shape[2]:
        raise ValueError(
            f"x must have shape (B, N, D={cls_token.shape[2]}) to match cls_token, "
            f"got {tuple(x.shape)}"
        )
    return torch.cat((cls_token.expand(x.shape[0], -1, -1), x), dim=1)


class ClassTokenPositionEmbedding(nn.Module):
    """Prepend a learned class token and add the position embedding, in either order.

    - ``"concat-then-add"`` (ViT): prepend the class token, then add a ``(1, 1 + N, D)``
      embedding, so the class token has a position slot of its own.
    - ``"add-then-concat"`` (DeiT-III; timm's ``no_embed_class=True``): add a ``(1, N, D)``
      embedding to the patches only, then prepend the class token, which gets no position.

    Both give the same family of functions: in the first order the class token always receives
    the same ``pos_embed[:, 0]``, which a learned ``cls_token`` could absorb. The difference is
    bookkeeping: with no slot for the class token, ``pos_embed`` is exactly the patch grid,
    which is simpler to resample.

    Args:
        num_patches: ``N``.
        dim: ``D``.
        order: ``"concat-then-add"`` or ``"add-then-concat"``.

    Attributes:
        cls_token: parameter ``(1, 1, D)``.
        pos_embed: parameter ``(1, 1 + N, D)`` or ``(1, N, D)``.
        embedded_prefix_tokens: rows of ``pos_embed`` before the patch grid (1 or 0); pass it
            as ``num_prefix_tokens`` to ``resample_position_embedding``.
    """

    def __init__(
        self, num_patches: int, dim: int, order: ClassTokenOrder = "concat-then-add"
    ) -> None:
        super().__init__()
        self.num_patches = check_positive_int("num_patches", num_patches)
        self.dim = check_positive_int("dim", dim)
        self.order: ClassTokenOrder = check_choice("order", order, CLASS_TOKEN_ORDERS)
        self.embedded_prefix_tokens = 1 if order == "concat-then-add" else 0
        self.cls_token = nn.Parameter(torch.zeros(1, 1, dim))
        self.pos_embed = nn.Parameter(
            torch.zeros(1, self.embedded_prefix_tokens + num_patches, dim)
        )
        # DeiT's choice: the same small random start for both (the original ViT used zeros
        # for the class token; either trains).
        init_embedding_(self.cls_token)
        init_embedding_(self.pos_embed)

    def forward(self, x: Tensor) -> Tensor:
        """Patch tokens ``(B, N, D)`` -> ``(B, 1 + N, D)``, class token first."""
        if x.dim() != 3 or x.shape[1:] != (self.num_patches, self.dim):
            raise ValueError(
                f"x must have shape (B, N={self.num_patches}, D={self.dim}), got {tuple(x.shape)}"
            )
        if self.order == "concat-then-add":
            return add_position_embedding(prepend_class_token(x, self.cls_token), self.pos_embed)
        return prepend_class_token(add_position_embedding(x, self.pos_embed), self.cls_token)

    def extra_repr(self) -> str:
        return f"num_patches={self.num_patches}, dim={self.dim}, order={self.order!r}"


def sincos_2d_position_embedding(grid_size: Size, dim: int, temperature: float = 10000.0) -> Tensor:
    """The fixed 2-D sin-cos embedding: ``(N, D)`` for an ``h x w`` grid, row-major like patches.

    With ``F = D / 4`` frequencies ``omega_k = temperature ** (-k / F)``, ``k = 0 .. F-1``, the
    cell at row ``r`` and column ``c`` gets

        [sin(r * omega), cos(r * omega), sin(c * omega), cos(c * omega)]

    so the first half of the channels encodes the row and the second half the column. Because
    ``sin(a) sin(b) + cos(a) cos(b) = cos(a - b)``, the dot product of two cells depends only on
    their offset ``(dr, dc)``. ``dim`` must be divisible by 4.
    """
    h, w = to_pair("grid_size", grid_size)
    check_positive_int("dim", dim)
    if dim % 4:
        raise ValueError(
            f"dim must be divisible by 4 (sin and cos, for rows and for columns), got dim={dim}"
        )
    if not isinstance(temperature, int | float) or isinstance(temperature, bool):
        raise TypeError(f"temperature must be a number > 0, got {temperature!r}")
    if temperature <= 0:
        raise ValueError(f"temperature must be a number > 0, got {temperature!r}")
    num_freqs = dim // 4
    omega = temperature ** (-torch.arange(num_freqs, dtype=torch.float64) / num_freqs)
    rows, cols = torch.meshgrid(
        torch.arange(h, dtype=torch.float64), torch.arange(w, dtype=torch.float64), indexing="ij"
    )
    # Angles in float64: at large positions and high frequencies float32 loses digits.
    row_angles = rows.reshape(-1, 1) * omega  # (N, F)
    col_angles = cols.reshape(-1, 1) * omega
    parts = (row_angles.sin(), row_angles.cos(), col_angles.sin(), col_angles.cos())
    return torch.cat(parts, dim=1).float()


def cosine_similarity_map(pos_embed: Tensor, grid_size: Size) -> Tensor:
    """Cosine similarity of every position's embedding with every other one, on the grid.

    ``pos_embed``: ``(N, D)`` or ``(1, N, D)`` patch rows only (drop class-token rows first).
    Returns ``(h, w, h, w)``: entry ``[r, c]`` is the ``h x w`` map of how similar cell
    ``(r, c)`` is to each cell.
    """
    h, w = to_pair("grid_size", grid_size)
    table = pos_embed[0] if pos_embed.dim() == 3 and pos_embed.shape[0] == 1 else pos_embed
    if table.dim() != 2 or table.shape[0] != h * w:
        raise ValueError(
            f"pos_embed must have shape (N, D) or (1, N, D) with N = {h}*{w} = {h * w} for "
            f"grid_size={(h, w)}, got {tuple(pos_embed.shape)}"
        )
    unit = F.normalize(table.detach().float(), dim=1)
    return (unit @ unit.T).reshape(h, w, h, w)


def resample_position_embedding(
    pos_embed: Tensor, old_grid: Size, new_grid: Size, num_prefix_tokens: int = 0
) -> Tensor:
    """Resize a learned ``(1, P + h*w, D)`` embedding to ``(1, P + h'*w', D)`` (bicubic).

    The ``P = num_prefix_tokens`` leading rows (class token slots) belong to no grid cell, so
    they are kept unchanged. The rest is viewed as a ``D``-channel ``h x w`` image and resized
    with ``F.interpolate(mode="bicubic", align_corners=False)``: each new cell takes a weighted
    sum of the 4 x 4 nearest old cells, so neighbouring positions keep similar vectors. This is
    how a ViT trained at 224 px (14 x 14 patches of 16) is fine-tuned at 384 px (24 x 24).
    """
    oh, ow = check_grid_embedding(pos_embed, old_grid, num_prefix_tokens)
    nh, nw = to_pair("new_grid", new_grid)
    prefix, grid = pos_embed[:, :num_prefix_tokens], pos_embed[:, num_prefix_tokens:]
    d = grid.shape[2]
    image = grid.reshape(1, oh, ow, d).permute(0, 3, 1, 2)  # (1, D, h, w): channels first
    # Interpolate in float32 at least: bicubic is not implemented for every low-precision dtype.
    resized = F.interpolate(image.float(), size=(nh, nw), mode="bicubic", align_corners=False).to(
        pos_embed.dtype
    )
    return torch.cat((prefix, resized.permute(0, 2, 3, 1).reshape(1, nh * nw, d)), dim=1)
