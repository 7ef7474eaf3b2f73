"""Derivations for symbolic sizes: the registry's formulas (:mod:`theory.formulas`) rewritten to an
exact zero for every ``n``, ``d`` (and ``H``, and every ring size), with the stated rules of
:mod:`theory.rewrite` standing for the hypotheses.

Each ``general_<id>(theorem)`` reads the formulas from the registry entry it is given (so an edited
formula is what gets proved or refuted) and returns a :class:`~theory.symbolic.Derivation` whose
sizes are the SymPy symbols ``n``, ``d``, ``H``. The fixed-size derivations of
:mod:`theory.derivations` stay as a second route; ``tests/theory/test_general_derivations.py``
instantiates these formulas at fixed sizes and checks they agree.

What SymPy does not reach is left to the sized checks and said so in the registry's ``scope``: T3's
spectral interval (a Rayleigh-quotient argument on top of the identities proved here), T4's "only if"
(Kolmogorov cycles), T5's spectra, T6's linearisation.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import sympy as sp

from .. import formulas as F
from .. import rewrite as R
from ..symbolic import Derivation

#: the heads' symbols: the general T2 / T6 derivations build every head from these constructors,
#: indexed by a symbolic head index, so heads are distinct by construction
HEAD_ATTENTION: Callable[[sp.Expr], sp.Expr] = lambda hd: F.Ah_[hd, F.i, F.j]
HEAD_TRANSPORT: Callable[[sp.Expr], sp.Expr] = lambda hd: F.Th_[hd, F.a, F.b]
HEAD_KERNEL: Callable[[sp.Expr], sp.Expr] = lambda hd: F.A0_[hd, 0, F.m]


def _sizes(*names: str) -> dict:
    return {nm: getattr(F, nm) for nm in names}


def instantiate(expr, where: Sequence[tuple], only: Sequence[sp.IndexedBase] | None = None) -> sp.Expr:
    """``expr`` with every occurrence of a defined ``Indexed`` (``where``: ``(head, body)`` pairs)
    replaced by its definition at the occurrence's indices (repeated until none is left)."""
    defs = {hd.base: (hd, body) for hd, body in where if only is None or hd.base in only}

    def sub(e):
        hd, body = defs[e.base]
        return body.xreplace(dict(zip(hd.indices, e.indices, strict=True)))

    prev = None
    while prev != expr:
        prev = expr
        expr = expr.replace(lambda e: isinstance(e, sp.Indexed) and e.base in defs, sub)
    return expr


def premise_rules(ident: F.Identity) -> list[R.Rule]:
    """Premises ``X[idx] = X[permuted idx]`` as symmetry rules (a dropped premise: no rule)."""
    out = []
    for lhs, rhs in ident.premises:
        if isinstance(lhs, sp.Indexed) and isinstance(rhs, sp.Indexed) and lhs.base == rhs.base:
            perm = [lhs.indices.index(x) for x in rhs.indices]
            out.append(R.swap_symmetry(lhs.base, perm, sp.latex(sp.Eq(lhs, rhs))))
    return out


def _entrywise(ident: F.Identity, outer, inner, entry, names) -> tuple[sp.Expr, sp.Expr]:
    """Entry ``entry`` (a stacked index) of both sides of a matrix identity, with the sum-split and
    index-split rules applied."""

    def one(e):
        return R.split_index(R.split_sum(e[entry, 0], outer, inner, names), [F.d, F.n])

    return one(ident.lhs), one(ident.rhs)


# ------------------------------------------------------------------------------------------------
# L1, T1
# ------------------------------------------------------------------------------------------------
def general_l1(theorem) -> Derivation:
    D = Derivation("L1", _sizes("n", "d"))
    tm = theorem.conclusion("L1.token_major").params["token_major"]
    fm = theorem.conclusion("L1.feature_major").params["feature_major"]
    lhs, rhs = _entrywise(tm, F.n, F.d, F.i * F.d + F.a, (F.j, F.b))
    D.add("general: token-major, entry i*d + a, all n, d", R.prove(lhs, rhs))
    lhs, rhs = _entrywise(fm, F.d, F.n, F.a * F.n + F.i, (F.b, F.j))
    D.add("general: feature-major, entry a*n + i, all n, d", R.prove(lhs, rhs))
    return D


