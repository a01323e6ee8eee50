"""A results folder read only as its runs wrote it: every file checked before it is used.

A published folder carries ``SHA256SUMS`` (the format of ``sha256sum``, so ``sha256sum -c
SHA256SUMS`` checks it from a shell): the sha256 of every file in it, written when the folder is
published (or, for a folder published before this, once afterwards by
``python -m companion.experiments.runs.hash_results``, which marks its header so). The readers
of :mod:`companion.experiments.results` and its neighbours go through :func:`verified_bytes`, so
a file that was changed, damaged, removed or never hashed is refused before a number is read
from it, in one line naming the file (:class:`ResultsError`).

A hash list guards against damage and accidents, not against someone who edits a file and its
hash together; what the runs themselves sealed (``record_sha256``: each run's record with its
per-image results and curve) is checked on top, by ``results.load_results``.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
from pathlib import Path
from typing import Any

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


def file_hashes(folder: str | os.PathLike[str]) -> dict[str, str]:
    """``{relative path: sha256}`` of every file below ``folder``, but the hash list itself and
    hidden names (locks, staging folders, temporary files)."""
    root = Path(folder)
    found = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        hidden = any(part.startswith(".") for part in rel.parts)
        if path.is_file() and rel.as_posix() != MANIFEST and not hidden:
            found[rel.as_posix()] = file_sha256(path)
    return found


def write_manifest(folder: str | os.PathLike[str]) -> dict[str, str]:
    """Hash every file of ``folder`` into its ``SHA256SUMS`` (atomically); returns the hashes."""
    hashes = file_hashes(folder)
    atomic_write_text(Path(folder) / MANIFEST, "".join(f"{h}  {p}\n" for p, h in hashes.items()))
    return hashes


def read_manifest(folder: str | os.PathLike[str]) -> dict[str, str]:
    """``folder``'s ``SHA256SUMS`` as ``{relative path: sha256}``."""
    path = Path(folder) / MANIFEST
    if not path.is_file():
        raise ResultsError(
            f"{path} is missing: the files of {folder} cannot be checked; if it is a folder "
            f"published before files were hashed, hash it once with python -m "
            f"companion.experiments.runs.hash_results {folder}"
        )
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ResultsError(f"{path} cannot be read ({type(exc).__name__})") from None
    hashes = {}
    for number, line in enumerate(text.splitlines(), 1):
        digest, sep, name = line.partition("  ")
        if not sep or len(digest) != 64 or not name:
            raise ResultsError(f"{path} line {number} is not '<sha256>  <file>': {line[:80]!r}")
        hashes[name] = digest
    return hashes


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


def verified_bytes(folder: str | os.PathLike[str], name: str) -> bytes:
    """The bytes of ``folder/name``, after checking them against ``SHA256SUMS``."""
    path = Path(folder) / name
    listed = read_manifest(folder).get(name)
    if listed is None:
        raise ResultsError(f"{path} is not listed in {Path(folder) / MANIFEST}: not published")
    if not path.is_file():
        raise ResultsError(f"{path} is missing (it is listed in {MANIFEST})")
    data = path.read_bytes()
    if hashlib.sha256(data).hexdigest() != listed:
        raise ResultsError(f"{path} was changed or damaged (its sha256 is not the one published)")
    return data


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
