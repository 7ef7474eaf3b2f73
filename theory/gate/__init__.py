"""The gate as a library: what makes a statement trustworthy, applied to any registered statement —
connwalk's own (L1-L4, T1-T6) and those stated with :mod:`theory.api` by anyone.

* :mod:`theory.gate.mutants` — the reviewer's mutant kinds (operand order, transpose, sign, factor,
  index swap), generated from a conclusion's own SymPy expressions;
* :mod:`theory.gate.equivalence` — the exact SymPy check that a mutant states the same (an equivalent
  mutant, listed with its reason);
* :mod:`theory.gate.search` — the property test's settings and the search for a rejecting instance;
* :mod:`theory.gate.sharp` — the bounds a statement states and their sharpness witnesses;
* :mod:`theory.gate.prose` — no assertion word, count or rate in free text;
* :mod:`theory.gate.project` — the instance strategies of connwalk's own statements;
* :mod:`theory.gate.run` — :func:`gate` ``(statement_id) -> GateReport``, the whole gate on one statement
  (``pytest --theorem ID``, ``connwalk theorems --check ID``).

    >>> from theory.gate import gate  # doctest: +SKIP
    >>> gate("MINE").status  # doctest: +SKIP
    'passes'
"""

from __future__ import annotations

from .run import EXIT, ConclusionResult, GateReport, MutantResult, gate, gate_theorem

__all__ = ["EXIT", "ConclusionResult", "GateReport", "MutantResult", "gate", "gate_theorem"]
