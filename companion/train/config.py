"""Every training setting, once: type, default, allowed values and help live on one dataclass.

``companion-train``'s flags, the ablation runner's per-run flags (``python -m
companion.commands.ablation``), the checks, what a checkpoint records and what a reused run must
match are all *generated* from :class:`TrainConfig`'s fields, so a setting added here appears
everywhere.

Why a plain dataclass plus ~60 lines of argparse generation, rather than a library that turns a
dataclass into a CLI (tyro, simple-parsing, jsonargparse): the package is installed on Colab next
to whatever is there, so every dependency costs readers; the generation below is small enough to
read; and each field's metadata also drives things no CLI library knows about (which settings
shape the numbers, which ones the ablation varies, which ones go to the model).

Each field's ``kind`` says what it is for:

* ``result``: it changes the numbers. A resumed run and a reused ablation run must match it.
* ``hardware``: where and at what precision the run computes. A reused ablation run must match it;
  a resumed run may change it (e.g. continue on another machine).
* ``speed``: how fast it runs, never what it computes (threads, workers, compile, data folder).
* ``process``: this one process (output folder, resume, progress bars); the ablation sets these.

A field with ``model=True`` is passed by name to ``companion.swin.swin_from_config`` (``None``
keeps the model config's own value); ``grid=(plural, default)`` makes the ablation take several
values (``--pos none abs``) and train one run per value.
"""

from __future__ import annotations

import argparse
import math
import typing
from collections.abc import Callable, Iterable, Sequence
from dataclasses import MISSING, Field, dataclass, field, fields
from typing import Any

from companion.data import DATASETS
from companion.data.cifar import DEFAULT_DATA_DIR
from companion.data.tasks import (
    FAR_TASKS,
    IMAGE_SIZE,
    RENDERINGS,
    check_rendering,
)
from companion.position import ABLATION_POS, POS_CHOICES, Position
from companion.swin_configs import CONFIGS, VARIANTS, SwinConfig, model_config, variant_overrides

KINDS = ("result", "hardware", "speed", "process")
PRECISIONS = ("auto", "fp32", "bf16", "fp16")
# Upper bounds, far above any sensible run and far below what breaks something (a metrics file
# rewritten for 1e20 epochs, numpy's 32-bit seeds, a thread or process count no machine has).
MAX_EPOCHS = 100_000
MAX_STEPS = 10_000_000
MAX_IMAGES = 100_000_000
MAX_SEED = 2**32 - 1
MAX_PROCESSES = 1024


def parse_device(name: object) -> str:
    """Check a device name: ``auto``, ``cpu``, ``mps``, ``cuda`` or ``cuda:N``."""
    ok = isinstance(name, str) and (
        name in ("auto", "cpu", "mps", "cuda") or (name.startswith("cuda:") and name[5:].isdigit())
    )
    if not ok:
        raise ValueError(f"device must be one of auto, cpu, mps, cuda, cuda:N; got {name!r}")
    return name  # type: ignore[return-value]


