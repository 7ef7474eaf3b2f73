"""Mechanical mutants of a conclusion's formulas: the reviewer's mutant kinds (operand order,
transpose, sign, factor, index swap) generated from the conclusion's own SymPy expressions.

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
mutant): :mod:`theory.gate.equivalence` decides that exactly.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

import sympy as sp

from .. import formulas as F

KINDS = ("operand order", "transpose", "sign", "factor", "index swap")

#: the class of an index symbol: what it ranges over (tokens and ring offsets share ``n``)
INDEX_CLASS = {s: size.name for s, size in F.RANGE.items()}


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
                if p < len(cls) and cls[p] is None and x in INDEX_CLASS:
                    cls[p] = INDEX_CLASS[x]
    return out


def _index_swaps(expr, classes):
    """``(kind, what, new expr)`` for every two same-class indices of an indexed entry exchanged."""
    out = []
    for atom in sorted(expr.atoms(sp.Indexed), key=sp.default_sort_key):
        idx = atom.indices
        pos = classes.get(atom.base, [None] * len(idx))
        for p in range(len(idx)):
            for q in range(p + 1, len(idx)):
                ok = all(isinstance(x, sp.Integer) or x in INDEX_CLASS for x in (idx[p], idx[q]))
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
        parts: list = []
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
