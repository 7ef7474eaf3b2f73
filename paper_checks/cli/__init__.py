"""``python -m paper_checks.cli`` is the ``connwalk`` command: the path README documented before the
command-line front ends moved to :mod:`connwalk`, kept as an entry point. The package holds no code;
its ``__main__`` only runs :func:`connwalk.main` (the layering test allows that one upward import for
an entry point nothing imports: ``tests/test_layering.py``, ``ENTRY_POINTS``)."""
