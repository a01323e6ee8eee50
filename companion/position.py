"""What tells a model where a patch is, as one value: ``Position``.

A Swin's position information has two independent parts:

* an **absolute** embedding, one learnable vector per patch added once after the patch
  embedding (ViT's, chapter 1), on or off;
* a **window code**, what each window attention adds position with: Swin's learned bias table
  ``BiasTable`` (chapters 2-3), Swin V2's continuous bias ``ContinuousBias`` or a 2-D rotary
  embedding ``Rotary`` (chapter 6), or none.

``Position.parse("abs+rel")`` reads the names the command line, the records and the chapters use
(``POS_CHOICES``) into that value, once; ``Position.name`` writes it back. Every question about a
code ("has a table?", "does a resize method change it?", "can it wrap around a torus?") is asked
of the value, never of its name.

Each window code owns its behaviour behind one small interface, so ``WindowAttention`` has no
per-code branches and a new code is one new class:

    build(attn)                  create the code's parameters on the attention module
    no_decay(name)               whether a parameter is the code's, kept from weight decay
    bias(attn) -> B | None       the additive bias ``(H, N, N)``, or nothing
    rotate(attn, q, k)           ``q`` and ``k`` with position applied (unchanged by default)
    resize(attn, window, method) move the parameters to another window
    on_torus(spans)              the code for a window on a torus (``spans``: per axis, whether
                                 the window covers the whole map there)

The parameters live on the attention module under timm's names (``relative_position_bias_table``,
``relative_position_index``; a continuous bias in ``cpb``, a rotary embedding in ``rope``), so
timm's and the official checkpoints load strictly.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, fields
from typing import ClassVar, Literal, Protocol, Self, get_args

import torch
from torch import Tensor, nn

from companion._checks import check_bool, check_choice
from companion.cpb import ContinuousPositionBias, offset_grid
from companion.init import trunc_normal_
from companion.relative import (
    lookup_bias,
    magnitude_index,
    make_bias_table,
    relative_position_index,
    window_offsets,
)
from companion.rope import ROPE_KINDS, RopeKind, WindowRoPE
from companion.transfer import ResizeMethod, magnitude_table_parameter, resized_table_parameter

RelBiasOffsets = Literal["signed", "magnitude"]
REL_BIAS_OFFSETS: tuple[RelBiasOffsets, ...] = get_args(RelBiasOffsets)

Pos = Literal["none", "abs", "rel", "abs+rel", "cpb", "rope-axial", "rope-mixed"]
#: Every position by name; the trainer and the ablation derive their choices from this tuple.
POS_CHOICES: tuple[Pos, ...] = get_args(Pos)
#: The ablation's default grid of positions (``--pos``), named here rather than "every code":
#: a new code joins ``POS_CHOICES``, and an ablation only when it is asked for.
ABLATION_POS: tuple[Pos, ...] = ("none", "abs", "rel", "abs+rel", "cpb", "rope-axial", "rope-mixed")


class CodeHost(Protocol):
    """What a window code sees of the attention module it lives in
    (``companion.attention.WindowAttention``)."""

    window_size: tuple[int, int]
    num_heads: int
    head_dim: int
    relative_position_bias_table: nn.Parameter
    relative_position_index: Tensor
    cpb: ContinuousPositionBias
    rope: WindowRoPE

    def register_buffer(
        self, name: str, tensor: Tensor | None, persistent: bool = True
    ) -> None: ...


class WindowCode:
    """What a window attention adds position with (the interface; see the module docstring).

    The defaults are "adds nothing": a code overrides what it does. Subclasses are frozen
    dataclasses, so a code is a value: compared, printed and recorded like one.
    """

    #: Whether the code is a learned table (``relative_position_bias_table``).
    has_table: ClassVar[bool] = False
    #: Whether the code can take offsets around a torus (only a table can).
    can_wrap: ClassVar[bool] = False

    @property
    def name(self) -> str:
        """The code's name on the command line (``--pos rel``)."""
        raise NotImplementedError

    def build(self, attn: CodeHost) -> None:
        """Create the code's parameters and buffers on ``attn`` (its window and heads set)."""

    def bias(self, attn: CodeHost) -> Tensor | None:
        """The bias ``B`` of shape ``(H, N, N)`` added to the logits, or ``None``."""
        return None

    def rotate(self, attn: CodeHost, q: Tensor, k: Tensor) -> tuple[Tensor, Tensor]:
        """``q``, ``k`` ``(B_, H, N, d)`` with the position applied (unchanged by default)."""
        return q, k

    def offset_table(self, attn: CodeHost) -> Tensor | None:
        """The learned bias of every signed offset, or ``None`` for a code without a table."""
        return None

    def no_decay(self, name: str) -> bool:
        """Whether the attention's parameter ``name`` is this code's and should not be decayed
        (position parameters, as Swin V2 and RoPE-ViT keep them)."""
        return False

    def resize(self, attn: CodeHost, window: tuple[int, int], method: ResizeMethod) -> None:
        """Move the code's parameters from ``attn.window_size`` to ``window``."""

    def on_torus(self, spans: tuple[bool, bool]) -> Self:
        """This code for a window on a torus; ``spans[a]``: the window covers axis ``a``."""
        raise ValueError(
            f"torus=True wraps offsets around the map, which only a bias table can do, "
            f"got the window code {self!r}"
        )


