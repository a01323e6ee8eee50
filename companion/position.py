"""What tells a model where a patch is, as one value: ``Position``.

A Swin's position information has independent parts:

* an **absolute** embedding, one learnable vector per patch added once after the patch
  embedding (ViT's, chapter 1: ``companion.absolute.AbsolutePositionEmbedding``), on or off;
* a **window code**, what each window attention adds position with: Swin's learned bias table
  ``BiasTable`` (chapters 2-3, ``companion.relative``), Swin V2's continuous bias
  ``ContinuousBias`` (``companion.cpb``) or a 2-D rotary embedding ``Rotary``
  (``companion.rope``), or none (``None``);
* ``torus``, a controlled variant: every feature map is a torus.

``Position.parse("abs+rel")`` reads the names the command line, the records and the chapters use
(``POS_CHOICES``) into that value, once; ``str(position)`` writes the name back. Every question
about a code ("has a table?", "can it wrap around a torus?") is asked of the value.

A window code is two things, both in the code's own file:

* the **code** (a ``WindowCode``): a frozen dataclass, a value that is compared, printed and
  recorded. ``build(window_size, num_heads, head_dim)`` makes its term;
* its **term** (a ``PositionTerm``): the ``nn.Module`` inside each ``WindowAttention`` that owns
  the code's parameters and adds them to the attention:

      bias() -> B | None            the additive bias ``(H, N, N)`` of softmax(QKᵀ/√d + B + mask)
      rotate(q, k)                  ``q`` and ``k`` with position applied (unchanged by default)
      resize(window, method)        move the parameters to another window
      no_decay                      its parameters kept from weight decay

A new code is one file: a ``WindowCode`` and its ``PositionTerm``, and a call to ``register``,
with which it joins ``POS_CHOICES`` (``tests/test_position.py`` adds one from a temporary module).

timm's and the official checkpoints keep a code's parameters on the attention module itself
(``relative_position_bias_table``; ``cpb_mlp`` of Swin V2 in ``cpb``): a term says where with its
``checkpoint_prefix``, and ``keep_checkpoint_names`` is the one mapping between the two spellings.
"""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Self, overload

from torch import Tensor, nn

from companion._checks import check_bool, check_choice, check_type
from companion.absolute import AbsolutePositionEmbedding

#: The built-in codes' modules; each registers its codes when imported (``window_codes``).
BUILT_IN_CODES = ("companion.bias_table", "companion.cpb", "companion.rope")


class PositionTerm(nn.Module):
    """A window code inside one ``WindowAttention``: owns the code's parameters and buffers.

    The defaults add nothing: a term overrides what its code does.
    """

    #: Where its state lives in the attention's ``state_dict`` (``keep_checkpoint_names``):
    #: key ``k`` of the term is saved as ``checkpoint_prefix + k``.
    checkpoint_prefix: ClassVar[str] = ""
    #: Its parameters that an optimiser should not decay, by name or name prefix (Swin V2 and
    #: RoPE-ViT keep position parameters from weight decay).
    no_decay: ClassVar[tuple[str, ...]] = ()

    def bias(self) -> Tensor | None:
        """The bias ``B`` of shape ``(H, N, N)`` added to the logits, or ``None``."""
        return None

    def rotate(self, q: Tensor, k: Tensor) -> tuple[Tensor, Tensor]:
        """``q``, ``k`` ``(B_, H, N, d)`` with the position applied (unchanged by default)."""
        return q, k

    def resize(self, window_size: tuple[int, int], method: str = "geometric") -> None:
        """Move the parameters to another window (``method``: how a table is resized, which
        ``set_img_size`` leaves out for an absolute embedding)."""

    def offset_table(self) -> Tensor | None:
        """The learned bias of every signed offset, ``((2Wh-1)(2Ww-1), H)``, or ``None`` for a
        code without a table."""
        return None


class NoPosition(PositionTerm):
    """No position, and no parameter: the term of ``position=None`` (plain self-attention) and
    of an absolute embedding that is off (it leaves the tokens as they are)."""

    def forward(self, x: Tensor) -> Tensor:
        return x


