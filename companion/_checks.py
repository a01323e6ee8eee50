"""Argument checks: each error names the parameter, the value given and what is allowed."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypeGuard, TypeVar

T = TypeVar("T")


def _is_int(value: object) -> TypeGuard[int]:
    # bool is an int subclass, but window_size=True is always a mistake.
    return isinstance(value, int) and not isinstance(value, bool)


def check_positive_int(name: str, value: object) -> int:
    """Return ``value`` if it is an int >= 1, else raise naming ``name``."""
    if not _is_int(value):
        raise TypeError(f"{name} must be an int >= 1, got {value!r} ({type(value).__name__})")
    if value < 1:
        raise ValueError(f"{name} must be an int >= 1, got {value!r}")
    return value


def to_pair(name: str, value: object) -> tuple[int, int]:
    """Accept an int ``m`` (meaning ``(m, m)``) or a pair ``(h, w)`` of ints >= 1.

    Returns ``(h, w)``.
    """
    if _is_int(value):
        check_positive_int(name, value)
        return (value, value)
    if isinstance(value, Sequence) and not isinstance(value, str) and len(value) == 2:
        h, w = value
        if _is_int(h) and _is_int(w):
            if h < 1 or w < 1:
                raise ValueError(
                    f"{name} must be an int >= 1 or a pair of ints >= 1, got {value!r}"
                )
            return (h, w)
    raise TypeError(
        f"{name} must be an int >= 1 or a pair (h, w) of ints >= 1, "
        f"got {value!r} ({type(value).__name__})"
    )


def check_divisible(name: str, value: int, by_name: str, by: int) -> None:
    """Raise if ``value`` (named ``name``) is not a multiple of ``by`` (named ``by_name``)."""
    if value % by != 0:
        raise ValueError(f"{name} must be divisible by {by_name}={by}, got {name}={value}")


def check_choice(name: str, value: object, allowed: Sequence[T]) -> T:
    """Return ``value`` if it is one of ``allowed`` (typed as they are), else raise."""
    if value not in allowed:
        raise ValueError(f"{name} must be one of {list(allowed)}, got {value!r}")
    return value  # type: ignore[return-value]


def _memory_bytes() -> int:
    """This machine's physical memory (``2**40`` where the OS does not say)."""
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        return 2**40


def available_memory_bytes() -> int:
    """The memory this process can still take: Linux's ``MemAvailable``, within the container's
    limit (cgroup v2 ``memory.max``) if it has one; elsewhere the free pages, else the
    physical memory."""
    available = None
    try:
        meminfo = Path("/proc/meminfo").read_text()
        available = int(meminfo.split("MemAvailable:")[1].split()[0]) * 1024
    except (OSError, IndexError, ValueError):
        try:
            available = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        except (AttributeError, ValueError, OSError):
            available = _memory_bytes()
    try:
        cgroup = Path("/sys/fs/cgroup")
        limit = int((cgroup / "memory.max").read_text())  # "max": no limit (a ValueError)
        available = min(available, limit - int((cgroup / "memory.current").read_text()))
    except (OSError, ValueError):
        pass
    return max(available, 0)


def check_fits_in_memory(
    name: str, value: int, bytes_each: int, what: str, available: int | None = None
) -> None:
    """Raise naming ``name`` unless ``value`` items of ``bytes_each`` bytes (``what`` says what
    they are) fit in ``available`` bytes (by default :func:`available_memory_bytes`): checked
    before allocating them, so a size too large is refused at once, not killed for memory."""
    available = available_memory_bytes() if available is None else available
    if value * bytes_each > available:
        raise ValueError(
            f"{name} must be at most {available // bytes_each:,} here ({what} take "
            f"{bytes_each:,} bytes each, and {available / 2**30:,.1f} GiB of memory is "
            f"available), got {value:,}"
        )


def check_pairs_fit_in_memory(name: str, window_size: object) -> None:
    """Raise if a window's token pairs cannot be held: ``N = Wh * Ww`` tokens make ``N * N``
    pairs, and a pairwise ``(N, N, 2)`` int64 offset tensor takes ``16 N^2`` bytes."""
    h, w = to_pair(name, window_size)
    nbytes, memory = 16 * (h * w) ** 2, _memory_bytes()
    if nbytes > memory:
        raise ValueError(
            f"{name}={window_size!r} is too large: its (N, N, 2) pairwise offsets (N = {h * w:,} "
            f"tokens) would need {nbytes / 2**30:,.1f} GiB, more than this machine's "
            f"{memory / 2**30:,.1f} GiB of memory"
        )


