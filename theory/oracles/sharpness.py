"""Exact checks of the sharpness witnesses (:mod:`theory.registry.sharpness`): each reads the bound
from the statement's params *as the registry states it* and computes, in exact SymPy arithmetic on
the witness's rational data, the quantity the bound is about; the witness holds when the bound is
attained (both ends of an interval, the radius of a disk, the rank, the kernel dimension, the
smallest size). A widened bound is then missed by the exact value, and the check fails.

:func:`check` returns a :class:`theory.oracles.instances.Verdict` (``residual``: the exact gap
between the bound and the attained value, as a float; ``holds`` iff it is zero).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import sympy as sp

from ..formulas import spectral as _FS
from ..formulas import walks as _FW
from .generic import relation_attained
from .instances import Verdict, all_of, build
from .laplacian import exact_generator


def _rational(v: Any):
    if isinstance(v, (list, tuple)):
        return [_rational(x) for x in v]
    return sp.Rational(v)


def _gap_verdict(gaps: list, what: str) -> Verdict:
    """Holds iff every exact gap is zero; residual: the largest gap (a float)."""
    gaps = [sp.nsimplify(sp.simplify(g)) for g in gaps]
    worst = max((abs(float(sp.N(g, 30))) for g in gaps), default=0.0)
    ok = all(g == 0 for g in gaps)
    return Verdict(ok, worst if not ok else 0.0, 0.0, f"{what}: exact gaps {[str(g) for g in gaps]}")


def generator(data: Mapping[str, Any], s: Any = None) -> sp.Matrix:
    """``Δ = I − W`` of the witness's exact data: a walk (``P``, ``O``; or ``Q`` scaled by ``s``), a
    single head (``A``, ``T``: ``O_ij = T``) or a flat connection (``P``, frames ``R``: ``O_ij = R_i R_jᵀ``)."""
    kind = data["kind"]
    if kind == "sha":
        A, T = _rational(data["A"]), _rational(data["T"])
        return exact_generator({"P": A, "O": [[T for _ in A] for _ in A]})
    if kind == "flat":
        R = [sp.Matrix(r) for r in _rational(data["R"])]
        O = [[(Ri * Rj.T).tolist() for Rj in R] for Ri in R]
        return exact_generator({"P": _rational(data["P"]), "O": O})
    if "Q" in data:
        sv = sp.Rational(s)
        O = [[[[sv * sp.Rational(e) for e in row] for row in blk] for blk in line] for line in data["Q"]]
        return exact_generator({"P": _rational(data["P"]), "O": O})
    return exact_generator({"P": _rational(data["P"]), "O": _rational(data["O"])})


def _interval(statement, bound: str, s: Any = None) -> sp.Interval:
    """The interval the statement states: its ``lo``, ``hi`` numbers, or its ``Within(spec Δ, [lo, hi])``
    formula with the scale ``s`` substituted."""
    if bound == "lo,hi":
        return sp.Interval(sp.sympify(statement.params["lo"]), sp.sympify(statement.params["hi"]))
    interval = statement.params[bound].rel.args[1]
    return sp.Interval(*(sp.sympify(e).subs(_FS.s_, sp.Rational(s)) for e in (interval.start, interval.end)))


def spectrum_ends(statement, sh) -> Verdict:
    """The exact spectrum of ``Δ`` is real and reaches both ends of the stated interval (at every
    scale the witness lists)."""
    scales = [sh.instance[k] for k in ("s", "s2") if k in sh.instance] or [None]
    parts = []
    for s in scales:
        iv = _interval(statement, sh.bound, s)
        ev = list(generator(sh.instance, s).eigenvals())
        if any(sp.im(e) != 0 for e in ev):
            parts.append(Verdict(False, 1.0, 0.0, f"s = {s}: a non-real eigenvalue in {ev}"))
            continue
        parts.append(
            _gap_verdict([sp.Min(*ev) - iv.start, sp.Max(*ev) - iv.end], f"s = {s}: ends of spec Δ {ev} vs {iv}")
        )
    return all_of(*parts)


def disk_boundary(statement, sh) -> Verdict:
    """Every eigenvalue of ``Δ`` lies on the boundary of the stated disk ``{z : |z − c| ≤ r}``: the
    largest ``|z − c|`` over the exact spectrum equals ``r``."""
    cond = statement.params[sh.bound].rel.args[1].condition
    z = next(iter(cond.lhs.free_symbols))
    ev = list(generator(sh.instance).eigenvals())
    dist = [sp.simplify(cond.lhs.subs(z, e)) for e in ev]
    return _gap_verdict([sp.Max(*dist) - cond.rhs], f"largest |z − c| on spec Δ {ev}")


def rank_attained(statement, sh) -> Verdict:
    """The stated ``rank(W_O W_V) ≤ d_h`` is an equality on the witness's exact projections."""
    rel = statement.params[sh.bound].rel
    WV, WO = sp.Matrix(_rational(sh.instance["W_V"])), sp.Matrix(_rational(sh.instance["W_O"]))
    (arg,) = next(iter(rel.lhs.atoms(_FW.Rank))).args
    mats = {_FW.W_V: WV, _FW.W_O: WO}
    factors = arg.args if isinstance(arg, sp.MatMul) else (arg,)
    product = sp.eye(WO.shape[0])
    for f in factors:  # the stated product, factor by factor in its order
        product = product * mats[f]
    rank = product.rank()
    rhs = rel.rhs.subs(_FW.d_h, sh.instance["d_h"])
    return _gap_verdict([rank - rhs], f"rank {rank} vs the bound {rhs}")


