"""``python -m connwalk ...`` is the ``connwalk`` command."""

import sys

from connwalk import main

sys.exit(main())
