"""connwalk theory: SymPy statements and derivations of THEOREMS.md's theorems (no torch here).

Three packages, each a room with one door (its ``__init__``), and the modules they share below them:

* :mod:`theory.registry` — ``THEOREMS`` (lemmas L1-L4, theorems T1-T6), ``CLAIMS`` (E1-E6, LAP),
  ``get(id)``; the entries in ``registry.lemmas`` (L1-L4), ``registry.walks`` (T1, T2),
  ``registry.spectral`` (T3-T6), ``registry.claims``, with ``registry.common`` (test paths, shared
  wordings) and ``registry.conventions`` (THEOREMS.md's conventions).
* :mod:`theory.oracles` — independent predicates (numpy float64 / mpmath / Fraction) for every
  statement: ``oracles.instances`` (instances, verdicts, the shared numeric helpers) below
  ``oracles.walks`` (hypotheses, T1, T2) below ``oracles.laplacian`` (T3) below ``oracles.spectral``
  (T4-T6).
* :mod:`theory.derivations` — exact symbolic derivations at fixed sizes (``derive_t1`` ... ``derive_t6``):
  ``derivations.sizes`` (the supported sizes) below ``derivations.walks`` below
  ``derivations.spectral``; ``derivations.general`` proves the formulas for symbolic sizes with the
  stated rules of :mod:`theory.rewrite` (index swap, hypotheses as rewrite rules).
* :mod:`theory.formulas` — one SymPy expression per identity (rendered, evaluated by the oracles,
  proved): the machinery and the T3/T4 forms in the package itself, ``formulas.walks`` (conventions,
  L1, L2, L4, T1, T2), ``formulas.spectral`` (T3-T6), ``formulas.laplacian`` (T3's matrix forms and
  witness facts), ``formulas.reversibility`` (T4's support and criterion, T5's Laplacian, kernel and
  witness facts) and ``formulas.patterns`` (T6's matrix-level pattern selection, with the notation SymPy
  lacks: spectral abscissa, argmax over k); ``formulas.claims`` holds the claims' statistics.

On top of the registry: :mod:`theory.api` (the public way to state a theorem outside connwalk and to
register it: in-process or through the entry-point group ``connwalk.theorems``; every registered statement
by :func:`theory.registry.external.all_statements`) and :mod:`theory.gate` (the gate as a library: the
property test generated from a statement, its generated mutants and their exact equivalence, the
sharpness witness of every bound, the prose check — :func:`theory.gate.gate` on any registered id).

Below them: :mod:`theory.statements` (the data types of statements), :mod:`theory.cases` (the
reference data statements carry), :mod:`theory.symbolic` / :mod:`theory.steps` / :mod:`theory.rewrite`
(derivation machinery), :mod:`theory.rounding` (the three-valued decision rule),
:mod:`theory.certificates` (exact rational certificates at realistic sizes) and :mod:`theory.errors`.
Between the derivations and the registry: :mod:`theory.theorem` (the :class:`~theory.theorem.Theorem`
record, which runs its derivations). On top: :mod:`theory.render` (``python -m theory.render [--check]``
writes / guards ``THEOREMS.md`` from the registry) and :mod:`theory.report` (the per-theorem tally behind
pytest's theorem table).

Neither torch nor numerics is ever imported (a test enforces it); the registry, the renderer and
the derivations need only SymPy and the standard library, the oracles add numpy and mpmath.
"""