def kernel_dim(statement, sh) -> Verdict:
    """The stated ``dim ker Δ`` equals the exact nullity of ``Δ`` of the witness."""
    ident = statement.params[sh.bound]
    Dl = generator(sh.instance)
    d = len(sh.instance["R"][0])
    stated = ident.rhs.subs(_FW.d, d)
    return _gap_verdict([Dl.shape[0] - Dl.rank() - stated], f"nullity of Δ vs the stated {stated}")


def _admitted(rel, m: int) -> bool:
    return bool(rel.rel.subs(_FW.n, m))


def _smallest(rel, top: int = 12) -> int:
    sizes = [m for m in range(1, top) if _admitted(rel, m)]
    if not sizes:
        raise ValueError(f"{rel.name}: no size up to {top} admitted")
    return sizes[0]


def _causal_support(statement, m: int) -> sp.Matrix:
    """``A_ij > 0`` of the causal attention at ``m`` tokens: where the registry's mask is finite."""
    mask = statement.params["mask"].rhs
    return sp.Matrix(m, m, lambda i, j: int(mask.subs({_FW.i: i, _FW.j: j}) != -sp.oo))


def size_sharp(statement, sh) -> Verdict:
    """One token below the smallest size the statement admits, the causal support is symmetric (a
    positive ``π`` can balance it: the conclusion would be false there), at that size it is not."""
    m0 = _smallest(statement.params[sh.bound])
    below = _causal_support(statement, m0 - 1) if m0 > 1 else None
    at = _causal_support(statement, m0)
    ok_below = below is not None and below == below.T
    ok_at = at != at.T
    return Verdict(
        ok_below and ok_at,
        0.0 if ok_below and ok_at else 1.0,
        0.0,
        f"smallest admitted size {m0}: support symmetric below it: {ok_below}; one-way edge at it: {ok_at}",
    )


