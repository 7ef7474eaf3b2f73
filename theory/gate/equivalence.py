"""Exact SymPy checks that a generated mutant (:mod:`theory.gate.mutants`) states what the original
states — an *equivalent* mutant, which no instance can reject and the gate lists with its proof.

:func:`equivalence_reason` inlines every definition at explicit sizes (the conclusion's
:class:`~theory.statements.Check` ``sizes``, or :data:`SIZES` for the project's statements), applies the
theorem's hypotheses and the formula's symmetric premises as rewrites (``rules``), and compares the
residuals ``lhs − rhs``: both identically zero, or one a nonzero constant (or sign-definite) multiple of
the other, possibly with the free indices permuted; a formula read only as a space or through a
spectrum (:data:`SPANS`, :data:`SPECTRAL`) by a multiple spanning the same space or by the same
characteristic polynomial. :func:`scaled_residual` and :func:`symmetric_under` are the two cheap checks
of the same kind.
"""

from __future__ import annotations

import itertools

import sympy as sp
from sympy.matrices.expressions.matexpr import MatrixElement

from .. import formulas as F
from .mutants import INDEX_CLASS, Mutant


def residual(formula):
    """``lhs - rhs`` of an identity (its ``where`` bodies stay definitions)."""
    return formula.lhs - formula.rhs


def scaled_residual(original, mutant) -> sp.Basic | None:
    """The constant ``c ≠ 0`` with ``residual(mutant) = c · residual(original)`` exactly (same
    ``where`` and premises), else ``None``: then the mutant states the same equation."""
    if getattr(original, "where", ()) != getattr(mutant, "where", ()):
        return None
    r0, r1 = residual(original), residual(mutant)
    if r0 == 0:
        return None
    c = sp.simplify(r1 / r0)
    if c.free_symbols or c.has(sp.Indexed) or c == 0 or sp.expand(r1 - c * r0) != 0:
        return None
    return c


def canonical_symmetric(expr, base, p: int, q: int):
    """``expr`` with every entry of ``base`` written with its indices ``p``, ``q`` in sorted order:
    the canonical form of an expression in a symbol symmetric in those indices."""

    def canon(e):
        idx = list(e.indices)
        if sp.default_sort_key(idx[q]) < sp.default_sort_key(idx[p]):
            idx[p], idx[q] = idx[q], idx[p]
        return e.base[tuple(idx)]

    return expr.replace(lambda e: isinstance(e, sp.Indexed) and e.base == base, canon)


def symmetric_under(original, mutant, base, p: int, q: int) -> bool:
    """The mutant's parts equal the original's once ``base`` is known symmetric in indices ``p``,
    ``q`` (a hypothesis of the theorem or a premise of the formula): exact, structural."""

    def parts(f):
        out = [f.lhs, f.rhs] if hasattr(f, "lhs") else [getattr(f, "rel", None) or f.expr]
        return out + [b for _, b in getattr(f, "where", ())]

    a = [canonical_symmetric(sp.sympify(x), base, p, q) for x in parts(original)]
    b = [canonical_symmetric(sp.sympify(x), base, p, q) for x in parts(mutant)]
    return a == b and parts(original) != parts(mutant)


def substitute(expr, head, body):
    """``expr`` with the definition ``head = body`` inlined (an indexed head at every index, a
    symbol head whole)."""
    if not isinstance(expr, sp.Basic):
        return expr
    if isinstance(head, sp.Indexed):
        base = head.base

        def rep(e):
            return body.xreplace(dict(zip(head.indices, e.indices, strict=True)))

        return expr.replace(lambda e: isinstance(e, sp.Indexed) and e.base == base, rep)
    return expr.xreplace({head: body})


def inline(expr, where):
    """``expr`` with every ``where`` definition inlined (later ones first: they may use earlier ones)."""
    for head, body in reversed(tuple(where)):
        expr = substitute(expr, head, body)
    return expr


def _name(e) -> str | None:
    if isinstance(e, sp.Indexed):
        return e.base.label.name
    if isinstance(e, MatrixElement):
        return e.parent.name
    return None


def symmetric_rule(name: str, p: int = 0, q: int = 1):
    """A rewrite: entries of ``name`` with indices ``p``, ``q`` in sorted order, ``nameᵀ → name``
    (the quantity is symmetric: a hypothesis of the theorem or a premise of the formula)."""

    def canon(e):
        idx = list(e.indices) if isinstance(e, sp.Indexed) else [e.i, e.j]
        if sp.default_sort_key(idx[q]) < sp.default_sort_key(idx[p]):
            idx[p], idx[q] = idx[q], idx[p]
        return e.base[tuple(idx)] if isinstance(e, sp.Indexed) else e.parent[idx[0], idx[1]]

    def rule(expr):
        if not isinstance(expr, sp.Basic):
            return expr
        expr = expr.replace(
            lambda e: isinstance(e, sp.Transpose) and getattr(e.arg, "name", None) == name, lambda e: e.arg
        )
        return expr.replace(lambda e: isinstance(e, (sp.Indexed, MatrixElement)) and _name(e) == name, canon)

    rule.__doc__ = f"{name} symmetric"
    return rule


def definition_rule(ident):
    """A rewrite: the definition ``ident`` (``lhs = rhs``, e.g. T5's ``P_ij = A_ij``, T4's ``μ = 0``) inlined."""

    def rule(expr):
        return substitute(expr, ident.lhs, ident.rhs)

    rule.__doc__ = f"{ident.lhs} = {ident.rhs}"
    return rule


def _explicit(expr, sizes, rules):
    for r in rules:
        expr = r(expr)
    expr = sp.sympify(expr).xreplace(sizes).doit()
    if getattr(expr, "is_Matrix", False):
        expr = sp.Matrix(expr.as_explicit())
    for r in rules:
        expr = r(expr)
    return expr


def _canonical(e):
    """A cheap canonical form: expanded, logarithms of products split (the scores are real)."""
    return sp.expand(sp.expand_log(sp.expand(e), force=True))


def _is_zero(e) -> bool:
    e = _canonical(e)
    if e == 0:
        return True
    if e.has(sp.exp, sp.sin, sp.cos):
        return sp.simplify(e.rewrite(sp.exp)) == 0
    return sp.cancel(sp.together(e)) == 0


def _entries(e):
    return list(e) if isinstance(e, sp.MatrixBase) else [e]


def _nonzero_factor(c) -> bool:
    return bool(c != 0 and not c.has(sp.nan, sp.zoo) and (c.is_number or c.is_positive or c.is_negative))


def _related(r0, r1):
    """How ``r1`` (entries) follows from ``r0``: ``"both identically zero"``, ``"c · original"`` with
    ``c`` a nonzero constant or a sign-definite factor, else ``None``."""
    e0, e1 = _entries(r0), _entries(r1)
    z0 = [_is_zero(x) for x in e0]
    if all(z0) and all(_is_zero(y) for y in e1):
        return "both identically zero"
    pivot = next((k for k, z in enumerate(z0) if not z), None)
    if pivot is None:
        return None
    c = sp.simplify(sp.cancel(sp.together(e1[pivot] / e0[pivot])))
    if not _nonzero_factor(c):
        return None
    if all(_is_zero(y - c * x) for x, y in zip(e0, e1, strict=True)):
        return f"{c} times the original"
    return None


def _free_permutations(free):
    free = tuple(free)
    for perm in itertools.permutations(free):
        if perm != free and all(INDEX_CLASS.get(x) == INDEX_CLASS.get(y) for x, y in zip(free, perm, strict=True)):
            yield dict(zip(free, perm, strict=True))


