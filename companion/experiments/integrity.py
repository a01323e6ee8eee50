"""A results folder read only as its runs wrote it.

A published folder carries ``SHA256SUMS`` (``sha256sum -c SHA256SUMS`` checks it from a shell):
the sha256 of every file in it. A reader reads the folder whole and uses it only when it holds
exactly the files listed, with their hashes; anything else, a folder a publish swapped while it
was read included, is one ``ResultsError`` naming the file. A publish holds :func:`folder_lock`.
What the runs sealed (``record_sha256``) guards against an edit of a file and its hash together.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import torch

from companion._io import atomic_write_text, json_sha256

#: The hash list of a published folder.
MANIFEST = "SHA256SUMS"


class ResultsError(ValueError):
    """A results file that is missing, damaged or inconsistent; the message names it."""


def seal(record: dict[str, Any]) -> dict[str, Any]:
    """``record`` with ``record_sha256``: the content hash of everything else in it."""
    body = {k: v for k, v in record.items() if k != "record_sha256"}
    return {**body, "record_sha256": json_sha256(body)}


def is_sealed(record: dict[str, Any]) -> bool:
    """Whether ``record`` holds a ``record_sha256`` that matches the rest of it."""
    return record.get("record_sha256") == seal(record)["record_sha256"]


def _files(folder: Path) -> dict[str, bytes]:
    # Every file by relative path, in path order; not the hash list, hidden names (temporary
    # files) or a file a swap took away before it was read.
    files = {}
    for path in sorted(folder.rglob("*"), key=lambda p: p.relative_to(folder).parts):
        name = path.relative_to(folder).as_posix()
        hidden = any(part.startswith(".") for part in name.split("/"))
        if path.is_file() and name != MANIFEST and not hidden:
            with contextlib.suppress(FileNotFoundError):
                files[name] = path.read_bytes()
    return files


def file_hashes(folder: str | os.PathLike[str]) -> dict[str, str]:
    """``{relative path: sha256}`` of every file of ``folder`` but the hash list, in path order."""
    return {name: hashlib.sha256(data).hexdigest() for name, data in _files(Path(folder)).items()}


def write_manifest(folder: str | os.PathLike[str]) -> dict[str, str]:
    """Hash every file of ``folder`` into its ``SHA256SUMS`` (atomically); returns the hashes."""
    hashes = file_hashes(folder)
    atomic_write_text(Path(folder) / MANIFEST, "".join(f"{h}  {p}\n" for p, h in hashes.items()))
    return hashes


def manifest_differences(
    folder: str | os.PathLike[str], files: dict[str, bytes] | None = None
) -> list[str]:
    """Every way ``folder``'s files (or ``files``, as read) differ from its ``SHA256SUMS``."""
    path = Path(folder) / MANIFEST
    if not Path(folder).is_dir():
        raise ResultsError(f"{Path(folder)} is missing: no such results folder")
    if not path.is_file():
        raise ResultsError(f"{path} is missing: restore the folder (e.g. from git)")
    lines = path.read_text("utf-8", "replace").splitlines()
    listed = {name: digest for digest, _, name in (line.partition("  ") for line in lines)}
    found = {
        name: hashlib.sha256(data).hexdigest()
        for name, data in (files or _files(Path(folder))).items()
    }
    changed = [name for name in listed.keys() & found.keys() if listed[name] != found[name]]
    return sorted(
        [f"{name} is missing, though listed in {MANIFEST}" for name in listed.keys() - found]
        + [f"{name} is not listed in {MANIFEST}: not published" for name in found - listed.keys()]
        + [f"{name} was changed or damaged since it was published" for name in changed]
    )


def read_folder(folder: str | os.PathLike[str]) -> dict[str, bytes]:
    """Every file of ``folder`` but ``SHA256SUMS`` by relative path, read once and checked whole."""
    files = _files(Path(folder))
    differences = manifest_differences(folder, files)
    if differences:
        raise ResultsError(f"{Path(folder)}/{differences[0]}")
    return files


def verified(
    folder: str | os.PathLike[str], name: str, files: dict[str, bytes] | None = None
) -> Any:
    """``folder/name`` from ``files``, a :func:`read_folder` (by default a new one), decoded."""
    path, files = Path(folder) / name, read_folder(folder) if files is None else files
    if name not in files:
        raise ResultsError(f"{path} is not listed in {MANIFEST}: not published")
    decode = DECODERS.get(path.suffix, bytes.decode)
    try:
        return decode(files[name])
    except Exception as exc:  # any reason the decoder gives: the file is not what was published
        raise ResultsError(f"{path} cannot be read ({type(exc).__name__}: {exc})") from None


#: How :func:`verified` reads a file, by its suffix (any other: as text).
DECODERS: dict[str, Callable[[bytes], Any]] = {
    ".json": json.loads,
    ".pt": lambda data: torch.load(io.BytesIO(data), "cpu", weights_only=True),
}


@contextlib.contextmanager
def folder_lock(folder: str | os.PathLike[str]) -> Iterator[None]:
    """Hold the publish lock of ``folder`` (``flock`` on ``.<name>.lock`` beside it)."""
    import fcntl  # POSIX only; a reader takes no lock

    lock = Path(folder).with_name(f".{Path(folder).name}.lock")
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            print(f"waiting for another process publishing {folder}", file=sys.stderr, flush=True)
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock
