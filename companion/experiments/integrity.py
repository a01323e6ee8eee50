"""A results folder read only as its runs wrote it: every file checked before it is used.

A published folder carries ``SHA256SUMS`` (``sha256sum -c SHA256SUMS`` checks it from a shell):
the sha256 of every file in it, written by the publish (or once afterwards by
``runs.hash_results``, which marks the header so). The readers go through :func:`verified_bytes`,
which reads the folder **whole** (:func:`read_folder`): every file listed is there and has its
hash, and a file not listed is refused too, so a folder reads as verified only when all of it
is what was published. A mismatch is one line naming the file (:class:`ResultsError`).

A publish swaps a folder in whole (``runs.publish.swap_in``). A reader reads one folder, never
half of the old and half of the new: the files are read through one handle on the directory,
and a reading that does not check out (a swap may have overtaken it) is read again under the
publish lock (:func:`folder_lock`, held shared), where no swap can happen. Inside a function
marked :func:`whole_folders` (the loaders), every file of a folder comes from the one reading of
it.

A hash list guards against damage, not against an edit of a file and its hash together: what
the runs sealed (``record_sha256``, labels' hashes) is checked on top (:func:`check_test_sets`).
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
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

import torch

from companion._io import atomic_write_text, file_sha256, json_sha256

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


def _hidden(rel: Path) -> bool:
    """Locks, staging folders and temporary files: never part of a published folder."""
    return any(part.startswith(".") for part in rel.parts)


def file_hashes(folder: str | os.PathLike[str]) -> dict[str, str]:
    """``{relative path: sha256}`` of every file below ``folder``, but the hash list itself and
    hidden names (locks, staging folders, temporary files)."""
    root = Path(folder)
    found = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if path.is_file() and rel.as_posix() != MANIFEST and not _hidden(rel):
            found[rel.as_posix()] = file_sha256(path)
    return found


def write_manifest(folder: str | os.PathLike[str]) -> dict[str, str]:
    """Hash every file of ``folder`` into its ``SHA256SUMS`` (atomically); returns the hashes."""
    hashes = file_hashes(folder)
    atomic_write_text(Path(folder) / MANIFEST, "".join(f"{h}  {p}\n" for p, h in hashes.items()))
    return hashes


def parse_manifest(text: str, path: Path) -> dict[str, str]:
    """A ``SHA256SUMS``'s ``text`` (``path`` names it in errors) as ``{relative path: sha256}``."""
    hashes = {}
    for number, line in enumerate(text.splitlines(), 1):
        digest, sep, name = line.partition("  ")
        if not sep or len(digest) != 64 or not name:
            raise ResultsError(f"{path} line {number} is not '<sha256>  <file>': {line[:80]!r}")
        hashes[name] = digest
    return hashes


def _no_manifest(folder: str | os.PathLike[str]) -> ResultsError:
    return ResultsError(
        f"{Path(folder) / MANIFEST} is missing: the files of {folder} cannot be checked; if it is "
        f"a folder published before files were hashed, hash it once with python -m "
        f"companion.experiments.runs.hash_results {folder}"
    )


def read_manifest(folder: str | os.PathLike[str]) -> dict[str, str]:
    """``folder``'s ``SHA256SUMS`` as ``{relative path: sha256}`` (inside :func:`whole_folders`,
    the one of the folder's reading)."""
    pinned = _PINNED.get()
    if pinned is not None and _key(folder) in pinned.snapshots:
        return dict(pinned.snapshots[_key(folder)].listed)
    path = Path(folder) / MANIFEST
    if not path.is_file():
        raise _no_manifest(folder)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ResultsError(f"{path} cannot be read ({type(exc).__name__})") from None
    return parse_manifest(text, path)


def manifest_differences(folder: str | os.PathLike[str]) -> list[str]:
    """Every way ``folder``'s files differ from its ``SHA256SUMS``, one line each (none: intact)."""
    listed, found = read_manifest(folder), file_hashes(folder)
    lines = [f"{name}: listed in {MANIFEST} but missing" for name in listed.keys() - found.keys()]
    lines += [f"{name}: not listed in {MANIFEST}" for name in found.keys() - listed.keys()]
    lines += [
        f"{name}: changed since it was hashed"
        for name in listed.keys() & found.keys()
        if listed[name] != found[name]
    ]
    return sorted(lines)


# --------------------------------------------------------------------------- one whole reading


@dataclass(frozen=True)
class Snapshot:
    """One reading of a published folder, checked whole: ``files`` (every file but the hash
    list, by relative path) are exactly the ones ``listed`` (its ``SHA256SUMS``) names, each
    with its hash."""

    folder: Path
    files: dict[str, bytes]
    listed: dict[str, str]


