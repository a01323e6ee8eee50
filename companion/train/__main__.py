"""``python -m companion.train`` (the same as ``companion-train``)."""

import sys

from companion.train.cli import main

sys.exit(main())