def setting(
    default: Any,
    help: str,
    *,
    kind: str,
    choices: Sequence[Any] | None = None,
    low: float | None = None,
    high: float | None = None,
    above: float | None = None,
    check: Callable[[Any], Any] | None = None,
    model: bool = False,
    grid: tuple[str, tuple[Any, ...]] | None = None,
) -> Any:
    """A :class:`TrainConfig` field: ``low <= value <= high`` (``above``: strictly greater);
    ``check(value)`` raises for values no range can describe."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {list(KINDS)}, got {kind!r}")
    meta: dict[str, Any] = {"help": help, "kind": kind}
    meta["choices"] = None if choices is None else tuple(choices)
    meta |= {"low": low, "high": high, "above": above, "check": check}
    meta |= {"model": model, "grid": grid}
    return field(default=default, metadata=meta)


@dataclass(frozen=True)
class TrainConfig:
    """Every setting of a training run; ``--batch-size`` is ``batch_size`` and so on.

    Frozen and checked when built (every setting, then the rules between settings and the model
    they describe), so a ``TrainConfig`` that exists is a valid one: ``dataclasses.replace``
    gives a changed copy, checked again.
    """

    model_config_name: str = setting(
        "tiny-cpu", "model size: a name in companion.swin.CONFIGS", kind="result",
        choices=sorted(CONFIGS),
    )  # fmt: skip
    dataset: str = setting(
        "relation", "what to learn", kind="result", choices=DATASETS,
        grid=("datasets", ("grid-cell", "relation")),
    )  # fmt: skip
    pos: Position = setting(
        SwinConfig.pos, "position encoding", kind="result", choices=POS_CHOICES, model=True,
        grid=("pos", ABLATION_POS),
    )  # fmt: skip
    variant: str = setting(
        "swin", "the Swin itself, or a controlled variant: one of "
        f"{', '.join(VARIANTS)}, or several joined by '+' (companion.swin.VARIANTS)",
        kind="result", check=variant_overrides,
    )  # fmt: skip
    drop_path_rate: float | None = setting(
        None, "stochastic depth (default: the model config's own rate)", kind="result",
        low=0.0, high=0.99, model=True,
    )  # fmt: skip
    epochs: int = setting(
        10, "passes over the training images", kind="result", low=1, high=MAX_EPOCHS
    )
    batch_size: int = setting(
        64, "images per step, per process", kind="result", low=1, high=MAX_IMAGES
    )
    lr: float = setting(1e-3, "peak learning rate (AdamW)", kind="result", above=0.0)
    weight_decay: float = setting(0.05, "AdamW weight decay", kind="result", low=0.0)
    warmup_epochs: float = setting(
        1.0, "linear warm-up, then a cosine to 0 (at most --epochs)", kind="result", low=0.0
    )
    curriculum_epochs: int = setting(
        0, "the first N epochs train on the distance-1 training images only (the far-relation "
        "tasks, whose images carry their distance); the rest on every image", kind="result",
        low=0, high=MAX_EPOCHS,
    )  # fmt: skip
    label_smoothing: float = setting(
        0.1, "label smoothing of the training loss", kind="result", low=0.0, high=1.0
    )
    clip_grad: float = setting(5.0, "gradient norm clip; 0 turns it off", kind="result", low=0.0)
    seed: int = setting(
        0, "weights, data order, augmentation", kind="result", low=0, high=MAX_SEED,
        grid=("seeds", (0, 1, 2)),
    )  # fmt: skip
    data_seed: int = setting(
        0, "which images the generated tasks draw", kind="result", low=0, high=MAX_SEED
    )
    train_size: int | None = setting(
        None, "training images (default: all of CIFAR-10, 5000 generated)", kind="result", low=1,
        high=MAX_IMAGES,
    )  # fmt: skip
    test_size: int | None = setting(
        None, "test images (default: all of CIFAR-10, 1000 generated)", kind="result", low=1,
        high=MAX_IMAGES,
    )  # fmt: skip
    img_size: int | None = setting(
        None, "input side in px, a multiple of 8 (default: the model config's); the generated "
        "tasks are drawn at that size", kind="result", low=IMAGE_SIZE, high=512, model=True,
    )  # fmt: skip
    window_size: int | None = setting(
        None, "attention window side in tokens (default: the model config's)", kind="result",
        low=1, high=512, model=True,
    )  # fmt: skip
    rendering: str = setting(
        "scaled", "how a generated task is drawn above 32 px: scaled (the 32-px scene, more "
        "pixels) or world (a larger canvas, objects as at 32 px)", kind="result",
        choices=RENDERINGS,
    )  # fmt: skip
    device: str = setting(
        "auto", "auto (CUDA, else MPS, else CPU), cpu, mps, cuda or cuda:N", kind="hardware",
        check=parse_device,
    )  # fmt: skip
    precision: str = setting(
        "auto",
        "auto: bf16 on GPUs that compute it natively (compute capability >= 8.0), "
        "fp16 on other CUDA GPUs, fp32 elsewhere",
        kind="hardware",
        choices=PRECISIONS,
    )
    compile: bool = setting(False, "torch.compile the model", kind="speed")
    num_workers: int = setting(
        0, "DataLoader worker processes", kind="speed", low=0, high=MAX_PROCESSES
    )
    threads: int | None = setting(
        None, "torch.set_num_threads (default: torch's)", kind="speed", low=1, high=MAX_PROCESSES
    )
    log_every: int = setting(
        50, "steps between loss checks and progress updates (one host sync each)", kind="speed",
        low=1, high=MAX_STEPS,
    )  # fmt: skip
    data_dir: str = setting(str(DEFAULT_DATA_DIR), "where CIFAR-10 is (or goes)", kind="speed")
    download: bool = setting(False, "download CIFAR-10 if it is missing", kind="speed")
    out: str = setting("runs/train", "folder for checkpoint and metrics", kind="process")
    resume: bool = setting(False, "continue the run saved in --out", kind="process")
    progress: bool = setting(True, "progress bars", kind="process")
    stop_after_epochs: int | None = setting(
        None, "stop after N epochs of this process (continue later with --resume)",
        kind="process", low=1, high=MAX_EPOCHS,
    )  # fmt: skip
    dump_rank_state: bool = setting(
        False, "debug: every rank saves its final weights to OUT/rank<R>_state.pt", kind="process"
    )

    def __post_init__(self) -> None:
        # A position's name (a record, a plan, a caller) is read once, here (frozen: hence
        # object.__setattr__); every later use holds the Position.
        object.__setattr__(self, "pos", check_setting("pos", self.pos))
        _check_config(self)


def config_fields(*kinds: str) -> list[Field]:
    """The fields of ``kinds`` (all of them when none is given), in declaration order."""
    return [f for f in fields(TrainConfig) if not kinds or f.metadata["kind"] in kinds]


def _types(cls: type | None = None) -> dict[str, tuple[type, bool, bool]]:
    """``name -> (base type, None allowed, several values)`` from ``cls``'s annotations
    (``int | None`` -> ``(int, True, False)``, ``tuple[int, ...]`` -> ``(int, False, True)``)."""
    found = {}
    for name, hint in typing.get_type_hints(cls or TrainConfig).items():
        if typing.get_origin(hint) is tuple:
            found[name] = (typing.get_args(hint)[0], False, True)
            continue
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        found[name] = (args[0], True, False) if args else (hint, False, False)
    return found


def check_setting(name: str, value: object, cls: type | None = None) -> Any:
    """Raise ``TypeError``/``ValueError`` naming setting ``name`` of ``cls`` (by default
    :class:`TrainConfig`; any dataclass of :func:`setting` fields), ``value`` and the rule. A
    field of several values (``tuple[int, ...]``) takes a non-empty sequence without repeats,
    each value checked by the field's rule."""
    cls = cls or TrainConfig
    meta = next(f for f in fields(cls) if f.name == name).metadata
    base, optional, many = _types(cls)[name]
    if many:
        if isinstance(value, (str, bytes)) or not isinstance(value, Sequence) or not value:
            raise TypeError(f"{name} must be a non-empty sequence, got {value!r}")
        repeated = sorted({v for v in value if list(value).count(v) > 1}, key=str)
        if repeated:
            raise ValueError(f"{name} must not repeat a value (each counts once), got {value!r}")
        for v in value:
            _check_one(name, v, meta, base)
        return value
    if value is None and optional:
        return value
    return _check_one(name, value, meta, base)


