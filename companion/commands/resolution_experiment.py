"""``python -m companion.commands.resolution_experiment``: chapter 6's command
(:mod:`companion.experiments.runs.resolution_experiment`)."""

if __name__ == "__main__":
    from companion.commands import start

    start("resolution_experiment")
