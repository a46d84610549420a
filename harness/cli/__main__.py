"""``python -m harness.cli``: the same as ``proofdiff``."""

import sys

from harness.cli import main

sys.exit(main())
