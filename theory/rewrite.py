"""A small rewrite machinery for identities over symbolic sizes: what SymPy lacks to prove
``Sum``/``Indexed`` identities for every ``n``, ``d``, ``H``.

An expression is expanded into :class:`Term` s — ``coeff · Π factors`` summed over bound indices
with symbolic ranges (linearity of finite sums, distributivity; a power ``f^m`` with integer
``m > 0`` is ``m`` factors with fresh bound indices). Two terms are the same when they agree up
to a renaming of their bound indices (:func:`canonical`: the **index-swap rule** — ``Σ_i Σ_j f(i, j)
= Σ_i Σ_j f(j, i)`` — applied by trying every renaming of bound indices of equal range). A
hypothesis enters as a stated rule (:data:`RULES`):

* a *reduction* removes structure (``Σ_j P_ij = 1``; ``Σ_a O_ijab O_ijac = δ_bc``; the cyclic shift
  of a sum over ``Z_n``; ``Σ_k f_k / Σ_k f_k = 1``);
* a *symmetry* maps a factor to an equal one (detailed balance ``π_i P_ij → π_j P_ji``; ``O_ijab →
  O_jiba``; ``M_ab → M_ba``); a term's normal form is the least canonical key over every
  combination of symmetries (each applied after the reductions it enables).

:func:`prove` returns ``lhs - rhs`` collected over normal forms: exact ``0`` iff every term cancels.
Every rule is sound (an equality under its hypothesis) and tested on numbers
(``tests/theory/test_general_derivations.py``); a wrong rule makes a derivation fail there.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import sympy as sp

from .formulas import RANGE


@dataclass(frozen=True)
class Term:
    """``coeff · Π factors`` summed over ``sums`` (``(index, lo, hi)``, inclusive bounds)."""

    coeff: sp.Expr
    sums: tuple[tuple[sp.Symbol, sp.Expr, sp.Expr], ...] = ()
    factors: tuple[sp.Expr, ...] = ()

    @property
    def bound(self) -> tuple[sp.Symbol, ...]:
        return tuple(s[0] for s in self.sums)

    def expr(self) -> sp.Expr:
        body = sp.Mul(self.coeff, *self.factors)
        return sp.Sum(body, *self.sums) if self.sums else body


def _fresh(v: sp.Symbol) -> sp.Symbol:
    return sp.Dummy(v.name, integer=True, nonnegative=True)


def _is_coefficient(e: sp.Expr) -> bool:
    return not e.has(sp.Indexed) and not any(s in RANGE or isinstance(s, sp.Dummy) for s in e.free_symbols)


def terms(expr) -> list[Term]:
    """``expr`` expanded into terms (linearity of sums, distributivity)."""
    expr = sp.sympify(expr)
    if isinstance(expr, sp.Add):
        return [t for arg in expr.args for t in terms(arg)]
    if isinstance(expr, sp.Mul):
        out = [Term(sp.S.One)]
        for arg in expr.args:
            out = [Term(x.coeff * y.coeff, x.sums + y.sums, x.factors + y.factors) for x in out for y in terms(arg)]
        return out
    if isinstance(expr, sp.Pow) and expr.exp.is_Integer and expr.exp > 0 and not _is_coefficient(expr.base):
        return terms(sp.Mul(*[expr.base] * int(expr.exp), evaluate=False))
    if isinstance(expr, sp.Sum):
        body, sums = expr.function, []
        for v, lo, hi in expr.limits:
            w = _fresh(v)
            body = body.xreplace({v: w})
            sums.append((w, lo, hi))
        return [Term(t.coeff, tuple(sums) + t.sums, t.factors) for t in terms(body)]
    if _is_coefficient(expr):
        return [Term(expr)]
    return [Term(sp.S.One, (), (expr,))]


# ------------------------------------------------------------------------------------------------
# canonical form: the index-swap rule
# ------------------------------------------------------------------------------------------------
def _canon_atom(f: sp.Expr) -> str:
    """A factor's text with the bound indices of any sum *inside* it renamed in order."""
    k = 0
    for s in sorted(f.atoms(sp.Sum), key=sp.default_sort_key):
        for v, *_ in s.limits:
            f = f.xreplace({v: sp.Symbol(f"_in{k}")})
            k += 1
    return sp.srepr(f)


