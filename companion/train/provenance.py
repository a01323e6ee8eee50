"""Where results come from: the code (git state, a hash of the package), hardware and date."""

from __future__ import annotations

import hashlib
import os
import platform
import subprocess
import time
from functools import cache
from pathlib import Path
from typing import Any

import torch

PACKAGE_DIR = Path(__file__).resolve().parent.parent  # the companion package


def cpu_model() -> str:
    """The CPU's marketing name (``/proc/cpuinfo`` on Linux, ``platform`` elsewhere)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def git_state(repo: Path = PACKAGE_DIR.parent) -> dict[str, Any]:
    """``{"commit": sha or None, "dirty": bool or None}`` of the checkout the code runs from."""

    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(
                ["git", *args], cwd=repo, capture_output=True, text=True, timeout=10, check=True
            )
        except (OSError, subprocess.SubprocessError):
            return None
        return done.stdout

    commit = git("rev-parse", "HEAD")
    commit = commit.strip() if commit else commit
    # Not stripped: each porcelain line starts with its two status columns, a space included.
    status = git("status", "--porcelain") if commit else None
    if status is None:
        return {"commit": commit, "dirty": None}
    # Files under results/ are what runs write (a script's first experiment, before its second
    # starts, replaces the folder git holds): they are outputs, not the code that ran, whose
    # digest every run records. The run scripts and the predictions there are not outputs: a
    # change to one of them, or anything outside results/, makes the tree dirty.
    changes = [line for line in status.splitlines() if not _is_output(line[3:])]
    return {"commit": commit, "dirty": bool(changes)}


def _is_output(path: str) -> bool:
    """Whether a ``git status --porcelain`` path is a run's output under ``results/``."""
    path = path.split(" -> ")[-1].strip('"')  # a rename's new name
    name = path.rsplit("/", 1)[-1]
    return path.startswith("results/") and not (name.endswith(".sh") or name == "predictions.md")


def source_digest(package: Path = PACKAGE_DIR) -> str:
    """SHA-256 over the companion package's ``.py`` files: identifies the code even when the
    git tree was dirty. (Read once per process: the code a process runs cannot change under it.)"""
    return _digest(Path(package).resolve())


@cache
def _digest(package: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(package.rglob("*.py")):
        digest.update(path.relative_to(package).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def hardware() -> dict[str, Any]:
    """The machine and software a run computes on."""
    return {
        "cpu": cpu_model(),
        "cpu_count": os.cpu_count(),
        "gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
        "torch": torch.__version__,
        "python": platform.python_version(),
        "platform": platform.platform(),
    }


def provenance(command: str | None) -> dict[str, Any]:
    """Where and how results were produced: hardware, software, code version, command, date."""
    return {
        "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "command": command,
        **hardware(),
        "git": git_state(),
        "companion_sha256": source_digest(),
    }
