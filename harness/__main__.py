"""``python -m proofdiff``: the same as ``proofdiff``."""

import sys

from proofdiff.cli import main

sys.exit(main())
