"""Mechanical mutants of a conclusion's formulas: the reviewer's mutant kinds (operand order,
transpose, sign, factor, index swap) generated from the conclusion's own SymPy expressions.

Not collected by pytest (no ``test_`` prefix); used by ``tests/theory/test_discriminating_walks.py``
and ``tests/theory/test_discriminating_spectral.py``.

A formula (:class:`theory.formulas.Identity`, :class:`theory.formulas.walks.Relation` or
:class:`theory.formulas.walks.Term`) has *parts*: an identity's ``lhs``, ``rhs`` and the bodies of
its ``where`` definitions, a relation's ``rel``, a term's ``expr`` (premises are the formula's
assumptions, not what it concludes: they are not mutated). In each part:

* **sign** / **factor**: the part times ``-1`` / ``2`` (an identity's ``rhs``, or its ``lhs`` when
  the ``rhs`` is zero; every ``where`` body; a relation's left side; a term);
* **index swap**: an indexed symbol with two token (``i, j, k, m``; or head ``h, l``) indices
  exchanged, every occurrence of that very entry in the part (``O_ij → O_ji``, ``A_ij → A_ji``);
* **transpose**: an indexed symbol with two feature indices (``a, b, c``) exchanged
  (``O_{ij,ab} → O_{ij,ba}``), or a square matrix symbol replaced by its transpose (``A → Aᵀ``);
* **operand order**: a matrix product or Kronecker product with its factors reversed, where the
  shapes still match (``A ⊗ T → T ⊗ A``).

A mutant that is a different expression may still be the same *statement* (an equivalent
mutant): :func:`scaled_residual` and :func:`symmetric_under` are the exact SymPy checks the test
files use to show it.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

import sympy as sp
from hypothesis import HealthCheck, Phase, find, settings
from sympy.matrices.expressions.matexpr import MatrixElement

from theory import formulas as F
from theory import oracles

KINDS = ("operand order", "transpose", "sign", "factor", "index swap")

#: the class of an index symbol: what it ranges over (tokens and ring offsets share ``n``)
_CLASS = {s: size.name for s, size in F.RANGE.items()}


@dataclass(frozen=True)
class Mutant:
    """One mutant of the formula ``key`` of conclusion ``cid``: ``changes`` are the fields of
    ``formula.edited(**changes)``."""

    cid: str
    key: str
    kind: str
    part: str
    what: str
    changes: dict = field(compare=False, hash=False)

    @property
    def name(self) -> str:
        return f"{self.cid} {self.key} {self.part}: {self.what} ({self.kind})"

    def apply(self, conclusion):
        """The conclusion with this mutant's formula in place of the original."""
        return conclusion.with_params(**{self.key: conclusion.params[self.key].edited(**self.changes)})


def position_classes(exprs) -> dict:
    """``base -> [class of each index position]`` (``"n"``, ``"d"``, ``"H"``, or ``None`` when no
    index symbol is seen there), read from every entry of ``exprs`` whose index is a plain symbol: a
    number at a position (``A0^h_{0m}``: row 0) then has that position's class."""
    out: dict = {}
    for e in exprs:
        if not isinstance(e, sp.Basic):
            continue
        for atom in e.atoms(sp.Indexed):
            cls = out.setdefault(atom.base, [None] * len(atom.indices))
            for p, x in enumerate(atom.indices):
                if p < len(cls) and cls[p] is None and x in _CLASS:
                    cls[p] = _CLASS[x]
    return out


def _index_swaps(expr, classes):
    """``(kind, what, new expr)`` for every two same-class indices of an indexed entry exchanged."""
    out = []
    for atom in sorted(expr.atoms(sp.Indexed), key=sp.default_sort_key):
        idx = atom.indices
        pos = classes.get(atom.base, [None] * len(idx))
        for p in range(len(idx)):
            for q in range(p + 1, len(idx)):
                ok = all(isinstance(x, sp.Integer) or x in _CLASS for x in (idx[p], idx[q]))
                if not ok or idx[p] == idx[q] or pos[p] is None or pos[p] != pos[q]:
                    continue
                if isinstance(idx[p], sp.Integer) and isinstance(idx[q], sp.Integer):
                    continue
                cls = pos[p]
                swapped = list(idx)
                swapped[p], swapped[q] = idx[q], idx[p]
                new_atom = atom.base[tuple(swapped)]
                new = expr.xreplace({atom: new_atom})
                if new != expr:
                    kind = "transpose" if cls == "d" else "index swap"
                    out.append((kind, f"{atom} -> {new_atom}", new))
    return out


def _square(M) -> bool:
    r, c = M.shape
    return sp.simplify(r - c) == 0


