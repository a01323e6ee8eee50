"""The experiments' commands, ``python -m companion.commands.<name>``: ``ablation`` (chapter 5),
``resolution_experiment`` (chapter 6) and ``learned_embedding`` (chapter 1). Each starts the run
of its name in :mod:`companion.experiments.runs` (:func:`start`); nothing imports them
(``tests/test_layers.py``). Results written before they moved here record them as
``python -m companion.<name>``: the same commands."""

import sys


def start(name: str) -> None:
    """Exit with the status of ``companion.experiments.runs.<name>.main()``. A Ctrl-C while torch
    imports (or main starts) is one line and status 130, not 40 (``--debug`` keeps them)."""
    try:
        code = __import__(f"companion.experiments.runs.{name}", fromlist=["main"]).main()
    except KeyboardInterrupt:
        if "--debug" in sys.argv:
            raise
        prog = f"python -m companion.commands.{name}"
        print(f"{prog}: interrupted while starting: nothing was run", file=sys.stderr)
        sys.exit(130)
    sys.exit(code)
