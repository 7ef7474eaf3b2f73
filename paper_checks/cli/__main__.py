"""``python -m paper_checks.cli ...`` is ``connwalk ...`` (:mod:`paper_checks.cli`)."""

import sys

from connwalk import main

sys.exit(main())
