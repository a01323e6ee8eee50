"""``python -m companion.ablation``: the command the results headers record. The ablation itself
lives in :mod:`companion.experiments.ablation`."""

import sys

from companion.experiments.ablation import main

if __name__ == "__main__":
    sys.exit(main())