def _check_one(name: str, value: Any, meta: Any, base: type) -> Any:
    if base is Position:  # a name of POS_CHOICES, read by the one parser
        return Position.parse(value)
    if meta["choices"] is not None:
        if value not in meta["choices"]:
            raise ValueError(f"{name} must be one of {list(meta['choices'])}, got {value!r}")
        return value
    rule = _rule(meta)
    if base is bool:
        if not isinstance(value, bool):
            raise TypeError(f"{name} must be True or False, got {value!r}")
    elif base is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"{name} must be an int{rule}, got {value!r}")
    elif base is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TypeError(f"{name} must be a finite number{rule}, got {value!r}")
        if not math.isfinite(value):
            raise ValueError(f"{name} must be a finite number{rule}, got {value!r}")
    elif not isinstance(value, base):
        raise TypeError(f"{name} must be a {base.__name__}, got {value!r}")
    low, high, above = meta["low"], meta["high"], meta["above"]
    outside = (low is not None and value < low) or (high is not None and value > high)
    if outside or (above is not None and value <= above):
        kind = "an int" if base is int else "a finite number"
        raise ValueError(f"{name} must be {kind}{rule}, got {value!r}")
    if meta["check"] is not None:
        meta["check"](value)
    return value


def check_fields(obj: Any, skip: Iterable[str] = ()) -> None:
    """:func:`check_setting` for every :func:`setting` field of the dataclass ``obj``."""
    for f in fields(obj):
        if "kind" in f.metadata and f.name not in skip:
            check_setting(f.name, getattr(obj, f.name), type(obj))


