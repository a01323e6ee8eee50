"""Publishing a results folder as one unit: staged, hashed (``SHA256SUMS``), swapped in whole
under one exclusive lock, so that a kill at any moment leaves the old folder or the new one."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from companion.experiments.integrity import (
    MANIFEST,
    file_hashes,
    folder_lock,
    manifest_differences,
    write_manifest,
)
from companion.experiments.records import refresh_table
from companion.experiments.results import DERIVED


@contextmanager
def publish_lock(folder: Path) -> Iterator[Path]:
    """Hold the exclusive lock of ``folder`` and yield an empty staging folder beside it."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    with folder_lock(folder):
        old, staging = (folder.with_name(f".{folder.name}.{end}") for end in ("old", "staging"))
        if old.is_dir() and not folder.exists():  # a kill between the two renames of a swap
            os.replace(old, folder)
        shutil.rmtree(staging, ignore_errors=True)  # a killed publisher's: nobody else uses it
        try:
            check_intact(folder)
            yield staging
        finally:
            shutil.rmtree(staging, ignore_errors=True)


def check_intact(folder: Path) -> None:
    """Refuse to publish over a folder changed since its ``SHA256SUMS`` was written."""
    differences = manifest_differences(folder) if (folder / MANIFEST).is_file() else []
    if differences:
        raise ValueError(
            f"{folder} was changed since it was published ({differences[0]}): restore it "
            f"(e.g. git checkout -- {folder}), or publish under another --name"
        )


def finish_staging(staging: Path, folder: Path, dropped: Iterable[str] = ()) -> None:
    """Hash ``staging``, refuse it if a file of ``folder`` (but ``dropped``) would be lost, swap
    it in and rebuild the record table of its results tree."""
    before = file_hashes(folder) if folder.is_dir() else {}
    lost = sorted(set(before) - set(file_hashes(staging)) - set(dropped))
    if lost:
        raise ValueError(
            f"publishing would remove {len(lost)} file(s) from {folder} ({', '.join(lost[:4])}): "
            f"publish under another --name, or remove {folder} first to replace it"
        )
    write_manifest(staging)
    old = folder.with_name(f".{folder.name}.old")  # the old folder aside, then the new one in
    shutil.rmtree(old, ignore_errors=True)
    if folder.exists():
        os.replace(folder, old)
    os.replace(staging, folder)
    shutil.rmtree(old, ignore_errors=True)
    refresh_table(folder)


def derived_state(folder: Path, sources: dict[str, Any]) -> str:
    """``"none"`` (no derived results in ``folder``), ``"current"`` (computed from exactly the
    runs ``sources`` names, by content hash) or ``"stale"``."""
    path = folder / DERIVED[0]
    if not path.is_file():
        return "none"
    return "current" if json.loads(path.read_text()).get("sources") == sources else "stale"