def size_not_needed(statement, sh) -> Verdict:
    """Not sharp: the witness has one token fewer than the smallest size the bound admits, and every
    predicated conclusion of T4 still holds on it (judged by their oracles with the registry's
    params); the bound is where the criterion has content: at the smallest admitted size the
    witness's second instance (``X_at``, ``M_at``) is not reversible (Kolmogorov's cycle ratio ≠ 1)."""
    from ..registry import get
    from . import PREDICATES

    rel = statement.params[sh.bound]
    m0 = _smallest(rel)
    inst = build({k: v for k, v in sh.instance.items() if not k.endswith("_at")})
    n = inst["X"].shape[0]
    below = n == m0 - 1  # right below the bound
    at = build({"kind": "softmax", "X": sh.instance["X_at"], "M": sh.instance["M_at"]})
    ratio = _cycle_ratio(at["X"], at["M"])
    content = at["X"].shape[0] == m0 and abs(ratio - 1) > 1e-6
    t = get(statement.id.split(".")[0])
    vs = [PREDICATES[c.predicate](inst, c.params) for c in t.conclusions if c.predicate and c.id != "T4.causal"]
    held = [v for v in vs if v.applicable]
    return Verdict(
        below and content and bool(held) and all(v.holds for v in held),
        0.0,
        0.0,
        f"n = {n}, one below the bound: {below}; conclusions judged: {len(held)}, all hold: "
        f"{all(v.holds for v in held)}; at the bound a non-reversible attention (cycle ratio {ratio:.3f}): {content}",
    )


def _cycle_ratio(X, M) -> float:
    """Kolmogorov's ratio ``A_01 A_12 A_20 / (A_02 A_21 A_10)`` of the softmax attention (1 iff the
    cycle 0 → 1 → 2 balances)."""
    import numpy as np

    S = X @ M @ X.T / np.sqrt(X.shape[1])
    A = np.exp(S - S.max(1, keepdims=True))
    A /= A.sum(1, keepdims=True)
    return float(A[0, 1] * A[1, 2] * A[2, 0] / (A[0, 2] * A[2, 1] * A[1, 0]))


def narrow_sharp(statement, sh) -> Verdict:
    """The strict bound ``d_h < d`` of the never-orthogonal note is the best one: at the witness's ``d``
    it admits one head width less than the witness's, not the witness's own, and the witness's head
    (``W_O W_V``, exact) is orthogonal; a widened bound admits it (the universal would fail there)."""
    rel = statement.params[sh.bound].rel
    WV, WO = sp.Matrix(_rational(sh.instance["W_V"])), sp.Matrix(_rational(sh.instance["W_O"]))
    dh, dd = WV.shape[0], sh.instance["d"]

    def admitted(m):
        return bool(rel.subs({_FW.d_h: m, _FW.d: dd}))

    T = WO * WV
    orthogonal = T.shape == (dd, dd) and sp.eye(dd) == T.T * T
    ok = orthogonal and admitted(dh - 1) and not admitted(dh)
    return Verdict(
        ok,
        0.0 if ok else 1.0,
        0.0,
        f"d = {dd}: d_h = {dh - 1} admitted {admitted(dh - 1)}, d_h = {dh} admitted {admitted(dh)}; orthogonal head: {orthogonal}",
    )


def _symbol_value(expr, k: int, inst: Mapping[str, Any]):
    """The value at wavenumber ``k`` of an expression in the symbol ``M(k)`` (one head: ``â(k) T``),
    ``M(k) - I``, its spectral abscissa and ``f|_{k = k0}``, exactly."""
    from ..formulas import patterns as _FP

    if expr == _FP.Mk:
        a, T = _rational(inst["a"]), sp.Matrix(_rational(inst["T"]))
        n = len(a)
        ahat = sum(a[m] * sp.exp(2 * sp.pi * sp.I * m * k / n) for m in range(n))
        return sp.nsimplify(sp.expand_complex(ahat)) * T
    if isinstance(expr, _FP.AtK):
        return _symbol_value(expr.args[0], int(expr.args[1]), inst)
    if isinstance(expr, _FP.MinusI):
        M = _symbol_value(expr.args[0], k, inst)
        return M - sp.eye(M.shape[0])
    if isinstance(expr, _FP.Abscissa):
        return sp.Max(*(sp.re(e) for e in _symbol_value(expr.args[0], k, inst).eigenvals()))
    if expr.is_Number:
        return expr
    if isinstance(expr, (sp.Add, sp.Mul)):
        return expr.func(*(_symbol_value(x, k, inst) for x in expr.args))
    raise TypeError(f"no value for {expr!r}")