def _rule(meta: dict[str, Any]) -> str:
    """The allowed range, whole: ``in [low, high]``, ``in (above, high]``, ``>= low``, ..."""
    low, high, above = meta["low"], meta["high"], meta["above"]
    start = f"[{low}" if low is not None else f"({above}" if above is not None else None
    if start is not None and high is not None:
        return f" in {start}, {high}]"
    if start is not None:
        return f" >= {low}" if low is not None else f" > {above}"
    return f" <= {high}" if high is not None else ""


def _check_config(cfg: TrainConfig) -> None:
    """Check every setting (see :func:`check_setting`), then the rules between settings, then
    the model they describe (``companion.swin_configs.model_config``: ``pos`` with the
    ``variant``'s options, sizes)."""
    check_fields(cfg)
    if cfg.warmup_epochs > cfg.epochs:
        raise ValueError(
            f"warmup_epochs must be a number in [0, epochs={cfg.epochs}], got {cfg.warmup_epochs}"
        )
    if cfg.curriculum_epochs > cfg.epochs:
        raise ValueError(
            f"curriculum_epochs must be an int in [0, epochs={cfg.epochs}], "
            f"got {cfg.curriculum_epochs}"
        )
    if cfg.dataset == "cifar10":
        if cfg.img_size not in (None, IMAGE_SIZE) or cfg.rendering != "scaled":
            raise ValueError(
                f"img_size and rendering must keep their defaults for cifar10 (its photographs "
                f"exist at {IMAGE_SIZE} px only), got img_size={cfg.img_size!r}, "
                f"rendering={cfg.rendering!r}"
            )
    else:
        if cfg.img_size is not None and cfg.img_size % 8:
            raise ValueError(
                f"img_size must be a multiple of 8 (every grid-cell cell and relation patch whole "
                f"pixels), got {cfg.img_size}"
            )
        check_rendering(cfg.rendering, cfg.dataset)
    if cfg.curriculum_epochs and cfg.dataset not in FAR_TASKS:
        raise ValueError(
            f"curriculum_epochs needs a dataset whose images carry their distance "
            f"({', '.join(FAR_TASKS)}), got dataset={cfg.dataset!r}"
        )
    try:
        model_config(cfg.model_config_name, **model_options(cfg), **variant_overrides(cfg.variant))
    except (TypeError, ValueError) as exc:
        raise type(exc)(
            f"{exc} (the model of config={cfg.model_config_name!r}, pos={str(cfg.pos)!r}, "
            f"variant={cfg.variant!r})"
        ) from None


#: Settings recorded (and given on the command line) under another name than their field's:
#: ``model_config_name`` was the field ``config`` when the published runs recorded it, and their
#: commands say ``--config``; records keep that key, so a published run is still found.
RECORDED_AS = {"model_config_name": "config"}


def recorded_settings(cfg: TrainConfig, kinds: Iterable[str] = KINDS[:3]) -> dict[str, Any]:
    """The settings a run records (by default all but the ``process`` ones), as plain values
    (a ``Position`` by its name), under their recorded names (``RECORDED_AS``)."""
    values = {RECORDED_AS.get(f.name, f.name): getattr(cfg, f.name) for f in config_fields(*kinds)}
    return {k: str(v) if isinstance(v, Position) else v for k, v in values.items()}


