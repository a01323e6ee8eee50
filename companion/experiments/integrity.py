"""A results folder read only as its runs wrote it: every file checked before it is used.

A published folder carries ``SHA256SUMS`` (``sha256sum -c SHA256SUMS`` checks it from a shell):
the sha256 of every file in it, written by the publish (or once afterwards for the folders from
before it: ``"hashed": "after the run"``). The readers go through :func:`verified_bytes`,
which reads the folder **whole** (:func:`read_folder`): every file listed is there and has its
hash, and a file not listed is refused too, so a folder reads as verified only when all of it
is what was published. A mismatch is one line naming the file (:class:`ResultsError`).

A publish swaps a folder in whole (``runs.publish.swap_in``). A reader reads one folder, never
half of the old and half of the new: the files are read through one handle on the directory,
and a reading that does not check out (a swap may have overtaken it) is read again under the
publish lock (:func:`folder_lock`, held shared), where no swap can happen; a loader reads each
folder once (:func:`whole_folders`).

A hash list guards against damage, not against an edit of a file and its hash together: what
the runs sealed (``record_sha256``, labels' hashes) is checked on top (``results.check_results``).
"""

from __future__ import annotations

import functools
import hashlib
import io
import json
import os
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

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
    return "record_sha256" in record and record["record_sha256"] == seal(record)["record_sha256"]


def file_hashes(folder: str | os.PathLike[str]) -> dict[str, str]:
    """``{relative path: sha256}`` of every file of ``folder`` but the hash list, in path order."""
    files = dict(_walk(Path(folder)))
    files.pop(MANIFEST, None)
    paths = sorted(files, key=lambda name: name.split("/"))
    return {name: hashlib.sha256(files[name]).hexdigest() for name in paths}


def _walk(folder: Path) -> Iterator[tuple[str, bytes]]:
    """``(relative path, bytes)`` of every file below ``folder`` but hidden names (locks, staging
    folders, temporary files), read through one handle on the directory (module docstring): a
    file the old folder loses to a swap while it is read is absent."""
    top = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        for where, dirs, names, at in os.fwalk(".", dir_fd=top):
            dirs[:] = [d for d in dirs if not d.startswith(".")]
            for name in (n for n in names if not n.startswith(".")):
                try:
                    fd = os.open(name, os.O_RDONLY, dir_fd=at)
                except FileNotFoundError:
                    continue
                with open(fd, "rb") as f:
                    yield Path(where, name).as_posix(), f.read()
    finally:
        os.close(top)


def write_manifest(folder: str | os.PathLike[str]) -> dict[str, str]:
    """Hash every file of ``folder`` into its ``SHA256SUMS`` (atomically); returns the hashes."""
    hashes = file_hashes(folder)
    atomic_write_text(Path(folder) / MANIFEST, "".join(f"{h}  {p}\n" for p, h in hashes.items()))
    return hashes


def _parse_manifest(data: bytes | None, folder: Path) -> dict[str, str]:
    """``folder``'s ``SHA256SUMS`` from its bytes (``None``: there is none) as ``{relative path:
    sha256}``."""
    path = folder / MANIFEST
    if data is None:
        raise ResultsError(
            f"{path} is missing: the files of {folder} cannot be checked; restore the folder "
            f"(e.g. from version control); one published before folders were hashed is "
            f"compared, checked without it, by python -m companion.experiments.runs.reproduction"
        )
    try:
        lines = data.decode("utf-8").splitlines()
    except UnicodeDecodeError:
        raise ResultsError(f"{path} cannot be read (UnicodeDecodeError)") from None
    hashes = {}
    for number, line in enumerate(lines, 1):
        digest, sep, name = line.partition("  ")
        if not sep or len(digest) != 64 or not name:
            raise ResultsError(f"{path} line {number} is not '<sha256>  <file>': {line[:80]!r}")
        hashes[name] = digest
    return hashes


def read_manifest(folder: str | os.PathLike[str]) -> dict[str, str]:
    """``folder``'s ``SHA256SUMS`` as ``{relative path: sha256}``: the hashes of the verified
    reading of the whole folder (:func:`verified_bytes`), which are the listed ones."""
    return {name: hashlib.sha256(data).hexdigest() for name, data in _snapshot(folder).items()}


def manifest_differences(folder: str | os.PathLike[str]) -> list[str]:
    """Every way ``folder``'s files differ from its ``SHA256SUMS``, one line each (none: intact)."""
    path = Path(folder) / MANIFEST
    listed = _parse_manifest(path.read_bytes() if path.is_file() else None, Path(folder))
    return _differences(listed, file_hashes(folder))


def _differences(listed: dict[str, str], found: dict[str, str]) -> list[str]:
    """How the files ``found`` (``{relative path: sha256}``) differ from the ``listed`` ones."""
    lines = [f"{name} is missing, though listed in {MANIFEST}" for name in listed.keys() - found]
    lines += [
        f"{name} is not listed in {MANIFEST}: not published" for name in found.keys() - listed
    ]
    lines += [
        f"{name} was changed or damaged since it was published"
        for name in listed.keys() & found.keys()
        if listed[name] != found[name]
    ]
    return sorted(lines)


# --------------------------------------------------------------------------- one whole reading


def _read_once(folder: Path) -> tuple[bytes | None, dict[str, bytes]]:
    """``(SHA256SUMS's bytes or None, {relative path: bytes})``: one reading of ``folder``."""
    files = dict(_walk(folder))
    return files.pop(MANIFEST, None), files