@dataclass(frozen=True)
class BiasTable(WindowCode):
    """Swin's learned relative position bias ``B``, looked up from a table by offset.

    ``offsets``: ``"signed"`` (Swin: one row per offset ``(dy, dx)``, a ``(2Wh-1)(2Ww-1)``-row
    table) or ``"magnitude"`` (a controlled variant: one row per ``(|dy|, |dx|)``, a
    ``Wh * Ww``-row table; ``companion.relative.magnitude_index``). ``wrap``: per axis, whether
    offsets are taken around a ring (``companion.relative.wrap_offsets``), for a window that
    spans a whole axis of a feature map treated as a torus.
    """

    has_table: ClassVar[bool] = True
    can_wrap: ClassVar[bool] = True

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

    def build(self, attn: CodeHost) -> None:
        attn.relative_position_bias_table = self.table(attn.window_size, attn.num_heads)
        index = self.index(attn.window_size)
        attn.register_buffer("relative_position_index", index, persistent=False)

    def bias(self, attn: CodeHost) -> Tensor:
        return lookup_bias(attn.relative_position_bias_table, attn.relative_position_index)

    def offset_table(self, attn: CodeHost) -> Tensor:
        """``((2Wh-1)(2Ww-1), H)`` in ``relative_position_index``'s row order, for either kind of
        table: with ``"magnitude"`` the rows of ``(dy, dx)``, ``(-dy, dx)``, ``(dy, -dx)`` are
        equal."""
        table = attn.relative_position_bias_table
        if self.offsets == "signed":
            return table
        rows = magnitude_index(offset_grid(attn.window_size).long(), attn.window_size)
        return table[rows.flatten()]

    def no_decay(self, name: str) -> bool:
        return name == "relative_position_bias_table"

    def resize(self, attn: CodeHost, window: tuple[int, int], method: ResizeMethod) -> None:
        """Resize the table with ``method`` (``companion.transfer``) and recompute the index. A
        ``"magnitude"`` table is resized as the signed table it stands for. A table that wraps
        is refused: it never learned the offsets beyond half the window that a window without
        wrap needs."""
        if any(self.wrap):
            raise ValueError(
                f"set_window_size cannot move a window with wrap={self.wrap} (a torus window): "
                f"its offsets go around the ring; build the model at window_size={window} instead"
            )
        table, old = attn.relative_position_bias_table, attn.window_size
        if self.offsets == "signed":
            resized = resized_table_parameter(table, old, window, method)
        else:
            signed = self.offset_table(attn)
            resized = magnitude_table_parameter(signed, old, window, method, table.requires_grad)
        attn.relative_position_bias_table = resized
        index = self.index(window).to(table.device)
        attn.register_buffer("relative_position_index", index, persistent=False)

    def on_torus(self, spans: tuple[bool, bool]) -> Self:
        # On a torus, a window that spans a whole axis has no ends on it: its offsets wrap.
        return dataclasses.replace(self, wrap=spans)


@dataclass(frozen=True)
class ContinuousBias(WindowCode):
    """Swin V2's continuous position bias: ``B`` computed by an MLP from the log-spaced offset
    (``companion.cpb``, in ``attn.cpb``), so a larger window needs no resizing."""

    @property
    def name(self) -> str:
        return "cpb"

    def build(self, attn: CodeHost) -> None:
        attn.cpb = ContinuousPositionBias(attn.window_size, attn.num_heads)

    def bias(self, attn: CodeHost) -> Tensor:
        return attn.cpb()

    def no_decay(self, name: str) -> bool:
        return name.startswith("cpb.cpb_mlp.")

    def resize(self, attn: CodeHost, window: tuple[int, int], method: ResizeMethod) -> None:
        attn.cpb.set_window_size(window)


@dataclass(frozen=True)
class Rotary(WindowCode):
    """A 2-D rotary embedding of ``q`` and ``k`` (``companion.rope``, in ``attn.rope``),
    ``"axial"`` or ``"mixed"``: the logit sees the positions only through their offset, and
    nothing is added."""

    kind: RopeKind = "axial"

    def __post_init__(self) -> None:
        check_choice("kind", self.kind, ROPE_KINDS)

    @property
    def name(self) -> str:
        return f"rope-{self.kind}"

    def build(self, attn: CodeHost) -> None:
        attn.rope = WindowRoPE(attn.window_size, attn.head_dim, attn.num_heads, self.kind)

    def rotate(self, attn: CodeHost, q: Tensor, k: Tensor) -> tuple[Tensor, Tensor]:
        return attn.rope(q, k)

    def no_decay(self, name: str) -> bool:
        return name == "rope.freqs"

    def resize(self, attn: CodeHost, window: tuple[int, int], method: ResizeMethod) -> None:
        attn.rope.set_window_size(window)