def canonical(t: Term) -> tuple:
    """The key of ``t`` up to renaming its bound indices (all renamings among indices of equal
    range are tried; the least key wins): the **index-swap rule**."""
    best = None
    groups: dict[tuple[str, str], list] = {}
    for v, lo, hi in t.sums:
        groups.setdefault((str(lo), str(hi)), []).append(v)
    order = sorted(groups)
    for perms in itertools.product(*(itertools.permutations(groups[g]) for g in order)):
        names = {v: sp.Symbol(f"_b{g}_{k}") for g, vs in enumerate(perms) for k, v in enumerate(vs)}
        lim = tuple(sorted((str(names[v]), str(lo), str(hi)) for v, lo, hi in t.sums))
        key = (lim, tuple(sorted(_canon_atom(f.xreplace(names)) for f in t.factors)))
        if best is None or key < best:
            best = key
    return best if best is not None else ((), ())


# ------------------------------------------------------------------------------------------------
# rules
# ------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Rule:
    """A stated rule: ``name``, its statement (LaTeX), its kind (``"reduction"``: term -> smaller
    term or ``None``; ``"symmetry"``: term -> list of equal terms) and the function."""

    name: str
    statement: str
    kind: str
    apply: Callable = field(compare=False)


def _occurs(v, factors) -> int:
    return sum(1 for f in factors if f.has(v))


def row_sum(base: sp.IndexedBase, position: int = -1) -> Rule:
    """``Σ_v X[..., v] = 1`` over the last index (row-stochastic ``X``)."""

    def apply(t: Term):
        bound = set(t.bound)
        for k, f in enumerate(t.factors):
            if isinstance(f, sp.Indexed) and f.base == base:
                v = f.indices[position]
                others = t.factors[:k] + t.factors[k + 1 :]
                if v in bound and _occurs(v, others) == 0 and sum(1 for x in f.indices if x == v) == 1:
                    return Term(t.coeff, tuple(s for s in t.sums if s[0] != v), others)
        return None

    return Rule(f"row_sum({base})", rf"\sum_v {sp.latex(base)}_{{\dots, v}} = 1", "reduction", apply)


def _orthogonal_contraction(base: sp.IndexedBase, fixed: tuple[int, ...], summed: int, free: int):
    """The reduction shared by the orthogonality rules: two factors ``base[...]`` that agree on the
    index positions ``fixed`` and share a bound index at position ``summed`` (occurring nowhere else)
    contract to ``δ`` of their indices at position ``free``; a bound free index is substituted away
    (the second factor's first), else the ``KroneckerDelta`` stays a factor."""

    def apply(t: Term):
        bound = set(t.bound)
        fs = t.factors
        for p, q in itertools.combinations(range(len(fs)), 2):
            f, g = fs[p], fs[q]
            if not (isinstance(f, sp.Indexed) and isinstance(g, sp.Indexed) and f.base == base == g.base):
                continue
            if any(f.indices[k] != g.indices[k] for k in (*fixed, summed)):
                continue
            s, b, c = f.indices[summed], f.indices[free], g.indices[free]
            rest = fs[:p] + fs[p + 1 : q] + fs[q + 1 :]
            if s not in bound or _occurs(s, rest) or s in (b, c) or s in (f.indices[k] for k in fixed):
                continue
            sums = tuple(x for x in t.sums if x[0] != s)
            if c in bound and c != b:
                return Term(t.coeff, tuple(x for x in sums if x[0] != c), tuple(x.xreplace({c: b}) for x in rest))
            if b in bound and b != c:
                return Term(t.coeff, tuple(x for x in sums if x[0] != b), tuple(x.xreplace({b: c}) for x in rest))
            return Term(t.coeff, sums, (*rest, sp.KroneckerDelta(b, c)))
        return None

    return apply


def orthogonality(base: sp.IndexedBase) -> Rule:
    """``Σ_a O[u, v, a, b] O[u, v, a, c] = δ_bc`` (every ``O_uv`` orthogonal)."""
    return Rule(
        f"orthogonality({base})",
        rf"\sum_a {sp.latex(base)}_{{u,v,a,b}} {sp.latex(base)}_{{u,v,a,c}} = \delta_{{b,c}}",
        "reduction",
        _orthogonal_contraction(base, fixed=(0, 1), summed=2, free=3),
    )


def row_orthogonality(base: sp.IndexedBase) -> Rule:
    """``Σ_c R[u, a, c] R[u, b, c] = δ_ab`` (every ``R_u`` orthogonal: ``R_u R_u^T = I``)."""
    return Rule(
        f"row_orthogonality({base})",
        rf"\sum_c {sp.latex(base)}_{{u,a,c}} {sp.latex(base)}_{{u,b,c}} = \delta_{{a,b}}",
        "reduction",
        _orthogonal_contraction(base, fixed=(0,), summed=2, free=1),
    )


def detailed_balance(pi: sp.IndexedBase, P: sp.IndexedBase) -> Rule:
    """``π_u P_uv = π_v P_vu``: the factors ``π_u``, ``P_uv`` of a term replaced by ``π_v``, ``P_vu``."""

    def apply(t: Term):
        out = []
        fs = t.factors
        for p, f in enumerate(fs):
            if not (isinstance(f, sp.Indexed) and f.base == P):
                continue
            u, v = f.indices
            for q, g in enumerate(fs):
                if q != p and isinstance(g, sp.Indexed) and g.base == pi and g.indices == (u,):
                    new = list(fs)
                    new[p], new[q] = P[v, u], pi[v]
                    out.append(Term(t.coeff, t.sums, tuple(new)))
                    break
        return out

    return Rule(
        f"detailed_balance({pi}, {P})",
        rf"{sp.latex(pi)}_u {sp.latex(P)}_{{u,v}} = {sp.latex(pi)}_v {sp.latex(P)}_{{v,u}}",
        "symmetry",
        apply,
    )


def swap_symmetry(base: sp.IndexedBase, perm: Sequence[int], statement: str) -> Rule:
    """``X[idx] = X[idx permuted by perm]`` for one occurrence at a time (anywhere in a factor)."""

    def apply(t: Term):
        out = []
        for p, f in enumerate(t.factors):
            for occ in sorted(f.atoms(sp.Indexed), key=sp.default_sort_key):
                if occ.base != base:
                    continue
                new = list(t.factors)
                new[p] = f.xreplace({occ: base[tuple(occ.indices[k] for k in perm)]})
                out.append(Term(t.coeff, t.sums, tuple(new)))
        return out

    return Rule(f"swap({base}, {tuple(perm)})", statement, "symmetry", apply)


def symmetric(base: sp.IndexedBase) -> Rule:
    """``X_uv = X_vu``."""
    b = sp.latex(base)
    return swap_symmetry(base, (1, 0), rf"{b}_{{u,v}} = {b}_{{v,u}}")


def transpose_compatible(base: sp.IndexedBase) -> Rule:
    """``O_uvab = O_vuba`` (``O_vu = O_uv^T``)."""
    b = sp.latex(base)
    return swap_symmetry(base, (1, 0, 3, 2), rf"{b}_{{u,v,a,b}} = {b}_{{v,u,b,a}}")


def cyclic_shift(base: sp.IndexedBase, zeta: sp.Symbol, size: sp.Symbol) -> Rule:
    """Reindexing a sum over ``Z_size`` with ``zeta^size = 1``:
    ``Σ_{j=0}^{size-1} f((j - u) mod size) zeta^j = zeta^u Σ_{m=0}^{size-1} f(m) zeta^m``
    (``m = (j - u) mod size`` is a bijection of ``Z_size``; ``zeta^j = zeta^(u+m)``)."""

    def apply(t: Term):
        bound = set(t.bound)
        for p, f in enumerate(t.factors):
            if not (isinstance(f, sp.Indexed) and f.base == base):
                continue
            for pos, idx in enumerate(f.indices):
                if not (isinstance(idx, sp.Mod) and idx.args[1] == size):
                    continue
                arg = sp.expand(idx.args[0])
                for j in bound:
                    u = sp.expand(j - arg)
                    if u.has(j) or sp.expand(arg - (j - u)) != 0:
                        continue
                    power = [q for q, g in enumerate(t.factors) if g == zeta**j]
                    rest = [g for q, g in enumerate(t.factors) if q != p and (not power or q != power[0])]
                    if len(power) != 1 or any(g.has(j) for g in rest):
                        continue
                    m = _fresh(sp.Symbol("m"))
                    new_f = base[tuple(m if k == pos else x for k, x in enumerate(f.indices))]
                    sums = tuple((m, lo, hi) if v == j else (v, lo, hi) for v, lo, hi in t.sums)
                    return Term(t.coeff, sums, (*rest, new_f, zeta**u, zeta**m))
        return None

    return Rule(
        f"cyclic_shift({base})",
        rf"\sum_{{j}} f((j-u) \bmod {sp.latex(size)})\,{sp.latex(zeta)}^j = {sp.latex(zeta)}^u \sum_m f(m)\,{sp.latex(zeta)}^m"
        rf" \quad ({sp.latex(zeta)}^{{{sp.latex(size)}}} = 1)",
        "reduction",
        apply,
    )


