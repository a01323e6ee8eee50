"""``python -m companion.commands.resolution_experiment``: chapter 6's command. The experiment
itself lives in :mod:`companion.experiments.runs.resolution_experiment`."""

if __name__ == "__main__":
    import sys

    try:  # Ctrl-C while torch imports (or main starts): one line, not 40 (--debug keeps them)
        from companion.experiments.runs.resolution_experiment import main

        code = main()
    except KeyboardInterrupt:
        if "--debug" in sys.argv:
            raise
        print(
            "python -m companion.commands.resolution_experiment: interrupted while starting: "
            "nothing was run",
            file=sys.stderr,
        )
        sys.exit(130)
    sys.exit(code)