def check_bool(name: str, value: object) -> bool:
    """Return ``value`` if it is ``True`` or ``False``, else raise naming ``name``."""
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be True or False, got {value!r} ({type(value).__name__})")
    return value


def check_type(name: str, value: object, types: type | tuple[type, ...], allowed: str) -> None:
    """Raise ``TypeError`` naming ``name`` unless ``value`` is one of ``types`` (``allowed``:
    what is taken, in words)."""
    if not isinstance(value, types):
        raise TypeError(f"{name} must be {allowed}, got {value!r} ({type(value).__name__})")


def check_int_in_range(name: str, value: object, low: int, high: int, context: str = "") -> int:
    """Return ``value`` if it is an int with ``low <= value <= high``, else raise naming ``name``.

    ``context`` (e.g. ``"for window_size=(2, 3)"``) is added to the message, to say why these
    are the bounds.
    """
    if not _is_int(value):
        raise TypeError(f"{name} must be an int, got {value!r} ({type(value).__name__})")
    if not low <= value <= high:
        where = f" {context}" if context else ""
        raise ValueError(f"{name} must be in [{low}, {high}]{where}, got {value}")
    return value


def check_offset_in_window(dy: object, dx: object, window_size: object) -> None:
    """Raise unless ``(dy, dx)`` are ints that two tokens of the window can be apart.

    ``window_size`` is ``Wh`` or ``(Wh, Ww)``; then ``|dy| <= Wh - 1`` and ``|dx| <= Ww - 1``.
    """
    wh, ww = to_pair("window_size", window_size)
    where = f"for window_size={window_size!r}"
    check_int_in_range("dy", dy, -(wh - 1), wh - 1, where)
    check_int_in_range("dx", dx, -(ww - 1), ww - 1, where)


def check_non_negative_int(name: str, value: object) -> int:
    """Return ``value`` if it is an int >= 0, else raise naming ``name``."""
    if not _is_int(value):
        raise TypeError(f"{name} must be an int >= 0, got {value!r} ({type(value).__name__})")
    if value < 0:
        raise ValueError(f"{name} must be an int >= 0, got {value}")
    return value


def check_grid_embedding(
    pos_embed: Any, old_grid: object, num_prefix_tokens: object
) -> tuple[int, int]:
    """Check that ``pos_embed`` is ``(1, P + h*w, D)`` for ``old_grid = (h, w)``; return ``(h, w)``.

    ``P = num_prefix_tokens`` (class-token rows, an int >= 0).
    """
    oh, ow = to_pair("old_grid", old_grid)
    prefix = check_non_negative_int("num_prefix_tokens", num_prefix_tokens)
    expected = prefix + oh * ow
    if pos_embed.dim() != 3 or pos_embed.shape[0] != 1 or pos_embed.shape[1] != expected:
        raise ValueError(
            f"pos_embed must have shape (1, num_prefix_tokens + h*w, D) = (1, {expected}, D) for "
            f"old_grid={(oh, ow)} and num_prefix_tokens={prefix}, got {tuple(pos_embed.shape)}"
        )
    return oh, ow


def check_stage_ints(name: str, value: object) -> tuple[int, ...]:
    """``value`` as a tuple of ints >= 1, one per stage (a non-empty sequence), else raise."""
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence) or len(value) == 0:
        raise TypeError(
            f"{name} must be a non-empty sequence of ints >= 1 (one per stage), got {value!r}"
        )
    return tuple(check_positive_int(f"{name}[{i}]", v) for i, v in enumerate(value))


def check_fraction(name: str, value: object) -> float:
    """``value`` as a float in ``[0, 1)`` (a rate), else raise naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a float in [0, 1), got {value!r} ({type(value).__name__})")
    if not 0.0 <= value < 1.0:
        raise ValueError(f"{name} must be a float in [0, 1), got {value!r}")
    return float(value)