def eigen(M: sp.IndexedBase, vec: sp.IndexedBase, value: sp.Expr) -> Rule:
    """``Σ_v M[u, v] vec[v] = value · vec[u]`` (``vec`` an eigenvector of ``M``)."""

    def apply(t: Term):
        bound = set(t.bound)
        fs = t.factors
        for p, f in enumerate(fs):
            if not (isinstance(f, sp.Indexed) and f.base == M):
                continue
            u, v = f.indices
            for q, g in enumerate(fs):
                if q == p or not (isinstance(g, sp.Indexed) and g.base == vec and g.indices == (v,)):
                    continue
                rest = [x for r, x in enumerate(fs) if r not in (p, q)]
                if v in bound and v != u and not any(x.has(v) for x in rest):
                    return Term(t.coeff * value, tuple(s for s in t.sums if s[0] != v), (*rest, vec[u]))
        return None

    return Rule(
        f"eigen({M}, {vec})",
        rf"\sum_v {sp.latex(M)}_{{u,v}} {sp.latex(vec)}_v = {sp.latex(value)}\, {sp.latex(vec)}_u",
        "reduction",
        apply,
    )


def cancel_quotient() -> Rule:
    """``(Σ_k f(k)) · (Σ_k f(k))^{-p} = (Σ_k f(k))^{1-p}``: a term whose factors, summed over one of
    its bound indices ``k'``, are exactly the sum inside one of its reciprocal factors (power ``p ≥ 1``)."""

    def apply(t: Term):
        for p, f in enumerate(t.factors):
            if not (isinstance(f, sp.Pow) and f.exp.is_Integer and f.exp < 0 and isinstance(f.base, sp.Sum)):
                continue
            inner = f.base
            if len(inner.limits) != 1:
                continue
            (w, lo, hi) = inner.limits[0]
            rest = t.factors[:p] + t.factors[p + 1 :]
            for v, vlo, vhi in t.sums:
                if (vlo, vhi) != (lo, hi):
                    continue
                mine = [g for g in rest if g.has(v)]
                if sp.Mul(*mine) == inner.function.xreplace({w: v}):
                    others = tuple(g for g in rest if not g.has(v))
                    if f.exp != -1:
                        others += (f.base ** (f.exp + 1),)
                    return Term(t.coeff, tuple(s for s in t.sums if s[0] != v), others)
        return None

    return Rule("cancel_quotient", r"\Big(\sum_k f_k\Big)\Big(\sum_k f_k\Big)^{-1} = 1", "reduction", apply)


# ------------------------------------------------------------------------------------------------
# normal forms and proofs
# ------------------------------------------------------------------------------------------------
def constant_sum() -> Rule:
    """``Σ_{v=lo}^{hi} c = (hi - lo + 1)·c`` for a bound index ``v`` that no factor contains."""

    def apply(t: Term):
        for v, lo, hi in t.sums:
            if not any(f.has(v) for f in t.factors):
                return Term(t.coeff * (hi - lo + 1), tuple(s for s in t.sums if s[0] != v), t.factors)
        return None

    return Rule("constant_sum", r"\sum_{v=0}^{N-1} c = N c", "reduction", apply)


#: applied in every proof: plain arithmetic of finite sums, no hypothesis
ALWAYS: tuple[Rule, ...] = (constant_sum(),)


def _reduce(t: Term, rules: Sequence[Rule]) -> Term:
    rules = (*ALWAYS, *rules)
    changed = True
    while changed:
        changed = False
        for r in rules:
            if r.kind != "reduction":
                continue
            new = r.apply(t)
            if new is not None:
                t, changed = new, True
    return t