def general_l2(theorem) -> Derivation:
    """L2 for every row length ``n`` and any differentiable scores: the hypothesis' softmax is the
    definition of ``A`` (without the hypothesis ``A`` stays a free symbol and nothing is proved);
    the quotient rule's ``Z^{-2}`` term cancels against the other by :func:`theory.rewrite.cancel_quotient`."""
    D = Derivation("L2", _sizes("n"))
    where = []
    if "L2.softmax" in theorem.hypothesis_ids:
        sm = theorem.hypothesis("L2.softmax").params["softmax"]
        where = [(sm.lhs, sm.rhs)]
    c = theorem.conclusion("L2.rows")
    for key, name in (("rows", "rows sum to 1"), ("derivative", "the derivative of a row sums to 0")):
        ident = c.params[key]
        lhs = instantiate(ident.lhs, where).doit()
        D.add(f"general: {name}, all n, any differentiable scores", R.prove(lhs, ident.rhs, [R.cancel_quotient()]))
    deriv = c.params["derivative"]
    for w in theorem.hypothesis("L2.softmax").witnesses if "L2.softmax" in theorem.hypothesis_ids else ():
        for sig in w.params.values():  # the witness' unnormalised attention keeps the derivative terms
            lhs = instantiate(deriv.lhs, [(sig.lhs, sig.rhs)]).doit()
            D.add(
                "general: witness: unnormalised attention, the derivative of a row is not 0",
                R.prove(lhs, deriv.rhs, [R.cancel_quotient()]),
                expect_zero=False,
            )
    return D


def general_t1(theorem) -> Derivation:
    D = Derivation("T1", _sizes("n", "d"))
    c = theorem.conclusion("T1.walk")
    sha, stacked = c.params["sha"], c.params["stacked"]
    # SHA(X) = A X T^T (the definition of the output) substituted into the stacked identity
    st = stacked.edited(lhs=stacked.lhs.xreplace({sha.lhs: sha.rhs}))
    lhs, rhs = _entrywise(st, F.n, F.d, F.i * F.d + F.a, (F.j, F.b))
    D.add("general: vec(SHA(X)^T) = (A (x) T) vec(X^T), entry i*d + a, all n, d", R.prove(lhs, rhs))
    K = stacked.rhs.args[0] if isinstance(stacked.rhs, sp.MatMul) else stacked.rhs
    blk = R.split_index(K[F.i * F.d + F.a, F.j * F.d + F.b], [F.d, F.n])
    block = c.params.get("block")  # the registry's walk blocks: P_ij O_ij with P = A, O_ij = T
    want = instantiate(block.rhs, block.where) if block is not None else F.A_m[F.i, F.j] * F.T_m[F.a, F.b]
    D.add("general: block (i, j) of the operator is P_ij O_ij with P = A, O_ij = T, all n, d", R.prove(blk, want))
    return D


# ------------------------------------------------------------------------------------------------
# L3, T3
# ------------------------------------------------------------------------------------------------
def t3_rules(*, stochastic=True, balance=True, orthogonal=True, transpose=True) -> list[R.Rule]:
    """T3's hypotheses as rewrite rules: (a) ``Σ_j P_ij = 1``, (b) ``π_i P_ij = π_j P_ji``,
    (c1) ``Σ_a O_ijab O_ijac = δ_bc``, (c2) ``O_ijab = O_jiba``."""
    out = []
    if stochastic:
        out.append(R.row_sum(F.P_))
    if orthogonal:
        out.append(R.orthogonality(F.O_))
    if balance:
        out.append(R.detailed_balance(F.pi_, F.P_))
    if transpose:
        out.append(R.transpose_compatible(F.O_))
    return out


