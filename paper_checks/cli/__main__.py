"""``python -m paper_checks.cli ...`` is the ``connwalk`` command."""

import sys

from paper_checks.cli import main

sys.exit(main())