def _matrix_transposes(expr):
    out = []
    for S in sorted(expr.atoms(sp.MatrixSymbol), key=sp.default_sort_key):
        if not _square(S):
            continue
        new = expr.xreplace({S: S.T})
        new = new.replace(
            lambda e: isinstance(e, sp.Transpose) and isinstance(e.arg, sp.Transpose), lambda e: e.arg.arg
        )
        if new != expr:
            out.append(("transpose", f"{S} -> {S}^T", new))
    return out


def _shapes_chain(args) -> bool:
    mats = [x for x in args if getattr(x, "is_Matrix", False)]
    return all(sp.simplify(u.shape[1] - v.shape[0]) == 0 for u, v in itertools.pairwise(mats))


def _operand_orders(expr):
    out = []
    if not isinstance(expr, sp.Basic):
        return out
    nodes = [e for e in sp.preorder_traversal(expr) if isinstance(e, (sp.MatMul, sp.KroneckerProduct))]
    for node in nodes:
        if isinstance(node, sp.KroneckerProduct):
            new_node = sp.KroneckerProduct(*reversed(node.args))
        else:
            scalars = [x for x in node.args if not getattr(x, "is_Matrix", False)]
            mats = [x for x in node.args if getattr(x, "is_Matrix", False)]
            if len(mats) < 2 or not _shapes_chain(mats[::-1]):
                continue
            new_node = sp.MatMul(*scalars, *reversed(mats))
        if new_node == node:
            continue
        new = expr.xreplace({node: new_node})
        if new != expr:
            out.append(("operand order", f"{node} -> {new_node}", new))
    return out


def _structural(expr, classes):
    """Every index swap, transpose and operand-order mutant of one expression."""
    if not isinstance(expr, sp.Basic):
        return []
    return _index_swaps(expr, classes) + _matrix_transposes(expr) + _operand_orders(expr)


def _zero_side(e) -> bool:
    return isinstance(e, sp.Basic) and e == 0


def formula_mutants(cid: str, key: str, formula: Any) -> list[Mutant]:
    """Every mutant of the reviewer's kinds of one formula (module docstring)."""
    out: list[Mutant] = []
    exprs = [getattr(formula, k, None) for k in ("lhs", "rhs", "rel", "expr")]
    classes = position_classes(exprs + [x for pair in getattr(formula, "where", ()) for x in pair])

    def add(kind, part, what, changes):
        out.append(Mutant(cid, key, kind, part, what, changes))

    if hasattr(formula, "rel"):  # a relation
        rel = formula.rel
        if isinstance(rel, sp.core.relational.Relational):
            add("sign", "rel", "left side times -1", {"rel": rel.func(-rel.lhs, rel.rhs)})
            add("factor", "rel", "left side times 2", {"rel": rel.func(2 * rel.lhs, rel.rhs)})
        for kind, what, new in _structural(rel, classes):
            add(kind, "rel", what, {"rel": new})
        parts = []
    elif hasattr(formula, "expr"):  # a term
        add("sign", "expr", "times -1", {"expr": -formula.expr})
        add("factor", "expr", "times 2", {"expr": 2 * formula.expr})
        for kind, what, new in _structural(formula.expr, classes):
            add(kind, "expr", what, {"expr": new})
        parts = []
    else:  # an identity
        side = "lhs" if _zero_side(formula.rhs) else "rhs"
        value = getattr(formula, side)
        add("sign", side, f"{side} times -1", {side: -value})
        add("factor", side, f"{side} times 2", {side: 2 * value})
        for s in ("lhs", "rhs"):
            for kind, what, new in _structural(getattr(formula, s), classes):
                add(kind, s, what, {s: new})
        parts = list(enumerate(formula.where))
    for w, (head, body) in parts:

        def where(new, w=w, head=head):
            return {"where": tuple((hd, new if q == w else b) for q, (hd, b) in enumerate(formula.where))}

        part = f"where {head}"
        add("sign", part, "body times -1", where(-body))
        add("factor", part, "body times 2", where(2 * body))
        for kind, what, new in _structural(body, classes):
            add(kind, part, what, where(new))
    return out


def conclusion_mutants(conclusion, skip=()) -> list[Mutant]:
    """The mutants of every formula of ``conclusion`` except the keys in ``skip``."""
    return [
        m for key, f in conclusion.formulas.items() if key not in skip for m in formula_mutants(conclusion.id, key, f)
    ]


# ------------------------------------------------------------------------------------------------
# exact checks of equivalent mutants
# ------------------------------------------------------------------------------------------------
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


