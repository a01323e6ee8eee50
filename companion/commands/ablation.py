"""``python -m companion.commands.ablation``: chapter 5's command. The ablation itself lives in
:mod:`companion.experiments.runs.ablation`."""

if __name__ == "__main__":
    import sys

    try:  # Ctrl-C while torch imports (or main starts): one line, not 40 (--debug keeps them)
        from companion.experiments.runs.ablation import main

        code = main()
    except KeyboardInterrupt:
        if "--debug" in sys.argv:
            raise
        print(
            "python -m companion.commands.ablation: interrupted while starting: nothing was run",
            file=sys.stderr,
        )
        sys.exit(130)
    sys.exit(code)