def _read_once(folder: Path) -> tuple[bytes | None, dict[str, bytes]]:
    """``(SHA256SUMS's bytes or None, {relative path: bytes})``, every file read through one
    handle on the directory, so a swap of ``folder`` cannot mix two folders (a file the old
    folder loses while it is read is simply absent)."""
    top = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    manifest, files = None, {}
    try:
        for where, dirs, names, at in os.fwalk(".", dir_fd=top):
            dirs[:] = [d for d in dirs if not d.startswith(".")]
            for name in names:
                rel = Path(where, name)
                if _hidden(rel):
                    continue
                try:
                    fd = os.open(name, os.O_RDONLY, dir_fd=at)
                except FileNotFoundError:
                    continue
                with open(fd, "rb") as f:
                    data = f.read()
                if rel.as_posix() == MANIFEST:
                    manifest = data
                else:
                    files[rel.as_posix()] = data
    finally:
        os.close(top)
    return manifest, files


def _checked(folder: Path, manifest: bytes | None, files: dict[str, bytes]) -> Snapshot:
    """The reading ``files`` as a :class:`Snapshot`, or the first way it is not the published
    folder: a file listed but missing, changed, or not listed."""
    if manifest is None:
        raise _no_manifest(folder)
    try:
        listed = parse_manifest(manifest.decode("utf-8"), folder / MANIFEST)
    except UnicodeDecodeError:
        raise ResultsError(f"{folder / MANIFEST} cannot be read (UnicodeDecodeError)") from None
    for name, digest in listed.items():
        if name not in files:
            raise ResultsError(f"{folder / name} is missing (it is listed in {MANIFEST})")
        if hashlib.sha256(files[name]).hexdigest() != digest:
            raise ResultsError(
                f"{folder / name} was changed or damaged (its sha256 is not the one published)"
            )
    extra = sorted(files.keys() - listed.keys())
    if extra:
        raise ResultsError(
            f"{folder / extra[0]} is not listed in {folder / MANIFEST}: not published (a "
            f"published folder holds only the files it was published with)"
        )
    return Snapshot(folder, files, listed)


def read_folder(folder: str | os.PathLike[str]) -> Snapshot:
    """Every file of ``folder``, read in one pass and checked against its ``SHA256SUMS``. A
    reading that does not check out may be one a publish's swap overtook (the old folder's files
    are removed as it is read), so it is read once more holding the publish lock shared
    (:func:`folder_lock`): no swap happens then, and what is refused is what the folder holds,
    never a false alarm from a publish in progress."""
    folder = Path(folder)
    if not folder.is_dir():
        raise ResultsError(f"{folder} is missing: no such results folder")
    try:
        return _checked(folder, *_read_once(folder))
    except ResultsError:
        pass  # read again, with no publish in progress
    with folder_lock(folder, shared=True):
        return _checked(folder, *_read_once(folder))


@dataclass(frozen=True)
class _Readings:
    """The readings of a :func:`whole_folders` call, by folder, and the publish locks it holds
    shared until it returns."""

    snapshots: dict[str, Snapshot]
    locks: ExitStack


_PINNED: ContextVar[_Readings | None] = ContextVar("whole_folders", default=None)
P = ParamSpec("P")
R = TypeVar("R")


def _key(folder: str | os.PathLike[str]) -> str:
    return os.path.abspath(folder)


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
            token = _PINNED.set(_Readings({}, locks))
            try:
                return function(*args, **kwargs)
            finally:
                _PINNED.reset(token)

    return reading_whole_folders


def _snapshot(folder: str | os.PathLike[str]) -> Snapshot:
    pinned = _PINNED.get()
    if pinned is None:
        return read_folder(folder)
    key = _key(folder)
    if key not in pinned.snapshots:
        pinned.locks.enter_context(folder_lock(folder, shared=True))
        pinned.snapshots[key] = read_folder(folder)
    return pinned.snapshots[key]


def verified_bytes(folder: str | os.PathLike[str], name: str) -> bytes:
    """The bytes of ``folder/name``, from a reading of the whole folder checked against its
    ``SHA256SUMS`` (:func:`read_folder`)."""
    snapshot = _snapshot(folder)
    if name not in snapshot.listed:
        raise ResultsError(f"{Path(folder) / name} is not listed in {Path(folder) / MANIFEST}: "
                           f"not published")  # fmt: skip
    return snapshot.files[name]


def verified_json(folder: str | os.PathLike[str], name: str) -> Any:
    """``folder/name`` as JSON, checked against ``SHA256SUMS``."""
    data = verified_bytes(folder, name)
    try:
        return json.loads(data)
    except ValueError as exc:
        raise ResultsError(f"{Path(folder) / name} is not JSON ({exc})") from None