# ------------------------------------------------------------------------------------------------
# the property test's search
# ------------------------------------------------------------------------------------------------
#: the property tests' settings (the seeded strategies are cheap; the oracles dominate)
PROPERTY = settings(
    max_examples=60,
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=list(HealthCheck),
)
#: the search for a rejecting instance among the property test's own draws
SEARCH = settings(
    max_examples=60,
    derandomize=True,
    database=None,
    deadline=None,
    phases=[Phase.generate],
    suppress_health_check=list(HealthCheck),
)


def fails_the_property_test(conclusion, inst) -> bool:
    """What the property test asserts, negated: the verdict does not hold (or judging raises)."""
    try:
        return not oracles.judge(conclusion, inst).holds
    except Exception:
        return True


def rejecting_instance(instances, conclusion, mutant):
    """An instance of ``instances`` (the property test's strategy) on which ``conclusion`` holds and
    its mutant does not (``hypothesis.errors.NoSuchExample`` if none is drawn)."""

    def rejected(inst) -> bool:
        return oracles.judge(conclusion, inst).holds and fails_the_property_test(mutant.apply(conclusion), inst)

    found = find(instances, rejected, settings=SEARCH)
    assert rejected(found)
    return found


# ------------------------------------------------------------------------------------------------
# exact equivalence at explicit sizes
# ------------------------------------------------------------------------------------------------
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
        if perm != free and all(_CLASS.get(x) == _CLASS.get(y) for x, y in zip(free, perm, strict=True)):
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


def rules_for(theorem_id: str, conclusion, key: str) -> list:
    """The rewrites of the equivalence check of formula ``key``: the theorem's hypotheses, the
    formula's symmetric premises (``M_ab = M_ba``) and the conclusion's other definitions."""
    out = list(HYPOTHESIS_RULES.get(theorem_id, ()))
    for l_, r_ in getattr(conclusion.params[key], "premises", ()):
        if isinstance(l_, sp.Indexed) and isinstance(r_, sp.Indexed) and l_.base == r_.base:
            moved = [k for k, (x, y) in enumerate(zip(l_.indices, r_.indices, strict=True)) if x != y]
            p, q = (moved + [None, None])[:2]
            if len(moved) == 2 and (l_.indices[p], l_.indices[q]) == (r_.indices[q], r_.indices[p]):
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
    sizes = SIZES[theorem_id]
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


def mutant_params(names, mutants) -> list:
    """``pytest.param`` per mutant name, tagged with its theorem (``mutants[name][0]``) and named by it."""
    import pytest

    return [pytest.param(nm, marks=pytest.mark.theorem(mutants[nm][0]), id=nm) for nm in names]


def property_tests(strategies, conclusions, mutants, rejected, equivalent):
    """The three tests a discriminating file runs, over its own strategies and mutants:
    ``test_conclusion_holds`` (the property test: each ``(theorem, conclusion)`` of ``conclusions`` holds
    on every drawn instance), ``test_mutant_is_rejected_by_the_property_test`` (each name of ``rejected``:
    the property test's own strategy draws an instance the statement holds on and the mutant does not —
    it fails, or judging it raises) and ``test_equivalent_mutant_is_exactly_equivalent`` (each name of
    ``equivalent``, by :func:`equivalence_reason`). Assign them to those names in the test module."""
    import pytest
    from hypothesis import given
    from hypothesis import strategies as st

    from theory import oracles, registry

    @pytest.mark.parametrize(
        "tid, cid", [pytest.param(t, c, marks=pytest.mark.theorem(t), id=c) for t, c in conclusions]
    )
    @PROPERTY
    @given(data=st.data())
    def test_conclusion_holds(tid, cid, data):
        inst = data.draw(strategies[tid])
        verdict = oracles.judge(registry.get(tid).conclusion(cid), inst)
        assert verdict.holds, (cid, verdict)

    # a mutant may divide by a zero of a drawn sparse head or take the log of a negative number: numpy's
    # RuntimeWarning there is the mutant's own NaN, which the oracle reads (the original's property test
    # keeps them errors)
    @pytest.mark.filterwarnings("ignore::RuntimeWarning")
    @pytest.mark.parametrize("name", mutant_params(rejected, mutants))
    def test_mutant_is_rejected_by_the_property_test(name):
        tid, m = mutants[name]
        rejecting_instance(strategies[tid], registry.get(tid).conclusion(m.cid), m)

    @pytest.mark.parametrize("name", mutant_params(equivalent, mutants))
    def test_equivalent_mutant_is_exactly_equivalent(name):
        tid, m = mutants[name]
        assert equivalence_reason(tid, registry.get(tid).conclusion(m.cid), m), name

    return (
        test_conclusion_holds,
        test_mutant_is_rejected_by_the_property_test,
        test_equivalent_mutant_is_exactly_equivalent,
    )
