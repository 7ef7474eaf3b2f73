"""connwalk theory: SymPy statements and derivations of THEOREMS.md's theorems (no torch here).

* :mod:`theory.registry` — ``THEOREMS`` (lemmas L1-L4, theorems T1-T6) and ``get(id)``.
* :mod:`theory.derivations` — exact symbolic derivations (``derive_t1`` ... ``derive_t6``).
* :mod:`theory.certificates` — exact rational certificates at realistic sizes (``Fraction``).
* :mod:`theory.render` — ``python -m theory.render [--check]`` writes / guards ``THEOREMS.md``.
* :mod:`theory.report` — the per-theorem tally behind pytest's end-of-run theorem table.

Only SymPy and the standard library are imported (a test enforces that torch never is).
"""
