"""``python -m companion.commands.learned_embedding``: the command chapter 1's record names. The
run itself lives in :mod:`companion.experiments.runs.learned_embedding`."""

if __name__ == "__main__":
    import sys

    try:  # Ctrl-C while torch imports (or main starts): one line, not 40 (--debug keeps them)
        from companion.experiments.runs.learned_embedding import main

        code = main()
    except KeyboardInterrupt:
        if "--debug" in sys.argv:
            raise
        print(
            "python -m companion.commands.learned_embedding: interrupted while starting: "
            "nothing was run",
            file=sys.stderr,
        )
        sys.exit(130)
    sys.exit(code)
