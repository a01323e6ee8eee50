"""Checkpoints and metrics files: atomic writes, versioned and checked loads, random states.

A checkpoint holds only tensors and plain containers, so it loads with
``torch.load(..., weights_only=True)``: no code stored in a file can run on load.
"""

from __future__ import annotations

import csv
import io
import pickle
import random
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import torch

from companion._io import atomic_write, atomic_write_json, atomic_write_text

CHECKPOINT = "checkpoint.pt"
#: Bumped whenever the layout changes; a file of another version is refused, never guessed at.
CHECKPOINT_FORMAT = 2
CHECKPOINT_KEYS = (
    "format", "config", "code_sha256", "world_size", "epoch", "model", "optimizer", "scheduler",
    "scaler", "rng", "history",
)  # fmt: skip
METRIC_COLUMNS = (
    "epoch",
    "train_loss",
    "train_acc",
    "test_loss",
    "test_acc",
    "lr",
    "epoch_time_s",
    "images_per_s",
)


class CheckpointError(ValueError):
    """A checkpoint file that cannot be used; the message names the file and what is wrong."""


def save_checkpoint(path: Path, state: dict[str, Any]) -> None:
    """``torch.save`` to a temporary file beside ``path``, then rename: never half-written."""
    try:
        atomic_write(path, lambda f: torch.save(state, f))
    except RuntimeError as exc:  # torch's writer reports a failed write (e.g. a full disk) so
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise OSError(
            f"could not write {path} ({first}); is the disk full? the previous checkpoint, if "
            f"any, is unchanged"
        ) from None


def load_states(path: Path, saved: dict[str, Any], **parts: Any) -> None:
    """``part.load_state_dict(saved[name])`` for every ``name=part``; a state that does not fit
    (weights of another model, say) is a one-line ``CheckpointError`` naming the file."""
    for name, part in parts.items():
        try:
            part.load_state_dict(saved[name])
        except (RuntimeError, ValueError, KeyError, TypeError) as exc:
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            raise CheckpointError(
                f"{path}: its {name} state does not fit this run's {name} ({first}); was it "
                f"written by another version of the model?"
            ) from None


def load_checkpoint(path: Path) -> dict[str, Any]:
    """Load a checkpoint (``weights_only=True``) and check it; ``CheckpointError`` says why not."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no checkpoint at {path}")
    if path.stat().st_size == 0:
        raise CheckpointError(f"{path} is empty (0 bytes): delete it and start afresh")
    ckpt = _read(path)
    if not isinstance(ckpt, dict):
        raise CheckpointError(
            f"{path} holds a {type(ckpt).__name__}, not a companion-train checkpoint (a dict); "
            f"delete it and start afresh"
        )
    if "format" not in ckpt:
        shown = sorted(map(str, ckpt))[:5]
        raise CheckpointError(
            f"{path} is not a companion-train checkpoint (no 'format' entry; it has {shown}); "
            f"delete it and start afresh"
        )
    if ckpt["format"] != CHECKPOINT_FORMAT:
        raise CheckpointError(
            f"{path} has checkpoint format {ckpt['format']!r}, this trainer reads format "
            f"{CHECKPOINT_FORMAT}: resume it with the code that wrote it, or start afresh"
        )
    missing = [k for k in CHECKPOINT_KEYS if k not in ckpt]
    if missing:
        raise CheckpointError(f"{path} lacks {missing}: it is incomplete; start afresh")
    epochs = ckpt["config"].get("epochs") if isinstance(ckpt["config"], dict) else None
    epoch, history = ckpt["epoch"], ckpt["history"]
    sane = isinstance(epoch, int) and isinstance(epochs, int) and isinstance(history, list)
    if not sane or not 1 <= epoch <= epochs or len(history) != epoch:
        rows = len(history) if isinstance(history, list) else type(history).__name__
        raise CheckpointError(
            f"{path} claims epoch {epoch!r} of {epochs!r} with {rows} epochs of metrics: it was "
            f"not written by this trainer as it is; start afresh"
        )
    return ckpt


def _read(path: Path) -> Any:
    """``torch.load`` of a zip archive whose members match their CRC-32s. A damaged archive fails
    in many ways (``BadZipFile``, ``NotImplementedError`` for a flipped flag bit, ``RuntimeError``
    for a bit that claims encryption, ...): every one is a one-line ``CheckpointError``."""
    try:  # open it here: is_zipfile says "no" for a file it cannot open
        with open(path, "rb") as file:
            is_zip = zipfile.is_zipfile(file)  # and raises, for some broken end records
    except Exception as exc:
        raise _unreadable(path, exc) from None
    if not is_zip:
        raise CheckpointError(
            f"{path} is not a torch checkpoint (not a zip archive: truncated, or another kind of "
            f"file); delete it and start afresh"
        )
    _check_crc(path)
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as exc:
        raise CheckpointError(
            f"{path} holds objects that weights_only loading refuses ({_first_line(exc)}): not "
            f"a checkpoint this trainer wrote, or a damaged one; delete it and start afresh"
        ) from None
    except Exception as exc:
        raise _unreadable(path, exc) from None


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def _unreadable(path: Path, exc: Exception) -> CheckpointError:
    """The error for a checkpoint that could not be read: its first line, and what to do."""
    what = f"{type(exc).__name__}: {_first_line(exc)}"
    if isinstance(exc, PermissionError):
        return CheckpointError(f"{path} could not be read ({what}): check its permissions")
    return CheckpointError(
        f"{path} could not be read ({what}): it is damaged; delete it and start afresh"
    )


def _check_crc(path: Path) -> None:
    """Every member of the checkpoint's zip archive must match its stored CRC-32: flipped bytes
    inside the tensor data leave the archive's structure intact, and only this finds them."""
    try:
        with zipfile.ZipFile(path) as archive:
            bad = archive.testzip()
    except Exception as exc:
        raise _unreadable(path, exc) from None
    if bad is not None:
        raise CheckpointError(
            f"{path} is corrupted: its member {bad} does not match its CRC-32 (the bytes changed "
            f"after it was written); delete it and start afresh"
        )


