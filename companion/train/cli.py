"""``companion-train``: the command line, generated from :class:`TrainConfig`, and its errors.

Expected failures (a bad file, a diverged loss, a folder in use) print one line and exit with
status 1; ``--debug`` shows the traceback instead. Ctrl-C prints where the last checkpoint is.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

from companion.train.config import add_config_arguments, config_from_args
from companion.train.runtime import dist_info_from_env, exit_worker
from companion.train.stop import stop_signals

#: What a user can cause and fix (files, folders, settings, data, divergence); anything else is
#: a bug and keeps its traceback.
EXPECTED_ERRORS = (ValueError, TypeError, OSError, FloatingPointError)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="companion-train",
        description="Train a small Swin on a generated position task or CIFAR-10 "
        "(also under torchrun for several processes).",
    )
    add_config_arguments(p)
    add_debug_flag(p)
    return p


def add_debug_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument("--debug", action="store_true", help="show tracebacks of expected errors")


def run_reporting_errors(
    prog: str, work: Callable[[], object], debug: bool, interrupted: str = "interrupted"
) -> int:
    """Call ``work()``: expected errors become one line on stderr and status 1; Ctrl-C (or
    SIGTERM) 130 with the interrupt's own message, else ``interrupted`` (never an empty line)."""
    try:
        with stop_signals():  # SIGTERM as Ctrl-C; neither lost (companion.train.stop)
            work()
    except KeyboardInterrupt as exc:
        if debug:
            raise
        print(f"{prog}: {str(exc).strip() or interrupted}", file=sys.stderr, flush=True)
        return 130
    except EXPECTED_ERRORS as exc:
        if debug:
            raise
        message = " ".join(str(exc).split()) or type(exc).__name__  # one line, never empty
        print(f"{prog}: error: {message}", file=sys.stderr, flush=True)
        return 1
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point (``companion-train`` / ``python -m companion.train``)."""
    from companion.train.loop import train

    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        cfg = config_from_args(args)  # checked as it is built
    except (ValueError, TypeError) as exc:
        parser.error(str(exc))  # exits with status 2, like argparse's own errors
    stopped = f"interrupted; {cfg.out} keeps the last checkpoint written (--resume continues it)"
    code = run_reporting_errors("companion-train", lambda: train(cfg), args.debug, stopped)
    if code == 0 and dist_info_from_env().enabled:
        exit_worker(code)  # see its docstring: a clean exit that cannot abort in finalisation
    return code
