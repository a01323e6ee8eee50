"""Ctrl-C while one of the package's commands starts (torch importing): one line, not a traceback.

``python -m companion.train`` imports ``companion.train`` (and torch with it) before its
``__main__`` runs, so no ``try`` in a command can catch an interrupt that comes then. The package
itself is imported first, though; when this process is one of its commands, it sets
``sys.excepthook`` so that an interrupt nothing caught prints one line (``--debug`` keeps the
traceback). Python then exits as an interrupted process does (status 130 in a shell).
"""

from __future__ import annotations

import sys
from pathlib import Path
from types import TracebackType

#: The console scripts (``[project.scripts]`` in pyproject.toml).
SCRIPTS = ("companion-train",)


def command_name(argv: list[str], orig_argv: list[str]) -> str | None:
    """``python -m companion.<module>`` or a console script's name when ``argv`` (while the
    package imports) and ``orig_argv`` (as the interpreter was started) are those of a command
    of this package, else ``None``."""
    if argv[:1] == ["-m"] and "-m" in orig_argv[:-1]:
        module = orig_argv[orig_argv.index("-m") + 1]
        return f"python -m {module}" if module.split(".")[0] == "companion" else None
    name = Path(argv[0]).name if argv else ""
    return name if name in SCRIPTS else None


def quiet_interrupts_while_starting() -> None:
    """Install the hook described above when this process is a command of the package."""
    name = command_name(sys.argv, list(getattr(sys, "orig_argv", [])))
    if name is None:
        return
    previous = sys.excepthook

    def hook(kind: type[BaseException], value: BaseException, tb: TracebackType | None) -> None:
        if issubclass(kind, KeyboardInterrupt) and "--debug" not in sys.argv[1:]:
            print(f"{name}: interrupted while starting: nothing was run", file=sys.stderr)
            return
        previous(kind, value, tb)

    sys.excepthook = hook
