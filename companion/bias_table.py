"""Swin's window code: the learned relative position bias ``B``, looked up from a table by offset.

``BiasTable`` (``pos="rel"``, a ``WindowCode`` of ``companion.position``) says which table: one row
per signed offset ``(dy, dx)`` as Swin's, or per ``(|dy|, |dx|)``, and whether offsets wrap. Each
window attention builds from it a ``RelativePositionBias``, which holds the table and its index
(chapters 2-3, ``companion.relative``), adds ``B`` to the logits and resizes itself to another
window (``companion.resize``).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, fields
from typing import ClassVar, Literal, Self, get_args

import torch
from torch import Tensor, nn

from companion._checks import check_bool, check_choice
from companion.layers import trunc_normal_
from companion.position import PositionTerm, WindowCode, register
from companion.relative import (
    bias_table_size,
    index_to_offset,
    lookup_bias,
    magnitude_index,
    make_bias_table,
    relative_position_index,
    window_offsets,
)
from companion.resize import (
    RESIZE_METHODS,
    check_resize_method,
    magnitude_table_parameter,
    resized_table_parameter,
)

RelBiasOffsets = Literal["signed", "magnitude"]
REL_BIAS_OFFSETS: tuple[RelBiasOffsets, ...] = get_args(RelBiasOffsets)


@dataclass(frozen=True)
class BiasTable(WindowCode):
    """Swin's learned relative position bias ``B``, looked up from a table by offset.

    ``offsets``: ``"signed"`` (Swin: one row per offset ``(dy, dx)``, a ``(2Wh-1)(2Ww-1)``-row
    table) or ``"magnitude"`` (a controlled variant: one row per ``(|dy|, |dx|)``, a
    ``Wh * Ww``-row table; ``magnitude_index``). ``wrap``: per axis, whether offsets are taken
    around a ring (``wrap_offsets``), for a window that spans a whole axis of a feature map
    treated as a torus.
    """

    color: ClassVar[str] = "#d62728"
    has_table: ClassVar[bool] = True
    can_wrap: ClassVar[bool] = True
    with_absolute: ClassVar[bool] = True
    resize_methods: ClassVar[tuple[str, ...]] = RESIZE_METHODS

    offsets: RelBiasOffsets = "signed"
    wrap: tuple[bool, bool] = (False, False)

    def __post_init__(self) -> None:
        check_choice("offsets", self.offsets, REL_BIAS_OFFSETS)
        if not (isinstance(self.wrap, tuple) and len(self.wrap) == 2):
            raise TypeError(f"wrap must be a pair (bool, bool), got {self.wrap!r}")
        for wraps in self.wrap:
            check_bool("wrap", wraps)

    def __repr__(self) -> str:
        # Only what differs from Swin's own table, so that Swin's prints as BiasTable().
        changed = [f for f in fields(self) if getattr(self, f.name) != f.default]
        return f"BiasTable({', '.join(f'{f.name}={getattr(self, f.name)!r}' for f in changed)})"

    @property
    def name(self) -> str:
        return "rel"

    def index(self, window_size: tuple[int, int]) -> Tensor:
        """The ``(N, N)`` table row of every (query, key) pair."""
        if self.offsets == "signed":
            return relative_position_index(window_size, self.wrap)
        return magnitude_index(window_offsets(window_size, self.wrap), window_size)

    def table(self, window_size: tuple[int, int], num_heads: int) -> nn.Parameter:
        """A new table, ``trunc_normal_(std=.02)`` as Swin's, with one row per index value."""
        if self.offsets == "signed":
            return make_bias_table(window_size, num_heads)
        table = nn.Parameter(torch.zeros(window_size[0] * window_size[1], num_heads))
        trunc_normal_(table, std=0.02)
        return table

    def build(
        self, window_size: tuple[int, int], num_heads: int, head_dim: int
    ) -> RelativePositionBias:
        return RelativePositionBias(self, window_size, num_heads)

    def on_torus(self, spans: tuple[bool, bool]) -> Self:
        # On a torus, a window that spans a whole axis has no ends on it: its offsets wrap.
        return dataclasses.replace(self, wrap=spans)


class RelativePositionBias(PositionTerm):
    """``BiasTable``'s term: ``B = relative_position_bias_table[relative_position_index]``.

    Attributes:
        relative_position_bias_table: parameter ``(T, H)``, one learned bias per table row and
            head (``T = (2Wh-1)(2Ww-1)``, or ``Wh * Ww`` with ``offsets="magnitude"``).
        relative_position_index: non-persistent buffer ``(N, N)``, the row of every pair.

    In a checkpoint the table sits on the attention module itself, as in timm's and the
    official Swin (``checkpoint_prefix=""``).
    """

    no_decay = ("relative_position_bias_table",)
    relative_position_index: Tensor

    def __init__(self, code: BiasTable, window_size: tuple[int, int], num_heads: int) -> None:
        super().__init__()
        self.code, self.window_size = code, window_size
        self.relative_position_bias_table = code.table(window_size, num_heads)
        index = code.index(window_size)
        self.register_buffer("relative_position_index", index, persistent=False)

    def bias(self) -> Tensor:
        return lookup_bias(self.relative_position_bias_table, self.relative_position_index)

    def offset_table(self) -> Tensor:
        """``((2Wh-1)(2Ww-1), H)`` in ``relative_position_index``'s row order, for either kind of
        table: with ``"magnitude"`` the rows of ``(dy, dx)``, ``(-dy, dx)``, ``(dy, -dx)`` are
        equal."""
        table = self.relative_position_bias_table
        if self.code.offsets == "signed":
            return table
        signed = range(bias_table_size(self.window_size))  # every row, in the signed order
        offsets = torch.tensor([index_to_offset(row, self.window_size) for row in signed])
        return table[magnitude_index(offsets, self.window_size)]

    def resize(self, window_size: tuple[int, int], method: str = "geometric") -> None:
        """Resize the table with ``method`` (``companion.resize``) and recompute the index. A
        ``"magnitude"`` table is resized as the signed table it stands for. A table that wraps
        is refused: it never learned the offsets beyond half the window that a window without
        wrap needs."""
        if any(self.code.wrap):
            raise ValueError(
                f"set_window_size cannot move a window with wrap={self.code.wrap} (a torus "
                f"window): its offsets go around the ring; build the model at "
                f"window_size={window_size} instead"
            )
        table, old = self.relative_position_bias_table, self.window_size
        if self.code.offsets == "signed":
            resized = resized_table_parameter(table, old, window_size, check_resize_method(method))
        else:
            signed = self.offset_table()
            resized = magnitude_table_parameter(
                signed, old, window_size, check_resize_method(method), table.requires_grad
            )
        self.relative_position_bias_table = resized
        self.window_size = window_size
        index = self.code.index(window_size).to(table.device)
        self.register_buffer("relative_position_index", index, persistent=False)

    def extra_repr(self) -> str:
        return f"window_size={self.window_size}, code={self.code!r}"


#: Swin's own window code: the default of everything that takes one.
SWIN_CODE = register(BiasTable())
