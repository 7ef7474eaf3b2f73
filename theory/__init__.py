"""connwalk theory: SymPy statements and derivations of THEOREMS.md's theorems (no torch here).

* :mod:`theory.registry` — ``THEOREMS`` (lemmas L1-L4, theorems T1-T6), ``CLAIMS`` (E1-E6), ``get(id)``.
* :mod:`theory.derivations` — exact symbolic derivations at fixed sizes (``derive_t1`` ... ``derive_t6``).
* :mod:`theory.formulas` — one SymPy expression per identity (rendered, evaluated by the oracles, proved).
* :mod:`theory.derivations_general` — the formulas proved for symbolic sizes, with the stated rules of
  :mod:`theory.rewrite` (index swap, hypotheses as rewrite rules).
* :mod:`theory.certificates` — exact rational certificates at realistic sizes (``Fraction``).
* :mod:`theory.render` — ``python -m theory.render [--check]`` writes / guards ``THEOREMS.md``.
* :mod:`theory.report` — the per-theorem tally behind pytest's end-of-run theorem table.
* :mod:`theory.statements` — the data types of statements (hypotheses, conclusions, witnesses, claims).
* :mod:`theory.oracles` — independent predicates (numpy float64 / mpmath / Fraction) for every statement.
* :mod:`theory.cases` — the reference data statements carry (counterexamples and their numbers).

Neither torch nor numerics is ever imported (a test enforces it); the registry, the renderer and
the derivations need only SymPy and the standard library, the oracles add numpy and mpmath.
"""