def settings_differences(saved: dict[str, Any], now: dict[str, Any]) -> list[str]:
    """``"name: saved X, now Y"`` for every setting of ``now`` that ``saved`` records otherwise
    (the one comparison a resume and a reused ablation run both make)."""
    return [f"{k}: saved {saved.get(k)!r}, now {v!r}" for k, v in now.items() if saved.get(k) != v]


def check_resume_compatible(
    saved: dict[str, Any], now: dict[str, Any], world_size: int, path: Path
) -> None:
    """Refuse to resume with ``result`` settings (``now``) other than the checkpoint's."""
    diff = settings_differences(saved["config"], now)
    if saved["world_size"] != world_size:
        diff.append(f"world_size: saved {saved['world_size']}, now {world_size}")
    if diff:
        raise ValueError(f"--resume: settings differ from {path}'s ({', '.join(diff)})")


def rng_state(data_gen: torch.Generator, aug_gen: torch.Generator) -> dict[str, Any]:
    """Every random state of the process, as tensors and plain containers (``weights_only``)."""
    np_state: tuple[Any, ...] = np.random.get_state()  # type: ignore[assignment]
    return {
        "torch": torch.get_rng_state(),
        "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else [],
        "python": random.getstate(),
        "numpy": {
            "name": np_state[0],
            "keys": torch.from_numpy(np_state[1].astype(np.int64)),
            "pos": int(np_state[2]),
            "has_gauss": int(np_state[3]),
            "cached_gaussian": float(np_state[4]),
        },
        "data_order": data_gen.get_state(),
        "augment": aug_gen.get_state(),
    }


def set_rng_state(state: dict[str, Any], data_gen: torch.Generator, aug_gen: torch.Generator):
    """Restore what :func:`rng_state` saved."""
    torch.set_rng_state(state["torch"])
    if state["cuda"] and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])
    version, internal, gauss = state["python"]
    random.setstate((version, tuple(internal), gauss))
    n = state["numpy"]
    keys = n["keys"].numpy().astype(np.uint32)
    np.random.set_state((n["name"], keys, n["pos"], n["has_gauss"], n["cached_gaussian"]))
    data_gen.set_state(state["data_order"])
    aug_gen.set_state(state["augment"])


def write_metrics(out: Path, history: list[dict[str, float]], header: dict[str, Any]) -> None:
    """``metrics.json`` (header + one record per epoch) and ``metrics.csv``, both atomically."""
    atomic_write_json(out / "metrics.json", {**header, "epochs": history})
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=METRIC_COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows({k: row[k] for k in METRIC_COLUMNS} for row in history)
    atomic_write_text(out / "metrics.csv", buf.getvalue())


def checkpoint_state(
    header: dict[str, Any],
    epoch: int,
    parts: dict[str, Any],
    rng: dict[str, Any],
    history: list[dict[str, float]],
) -> dict[str, Any]:
    """Everything a continued run needs after ``epoch`` epochs; ``parts`` maps ``model``,
    ``optimizer``, ``scheduler`` and ``scaler`` to the objects whose ``state_dict`` is saved."""
    return {
        "format": CHECKPOINT_FORMAT,
        "config": header["config"],
        "code_sha256": header["code_sha256"],
        "world_size": header["world_size"],
        "epoch": epoch,
        **{name: part.state_dict() for name, part in parts.items()},
        "rng": rng,
        "history": history,
    }