def normal_form(t: Term, rules: Sequence[Rule], limit: int = 256) -> tuple[tuple, Term]:
    """The least canonical key over every combination of the symmetry rules (reductions applied
    after each), and the term that has it."""
    t = _reduce(t, rules)
    seen: dict[tuple, Term] = {canonical(t): t}
    frontier = [t]
    while frontier and len(seen) < limit:
        nxt = []
        for x in frontier:
            for r in rules:
                if r.kind != "symmetry":
                    continue
                for y in r.apply(x):
                    y = _reduce(y, rules)
                    key = canonical(y)
                    if key not in seen:
                        seen[key] = y
                        nxt.append(y)
        frontier = nxt
    best = min(seen)
    return best, seen[best]


def collect(expr, rules: Sequence[Rule] = ()) -> dict[tuple, tuple[sp.Expr, Term]]:
    """``expr`` as ``normal key -> (coefficient, representative term)``, zero coefficients dropped."""
    out: dict[tuple, list] = {}
    for t in terms(expr):
        key, rep = normal_form(Term(sp.S.One, t.sums, t.factors), rules)
        if key in out:
            out[key][0] += t.coeff * rep.coeff
        else:
            out[key] = [t.coeff * rep.coeff, Term(sp.S.One, rep.sums, rep.factors)]
    return {k: (c, rep) for k, (c, rep) in ((k, (sp.cancel(c), rep)) for k, (c, rep) in out.items()) if c != 0}


def prove(lhs, rhs, rules: Sequence[Rule] = ()) -> sp.Expr:
    """``lhs - rhs`` in normal form under ``rules``: the exact ``0`` when the identity is proved."""
    got = collect(sp.Add(lhs, -rhs), rules)
    return sp.Add(*[c * rep.expr() for c, rep in got.values()])


# ------------------------------------------------------------------------------------------------
# index arithmetic for stacked (vec) indices
# ------------------------------------------------------------------------------------------------
def split_index(expr, blocks: Sequence[sp.Symbol]) -> sp.Expr:
    """The **index-split rule**: for ``0 <= u < D`` (``u`` an index of range ``D``),
    ``floor((v·D + u)/D) = v`` and ``(v·D + u) mod D = u``; and ``v mod N = v`` for an index ``v``
    of range ``N``. ``blocks``: the divisors ``D`` it may use."""

    def floor_rule(e):
        (arg,) = e.args
        for D in blocks:
            num = sp.expand(arg * D)
            for u in [s for s in num.free_symbols if RANGE.get(s) == D]:
                v = sp.expand((num - u) / D)
                if sp.denom(sp.together(v)) == 1 and not v.has(u):
                    return v
        return e

    def mod_rule(e):
        arg, N = e.args
        if arg in RANGE and RANGE[arg] == N:
            return arg
        num = sp.expand(arg)
        for u in [s for s in num.free_symbols if RANGE.get(s) == N]:
            v = sp.expand((num - u) / N)
            if sp.denom(sp.together(v)) == 1 and not v.has(u):
                return u
        return e

    prev = None
    while prev != expr:
        prev = expr
        expr = expr.replace(lambda e: isinstance(e, sp.floor), floor_rule)
        expr = expr.replace(lambda e: isinstance(e, sp.Mod), mod_rule)
    return expr


def split_sum(expr, outer: sp.Symbol, inner: sp.Symbol, names: tuple[sp.Symbol, sp.Symbol]) -> sp.Expr:
    """The **sum-split rule**: ``Σ_{q=0}^{N·D-1} f(q) = Σ_{v=0}^{N-1} Σ_{u=0}^{D-1} f(v·D + u)``
    (``outer`` = ``N``, ``inner`` = ``D``; ``names`` = ``(v, u)``)."""

    def rule(e):
        if len(e.limits) != 1:
            return e
        q, lo, hi = e.limits[0]
        if lo != 0 or sp.expand(hi - (outer * inner - 1)) != 0:
            return e
        v, u = names
        return sp.Sum(e.function.xreplace({q: v * inner + u}), (v, 0, outer - 1), (u, 0, inner - 1))

    return expr.replace(lambda e: isinstance(e, sp.Sum), rule)