def verified_tensors(folder: str | os.PathLike[str], name: str) -> Any:
    """``folder/name``, a ``torch.save`` file of tensors, checked against ``SHA256SUMS`` and
    loaded with ``weights_only=True``."""
    data = verified_bytes(folder, name)
    try:
        return torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)
    except Exception as exc:  # any reason torch gives: the file is not what was published
        raise ResultsError(
            f"{Path(folder) / name} cannot be loaded ({type(exc).__name__})"
        ) from None


# --------------------------------------------------------------------------- the publish lock


def lock_file(folder: str | os.PathLike[str]) -> Path:
    """The lock of ``folder``'s publishes: ``.<name>.lock`` beside it (the folder is swapped)."""
    return Path(folder).with_name(f".{Path(folder).name}.lock")


#: The lock files each thread of this process holds exclusively, with the thread's id (a thread
#: never waits on its own lock).
_HELD: set[tuple[str, int]] = set()


@contextmanager
def folder_lock(folder: str | os.PathLike[str], shared: bool = False) -> Iterator[None]:
    """Hold ``folder``'s publish lock: exclusive for a publisher, shared for a reader, which then
    sees no swap; either says on stderr when it waits for a publish. A reader does not create the
    lock (a folder nobody published through it needs none); a lock this thread holds already is
    not taken again. Where the OS has no ``fcntl`` (Windows) the publisher takes ``filelock``'s
    lock and a reader none."""
    path = lock_file(folder)
    waiting = f"waiting for another process publishing {folder}"
    try:
        import fcntl
    except ImportError:  # Windows
        yield from _portable_lock(path, shared, waiting)
        return
    mine = (str(path), threading.get_ident())
    if mine in _HELD or (shared and not path.is_file()):
        yield  # held already by this thread (a lock of its own would wait on itself)
        return
    fd = os.open(path, os.O_RDONLY if shared else os.O_RDWR | os.O_CREAT, 0o666)
    mode = fcntl.LOCK_SH if shared else fcntl.LOCK_EX
    try:
        try:
            fcntl.flock(fd, mode | fcntl.LOCK_NB)
        except BlockingIOError:
            print(waiting, file=sys.stderr, flush=True)
            fcntl.flock(fd, mode)
        held = set() if shared else {mine}
        _HELD.update(held)
        try:
            yield
        finally:
            _HELD.difference_update(held)
    finally:
        os.close(fd)  # releases the lock


def _portable_lock(path: Path, shared: bool, waiting: str) -> Iterator[None]:
    if shared:
        yield
        return
    from filelock import FileLock, Timeout

    lock = FileLock(path)
    try:
        lock.acquire(timeout=0)
    except Timeout:
        print(waiting, file=sys.stderr, flush=True)
        lock.acquire()
    try:
        yield
    finally:
        lock.release()


# --------------------------------------------------------------------------- sealed labels


def check_test_sets(results: dict[str, Any], path: str | os.PathLike[str]) -> None:
    """Refuse a ``results.json`` (``path``) whose test labels are not the ones its runs were
    measured on: each ``test_sets`` entry must hash to its ``labels_sha256``, hold ``n`` labels
    whose most frequent one is its ``constant_answer``, and agree with the ``labels_sha256`` and
    ``n`` every run sealed into its record (so an edit of the labels with the hash list made to
    match, which would move every "constant answer" reading, is refused). A record that keeps no
    test sets has none to check."""
    if "test_sets" not in results:
        return
    try:
        for dataset, splits in results["test_sets"].items():
            for split, kept in splits.items():
                labels = kept["labels"]
                if hashlib.sha256(labels.encode()).hexdigest() != kept["labels_sha256"]:
                    raise ResultsError(f"{path}: the {dataset} {split} labels do not match "
                                       "their labels_sha256 (the labels were changed)")  # fmt: skip
                counts = [labels.count(c) for c in set(labels)]
                if kept["n"] != len(labels) or kept["constant_answer"] != max(counts) / len(labels):
                    raise ResultsError(f"{path}: the {dataset} {split} test set's n or constant "
                                       "answer is not its labels' (it was changed)")  # fmt: skip
        for run in results["runs"]:
            for split, got in run["splits"].items():
                kept = results["test_sets"][run["dataset"]][split]
                sealed = (got.get("labels_sha256", kept["labels_sha256"]), got["n"])
                if sealed != (kept["labels_sha256"], kept["n"]):  # (runs from before sealed none)
                    raise ResultsError(
                        f"{path}: the {run['dataset']} {split} labels are not the ones its runs "
                        f"sealed (labels_sha256 in their records): the test set was changed"
                    )
    except (KeyError, TypeError, AttributeError, ValueError) as exc:
        if isinstance(exc, ResultsError):
            raise
        raise ResultsError(f"{path}: its test sets cannot be read ({type(exc).__name__}: "
                           f"{exc})") from None  # fmt: skip