class WindowCode:
    """What a window attention adds position with, as a value (the module docstring).

    Subclasses are frozen dataclasses and say what they are with class attributes.
    """

    #: A matplotlib colour for the code's curves and bars.
    color: ClassVar[str] = "#333333"
    #: Whether the code is a learned table (``relative_position_bias_table``).
    has_table: ClassVar[bool] = False
    #: Whether the code can take offsets around a torus.
    can_wrap: ClassVar[bool] = False
    #: Whether ``abs+<name>`` (an absolute embedding with this code) is a position of its own.
    with_absolute: ClassVar[bool] = False
    #: The resize methods (``companion.resize``) that give different models when the window
    #: grows: one for a code with nothing to resize (it is not used).
    resize_methods: ClassVar[tuple[str, ...]] = ("geometric",)

    @property
    def name(self) -> str:
        """The code's name on the command line (``--pos rel``)."""
        raise NotImplementedError

    def build(self, window_size: tuple[int, int], num_heads: int, head_dim: int) -> PositionTerm:
        """The term that holds this code's parameters in an attention over ``window_size``."""
        raise NotImplementedError

    def on_torus(self, spans: tuple[bool, bool]) -> Self:
        """This code for a window on a torus; ``spans[a]``: the window covers axis ``a``."""
        raise ValueError(
            f"torus=True wraps offsets around the map, which only a bias table can do, "
            f"got the window code {self!r}"
        )


#: What a ``WindowAttention`` adds position with; ``None``: nothing (plain self-attention).
WindowPosition = WindowCode | None

_REGISTRY: dict[str, WindowCode] = {}


def register(code: WindowCode) -> WindowCode:
    """Make ``code`` a position of its own (``code.name``, and ``abs+<name>`` when it goes with
    an absolute embedding): ``Position.parse`` reads it and ``POS_CHOICES`` lists it."""
    if not isinstance(code, WindowCode):
        raise TypeError(f"code must be a WindowCode, got {code!r}")
    known = _REGISTRY.get(code.name)
    if known is not None and known != code:
        raise ValueError(f"code name {code.name!r} is taken by {known!r}, got {code!r}")
    _REGISTRY[code.name] = code
    return code


def window_codes() -> dict[str, WindowCode]:
    """Every registered window code by name (the built-in ones first, in ``BUILT_IN_CODES``
    order)."""
    for module in BUILT_IN_CODES:  # imported here, not above: they import this module
        importlib.import_module(module)
    return dict(_REGISTRY)


def swin_code() -> WindowCode:
    """Swin's own window code, its learned bias table: the default of everything taking one."""
    return window_codes()["rel"]


def build_term(
    code: WindowPosition, window_size: tuple[int, int], num_heads: int, head_dim: int
) -> PositionTerm:
    """``code``'s term for one attention over ``window_size`` (``NoPosition`` for ``None``)."""
    return NoPosition() if code is None else code.build(window_size, num_heads, head_dim)


def check_window_position(name: str, value: object) -> WindowPosition:
    """``value`` if it is a window code or ``None``, else ``TypeError`` naming ``name``."""
    if not isinstance(value, WindowCode | None):
        raise TypeError(
            f"{name} must be a window code (BiasTable(...), ContinuousBias(), Rotary(...)) or "
            f"None, got {value!r}"
        )
    return value


class _PositionNames(Sequence[str]):
    """``POS_CHOICES``: every position's name, read from the registry when asked, so that a code
    registered later is a choice too: ``none``, ``abs``, then each code (and ``abs+<code>``)."""

    def _names(self) -> tuple[str, ...]:
        names = ["none", "abs"]
        for name, code in window_codes().items():
            names += [name] + ([f"abs+{name}"] if code.with_absolute else [])
        return tuple(names)

    @overload
    def __getitem__(self, i: int) -> str: ...
    @overload
    def __getitem__(self, i: slice) -> Sequence[str]: ...
    def __getitem__(self, i: int | slice) -> str | Sequence[str]:
        return self._names()[i]

    def __len__(self) -> int:
        return len(self._names())

    def __iter__(self) -> Iterator[str]:
        return iter(self._names())

    def __eq__(self, other: object) -> bool:
        return tuple(self) == other

    def __hash__(self) -> int:
        return hash(self._names())

    def __repr__(self) -> str:
        return repr(self._names())