def read_folder(folder: str | os.PathLike[str]) -> dict[str, bytes]:
    """Every file of ``folder`` but the hash list, by relative path, read in one pass: exactly
    the files its ``SHA256SUMS`` lists, with their hashes; read again under the publish lock
    when it does not check out (module docstring)."""
    folder = Path(folder)
    if not folder.is_dir():
        raise ResultsError(f"{folder} is missing: no such results folder")

    def reading() -> dict[str, bytes]:
        manifest, files = _read_once(folder)
        found = {name: hashlib.sha256(data).hexdigest() for name, data in files.items()}
        differences = _differences(_parse_manifest(manifest, folder), found)
        if differences:
            raise ResultsError(f"{folder}/{differences[0]}")
        return files

    try:
        return reading()
    except ResultsError:
        pass  # read again, with no publish in progress
    with folder_lock(folder, shared=True):
        return reading()


#: Inside a :func:`whole_folders` call: its readings by folder, and the publish locks it holds
#: shared until it returns.
_PINNED: ContextVar[tuple[dict[str, dict[str, bytes]], ExitStack] | None] = ContextVar(
    "whole_folders", default=None
)
P = ParamSpec("P")
R = TypeVar("R")


def whole_folders(function: Callable[P, R]) -> Callable[P, R]:
    """Mark a loader that reads several files (of one folder or more): inside it, each folder is
    read once (:func:`read_folder`) and every file of it comes from that reading, so a publish
    cannot hand it the ``results.json`` of one folder and the curves of the next. Each folder's
    publish lock is held shared from its reading until the loader returns, so what the loader
    reads beside it (the record table a publish rebuilds after its swap) is of the same publish."""

    @functools.wraps(function)
    def reading_whole_folders(*args: P.args, **kwargs: P.kwargs) -> R:
        if _PINNED.get() is not None:  # inside another loader: its readings hold
            return function(*args, **kwargs)
        with ExitStack() as locks:
            token = _PINNED.set(({}, locks))
            try:
                return function(*args, **kwargs)
            finally:
                _PINNED.reset(token)

    return reading_whole_folders


def _snapshot(folder: str | os.PathLike[str]) -> dict[str, bytes]:
    pinned = _PINNED.get()
    if pinned is None:
        return read_folder(folder)
    snapshots, locks = pinned
    key = os.path.abspath(folder)
    if key not in snapshots:
        locks.enter_context(folder_lock(folder, shared=True))
        snapshots[key] = read_folder(folder)
    return snapshots[key]


def verified_bytes(folder: str | os.PathLike[str], name: str) -> bytes:
    """The bytes of ``folder/name``, from a reading of the whole folder checked against its
    ``SHA256SUMS`` (:func:`read_folder`)."""
    files = _snapshot(folder)
    if name not in files:
        raise ResultsError(f"{Path(folder) / name} is not listed in {Path(folder) / MANIFEST}: "
                           f"not published")  # fmt: skip
    return files[name]


def verified_json(folder: str | os.PathLike[str], name: str) -> Any:
    """``folder/name`` as JSON, checked against ``SHA256SUMS``."""
    return _decoded(folder, name, json.loads)


def verified_tensors(folder: str | os.PathLike[str], name: str) -> Any:
    """``folder/name``, a ``torch.save`` file of tensors, checked against ``SHA256SUMS`` and
    loaded with ``weights_only=True``."""
    return _decoded(
        folder, name, lambda data: torch.load(io.BytesIO(data), "cpu", weights_only=True)
    )


def _decoded(folder: str | os.PathLike[str], name: str, decode: Callable[[bytes], Any]) -> Any:
    data = verified_bytes(folder, name)
    try:
        return decode(data)
    except Exception as exc:  # any reason the decoder gives: the file is not what was published
        raise ResultsError(f"{Path(folder) / name} cannot be read ({type(exc).__name__}: "
                           f"{exc})") from None  # fmt: skip


# --------------------------------------------------------------------------- the publish lock


#: The lock files each thread of this process holds exclusively, with the thread's id.
_HELD: set[tuple[str, int]] = set()


@contextmanager
def folder_lock(folder: str | os.PathLike[str], shared: bool = False) -> Iterator[None]:
    """Hold ``folder``'s publish lock (``flock`` on ``.<name>.lock`` beside it, as the folder is
    swapped): exclusive for a publisher, shared for a reader, which then sees no swap; either
    says on stderr when it waits for a publish. A reader does not create the lock (a folder
    nobody published through needs none); a lock this thread holds already is not taken again
    (it would wait on itself)."""
    import fcntl  # POSIX only, as os.fwalk, which every reading of a folder goes through

    path = Path(folder).with_name(f".{Path(folder).name}.lock")
    mine = (str(path), threading.get_ident())
    if mine in _HELD or (shared and not path.is_file()):
        yield
        return
    held = set() if shared else {mine}
    fd = os.open(path, os.O_RDONLY if shared else os.O_RDWR | os.O_CREAT, 0o666)
    mode = fcntl.LOCK_SH if shared else fcntl.LOCK_EX
    try:
        try:
            fcntl.flock(fd, mode | fcntl.LOCK_NB)
        except BlockingIOError:
            print(f"waiting for another process publishing {folder}", file=sys.stderr, flush=True)
            fcntl.flock(fd, mode)
        _HELD.update(held)
        try:
            yield
        finally:
            _HELD.difference_update(held)
    finally:
        os.close(fd)  # releases the lock
