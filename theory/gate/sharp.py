"""The bounds a statement states, and their sharpness witnesses.

A *bound* (:func:`is_bound`): an interval's ends (params ``lo``, ``hi``), an inclusion of a spectrum
(``Within``), an inequality (of a size, a rank, or of indexed entries against anything but zero:
``P_ij ≤ 1`` is a bound; an entrywise sign such as ``π_i > 0`` or ``c_ij ≥ 0`` is a premise), a kernel
dimension, a claim's :class:`~theory.statements.Threshold`. Every bound needs a
:class:`~theory.statements.Sharpness` witness (``of``, ``bound``) whose exact check
(:func:`theory.oracles.sharpness.check`) holds; :func:`bound_results` judges them all and names a bound
without one.
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy as sp

from ..formulas import laplacian as FL
from ..statements import Threshold

_INEQUALITY = (sp.LessThan, sp.GreaterThan, sp.StrictLessThan, sp.StrictGreaterThan)


def is_bound(key, value) -> bool:
    """Whether the param ``key`` = ``value`` of a statement is a bound (module docstring)."""
    if key in ("lo", "hi"):
        return True
    rel = getattr(value, "rel", None)
    if isinstance(rel, FL.Within):
        return True
    if isinstance(rel, _INEQUALITY) and (not rel.has(sp.Indexed) or (rel.lhs != 0 and rel.rhs != 0)):
        return True  # an inequality that is not an entrywise sign
    return key == "kernel_dim" or isinstance(value, Threshold)


def statement_bounds(t) -> set[tuple[str, str]]:
    """``(statement id, bound key)`` of every bound of a hypothesis, conclusion or note of ``t``
    (``lo`` and ``hi`` together as ``"lo,hi"``)."""
    out = set()
    sts = [(st.id, st.params) for st in (*t.hypotheses, *t.conclusions)]
    sts += [(f"{t.id}.note{q}", getattr(nt, "params", {})) for q, nt in enumerate(t.notes)]
    for sid, params in sts:
        for key, value in params.items():
            if is_bound(key, value):
                out.add((sid, "lo,hi" if key in ("lo", "hi") else key))
    return out


@dataclass(frozen=True)
class BoundResult:
    """One bound: ``status`` ``"sharp"`` (its witness attains it), ``"not sharp"`` (a ``sharp=False``
    witness holds: the best constant found), ``"missed"`` (a witness does not hold) or ``"missing"`` (no
    witness: the gate fails, naming it)."""

    of: str
    bound: str
    witness: str
    status: str
    detail: str = ""

    @property
    def ok(self) -> bool:
        return self.status in ("sharp", "not sharp")


def bound_results(t) -> list[BoundResult]:
    """Every bound of ``t`` and every sharpness witness it carries, judged (exactly)."""
    from ..oracles import sharpness as S

    out = []
    covered = set()
    for sh in t.sharpness:
        covered.add((sh.of, sh.bound))
        try:
            v = S.check(t, sh)
            status = ("sharp" if sh.sharp else "not sharp") if v.holds else "missed"
            detail = v.detail
        except Exception as exc:  # a witness that cannot be judged does not show the bound
            status, detail = "missed", f"{type(exc).__name__}: {exc}"
        out.append(BoundResult(sh.of, sh.bound, sh.id, status, detail))
    for sid, key in sorted(statement_bounds(t) - covered):
        out.append(BoundResult(sid, key, "", "missing", f"the bound {key!r} of {sid} has no sharpness witness"))
    return out