def hypothesis_rules(theorem, *ids: str) -> list[R.Rule]:
    """The rewrite rules the registry's hypotheses ``ids`` state, compiled from their formulas
    (``Σ_v X_uv = 1`` -> row sums; ``π_u X_uv = π_v X_vu`` -> detailed balance;
    ``Σ_a O_uvab O_uvac = δ_bc`` -> orthogonality; ``O[perm] = O`` -> a symmetry). A hypothesis the
    statement does not list, or a formula of another shape, gives no rule."""
    out: list[R.Rule] = []
    for hid in ids:
        if hid not in theorem.hypothesis_ids:
            continue
        for ident in theorem.hypothesis(hid).params.values():
            if not isinstance(ident, F.Identity):
                continue
            lhs, rhs = ident.lhs, ident.rhs
            if isinstance(lhs, sp.Sum) and rhs == 1 and isinstance(lhs.function, sp.Indexed):
                X = lhs.function
                if len(lhs.limits) == 1 and X.indices[-1] == lhs.limits[0][0]:
                    out.append(R.row_sum(X.base))
            elif isinstance(lhs, sp.Sum) and isinstance(rhs, sp.KroneckerDelta) and isinstance(lhs.function, sp.Mul):
                f, g = lhs.function.args
                if (
                    f.base == g.base
                    and f.indices[:3] == g.indices[:3]
                    and {f.indices[3], g.indices[3]} == set(rhs.args)
                ):
                    out.append(R.orthogonality(f.base))
            elif isinstance(lhs, sp.Mul) and isinstance(rhs, sp.Mul):
                (pu, Xuv), (pv, Xvu) = (sorted(e.args, key=lambda x: len(x.indices)) for e in (lhs, rhs))
                u, v = Xuv.indices
                if pu.indices == (u,) and pv.indices == (v,) and Xvu.indices == (v, u) and Xvu.base == Xuv.base:
                    out.append(R.detailed_balance(pu.base, Xuv.base))
            elif isinstance(lhs, sp.Indexed) and isinstance(rhs, sp.Indexed) and lhs.base == rhs.base:
                perm = [rhs.indices.index(x) for x in lhs.indices]
                out.append(R.swap_symmetry(lhs.base, perm, sp.latex(sp.Eq(lhs, rhs))))
    return out


def general_l3(theorem) -> Derivation:
    D = Derivation("L3", _sizes("n", "d"))
    ident = theorem.conclusion("L3.identity").params["identity"]
    rules = [r for r in hypothesis_rules(theorem, "L3.balance", "L3.metric") if not r.name.startswith("swap")]
    D.add(
        "general: <x,(I-W)x>_pi = Dirichlet + correction (no row sums), all n, d",
        R.prove(ident.lhs, ident.rhs, rules),
    )
    return D


def general_t3(theorem) -> Derivation:
    D = Derivation("T3", _sizes("n", "d"))
    sa = theorem.conclusion("T3.self_adjoint").params["self_adjoint"]
    D.add(
        "general: <x, Delta y>_pi = <Delta x, y>_pi from (b), (c2), all n, d",
        R.prove(sa.lhs, sa.rhs, hypothesis_rules(theorem, "T3.b", "T3.c2")),
    )
    di = theorem.conclusion("T3.dirichlet").params["dirichlet"]
    D.add(
        "general: Dirichlet identity from (a), (b), (c1), all n, d",
        R.prove(di.lhs, di.rhs, hypothesis_rules(theorem, "T3.a", "T3.b", "T3.c1")),
    )
    up = theorem.conclusion("T3.spectrum").params["upper_form"]
    D.add(
        "general: <x,(2I-Delta)x>_pi = 1/2 sum pi_i P_ij |x_i + O_ij x_j|^2 from (a), (b), (c1), all n, d",
        R.prove(up.lhs, up.rhs, hypothesis_rules(theorem, "T3.a", "T3.b", "T3.c1")),
    )
    _flat(D, theorem.conclusion("T3.flat").params["flat"])
    sc = theorem.conclusion("T3.scaled").params["scaled"]
    q_is_o = {sp.IndexedBase("Q"): F.O_}  # Q satisfies (a), (b), (c1): the hypotheses' rules, stated for O
    D.add(
        "general: scaled isometries O = sQ: Dirichlet form + (1-s^2)/2 |x|_pi^2 from (a), (b), (c1) on Q, all n, d",
        R.prove(sc.lhs.xreplace(q_is_o), sc.rhs.xreplace(q_is_o), hypothesis_rules(theorem, "T3.a", "T3.b", "T3.c1")),
    )
    return D


def _flat(D: Derivation, flat: F.Identity) -> None:
    """T3.flat: its premises are the proof — ``O_ij = R_i R_j^T`` substituted (a definition of ``O``),
    ``R_i R_i^T = I`` a rewrite rule; a dropped premise leaves ``O`` or ``R R^T`` standing."""
    defs = [(lhs, rhs) for lhs, rhs in flat.premises if isinstance(lhs, sp.Indexed)]
    rules = [
        R.row_orthogonality(lhs.function.args[0].base)
        for lhs, rhs in flat.premises
        if isinstance(lhs, sp.Sum) and isinstance(rhs, sp.KroneckerDelta) and isinstance(lhs.function, sp.Mul)
    ]
    D.add(
        "general: flat connection O_ij = R_i R_j^T: Delta = R((I-P)(x)I)R^T entrywise, all n, d",
        R.prove(instantiate(flat.lhs, defs), flat.rhs, rules),
    )


