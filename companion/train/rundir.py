"""The output folder of a run: checked before any work, locked while a process uses it.

``--out`` must be a folder this process can write (or create) holding nothing but this trainer's
own files. A lock file, created with ``O_EXCL`` and holding the owner's PID and host, makes a
second process on the same folder fail at once instead of silently replacing the first one's
files; a lock whose process is gone (a kill, a crash) is recognised as stale and taken over.
Temporary files left by a kill mid-write (``.checkpoint.pt.*.tmp``) are removed under the lock.
(A stale lock whose PID the OS has since given to another process looks alive: the error then
names that PID, so the user can check it and delete the lock.)
"""

from __future__ import annotations

import errno
import json
import os
import socket
import time
from pathlib import Path

from companion.train.checkpoint import CHECKPOINT

LOCK = ".lock"
# Everything this trainer may leave in --out; anything else there belongs to someone else.
OWN_FILES = (CHECKPOINT, "metrics.json", "metrics.csv", LOCK)


def _is_own(name: str) -> bool:
    temp = name.startswith(".") and name.endswith(".tmp")  # companion._io's temporary files
    rank_state = name.startswith("rank") and name.endswith("_state.pt")
    return name in OWN_FILES or temp or rank_state


def check_out_folder(out: Path) -> None:
    """Raise a one-line error naming ``--out`` when no run can use ``out``: a file, a folder that
    cannot be written or created, or a folder holding files that are not this trainer's."""
    if out.exists() and not out.is_dir():
        raise NotADirectoryError(f"--out {out} exists and is a file, not a folder")
    parent = next((p for p in (out, *out.parents) if p.exists()), Path.cwd())
    if not parent.is_dir():
        raise NotADirectoryError(f"--out {out} cannot be created: {parent} is a file")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise PermissionError(f"--out {out} is not writable ({parent} does not allow writing)")
    names = sorted(p.name for p in out.iterdir()) if out.is_dir() else []
    foreign = [n for n in names if not _is_own(n)]
    if foreign:
        raise FileExistsError(
            f"--out {out} holds files this trainer did not write ({', '.join(foreign[:3])}"
            f"{', ...' if len(foreign) > 3 else ''}): choose an empty or new folder"
        )


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
    """``with RunLock(out):`` holds ``out/.lock`` (PID and host) and cleans orphan temp files;
    ``label`` names the folder in messages (the flag that chose it)."""

    def __init__(self, out: Path, label: str = "--out") -> None:
        self.out = Path(out)
        self.label = label
        self.path = self.out / LOCK
        self.held = False

    def __enter__(self) -> RunLock:
        self.out.mkdir(parents=True, exist_ok=True)
        me = {"pid": os.getpid(), "host": socket.gethostname(), "since": time.time()}
        for _ in range(2):  # a second try after removing a stale lock
            try:
                fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                owner = self._owner()
                if owner is not None:
                    raise BlockingIOError(
                        f"{self.label} {self.out} is in use by process {owner.get('pid')} on "
                        f"{owner.get('host')} (lock {self.path}); wait for it, or choose another "
                        f"{self.label} (delete the lock only if that process is gone)"
                    ) from None
                self.path.unlink(missing_ok=True)  # stale: its process is gone
                continue
            except PermissionError:
                raise PermissionError(f"{self.label} {self.out} is not writable") from None
            with os.fdopen(fd, "w") as f:
                json.dump(me, f)
            self.held = True
            self._clean_temp_files()
            return self
        raise BlockingIOError(f"{self.label} {self.out}: could not take the lock {self.path}")

    def _owner(self) -> dict | None:
        """The lock's owner if it is (or may be) alive, ``None`` if the lock is stale."""
        try:
            owner = json.loads(self.path.read_text())
        except FileNotFoundError:
            return None
        except (OSError, ValueError):
            # Unreadable: half-written by a process killed right after creating it, unless it
            # is brand new (its writer may be writing it now).
            fresh = time.time() - self.path.stat().st_mtime < 10
            return {"pid": "?", "host": "?"} if fresh else None
        if owner.get("host") != socket.gethostname():
            return owner  # another machine: its processes cannot be checked from here
        return owner if _alive(int(owner.get("pid", -1))) else None

    def _clean_temp_files(self) -> None:
        for p in self.out.glob(".*.tmp"):
            p.unlink(missing_ok=True)

    def __exit__(self, *exc: object) -> None:
        if self.held:
            self.path.unlink(missing_ok=True)
            self.held = False


def _alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except OSError as exc:
        return exc.errno == errno.EPERM  # exists, owned by another user
    return True