#: What a ``WindowAttention`` adds position with; ``None``: nothing (plain self-attention).
WindowPosition = WindowCode | None
#: Swin's own window code: the default of everything that takes one (stated here only).
SWIN_CODE = BiasTable()


def check_window_position(name: str, value: object) -> WindowPosition:
    """``value`` if it is a window code or ``None``, else ``TypeError`` naming ``name``."""
    if not isinstance(value, WindowCode | None):
        raise TypeError(
            f"{name} must be a window code (BiasTable(...), ContinuousBias(), Rotary(...)) or "
            f"None, got {value!r}"
        )
    return value


#: The window code of each name (``Position.parse``).
WINDOW_CODES: dict[str, BiasTable | ContinuousBias | Rotary] = {
    code.name: code for code in (BiasTable(), ContinuousBias(), Rotary("axial"), Rotary("mixed"))
}


@dataclass(frozen=True)
class Position:
    """A model's position information: an absolute embedding on or off, a window code (``None``:
    no code, plain self-attention in the windows), and whether the maps are tori.

    ``torus`` (a controlled variant, ``companion.swin.SwinBlock``) hides the map's border: the
    shifted windows wrap around without the mask and a window that spans a whole axis takes its
    offsets around it, so only a code that can wrap (``can_wrap``) goes with it.

    ``Position.parse`` is the one parser of a position's name; ``name`` (and ``str``) writes it
    back: ``Position.parse(p.name)`` is ``p`` up to the variants a name does not carry (a
    table's ``offsets``, ``torus``), which runs record as their ``variant``.

    >>> Position.parse("abs+rel")
    Position(absolute=True, window=BiasTable())
    >>> str(Position.parse("abs+rel", offsets="magnitude", torus=True))
    'abs+rel'
    """

    absolute: bool = False
    window: WindowPosition = SWIN_CODE
    torus: bool = False

    def __post_init__(self) -> None:
        check_bool("absolute", self.absolute)
        check_window_position("window", self.window)
        check_bool("torus", self.torus)
        if self.torus and not self.can_wrap:
            raise ValueError(
                f"torus=True wraps offsets around the map, which only a bias table can do: use "
                f"it with pos in {[p for p in POS_CHOICES if Position.parse(p).can_wrap]}, got "
                f"pos={self.name!r}"
            )

    def __repr__(self) -> str:
        torus = ", torus=True" if self.torus else ""
        return f"Position(absolute={self.absolute!r}, window={self.window!r}{torus})"

    def __str__(self) -> str:
        return self.name

    @classmethod
    def parse(
        cls,
        pos: str | Position,
        offsets: RelBiasOffsets | None = None,
        torus: bool | None = None,
    ) -> Position:
        """The position of a name in ``POS_CHOICES`` (a ``Position`` is taken as it is), the
        one place a position's name is read.

        ``offsets`` shapes the bias table (``BiasTable.offsets``); giving ``"magnitude"`` for a
        position without a table is refused, as it would change nothing. ``torus``: the maps
        are tori (``None`` keeps the position's own).
        """
        if isinstance(pos, Position):
            position = pos
        else:
            check_choice("pos", pos, POS_CHOICES)
            absolute = pos in ("abs", "abs+rel")
            window = pos.removeprefix("abs").removeprefix("+")
            position = cls(absolute, WINDOW_CODES[window] if window not in ("", "none") else None)
        if offsets is not None:
            position = position._with_offsets(offsets)
        if torus is not None:
            position = dataclasses.replace(position, torus=check_bool("torus", torus))
        return position

    def _with_offsets(self, offsets: RelBiasOffsets) -> Position:
        check_choice("rel_bias_offsets", offsets, REL_BIAS_OFFSETS)
        if not isinstance(self.window, BiasTable):
            if offsets == "signed":
                return self
            raise ValueError(
                f"rel_bias_offsets={offsets!r} shapes a relative position bias table, which "
                f"pos={self.name!r} does not have; use it with pos in "
                f"{[p for p in POS_CHOICES if Position.parse(p).has_table]}"
            )
        return dataclasses.replace(self, window=dataclasses.replace(self.window, offsets=offsets))

    @property
    def name(self) -> str:
        """The name in ``POS_CHOICES`` (a table's offsets and ``torus`` are variants, not
        names)."""
        parts = (["abs"] if self.absolute else []) + ([self.window.name] if self.window else [])
        return "+".join(parts) or "none"

    @property
    def has_table(self) -> bool:
        """Whether each window attention holds a learned bias table."""
        return self.window is not None and self.window.has_table

    @property
    def can_wrap(self) -> bool:
        """Whether the model can run on a torus (no window code, or one that wraps)."""
        return self.window is None or self.window.can_wrap

    @property
    def resize_methods(self) -> tuple[ResizeMethod, ...]:
        """The table resize methods that give different models when the window grows: both of
        ``companion.transfer`` for a table, one (either: it is not used) otherwise."""
        methods: tuple[ResizeMethod, ...] = get_args(ResizeMethod)
        return methods if self.has_table else ("geometric",)