#: Every position by name; the trainer and the ablation take their choices from it.
POS_CHOICES: Sequence[str] = _PositionNames()
#: The ablation's default grid of positions (``--pos``), named here rather than "every code":
#: a new code joins ``POS_CHOICES``, and an ablation only when it is asked for.
ABLATION_POS: tuple[str, ...] = ("none", "abs", "rel", "abs+rel", "cpb", "rope-axial", "rope-mixed")


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
    window: WindowPosition = field(default_factory=swin_code)
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
        cls, pos: str | Position, offsets: str | None = None, torus: bool | None = None
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
            check_type("pos", pos, str, f"a Position or one of {list(POS_CHOICES)}")
            check_choice("pos", pos, POS_CHOICES)
            window = pos.removeprefix("abs").removeprefix("+")
            code = window_codes()[window] if window not in ("", "none") else None
            position = cls(pos == "abs" or pos.startswith("abs+"), code)
        if offsets is not None:
            position = position._with_offsets(offsets)
        if torus is not None:
            position = dataclasses.replace(position, torus=check_bool("torus", torus))
        return position

    def _with_offsets(self, offsets: str) -> Position:
        check_choice("rel_bias_offsets", offsets, ("signed", "magnitude"))
        if not self.has_table:
            if offsets == "signed":
                return self
            raise ValueError(
                f"rel_bias_offsets={offsets!r} shapes a relative position bias table, which "
                f"pos={self.name!r} does not have; use it with pos in "
                f"{[p for p in POS_CHOICES if Position.parse(p).has_table]}"
            )
        table: Any = self.window
        return dataclasses.replace(self, window=dataclasses.replace(table, offsets=offsets))

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

    def embedding(
        self, grid_size: tuple[int, int], dim: int
    ) -> AbsolutePositionEmbedding | NoPosition:
        """The absolute part as a module for tokens kept as a ``grid_size`` map of ``dim``
        channels: ViT's learned embedding (``AbsolutePositionEmbedding``), or ``NoPosition``."""
        if not self.absolute:
            return NoPosition()
        return AbsolutePositionEmbedding(grid_size[0] * grid_size[1], dim, grid_size)

    @property
    def resize_methods(self) -> tuple[str, ...]:
        """The table resize methods that give different models when the window grows: both of
        ``companion.resize`` for a table, one (either: it is not used) otherwise."""
        return ("geometric",) if self.window is None else self.window.resize_methods


def keep_checkpoint_names(module: nn.Module, child: str, prefix: str) -> None:
    """The one mapping between a term's keys and timm's / the official checkpoints' names.

    ``module``'s submodule ``child`` saves its key ``k`` as ``prefix + k`` in ``module``'s
    ``state_dict`` (``"" + "relative_position_bias_table"``; ``"absolute_" + "pos_embed"``)
    rather than ``child + "." + k``, loads it from there, and load errors name it that way too.
    The keys keep their order.
    """
    own = f"{child}."

    def saved(_: nn.Module, state: dict[str, Any], at: str, __: Any) -> None:
        items = list(state.items())
        state.clear()
        for key, value in items:
            mine = key.startswith(at + own)
            state[at + prefix + key[len(at + own) :] if mine else key] = value

    def loading(_: nn.Module, state: dict[str, Any], at: str, *__: Any) -> None:
        for key in getattr(module, child).state_dict():
            if at + prefix + key in state:
                state[at + own + key] = state.pop(at + prefix + key)

    def loaded(_: nn.Module, result: Any) -> None:
        for keys in (result.missing_keys, result.unexpected_keys):
            keys[:] = [k.replace(own, prefix) if own in k else k for k in keys]

    module.register_state_dict_post_hook(saved)
    module.register_load_state_dict_pre_hook(loading)
    module.register_load_state_dict_post_hook(loaded)