# ------------------------------------------------------------------------------------------------
# T4 ("if")
# ------------------------------------------------------------------------------------------------
def general_t4(theorem) -> Derivation:
    D = Derivation("T4", _sizes("n", "d"))
    c = theorem.conclusion("T4.criterion")
    bal, sta = c.params["balance"], c.params["stationary"]
    where = dict(bal.where)
    S_def = where[F.S_[F.i, F.j]]
    if "T4.softmax" in theorem.hypothesis_ids:  # full support: no mask
        S_def = S_def.xreplace({F.mu_[F.i, F.j]: 0})
    step = D.add(
        "general: symmetric M => symmetric scores S_ij = S_ji (no mask), all n, d",
        R.prove(S_def, S_def.xreplace({F.i: F.j, F.j: F.i}), premise_rules(bal)),
    )
    tri = theorem.conclusion("T4.triangle").params["triangle"]
    no_mask = {F.mu_: lambda u, v: 0} if "T4.softmax" in theorem.hypothesis_ids else {}
    lhs = sp.expand_log(instantiate(tri.lhs, tri.where, only=[F.A_]), force=True)  # the Z_i cancel
    lhs = instantiate(lhs, tri.where, only=[F.S_]).replace(
        lambda e: isinstance(e, sp.Indexed) and e.base in no_mask, lambda e: no_mask[e.base](*e.indices)
    )
    D.add(
        "general: Kolmogorov triangle log ratio = (2/sqrt d_k)(x_j-x_i)^T M_a (x_k-x_i), all n, d",
        R.prove(lhs, instantiate(tri.rhs, tri.where, only=[F.Ma_])),
    )
    # the scores' symmetry is used below only where the step above proved it
    s_rules = [R.symmetric(F.S_)] if step.passed else []
    for ident, name in ((bal, "detailed balance Z_i A_ij = Z_j A_ji"), (sta, "stationary sum_i Z_i A_ij = Z_j")):
        lhs = instantiate(ident.lhs, ident.where, only=[F.A_])
        rhs = instantiate(ident.rhs, ident.where, only=[F.A_])
        lhs, rhs = (
            instantiate(e, ident.where, only=[F.Z_]) if not e.has(F.A_) and e.has(F.Z_) else e for e in (lhs, rhs)
        )
        D.add(f"general: symmetric scores => {name}, all n", R.prove(lhs, rhs, s_rules if ident.premises else []))
    _query_bias(D, theorem)
    return D


def _query_bias(D: Derivation, theorem) -> None:
    """T4.query_bias: its own premise makes the (unmasked) scores symmetric, and then the logs of
    ``π_i A_ij`` and ``π_j A_ji`` (``π``, ``A`` instantiated; the ``Z_i`` cancel) are equal."""
    qb = theorem.conclusion("T4.query_bias").params["query_bias"]
    S_def = dict(qb.where)[F.S_[F.i, F.j]].xreplace({F.mu_[F.i, F.j]: 0})
    sym = R.prove(S_def, S_def.xreplace({F.i: F.j, F.j: F.i}), premise_rules(qb)) == 0
    lhs, rhs = (
        sp.expand_log(sp.log(instantiate(e, qb.where, only=[F.pi_, F.A_])), force=True) for e in (qb.lhs, qb.rhs)
    )
    D.add(
        "general: symmetric scores + query bias => detailed balance with pi_i = e^beta_i Z_i, all n, d",
        R.prove(lhs, rhs, [R.symmetric(F.S_)] if sym else []),
    )


# ------------------------------------------------------------------------------------------------
# T2
# ------------------------------------------------------------------------------------------------
def _heads(expr) -> sp.Expr:
    """``expr`` with the heads built by :data:`HEAD_ATTENTION` / :data:`HEAD_TRANSPORT`."""
    return expr.replace(
        lambda e: isinstance(e, sp.Indexed) and e.base in (F.Ah_, F.Th_),
        lambda e: (HEAD_ATTENTION if e.base == F.Ah_ else HEAD_TRANSPORT)(e.indices[0]).xreplace(
            dict(zip((F.i, F.j) if e.base == F.Ah_ else (F.a, F.b), e.indices[1:], strict=True))
        ),
    )


