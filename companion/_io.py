"""Atomic file writes: a crash or a kill mid-write never leaves a half-written file behind."""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO

#: Ends the name of every temporary file written here (``.<target>.<random>.companion.tmp``), so
#: that a cleaner can tell them from a user's own ``.tmp`` files.
TEMP_SUFFIX = ".companion.tmp"


def atomic_write(path: str | os.PathLike[str], write: Callable[[BinaryIO], object]) -> Path:
    """Call ``write(f)`` on a temporary file in the target's folder, fsync it, then rename it.

    ``os.replace`` is atomic on POSIX and Windows when both names are on one filesystem, which is
    why the temporary file is created beside the target rather than in ``/tmp``.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=TEMP_SUFFIX, dir=path.parent)
    try:
        # mkstemp creates the file 0600; give it the permissions an ordinary open() would.
        os.chmod(tmp, 0o666 & ~_current_umask())
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def _current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def atomic_write_text(path: str | os.PathLike[str], text: str) -> Path:
    """Write ``text`` (UTF-8) to ``path`` atomically."""
    return atomic_write(path, lambda f: f.write(text.encode("utf-8")))


def atomic_write_json(path: str | os.PathLike[str], obj: Any) -> Path:
    """Write ``obj`` as indented JSON to ``path`` atomically."""
    return atomic_write_text(path, json.dumps(obj, indent=2, sort_keys=True) + "\n")


def file_sha256(path: str | os.PathLike[str]) -> str:
    """The SHA-256 of a file's bytes (read in 1 MiB blocks)."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def json_sha256(obj: Any) -> str:
    """The SHA-256 of ``obj`` as canonical JSON (sorted keys, no spaces): a content hash that
    does not depend on how the file holding ``obj`` was indented."""
    text = json.dumps(obj, sort_keys=True, separators=(",", ":"), allow_nan=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
