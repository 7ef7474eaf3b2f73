"""What is local to this repository's tests; the theorem checker itself is the package's pytest
plugin :mod:`numerics.pytest_plugin` (``--theorem``, ``--theorem-json``, ``--device``, the
``theorem`` marker, the ``device`` fixture, the Hypothesis profiles ``ci``/``dev``/``thorough``/
``mutation``). Installed, connwalk registers it as a ``pytest11`` entry point under the name
``numerics.pytest_plugin``; ``pytest_plugins`` below loads it from the checkout otherwise (pytest
skips it when the entry point already did, so it is never registered twice).

Local policy: the default Hypothesis profile is env ``HYPOTHESIS_PROFILE``, else ``ci`` when
``CI`` is set, else ``dev`` (``--hypothesis-profile`` overrides it).
"""

from __future__ import annotations

import os

import pytest
from hypothesis import settings

pytest_plugins = ["numerics.pytest_plugin", "pytester"]  # pytester: tests of the plugin


@pytest.hookimpl(tryfirst=True)  # before Hypothesis' own hook, which applies --hypothesis-profile
def pytest_configure(config):
    settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") else "dev"))