def dominant_attained(statement, sh) -> Verdict:
    """The stated ``growth(k) ≤ growth(0)`` holds at every wavenumber of the witness (a stochastic
    circulant kernel ``a``, ``T`` with a positive real top eigenvalue) and is an equality at some
    ``k ≠ 0``: the least gap over ``k ≠ 0`` is exactly zero."""
    rel = statement.params[sh.bound].rel
    n = len(sh.instance["a"])
    gaps = [
        sp.simplify(_symbol_value(rel.rhs, k, sh.instance) - _symbol_value(rel.lhs, k, sh.instance)) for k in range(n)
    ]
    holds = all(g >= 0 for g in gaps)
    least = sp.Min(*gaps[1:])
    v = _gap_verdict([least], f"gaps rhs − lhs at k = 0..{n - 1}: {gaps}")
    return Verdict(v.holds and holds, v.residual if holds else 1.0, 0.0, v.detail + f"; holds everywhere: {holds}")


def radius_attained(statement, sh) -> Verdict:
    """``ρ(W)`` of the witness's exact walk (``W = I − Δ``) equals the stated bound with its rounding
    allowance (any other symbol of the bound) set to zero."""
    rel = statement.params[sh.bound].rel
    D = generator(sh.instance)
    W = sp.eye(D.shape[0]) - D
    rho = sp.Max(*(sp.Abs(e) for e in W.eigenvals()))
    rhs = rel.rhs.subs(dict.fromkeys(rel.rhs.free_symbols, 0))
    return _gap_verdict([rhs - rho], f"ρ(W) = {rho} vs the stated bound {rel.rhs} (allowance 0: {rhs})")


def scale_attained(statement, sh) -> Verdict:
    """The closed-form scale of the involution fit, ``Σ|λ_a| / ‖Z‖²`` (``λ``: the eigenvalues of the
    symmetric part of ``Zᵀ Y``), on the witness's exact ``Z``, ``Y`` equals the end of the stated range."""
    rel = statement.params[sh.bound].rel
    Z, Y = sp.Matrix(_rational(sh.instance["Z"])), sp.Matrix(_rational(sh.instance["Y"]))
    M = Z.T * Y
    lam = (M + M.T) / 2
    s_star = sum(sp.Abs(e) * m for e, m in lam.eigenvals().items()) / sum(x**2 for x in Z)
    end = rel.rhs if isinstance(rel, sp.GreaterThan) else rel.lhs
    return _gap_verdict([s_star - end], f"closed-form scale {s_star} vs the end {end} of the stated range")


def threshold_pair(claim, sh) -> Verdict:
    """A claim's threshold witness: :func:`theory.oracles.decisions.check_pair`."""
    from .decisions import check_pair

    return check_pair(claim, sh)


CHECKS: dict[str, Callable[[Any, Any], Verdict]] = {
    f.__name__: f
    for f in (
        spectrum_ends,
        disk_boundary,
        rank_attained,
        kernel_dim,
        size_sharp,
        size_not_needed,
        narrow_sharp,
        dominant_attained,
        radius_attained,
        scale_attained,
        threshold_pair,
        relation_attained,  # a stated relation's bound (theory.api)
    )
}


def statement_of(theorem, sid: str):
    """The hypothesis, conclusion or note (``"T3.note0"``) of ``theorem`` with id ``sid``."""
    if ".note" in sid:
        return _Noted(sid, theorem.notes[int(sid.rsplit("note", 1)[1])].params)
    for st in (*theorem.hypotheses, *theorem.conclusions):
        if st.id == sid:
            return st
    raise KeyError(f"{theorem.id}: no statement {sid!r}")


class _Noted:
    """A note as a statement: its id and params."""

    def __init__(self, sid: str, params: Mapping[str, Any]):
        self.id, self.params = sid, params


def check(theorem, sh, statement=None) -> Verdict:
    """Judge the sharpness witness ``sh`` of ``theorem`` (or of a claim: a
    :class:`theory.statements.Claim`, its own statement) against the bound as ``statement`` (default:
    the registry's statement ``sh.of``) states it."""
    if statement is None:
        statement = theorem if hasattr(theorem, "thresholds") else statement_of(theorem, sh.of)
    return CHECKS[sh.check](statement, sh)


__all__ = ["CHECKS", "check", "generator", "statement_of"]