def _distinct_heads(D: Derivation, *kinds) -> None:
    """One step per ``(what, symbol, head function)``: two symbolic head indices give different
    symbols (a derivation that identical heads could satisfy must not pass as one for all heads)."""
    h1, h2 = sp.Symbol("h_1", integer=True, nonnegative=True), sp.Symbol("h_2", integer=True, nonnegative=True)
    for what, sym, fn in kinds:
        which = f"{sym} for a symbolic head index h" if sym else "symbolic head index h"
        D.add(f"general: heads' {what} are distinct symbols ({which})", fn(h1) - fn(h2), expect_zero=False)


def general_t2(theorem) -> Derivation:
    D = Derivation("T2", _sizes("n", "d", "H"))
    c = theorem.conclusion("T2.walk")
    _distinct_heads(D, ("attentions", "A^h", HEAD_ATTENTION), ("transports", "T_h", HEAD_TRANSPORT))
    rows = c.params["rows"]
    lhs = _heads(instantiate(rows.lhs, rows.where))
    D.add(
        "general: P = mean_h A^h is row-stochastic when every head is, all n, H",
        R.prove(lhs, rows.rhs, hypothesis_rules(theorem, "T2.heads")),
    )
    for key, name in (("gates", "gates sum to 1"), ("blocks", "P_ij O_ij = B_ij")):
        ident = c.params[key]
        lhs, rhs = (_heads(instantiate(e, ident.where)) for e in (ident.lhs, ident.rhs))
        D.add(f"general: {name}, all n, d, H", R.prove(lhs, rhs, [R.cancel_quotient()]))
    if "T2.gauge" in {x.id for x in theorem.conclusions}:
        gauge = theorem.conclusion("T2.gauge").params["gauge"]
        lhs, rhs = (_heads(instantiate(e, gauge.where)) for e in (gauge.lhs, gauge.rhs))
        D.add("general: gauge P'_ij O'_ij = B_ij, all n, d, H", R.prove(lhs, rhs, [R.cancel_quotient()]))
    if "T2.special" in {x.id for x in theorem.conclusions}:
        special = theorem.conclusion("T2.special")
        for key, name in (
            ("shared_A", "shared attention: O_ij = T_Sigma, all n, d, H"),
            ("shared_T", "shared transport: O_ij = H T_1, all n, d, H"),
            ("cancelling", "cancelling heads: B = 0, all n, d (H = 2)"),
        ):
            ident = special.params[key]
            lhs, rhs = (impose(instantiate(e, ident.where), ident.premises) for e in (ident.lhs, ident.rhs))
            D.add(f"general: {name}", R.prove(lhs, rhs, [R.cancel_quotient()]))
    return D


def impose(expr, premises) -> sp.Expr:
    """``expr`` under the premises of a special case: a size ``N = value`` substituted (finite sums
    then written out), a head ``X[h, ...] = X[0, ...]`` (every head) or ``X[1, ...] = ±X[0, ...]``
    (that head) replacing the heads' symbols. A premise of another shape, or a dropped one, imposes
    nothing (the proof then fails)."""
    for lhs, rhs in premises:
        if isinstance(lhs, sp.Symbol):
            expr = expr.xreplace({lhs: rhs}).doit()
    for lhs, rhs in premises:
        if not (isinstance(lhs, sp.Indexed) and rhs.has(lhs.base)):
            continue
        every, rest = lhs.indices[0], lhs.indices[1:]

        def sub(e, every=every, rest=rest, rhs=rhs):
            if isinstance(every, sp.Symbol) or e.indices[0] == every:
                return rhs.xreplace(dict(zip(rest, e.indices[1:], strict=True)))
            return e

        expr = expr.replace(lambda e, base=lhs.base: isinstance(e, sp.Indexed) and e.base == base, sub).doit()
    return expr


