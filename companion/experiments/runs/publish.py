"""Publishing a results folder as one unit: swapped in whole, never half-written or missing, never
with fewer or other files than the folder it replaces unless that is asked for, hashed
(``SHA256SUMS``, :mod:`companion.experiments.integrity`), one publisher at a time, and the
results derived from its runs (``results.DERIVED``: the resolution experiment's) kept only while
they match those runs by content hash."""

from __future__ import annotations

import ctypes
import glob
import json
import os
import shutil
import sys
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
from companion.experiments.results import DERIVED, load_results, run_sources


@contextmanager
def publish_lock(folder: Path) -> Iterator[Path]:
    """Hold the OS lock that serialises every publish to ``folder`` (the ablation's and the
    resolution experiment's), waiting for another publisher to finish; yields a staging folder of
    this process's own. The lock file sits beside ``folder`` (``.<name>.lock``,
    ``integrity.folder_lock``), not in it: the folder itself is swapped. Readers that a swap
    overtook take the same lock shared, so they wait for the publish to finish rather than read
    half of it. Staging folders that a killed publisher left are removed (under the lock nobody
    else is using one), and so is this one's if the publish does not finish."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    with folder_lock(folder):
        staging = folder.with_name(f".{folder.name}.staging-{os.getpid()}")
        try:
            for stale in folder.parent.glob(f".{glob.escape(folder.name)}.staging-*"):
                shutil.rmtree(stale, ignore_errors=True)
            check_intact(folder)
            yield staging
        finally:
            shutil.rmtree(staging, ignore_errors=True)  # what a refused or failed publish left


def check_intact(folder: Path) -> None:
    """Refuse to publish over ``folder`` when its files differ from its ``SHA256SUMS``: what a
    publish carries over (the predictions, derived results) or keeps would otherwise be hashed
    again as if it were what the runs wrote. (A folder without a hash list, published before
    folders were hashed, is left to ``python -m companion.experiments.runs.hash_results``.)"""
    if not (folder / MANIFEST).is_file():
        return
    differences = manifest_differences(folder)
    if differences:
        raise ValueError(
            f"{folder} was changed since it was published ({differences[0]}"
            f"{f', and {len(differences) - 1} more' if len(differences) > 1 else ''}): restore "
            f"it (e.g. git checkout -- {folder}), or publish under another --name"
        )


def check_nothing_lost(staging: Path, folder: Path, dropped: Iterable[str] = ()) -> None:
    """Refuse to replace ``folder`` with ``staging`` when a file of ``folder`` (but ``dropped``)
    would be lost. (A damaged file never reaches ``staging``: the ablation checks each bias table
    against the hash its run recorded before copying it.)"""
    before, after = file_hashes(folder) if folder.is_dir() else {}, file_hashes(staging)
    lost = sorted(set(before) - set(after) - set(dropped))
    if lost:
        raise ValueError(
            f"publishing would remove {len(lost)} file(s) from {folder} ({', '.join(lost[:4])}"
            f"{', ...' if len(lost) > 4 else ''}): publish under another --name, or remove "
            f"{folder} first if this is meant to replace it"
        )


def finish_staging(
    staging: Path, folder: Path, dropped: Iterable[str] = (), replace: bool = False
) -> None:
    """Hash ``staging`` (``SHA256SUMS``), check that it loses nothing of ``folder`` (but
    ``dropped``; anything when it is to ``replace`` it, :func:`check_nothing_lost`), swap it in
    (:func:`swap_in`) and rebuild the record table of its results tree
    (``companion.experiments.records.refresh_table``)."""
    if not replace:
        check_nothing_lost(staging, folder, dropped)
    write_manifest(staging)
    swap_in(staging, folder)
    refresh_table(folder)


def derived_state(folder: Path, sources: dict[str, Any] | None) -> str:
    """``"none"`` (no derived results in ``folder``), ``"current"`` (computed from exactly the
    runs ``sources`` names, by content hash) or ``"stale"``; ``sources=None``: only whether
    there are any (``"none"`` or ``"stale"``)."""
    path = folder / DERIVED[0]
    if not path.is_file():
        return "none"
    try:
        recorded = json.loads(path.read_text()).get("sources")
    except (ValueError, AttributeError, OSError):
        return "stale"
    return "current" if sources is not None and recorded == sources else "stale"


def check_derived(
    folder: Path,
    planned: set[str],
    fresh: bool,
    records: list[dict[str, Any]] | None,
) -> None:
    """Refuse to publish over derived results that would no longer match the published runs.
    Before training (``records=None``) what is already certain is refused: derived results that
    do not match the runs published now, or that a fresh start (``fresh``) or another set of run
    keys (``planned``) will not match; after it, derived results that do not match ``records``.
    A folder changed since it was published is refused as such first (:func:`check_intact`)."""
    check_intact(folder)
    if records is not None:
        stale = derived_state(folder, run_sources({"runs": records})) == "stale"
    else:
        try:
            published = run_sources(load_results(folder))
        except (OSError, ValueError, KeyError, TypeError):
            published = None
        state = derived_state(folder, published)
        changes = fresh or published is None or set(published) != planned
        stale = state == "stale" or (state == "current" and changes)
    if stale:
        raise ValueError(
            f"{folder / DERIVED[0]} was computed from other runs than the ones this ablation "
            f"would publish; pass --replace-derived to publish and remove it (then run python -m "
            f"companion.resolution_experiment --name {folder.name} again), or choose a new --name"
        )


def swap_in(staging: Path, folder: Path) -> None:
    """Make ``staging`` the new ``folder``: with Linux's ``renameat2(RENAME_EXCHANGE)`` the two
    swap in one step, so ``folder`` is never missing; elsewhere two renames (``folder`` is then
    briefly absent; :func:`restore_interrupted_swap` repairs a kill between them)."""
    if folder.exists() and _exchange(staging, folder):
        shutil.rmtree(staging)  # now the previous folder
        return
    old = folder.with_name(f".{folder.name}.old")
    shutil.rmtree(old, ignore_errors=True)
    if folder.exists():
        os.replace(folder, old)
    os.replace(staging, folder)
    shutil.rmtree(old, ignore_errors=True)


def _exchange(a: Path, b: Path) -> bool:
    """Swap the paths ``a`` and ``b`` atomically; ``False`` where the OS cannot."""
    if sys.platform != "linux":
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    at_fdcwd, rename_exchange = -100, 2
    done = renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange)
    return done == 0


def restore_interrupted_swap(folder: Path) -> None:
    """A kill between the two renames of :func:`swap_in` leaves only ``.<name>.old``."""
    old = folder.with_name(f".{folder.name}.old")
    if old.is_dir() and not folder.exists():
        os.replace(old, folder)
