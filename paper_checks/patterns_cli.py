"""Old import path of the ``connwalk patterns`` command, which lives in :mod:`paper_checks.cli.patterns`
beside the other command-line front ends. This name is the same module object (``sys.modules``
alias), so attributes read or patched through either path are the same."""

import sys

from paper_checks.cli import patterns as _patterns

sys.modules[__name__] = _patterns
