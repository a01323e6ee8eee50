"""The output folder of a run: checked before any work, locked while a process uses it.

``--out`` must be a folder this process can write (or create) holding nothing but this trainer's
own files. The lock is the operating system's (``filelock``: ``flock`` on POSIX, ``msvcrt`` on
Windows) on ``out/.lock``: two live processes can never both hold it, and a process that dies,
however it dies, releases it. Beside it the holder writes an owner note (``.lock.json``: PID, host,
start) that names it in the error a second process gets, and that it deletes on release: a note
found by the next holder means the last one died holding the lock, which is said in one line.
Temporary files left by a kill mid-write (``.checkpoint.pt.<random>.companion.tmp``, named so
that no user file looks like one) are removed under the lock.
"""

from __future__ import annotations

import json
import os
import re
import socket
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from filelock import FileLock, Timeout

from companion._io import TEMP_SUFFIX, atomic_write_json
from companion.train.checkpoint import CHECKPOINT

LOCK = ".lock"
OWNER = ".lock.json"
# Everything this trainer may leave in --out; anything else there belongs to someone else.
OWN_FILES = (CHECKPOINT, "metrics.json", "metrics.csv", LOCK, OWNER)
RANK_STATE = re.compile(r"rank\d+_state\.pt")
_OWN_NAMES = "|".join(re.escape(n) for n in (CHECKPOINT, "metrics.json", "metrics.csv", OWNER))
#: ``companion._io``'s temporary files of the files above (nothing else is deleted).
OWN_TEMP = re.compile(rf"\.({_OWN_NAMES}|rank\d+_state\.pt)\.\w+{re.escape(TEMP_SUFFIX)}")


def _is_own(name: str) -> bool:
    return name in OWN_FILES or bool(RANK_STATE.fullmatch(name) or OWN_TEMP.fullmatch(name))


def check_out_folder(out: Path, label: str = "--out") -> None:
    """Raise a one-line error naming ``label`` when no run can use ``out``: a file, a folder that
    cannot be written or created, or a folder holding files that are not this trainer's."""
    check_writable_folder(out, label)
    names = sorted(p.name for p in out.iterdir()) if out.is_dir() else []
    foreign = [n for n in names if not _is_own(n)]
    if foreign:
        raise FileExistsError(
            f"{label} {out} holds files this trainer did not write ({', '.join(foreign[:3])}"
            f"{', ...' if len(foreign) > 3 else ''}): choose an empty or new folder"
        )


def check_writable_folder(folder: Path, label: str) -> None:
    """Raise a one-line error naming ``label`` unless ``folder`` is, or can be made, a folder
    this process can write in (checked before any work, so a bad path costs nothing)."""
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise NotADirectoryError(f"{label} {folder} exists and is a file, not a folder")
    parent = next((p for p in (folder, *folder.parents) if p.exists()), Path.cwd())
    if not parent.is_dir():
        raise NotADirectoryError(f"{label} {folder} cannot be created: {parent} is a file")
    # Tried, not asked: os.access says yes to root everywhere, /proc and read-only mounts too.
    try:
        fd, probe = tempfile.mkstemp(prefix=".companion-write-test-", dir=parent)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise PermissionError(
            f"{label} {folder} is not writable (creating a file in {parent} failed: "
            f"{exc.strerror or exc})"
        ) from None


def check_run_state(out: Path, resume: bool) -> None:
    """A new run needs a folder without an earlier run's files; ``--resume`` needs a checkpoint.
    (Checked under the lock: only then can no other process be changing the folder.)"""
    names = {p.name for p in out.iterdir()} if out.is_dir() else set()
    if resume and CHECKPOINT not in names:
        raise FileNotFoundError(f"--resume: no checkpoint at {out / CHECKPOINT}")
    if not resume and CHECKPOINT in names:
        raise FileExistsError(
            f"{out / CHECKPOINT} exists: pass --resume to continue that run, or choose another "
            f"--out"
        )
    if not resume and {"metrics.json", "metrics.csv"} & names:
        raise FileExistsError(
            f"--out {out} holds the metrics of an earlier run: choose another --out (or delete "
            f"them)"
        )


class RunLock:
    """``with RunLock(out):`` holds the OS lock on ``out/.lock`` and cleans orphan temp files;
    ``label`` names the folder in messages (the flag that chose it)."""

    def __init__(self, out: Path, label: str = "--out") -> None:
        self.out = Path(out)
        self.label = label
        self.path = self.out / LOCK
        self.note = self.out / OWNER
        self.lock = FileLock(self.path, timeout=0)

    def __enter__(self) -> RunLock:
        try:
            self.out.mkdir(parents=True, exist_ok=True)
            self.lock.acquire()
        except Timeout:
            owner = self._owner() or {}
            raise BlockingIOError(
                f"{self.label} {self.out} is in use by process {owner.get('pid', '?')} on "
                f"{owner.get('host', '?')} (lock {self.path}); wait for it, or choose another "
                f"{self.label}"
            ) from None
        except PermissionError:
            raise PermissionError(f"{self.label} {self.out} is not writable") from None
        try:
            stale = self._owner()
            if stale is not None:  # its holder died without releasing: the OS released it
                pid, host = stale.get("pid", "?"), stale.get("host", "?")
                print(
                    f"{self.label} {self.out}: took over the lock of process {pid} on {host}, "
                    f"which ended without releasing it",
                    file=sys.stderr,
                    flush=True,
                )
            me = {"pid": os.getpid(), "host": socket.gethostname(), "since": time.time()}
            atomic_write_json(self.note, me)
            self._clean_temp_files()
        except BaseException:
            self.lock.release()
            raise
        return self

    def _owner(self) -> dict[str, Any] | None:
        """What the owner note says (``None``: no note; ``{}``: a note that cannot be read)."""
        try:
            owner = json.loads(self.note.read_text())
        except FileNotFoundError:
            return None
        except (OSError, ValueError):
            return {}
        return owner if isinstance(owner, dict) else {}

    def _clean_temp_files(self) -> None:
        for p in self.out.iterdir():
            if OWN_TEMP.fullmatch(p.name):
                p.unlink(missing_ok=True)

    def __exit__(self, *exc: object) -> None:
        if self.lock.is_locked:
            self.note.unlink(missing_ok=True)
            self.lock.release()