# ------------------------------------------------------------------------------------------------
# T6
# ------------------------------------------------------------------------------------------------
def general_t6(theorem) -> Derivation:
    D = Derivation("T6", _sizes("n", "d", "H"))
    ident = theorem.conclusion("T6.fourier").params["fourier"]
    _distinct_heads(D, ("scores (kernels a_h)", None, HEAD_KERNEL), ("transports", "T_h", HEAD_TRANSPORT))

    def heads(e):
        return e.replace(
            lambda x: isinstance(x, sp.Indexed) and (x.base == F.Th_ or (x.base == F.A0_ and x.indices[1] == 0)),
            lambda x: (
                HEAD_KERNEL(x.indices[0]).xreplace({F.m: x.indices[2]})
                if x.base == F.A0_
                else HEAD_TRANSPORT(x.indices[0]).xreplace({F.a: x.indices[1], F.b: x.indices[2]})
            ),
        )

    # (H3) as a rewrite rule: every row of A0^h is a shift of row 0, A0^h_ij = A0^h_{0,(j - i) mod n}
    def h3(e):
        """(H3), the registry's formula ``A0^h_ij = rhs(h, i, j)``, as a rewrite of every ``A0`` entry
        off row 0 (a statement without (H3): no rewrite)."""
        if "T6.H3" not in theorem.hypothesis_ids:
            return e
        circ = theorem.hypothesis("T6.H3").params["circulant"]
        return e.replace(
            lambda x: isinstance(x, sp.Indexed) and x.base == F.A0_ and x.indices[1] != 0,
            lambda x: circ.rhs.xreplace(dict(zip(circ.lhs.indices, x.indices, strict=True))),
        )

    lhs = heads(h3(ident.lhs))
    rhs = heads(instantiate(ident.rhs, ident.where))  # the kernels a_h(m) by their definition
    D.add(
        "general: J(phi_k (x) v) = phi_k (x) (M(k) - I) v for every ring size n (zeta^n = 1)",
        R.prove(lhs, rhs, [R.cyclic_shift(F.A0_, F.zeta, F.n)]),
    )
    return D


# ------------------------------------------------------------------------------------------------
# T5 (the involution case: eigenvectors of I - A ⊗ T)
# ------------------------------------------------------------------------------------------------
def eigen_rules(ident: F.Identity) -> list[R.Rule]:
    """Premises ``Σ_v M[u, v] y[v] = c · y[u]`` as reductions (a dropped premise: no rule)."""
    out = []
    for lhs, rhs in ident.premises:
        if not isinstance(lhs, sp.Sum) or len(lhs.limits) != 1:
            continue
        body = lhs.function
        mats = [x for x in body.args if isinstance(x, sp.Indexed) and len(x.indices) == 2]
        vecs = [x for x in body.args if isinstance(x, sp.Indexed) and len(x.indices) == 1]
        if len(mats) == 1 and len(vecs) == 1:
            value = sp.cancel(rhs / vecs[0].base[mats[0].indices[0]])
            out.append(R.eigen(mats[0].base, vecs[0].base, value))
    return out


def general_t5(theorem) -> Derivation:
    D = Derivation("T5", _sizes("n", "d"))
    c = theorem.conclusion("T5.spectrum")
    for key, name in (
        ("on_fix", "on Fix(T): Delta(u (x) f) = (1 - lambda) u (x) f"),
        ("on_minus", "on the -1 space: Delta(u (x) f) = (1 + lambda) u (x) f"),
    ):
        ident = c.params[key]
        D.add(f"general: {name}, all n, d", R.prove(ident.lhs, ident.rhs, eigen_rules(ident)))
    kernel = theorem.conclusion("T5.kernel").params["kernel"]
    rows = [R.row_sum(lhs.function.base) for lhs, rhs in kernel.premises if _is_row_sum(lhs, rhs)]
    D.add(
        "general: Delta(1 (x) f) = 0 for f in Fix(T) when the rows of A sum to 1, all n, d",
        R.prove(kernel.lhs, kernel.rhs, eigen_rules(kernel) + rows),
    )
    return D


def _is_row_sum(lhs, rhs) -> bool:
    """``Σ_v X[u, v] = 1`` (a row-sum premise)."""
    return (
        rhs == 1
        and isinstance(lhs, sp.Sum)
        and isinstance(lhs.function, sp.Indexed)
        and len(lhs.limits) == 1
        and lhs.function.indices[-1] == lhs.limits[0][0]
    )


GENERAL: dict[str, Callable[..., Derivation]] = {
    "L1": general_l1,
    "L2": general_l2,
    "L3": general_l3,
    "T1": general_t1,
    "T2": general_t2,
    "T3": general_t3,
    "T4": general_t4,
    "T5": general_t5,
    "T6": general_t6,
}