def equivalent(original, mutant, sizes, rules=()) -> str | None:
    """An exact SymPy reason why ``mutant`` states what ``original`` states at the explicit
    ``sizes`` (every definition inlined, then ``rules``: the theorem's hypotheses and the formula's
    premises as rewrites), or ``None``: the residuals ``lhs − rhs`` are both identically zero, or
    the mutant's is a nonzero (constant or sign-definite) multiple of the original's, possibly with
    the free indices permuted (the statement is for every value of them); a relation's left side a
    positive multiple, or the same relation with the free indices permuted. The premises are
    compared the same way (a changed definition may change what a premise says)."""
    free = getattr(original, "free", ())
    if hasattr(original, "rel"):
        r0 = _explicit(inline(original.rel, original.where), sizes, rules)
        r1 = _explicit(inline(mutant.rel, mutant.where), sizes, rules)
        if r0 == r1:
            return "the same relation"
        if isinstance(r0, sp.core.relational.Relational) and r0.func == r1.func and r0.rhs == r1.rhs == 0:
            c = sp.simplify(r1.lhs / r0.lhs)
            if c.is_number and c > 0:
                return f"left side {c} times the original's"
        for sigma in _free_permutations(free):
            if r1 == r0.xreplace(sigma):
                return f"the original with its free indices {sigma}"
        return None
    pairs = [(original.lhs - original.rhs, mutant.lhs - mutant.rhs)]
    pairs += [(l0 - q0, l1 - q1) for (l0, q0), (l1, q1) in zip(original.premises, mutant.premises, strict=True)]
    explicit = [
        (_explicit(inline(a, original.where), sizes, rules), _explicit(inline(b, mutant.where), sizes, rules))
        for a, b in pairs
    ]
    seen = set()
    for e in [original.lhs, original.rhs, *(x for pr in original.premises for x in pr)]:
        seen |= {a.base for a in sp.sympify(e).atoms(sp.Indexed)}
    for k, ((h0, b0), (_, b1)) in enumerate(zip(original.where, mutant.where, strict=True)):
        seen |= {a.base for q, (_, b) in enumerate(original.where) if q != k for a in sp.sympify(b).atoms(sp.Indexed)}
        if b0 != b1 and isinstance(h0, sp.Indexed) and h0.base not in seen:
            return None  # the mutated definition is not read as an indexed entry: the check cannot see it

    def again(e):
        for r in rules:
            e = r(e)
        return e

    # a premise holds for every value of the indices it contains (theory.formulas.Identity): it is
    # compared as it stands; the conclusion, for every value of the free indices, also relabelled
    if not all(_related(r0, r1) for r0, r1 in explicit[1:]):  # a definition may enter a premise
        return None
    r0, r1 = explicit[0]
    for sigma in ({}, *_free_permutations(free)):
        how = _related(again(r0.xreplace(sigma)) if sigma else r0, r1)
        if how:
            return how + (f", free indices {sigma}" if sigma else "")
    return None


def same_spectrum(original_expr, mutant_expr, sizes) -> bool:
    """The two matrix expressions have the same characteristic polynomial at the explicit ``sizes``
    (generic symbolic entries, a polynomial ring over the integers): exact."""
    from sympy.polys.matrices import DomainMatrix

    def charpoly(e):
        M = sp.Matrix(sp.sympify(e).xreplace(sizes).as_explicit())
        M = M.xreplace({x: sp.Symbol(f"{x.parent.name}_{x.i}_{x.j}") for x in M.atoms(MatrixElement)})
        return DomainMatrix.from_Matrix(M).charpoly()

    return charpoly(original_expr) == charpoly(mutant_expr)


#: the explicit sizes of the equivalence checks (``n = 3`` where a statement is about triples)
SIZES = {
    "T1": {F.n: 2, F.d: 2},
    "T2": {F.n: 2, F.d: 2, F.H: 2},
    "T4": {F.n: 3, F.d: 2},
    "T5": {F.n: 2, F.d: 2},
    "T6": {F.n: 3, F.d: 2, F.H: 1},
}
#: hypotheses of a theorem that the equivalence checks use as rewrites (T5.involution: ``T = Tᵀ``)
HYPOTHESIS_RULES = {"T5": (symmetric_rule("T"),)}
#: definitions among a conclusion's formulas that the others' checks inline (not their own)
DEFINITIONS = ("walk_p", "walk_o", "no_mask")