def settings_from_record(recorded: dict[str, Any]) -> dict[str, Any]:
    """``recorded_settings``' inverse: ``TrainConfig``'s keyword arguments from a record's
    settings, recorded names read back as fields (``RECORDED_AS``), keys of no field left out."""
    names = {RECORDED_AS.get(f.name, f.name): f.name for f in fields(TrainConfig)}
    return {names[k]: v for k, v in recorded.items() if k in names}


def data_size(cfg: TrainConfig) -> int:
    """The side (px) the run's images are drawn at: ``img_size``, 32 px by default."""
    return cfg.img_size or IMAGE_SIZE


def model_options(cfg: TrainConfig) -> dict[str, Any]:
    """The ``model=True`` settings that are set, as keyword arguments for the model."""
    chosen = {f.name: getattr(cfg, f.name) for f in fields(cfg) if f.metadata["model"]}
    return {k: v for k, v in chosen.items() if v is not None}


# --------------------------------------------------------------------------- command line


def add_config_arguments(
    parser: argparse.ArgumentParser, kinds: Sequence[str] = KINDS, grid: bool = False
) -> None:
    """One flag per field of ``kinds``: ``--batch-size`` for ``batch_size``, ``--compile`` /
    ``--no-compile`` for a bool. With ``grid=True`` a field with ``grid=(plural, default)``
    becomes ``--<plural>`` taking one or more values (the ablation's axes)."""
    add_arguments(parser, TrainConfig, config_fields(*kinds), grid)


def add_arguments(
    parser: argparse.ArgumentParser, cls: type, chosen: Iterable[Field], grid: bool = False
) -> None:
    """One flag per :func:`setting` field in ``chosen`` of the dataclass ``cls`` (see
    :func:`add_config_arguments`); a field without a default is a required flag, a field of
    several values (``tuple[int, ...]``) takes one or more."""
    types = _types(cls)
    for f in chosen:
        meta, (base, _, many) = f.metadata, types[f.name]
        read: Callable[[str], Any] = base  # argparse's type: what turns the text into a value
        default = f.default if f.default is not MISSING else None
        on_grid = grid and meta["grid"] is not None
        if on_grid:  # the grid's values run, not the single field's default
            default = " ".join(map(str, meta["grid"][1]))
        typed = " ".join(map(str, default)) if isinstance(default, tuple) else default
        shown = default is not None and "default" not in meta["help"] and base is not bool
        text = f"{meta['help']} (default: {typed})" if shown else meta["help"]  # as typed
        common = {"dest": f.name, "help": text, "choices": meta["choices"]}
        if base is Position:  # read once, here: the run holds the value from the start
            read, common["choices"] = _position_flag, [Position.parse(p) for p in POS_CHOICES]
            common["metavar"] = "{" + ",".join(POS_CHOICES) + "}"  # every registered code
        flag = "--" + RECORDED_AS.get(f.name, f.name).replace("_", "-")
        if on_grid:
            plural, values = meta["grid"]
            parser.add_argument(f"--{plural}", nargs="+", type=read, default=list(values), **common)
        elif many:
            parser.add_argument(flag, nargs="+", type=read, default=list(default or ()), **common)
        elif base is bool:
            parser.add_argument(
                flag, action=argparse.BooleanOptionalAction, default=default, dest=f.name,
                help=f"{meta['help']} (default: {'on' if default else 'off'})",
            )  # fmt: skip
        elif f.default is MISSING:
            parser.add_argument(flag, type=read, required=True, dest=f.name, help=meta["help"])
        else:
            parser.add_argument(flag, type=read, default=default, **common)


def _position_flag(text: str) -> Position:
    """``--pos``'s type: ``Position.parse``, its error shown as argparse's."""
    try:
        return Position.parse(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def config_from_args(args: argparse.Namespace, **overrides: Any) -> TrainConfig:
    """A :class:`TrainConfig` from parsed flags (fields without a flag keep their default)."""
    values = {f.name: getattr(args, f.name) for f in fields(TrainConfig) if hasattr(args, f.name)}
    return TrainConfig(**{**values, **overrides})
