"""pytest set-up for the whole repository: nbval's notebook kernels talk over IPC sockets.

``make nbval`` starts one kernel per chapter in each xdist worker, several at the same moment.
Over TCP (jupyter_client's default) the parent picks five free ports and releases them before the
kernel binds them, so two kernels started together can pick the same port. Once, in ``make test``,
a chapter's kernel died before it answered ("Kernel died before replying to kernel_info"); such a
collision is the likeliest cause (36 kernels started three at a time did not reproduce it). Over
IPC each kernel's sockets are files in a folder of its own, so no two kernels can collide.
"""

from __future__ import annotations

import itertools
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest

_folders: list[Path] = []


def pytest_configure(config: pytest.Config) -> None:
    if not getattr(config.option, "nbval", False):
        return
    import nbval.kernel
    from jupyter_client import KernelManager

    root = Path(tempfile.mkdtemp(prefix="nbval-kernels-"))
    _folders.append(root)
    count = itertools.count()

    class IpcKernelManager(KernelManager):
        """A kernel manager whose kernel's sockets are files under a folder of its own."""

        def __init__(self, **kwargs: Any) -> None:
            folder = root / str(next(count))
            folder.mkdir()
            super().__init__(transport="ipc", ip=str(folder / "kernel"), **kwargs)

    nbval.kernel.KernelManager = IpcKernelManager  # what nbval's start_new_kernel builds


def pytest_unconfigure(config: pytest.Config) -> None:
    while _folders:
        shutil.rmtree(_folders.pop(), ignore_errors=True)