def sizes_for(theorem_id: str, conclusion) -> dict:
    """The explicit sizes of the checks: the conclusion's :class:`~theory.statements.Check` ``sizes``
    (by name), else the project's :data:`SIZES` of the theorem."""
    check = getattr(conclusion, "check", None)
    if check is not None:
        by_name = {s.name: s for s in (F.n, F.d, F.H)}
        return {by_name[k]: v for k, v in check.sizes.items() if k in by_name}
    return SIZES[theorem_id]


def rules_for(theorem_id: str, conclusion, key: str) -> list:
    """The rewrites of the equivalence check of formula ``key``: the theorem's hypotheses (the
    project's :data:`HYPOTHESIS_RULES`, or the conclusion's ``Check.rules``), the formula's symmetric
    premises (``M_ab = M_ba``) and the conclusion's other definitions."""
    check = getattr(conclusion, "check", None)
    out = list(HYPOTHESIS_RULES.get(theorem_id, ())) + list(getattr(check, "rules", ()))
    for l_, r_ in getattr(conclusion.params[key], "premises", ()):
        if isinstance(l_, sp.Indexed) and isinstance(r_, sp.Indexed) and l_.base == r_.base:
            moved = [k for k, (x, y) in enumerate(zip(l_.indices, r_.indices, strict=True)) if x != y]
            if len(moved) == 2:
                p, q = moved
                if (l_.indices[p], l_.indices[q]) == (r_.indices[q], r_.indices[p]):
                    out.append(symmetric_rule(l_.base.label.name, p, q))
    out += [definition_rule(conclusion.params[k]) for k in DEFINITIONS if k != key and k in conclusion.params]
    return out


#: formulas the oracle reads only as a space (a kernel, a span of the right side's columns)
SPANS = {("T5.kernel", "kernel_space"): "span", ("T5.kernel", "laplacian"): "kernel"}


def _coefficient(e):
    """``(c, M)`` with ``e = c·M`` for a number ``c`` (a matrix expression)."""
    if isinstance(e, sp.MatMul):
        c, rest = e.as_coeff_mmul()
        return c, rest.args[0] if len(rest.args) == 1 else rest
    return sp.S.One, e


def _rewritten(e, rules):
    for r in rules:
        e = r(e)
    return e


#: formulas the oracle reads only through a spectrum (the eigenvalues of ``A ⊗ T``, of ``Δ``)
SPECTRAL = {("T1.spectrum", "kron"), ("T5.spectrum", "laplacian")}


def equivalence_reason(theorem_id: str, conclusion, mutant: Mutant) -> str | None:
    """The exact reason ``mutant`` states what the conclusion states, or ``None``."""
    f0 = conclusion.params[mutant.key]
    f1 = f0.edited(**mutant.changes)
    sizes = sizes_for(theorem_id, conclusion)
    if (conclusion.id, mutant.key) in SPANS:  # read as a space: a nonzero multiple spans the same
        rules = rules_for(theorem_id, conclusion, mutant.key)
        l0, r0, l1, r1 = (_rewritten(x, rules) for x in (f0.lhs, f0.rhs, f1.lhs, f1.rhs))
        (c0, m0), (c1, m1) = _coefficient(r0), _coefficient(r1)
        c = sp.simplify(c1 / c0) if m0 == m1 else None
        if c is None:  # the multiple distributed over a sum
            c = next((sp.Integer(q) for q in (-1, 2) if sp.simplify((r1 - q * r0).doit()).is_ZeroMatrix), None)
        if l0 == l1 and c is not None and c.is_number and c != 0:
            return f"the same {SPANS[conclusion.id, mutant.key]} (the right side {c} times the original's)"
        return None
    if (conclusion.id, mutant.key) in SPECTRAL:
        sides = ("expr",) if hasattr(f0, "expr") else ("lhs", "rhs")
        if all(same_spectrum(getattr(f0, s), getattr(f1, s), sizes) for s in sides):
            return f"the same characteristic polynomial at {sizes} (generic entries)"
        return None
    return equivalent(f0, f1, sizes, rules_for(theorem_id, conclusion, mutant.key))
