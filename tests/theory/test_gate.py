"""The theorem gate rejects wrong statements: statement mutants applied to the registry data in
memory must be rejected by the checks on instances they draw.

Each mutant changes one number or one hypothesis of a registered statement. The check is the one
the property tests run (``tests/numerics/test_statements.py``): draw instances that satisfy the
mutant's hypotheses (``tests/numerics/statement_cases.py``) and judge its conclusions with the
oracles, using the mutant's params. Hypothesis ``find`` must produce an instance the mutant fails
on; for a changed conclusion the original statement must hold on that same instance (so the
rejection is due to the mutation); for a removed hypothesis the instance must violate it (so the
hypothesis was needed). ``test_property_test_reads_the_registry`` runs the property test itself
with the registry patched, proving the edit of the registry entry is what gets tested.

The search (:func:`counterexample`) must not depend on what ran before it: it starts from the known
witnesses of ``WITNESSES`` (explicit instances, checked to satisfy the mutant's hypotheses), then
draws from its own generator, seeded from the mutant's name (``find(random=...)``), never from
Hypothesis' shared derandomized stream. (Hypothesis also mixes the literal constants of every
imported project module into its draws; ``tests/conftest.py`` pins that pool, so importing more
modules — an in-process paper-checks run — no longer changes what is drawn.)
"""

from __future__ import annotations

import sys
import zlib
from random import Random

import numpy as np
import pytest
import sympy as sp
from hypothesis import HealthCheck, Phase, find, given, settings
from hypothesis import strategies as st

from tests.numerics import statement_cases as cases
from tests.numerics import test_statements
from theory import formulas as F
from theory import oracles, registry
from theory.formulas import laplacian as FL
from theory.formulas import patterns as FP
from theory.formulas import reversibility as FR
from theory.formulas import spectral as FS
from theory.formulas import walks as FW
from theory.registry import get
from theory.report import record

SEARCH = settings(
    max_examples=100,
    derandomize=True,
    database=None,
    deadline=None,
    phases=[Phase.generate],
    suppress_health_check=list(HealthCheck),
)


#: the search for a counterexample: the mutant's own seeded generator (``find(random=...)``); a
#: counterexample that lives in a thin slice of the drawn instances (T3's scaled variant with s < 1,
#: T4's triangle on non-collinear tokens with asymmetric scores) also has a known witness below
FIND = settings(SEARCH, derandomize=False, max_examples=300)


def _walk(P, O, **extra):
    return {"kind": "walk", "P": np.asarray(P, float), "O": np.asarray(O, float), **extra}


#: a reversible stochastic walk with one orthogonal 1×1 transport: ``spec Δ = {1 − s, 1}`` for the
#: transports ``s·Q`` (the original statement holds; ``O = Q`` gives 0 ∉ [1 − s, 1 + s], and
#: ``[1 − s², 1 + s²]`` misses ``1 − s`` for s = 1/2)
_T3_SCALED = _walk([[0.5, 0.5], [0.5, 0.5]], np.ones((2, 2, 1, 1)), s=0.5)
#: three non-collinear tokens, asymmetric scores: the triangle's right side is not zero
_T4_TRIANGLE = {
    "kind": "softmax",
    "X": np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.5]]),
    "M": np.array([[0.5, 1.0], [-0.5, 0.25]]),
    "mask": None,
    "beta": np.zeros(3),
}
WITNESSES = {
    "T3 scaled transports O = sQ -> O = Q": [_T3_SCALED],
    "T3 scaled spec in [1 - s, 1 + s] -> [1 - s^2, 1 + s^2]": [_T3_SCALED],
    "T4 triangle identity sign flipped": [_T4_TRIANGLE],
    "T4 triangle coefficient 2 -> 1": [_T4_TRIANGLE],
    "T4 triangle x_j - x_i -> x_j + x_i": [_T4_TRIANGLE],
}


def search_seed(name: str) -> int:
    """The mutant's own seed (CRC-32 of its name: the same in every process and order)."""
    return zlib.crc32(name.encode())


def counterexample(name, mutant, *, witnesses=True):
    """An instance satisfying ``mutant``'s hypotheses on which a conclusion of ``mutant`` is rejected:
    its known witnesses first (each must satisfy the hypotheses), then ``find`` from the mutant's own
    seeded generator (``hypothesis.errors.NoSuchExample`` if none within ``FIND.max_examples``)."""
    for inst in WITNESSES.get(name, ()) if witnesses else ():
        hyp, _ = oracles.judge_theorem(mutant, inst)
        assert all(v.holds for v in hyp.values()), (name, "a witness outside the mutant's hypotheses", hyp)
        if not cases.conclusions_hold(mutant, inst):
            return inst
    return find(
        cases.instances(mutant),
        lambda i: not cases.conclusions_hold(mutant, i),
        settings=FIND,
        random=Random(search_seed(name)),
    )


def _conclusion_mutant(tid, cid, **params):
    t = get(tid)
    return t, t.with_conclusion(t.conclusion(cid).with_params(**params))


def _formula_mutant(tid, cid, key, **changes):
    """The statement with the formula ``key`` of conclusion ``cid`` edited (a SymPy expression of
    :mod:`theory.formulas`: what THEOREMS.md renders and the oracles evaluate)."""
    t = get(tid)
    c = t.conclusion(cid)
    return t, t.with_conclusion(c.with_params(**{key: c.params[key].edited(**changes)}))


_DIR = F.DIRICHLET
_Oij = F.O_[F.i, F.j, F.a, F.b]


def _x(expr, old, new):
    """``expr`` with ``old`` replaced structurally (bound summation indices included)."""
    out = expr.xreplace({old: new})
    assert out != expr, f"the edit {old} -> {new} changed nothing"
    return out


_T4B, _T4S = F.T4_BALANCE, F.T4_STATIONARY


def _where(ident, head, body):
    """``ident.where`` with the definition of ``head`` replaced by ``body``."""
    assert head in dict(ident.where), head
    return tuple((hd, body if hd == head else b) for hd, b in ident.where)


MUTANTS = {
    "T3 upper bound 2 -> 1": lambda: _conclusion_mutant("T3", "T3.spectrum", hi=1),
    "T1 token-major -> feature-major": lambda: _formula_mutant(
        "T1", "T1.walk", "stacked", lhs=F.Vec(F.Y_m), rhs=sp.KroneckerProduct(F.A_m, F.T_m) * F.Vec(F.X_m)
    ),
    "T2 Kronecker miss 0.662 -> 0.5": lambda: _conclusion_mutant("T2", "T2.counterexample", miss=0.5),
    "T4 triangle identity sign flipped": lambda: _formula_mutant(
        "T4", "T4.triangle", "triangle", rhs=-F.T4_TRIANGLE.rhs
    ),
    "T5 without the involution hypothesis": lambda: (get("T5"), get("T5").without("T5.involution")),
    "T6 Fourier sign reversed": lambda: _formula_mutant("T6", "T6.fourier", "fourier", rhs=F.fourier(-1).rhs),
    # further mutants of the numbers the statements carry
    "T3 lower bound 0 -> 0.5": lambda: _conclusion_mutant("T3", "T3.spectrum", lo=0.5),
    "T5 spectral map swapped": lambda: _formula_mutant("T5", "T5.spectrum", "on_fix", rhs=F.T5_ON_MINUS.rhs),
    "T6 growth shift 1 -> 0": lambda: _formula_mutant(
        "T6", "T6.selection", "growth", rhs=FP.AtK(FP.Leading(FP.Mk), FS.k_star)
    ),
    "T4 triangle coefficient 2 -> 1": lambda: _formula_mutant(
        "T4", "T4.triangle", "triangle", rhs=F.T4_TRIANGLE.rhs / 2
    ),
    # (x_k - x_i -> x_k - x_j would be an equivalent mutant: v^T M_a v = 0 for antisymmetric M_a)
    "T4 triangle x_j - x_i -> x_j + x_i": lambda: _formula_mutant(
        "T4", "T4.triangle", "triangle", rhs=_x(F.T4_TRIANGLE.rhs, F.X_[F.i, F.a], -F.X_[F.i, F.a])
    ),
    "T3 without (b) reversible": lambda: (get("T3"), get("T3").without("T3.b")),
    "T3 without (c1) orthogonal": lambda: (get("T3"), get("T3").without("T3.c1")),
    "T3 without (c2) transpose": lambda: (get("T3"), get("T3").without("T3.c2")),
    "T3 without (a) stochastic": lambda: (get("T3"), get("T3").without("T3.a")),
    "T5 without reversible": lambda: (get("T5"), get("T5").without("T5.reversible")),
    "T6 without (H3) circulant": lambda: (get("T6"), get("T6").without("T6.H3")),
    "T2 without the P convention": lambda: (get("T2"), get("T2").without("T2.convention")),
    "T1 without the transport layout": lambda: (get("T1"), get("T1").without("T1.transport")),
    # edits of the formulas themselves (the SymPy expressions THEOREMS.md renders)
    "T3 Dirichlet 1/2 -> 1": lambda: _formula_mutant("T3", "T3.dirichlet", "dirichlet", rhs=_x(_DIR.rhs, sp.S.Half, 1)),
    "T3 Dirichlet x_i - O_ij x_j -> x_i + O_ij x_j": lambda: _formula_mutant(
        "T3", "T3.dirichlet", "dirichlet", rhs=_x(_DIR.rhs, _Oij, -_Oij)
    ),
    "T3 Dirichlet pi_i -> pi_j": lambda: _formula_mutant(
        "T3", "T3.dirichlet", "dirichlet", rhs=_x(_DIR.rhs, F.pi_[F.i], F.pi_[F.j])
    ),
    "T3 Dirichlet pi_i P_ij -> pi_i P_ji": lambda: _formula_mutant(
        "T3", "T3.dirichlet", "dirichlet", rhs=_x(_DIR.rhs, F.P_[F.i, F.j], F.P_[F.j, F.i])
    ),
    "T3 self-adjoint <Dx,y>_pi -> <Dx,y> (pi dropped)": lambda: _formula_mutant(
        "T3", "T3.self_adjoint", "self_adjoint", rhs=_x(F.SELF_ADJOINT.rhs, F.pi_[F.i], 1)
    ),
    "T3 upper form 1/2 -> 1": lambda: _formula_mutant(
        "T3", "T3.spectrum", "upper_form", rhs=_x(F.UPPER_FORM.rhs, sp.S.Half, 1)
    ),
    "T3 upper form x_i + O_ij x_j -> x_i - O_ij x_j": lambda: _formula_mutant(
        "T3", "T3.spectrum", "upper_form", rhs=_x(F.UPPER_FORM.rhs, _Oij, -_Oij)
    ),
    "T3 parallel x_i = O_ij x_j -> x_i = -O_ij x_j": lambda: _formula_mutant(
        "T3", "T3.kernel", "parallel", rhs=-FS.PARALLEL.rhs
    ),
    "T3 parallel O_ij -> O_ij^T": lambda: _formula_mutant(
        "T3", "T3.kernel", "parallel", rhs=_x(FS.PARALLEL.rhs, _Oij, F.O_[F.i, F.j, F.b, F.a])
    ),
    "T3 flat R_j^T -> R_j": lambda: _formula_mutant(
        "T3", "T3.flat", "flat", rhs=_x(FS.FLAT.rhs, FS.R_[F.j, F.b, F.c], FS.R_[F.j, F.c, F.b])
    ),
    "T3 flat I - P -> I + P": lambda: _formula_mutant(
        "T3", "T3.flat", "flat", rhs=_x(FS.FLAT.rhs, F.P_[F.i, F.j], -F.P_[F.i, F.j])
    ),
    "T3 scaled (1 - s^2)/2 -> (1 - s)/2": lambda: _formula_mutant(
        "T3", "T3.scaled", "scaled", rhs=_x(FS.SCALED.rhs, FS.s_**2, FS.s_)
    ),
    "T3 scaled x_i - s Q_ij x_j -> x_i - Q_ij x_j": lambda: _formula_mutant(
        "T3", "T3.scaled", "scaled", rhs=_x(FS.SCALED.rhs, FS.Q_[F.i, F.j, F.a, F.b], FS.Q_[F.i, F.j, F.a, F.b] / FS.s_)
    ),
    "T3 flat matrix (I - P) (x) I -> (I - P^T) (x) I": lambda: _formula_mutant(
        "T3", "T3.flat", "flat_matrix", rhs=_x(FL.FLAT_MATRIX.rhs, FL.P_m, FL.P_m.T)
    ),
    "T3 flat matrix R (...) R^T -> R^T (...) R": lambda: _formula_mutant(
        "T3", "T3.flat", "flat_matrix", rhs=_x(FL.FLAT_MATRIX.rhs, FL.R_m, FL.R_m.T)
    ),
    "T3 flat dim ker Delta = d -> 2d": lambda: _formula_mutant("T3", "T3.flat", "kernel_dim", rhs=2 * F.d),
    "T3 scaled transports O = sQ -> O = Q": lambda: _formula_mutant(
        "T3", "T3.scaled", "scaled_transport", rhs=FS.Q_[F.i, F.j, F.a, F.b]
    ),
    "T3 scaled spec in [1 - s, 1 + s] -> [1 - s^2, 1 + s^2]": lambda: _formula_mutant(
        "T3", "T3.scaled", "scaled_spectrum", rel=_x(FL.SCALED_SPECTRUM.rel, FS.s_, FS.s_**2)
    ),
    "T4 symmetric scores dropped": lambda: _formula_mutant("T4", "T4.criterion", "balance", premises=()),
    "T4 stationary without symmetric scores": lambda: _formula_mutant("T4", "T4.criterion", "stationary", premises=()),
    "T4 pi_i = Z_i -> pi_i = 1": lambda: _formula_mutant(
        "T4", "T4.criterion", "balance", lhs=_x(_T4B.lhs, F.Z_[F.i], 1), rhs=_x(_T4B.rhs, F.Z_[F.j], 1)
    ),
    "T4 pi_i = Z_i -> Z_i^2": lambda: _formula_mutant(
        "T4", "T4.criterion", "stationary", lhs=_x(_T4S.lhs, F.Z_[F.i], F.Z_[F.i] ** 2), rhs=F.Z_[F.j] ** 2
    ),
    "T4 query bias: symmetric scores dropped": lambda: _formula_mutant(
        "T4", "T4.query_bias", "query_bias", premises=()
    ),
    "T4 query bias pi_i = e^beta_i Z_i -> Z_i": lambda: _formula_mutant(
        "T4", "T4.query_bias", "query_bias", where=_where(FS.QUERY_BIAS, F.pi_[F.i], F.Z_[F.i])
    ),
    "T4 query bias pi_i = e^beta_i Z_i -> e^-beta_i Z_i": lambda: _formula_mutant(
        "T4",
        "T4.query_bias",
        "query_bias",
        where=_where(FS.QUERY_BIAS, F.pi_[F.i], sp.exp(-FS.beta_[F.i]) * F.Z_[F.i]),
    ),
    "T2 gates 1/sum -> 1/H": lambda: _formula_mutant(
        "T2", "T2.walk", "gates", where=((F.g_[F.h, F.i, F.j], F.Ah_[F.h, F.i, F.j] / F.H),)
    ),
    "T2 P = mean -> sum": lambda: _formula_mutant(
        "T2", "T2.walk", "rows", where=((F.P_[F.i, F.j], sp.Sum(F.Ah_[F.h, F.i, F.j], (F.h, 0, F.H - 1))),)
    ),
    "T2 O_ij = H sum g T -> sum g T": lambda: _formula_mutant(
        "T2",
        "T2.walk",
        "blocks",
        where=tuple((hd, body / F.H if hd.base == F.O_ else body) for hd, body in F.T2_BLOCKS.where),
    ),
    "T6 Fourier phi_k(j) = zeta^j -> zeta^-j": lambda: _formula_mutant(
        "T6", "T6.fourier", "fourier", lhs=_x(F.FOURIER.lhs, F.zeta**F.j, F.zeta ** (-F.j))
    ),
    "T6 Fourier kernel row 0 -> column 0": lambda: _formula_mutant(
        "T6", "T6.fourier", "fourier", where=((F.a_[F.h, F.m], F.A0_[F.h, F.m, 0]),)
    ),
    "T6 Fourier J = W - I -> W": lambda: _formula_mutant("T6", "T6.fourier", "fourier", rhs=F.fourier(1, 0).rhs),
    "T5 on Fix(T): 1 - lambda -> 1 - lambda^2": lambda: _formula_mutant(
        "T5", "T5.spectrum", "on_fix", rhs=_x(F.T5_ON_FIX.rhs, F.lam, F.lam**2)
    ),
    "T5 on the -1 space: 1 + lambda -> 1 - lambda": lambda: _formula_mutant(
        "T5", "T5.spectrum", "on_minus", rhs=F.T5_ON_FIX.rhs
    ),
    "T5 Delta = I - A (x) T -> I + A (x) T": lambda: _formula_mutant(
        "T5", "T5.spectrum", "on_fix", lhs=2 * F.u_[F.i] * F.f_[F.a] - F.T5_ON_FIX.lhs
    ),
    # (j > i -> j > i + 1 is equivalent on the drawn instances: n >= 3 keeps a one-way edge (0, 2))
    "T4 causal mask -oo -> -1": lambda: _formula_mutant(
        "T4", "T4.causal", "mask", rhs=sp.Piecewise((-1, F.j > F.i), (0, True))
    ),
    "T4 criterion only if: antisymmetric part M_a -> symmetric part": lambda: _formula_mutant(
        "T4",
        "T4.criterion",
        "kolmogorov",
        where=(*FS.KOLMOGOROV.where[:-1], (F.Ma_[F.a, F.b], (F.M_[F.a, F.b] + F.M_[F.b, F.a]) / 2)),
    ),
    "T4 causal mask dropped (mu = 0)": lambda: _formula_mutant("T4", "T4.causal", "mask", rhs=sp.S.Zero),
    "T4 converse pi_i = A_0i / A_i0 -> A_i0 / A_0i": lambda: _formula_mutant(
        "T4", "T4.criterion", "converse", where=_where(FR.CONVERSE, F.pi_[F.i], F.A_[F.i, 0] / F.A_[0, F.i])
    ),
    "T4 converse without its premise (balanced cycles)": lambda: _formula_mutant(
        "T4", "T4.criterion", "converse", premises=()
    ),
    "T4 collinear: antisymmetric part M_a -> symmetric part": lambda: _formula_mutant(
        "T4",
        "T4.criterion",
        "collinear",
        where=_where(FR.COLLINEAR, F.Ma_[F.a, F.b], (F.M_[F.a, F.b] + F.M_[F.b, F.a]) / 2),
    ),
    "T4 collinear x_i = p + t_i v -> p + t_i v + t_i^2 w (w: v shifted)": lambda: _formula_mutant(
        "T4",
        "T4.criterion",
        "collinear",
        where=_where(
            FR.COLLINEAR,
            F.X_[F.i, F.a],
            FR.p_[F.a] + FR.t_[F.i] * FR.v_[F.a] + FR.t_[F.i] ** 2 * FR.v_[sp.Mod(F.a + 1, F.d)],
        ),
    ),
    "T4 criterion no mask mu = 0 -> mu_ij = -[j > i]": lambda: _formula_mutant(
        "T4", "T4.criterion", "no_mask", rhs=sp.Piecewise((-1, F.j > F.i), (0, True))
    ),
    "T4 triangle no mask mu = 0 -> mu_ij = -[j > i]": lambda: _formula_mutant(
        "T4", "T4.triangle", "no_mask", rhs=sp.Piecewise((-1, F.j > F.i), (0, True))
    ),
    "T4 causal size n >= 2 -> n >= 1": lambda: _formula_mutant(
        "T4", "T4.causal", "size", rel=sp.GreaterThan(F.n, 1, evaluate=False)
    ),
    "T6 symbol zeta^m -> 2 zeta^m": lambda: _formula_mutant(
        "T6", "T6.selection", "symbol", rhs=_x(FS.SYMBOL.rhs, F.zeta**F.m, 2 * F.zeta**F.m)
    ),
    "T6 symbol: sum over heads -> head 0 only": lambda: _formula_mutant(
        "T6", "T6.selection", "symbol", rhs=FS.SYMBOL.rhs.function.xreplace({F.h: 0})
    ),
    "T6 rotating e^{i theta} -> e^{-i theta}": lambda: _formula_mutant(
        "T6",
        "T6.rotating",
        "rotating",
        rhs=_x(FS.ROTATING.rhs, sp.exp(sp.I * FS.theta), sp.exp(-sp.I * FS.theta)),
    ),
    "T6 rotating rho -> rho^2": lambda: _formula_mutant(
        "T6", "T6.rotating", "rotating", rhs=_x(FS.ROTATING.rhs, FS.rho, FS.rho**2)
    ),
    "T6 eigenpair M(k) - I -> M(k)": lambda: _formula_mutant(
        "T6", "T6.fourier", "eigenpair", rhs=sp.KroneckerProduct(FP.phi_m, FP.Mk * FP.v_m)
    ),
    "T6 eigenpair phi_k (x) v -> v (x) phi_k": lambda: _formula_mutant(
        "T6", "T6.fourier", "eigenpair", lhs=FP.J_m * sp.KroneckerProduct(FP.v_m, FP.phi_m)
    ),
    "T6 eigenpair phi_k(j) = zeta^j -> zeta^(2j)": lambda: _formula_mutant(
        "T6", "T6.fourier", "eigenpair", where=((FP.phi_[F.j], F.zeta ** (2 * F.j)),)
    ),
    "T6 root e^(2 pi i k/n) -> e^(pi i k/n)": lambda: _formula_mutant(
        "T6", "T6.fourier", "root", rhs=sp.exp(sp.pi * sp.I * F.k / F.n)
    ),
    "T6 selection argmax -> argmin": lambda: _formula_mutant(
        "T6", "T6.selection", "selection", rhs=FP.ArgMaxK(-FP.Abscissa(FP.MinusI(FP.Mk)))
    ),
    "T6 abscissa Re sigma -> Im sigma": lambda: _formula_mutant("T6", "T6.selection", "abscissa", lhs=sp.im(FS.sigma_)),
    "T6 conjugate M(-k) = conj M(k) -> M(k)": lambda: _formula_mutant("T6", "T6.selection", "conjugate", rhs=FP.Mk),
    "T5 kernel: Fix(T) -> the -1 eigenspace": lambda: _formula_mutant(
        "T5",
        "T5.kernel",
        "kernel",
        premises=(FS.T5_KERNEL.premises[0], (FS.T5_KERNEL.premises[1][0], -F.f_[F.a])),
    ),
    "T5 kernel: I - A (x) T -> I + A (x) T": lambda: _formula_mutant(
        "T5", "T5.kernel", "kernel", lhs=2 * F.f_[F.a] - FS.T5_KERNEL.lhs
    ),
    "T5 laplacian: Dirichlet 1/2 -> 1": lambda: _formula_mutant(
        "T5", "T5.laplacian", "dirichlet", rhs=_x(_DIR.rhs, sp.S.Half, 1)
    ),
    "T5 laplacian: self-adjoint <Dx,y>_pi -> <Dx,y>": lambda: _formula_mutant(
        "T5", "T5.laplacian", "self_adjoint", rhs=_x(F.SELF_ADJOINT.rhs, F.pi_[F.i], 1)
    ),
    "T5 laplacian: Delta = I - A (x) T -> I - T (x) A": lambda: _formula_mutant(
        "T5", "T5.laplacian", "laplacian", rhs=FR.Eye(F.n * F.d) - sp.KroneckerProduct(F.T_m, F.A_m)
    ),
    "T5 laplacian: walk O_ij = T -> -T": lambda: _formula_mutant("T5", "T5.laplacian", "walk_o", rhs=-FR.WALK_O.rhs),
    "T5 laplacian: walk P = A -> A^T": lambda: _formula_mutant("T5", "T5.laplacian", "walk_p", rhs=F.A_m[F.j, F.i]),
    "T5 spectrum: Delta = I - A (x) T -> I + A (x) T": lambda: _formula_mutant(
        "T5", "T5.spectrum", "laplacian", rhs=FR.Eye(F.n * F.d) + sp.KroneckerProduct(F.A_m, F.T_m)
    ),
    "T5 kernel space: 1 (x) Fix(T) -> 1 (x) Fix(-T)": lambda: _formula_mutant(
        "T5", "T5.kernel", "kernel_space", rhs=sp.KroneckerProduct(FR.Ones(F.n, 1), FR.Fix(-F.T_m))
    ),
    "T5 kernel space: 1 (x) Fix(T) -> Fix(T) (x) 1": lambda: _formula_mutant(
        "T5", "T5.kernel", "kernel_space", rhs=sp.KroneckerProduct(FR.Fix(F.T_m), FR.Ones(F.n, 1))
    ),
    "T5 kernel: Delta = I - A (x) T -> I - T (x) A": lambda: _formula_mutant(
        "T5", "T5.kernel", "laplacian", rhs=FR.Eye(F.n * F.d) - sp.KroneckerProduct(F.T_m, F.A_m)
    ),
    "T1 A (x) T -> T (x) A": lambda: _formula_mutant(
        "T1", "T1.walk", "stacked", rhs=sp.KroneckerProduct(F.T_m, F.A_m) * F.Vec(F.X_m.T)
    ),
    "T1 SHA = A X T^T -> A X T": lambda: _formula_mutant("T1", "T1.walk", "sha", rhs=F.A_m * F.X_m * F.T_m),
    "T1 SHA = A X T^T -> A^T X T^T": lambda: _formula_mutant("T1", "T1.walk", "sha", rhs=F.A_m.T * F.X_m * F.T_m.T),
    "T1 block O_ij = T -> T^T": lambda: _formula_mutant(
        "T1", "T1.walk", "block", where=(FW.T1_BLOCK.where[0], (F.O_[F.i, F.j, F.a, F.b], F.T_m[F.b, F.a]))
    ),
    "T1 block P = A -> A^T": lambda: _formula_mutant(
        "T1", "T1.walk", "block", where=((F.P_[F.i, F.j], F.A_m[F.j, F.i]), FW.T1_BLOCK.where[1])
    ),
    "T1 spectrum operator A (x) T -> A (x) T^2": lambda: _formula_mutant(
        "T1", "T1.spectrum", "kron", expr=sp.KroneckerProduct(F.A_m, F.T_m * F.T_m)
    ),
    "T1 spectrum lambda_i mu_a -> lambda_i + mu_a": lambda: _formula_mutant(
        "T1", "T1.spectrum", "spectrum", rhs=FW.lam_A[F.i] + FW.mu_T[F.a]
    ),
    "T2 gauge O' = B / P' -> B P'": lambda: _formula_mutant(
        "T2",
        "T2.gauge",
        "gauge",
        where=(FW._B_DEF, (FW.U[F.i, F.j, F.a, F.b], F.B_[F.i, F.j, F.a, F.b] * FW.Q[F.i, F.j])),
    ),
    "T2 gauge O'_ij = B_ij / P'_ji": lambda: _formula_mutant(
        "T2",
        "T2.gauge",
        "gauge",
        where=(FW._B_DEF, (FW.U[F.i, F.j, F.a, F.b], F.B_[F.i, F.j, F.a, F.b] / FW.Q[F.j, F.i])),
    ),
    "T2 constant T_Sigma = sum_h T_h -> T_1": lambda: _formula_mutant(
        "T2",
        "T2.constant",
        "constant",
        where=tuple((hd, F.Th_[0, F.a, F.b] if hd.base == FW.TS else e) for hd, e in FW.CONSTANT.where),
    ),
    "T2 constant c_ij >= 0 -> c_ij <= 0": lambda: _formula_mutant(
        "T2", "T2.constant", "nonneg", rel=sp.LessThan(FW.cc[F.i, F.j], 0)
    ),
    "T2 constant equal heads A^h = A^1 -> (A^1)^T": lambda: _formula_mutant(
        "T2", "T2.constant", "equal_heads", rhs=F.Ah_[0, F.j, F.i]
    ),
    "T2 shared attention O = T_Sigma -> T_1": lambda: _formula_mutant(
        "T2", "T2.special", "shared_A", rhs=F.Th_[0, F.a, F.b]
    ),
    "T2 shared transport O = H T_1 -> T_1": lambda: _formula_mutant(
        "T2", "T2.special", "shared_T", rhs=F.Th_[0, F.a, F.b]
    ),
    "T2 cancelling heads without T_2 = -T_1": lambda: _formula_mutant(
        "T2", "T2.special", "cancelling", premises=FW.CANCELLING.premises[:2]
    ),
    "T2 gauge support P' > 0 -> P' >= 0": lambda: _formula_mutant(
        "T2",
        "T2.gauge",
        "support",
        rel=sp.Implies(FW.GAUGE_SUPPORT.rel.args[0], sp.GreaterThan(FW.Q[F.i, F.j], 0)),
    ),
    "T2 gauge support where B_ij != 0 -> where B_ij = 0": lambda: _formula_mutant(
        "T2",
        "T2.gauge",
        "support",
        rel=sp.Implies(sp.Eq(*FW.GAUGE_SUPPORT.rel.args[0].args), FW.GAUGE_SUPPORT.rel.args[1]),
    ),
    "T2 counterexample A^1_11 9/10 -> 8/10": lambda: _conclusion_mutant(
        "T2", "T2.counterexample", A1=[["8/10", "1/10"], ["2/10", "8/10"]]
    ),
}


#: the mutants above that edit a formula (a SymPy expression THEOREMS.md renders): at least three per
#: theorem; each is also refuted by the derivation for symbolic sizes
#: (tests/theory/test_general_derivations.py)
FORMULA_MUTANTS = [
    "T3 Dirichlet 1/2 -> 1",
    "T3 Dirichlet x_i - O_ij x_j -> x_i + O_ij x_j",
    "T3 Dirichlet pi_i -> pi_j",
    "T3 Dirichlet pi_i P_ij -> pi_i P_ji",
    "T3 self-adjoint <Dx,y>_pi -> <Dx,y> (pi dropped)",
    "T3 upper form 1/2 -> 1",
    "T3 upper form x_i + O_ij x_j -> x_i - O_ij x_j",
    "T3 flat R_j^T -> R_j",
    "T3 flat I - P -> I + P",
    "T3 scaled (1 - s^2)/2 -> (1 - s)/2",
    "T3 scaled x_i - s Q_ij x_j -> x_i - Q_ij x_j",
    "T4 symmetric scores dropped",
    "T4 stationary without symmetric scores",
    "T4 pi_i = Z_i -> pi_i = 1",
    "T4 pi_i = Z_i -> Z_i^2",
    "T4 triangle identity sign flipped",
    "T4 triangle coefficient 2 -> 1",
    "T4 triangle x_j - x_i -> x_j + x_i",
    "T4 query bias: symmetric scores dropped",
    "T4 query bias pi_i = e^beta_i Z_i -> Z_i",
    "T4 query bias pi_i = e^beta_i Z_i -> e^-beta_i Z_i",
    "T1 A (x) T -> T (x) A",
    "T1 token-major -> feature-major",
    "T1 SHA = A X T^T -> A X T",
    "T1 SHA = A X T^T -> A^T X T^T",
    "T1 block O_ij = T -> T^T",
    "T1 block P = A -> A^T",
    "T2 gates 1/sum -> 1/H",
    "T2 P = mean -> sum",
    "T2 O_ij = H sum g T -> sum g T",
    "T2 gauge O' = B / P' -> B P'",
    "T2 gauge O'_ij = B_ij / P'_ji",
    "T2 shared attention O = T_Sigma -> T_1",
    "T2 shared transport O = H T_1 -> T_1",
    "T2 cancelling heads without T_2 = -T_1",
    "T5 spectral map swapped",
    "T5 on Fix(T): 1 - lambda -> 1 - lambda^2",
    "T5 on the -1 space: 1 + lambda -> 1 - lambda",
    "T5 Delta = I - A (x) T -> I + A (x) T",
    "T5 kernel: Fix(T) -> the -1 eigenspace",
    "T5 kernel: I - A (x) T -> I + A (x) T",
    "T6 Fourier sign reversed",
    "T6 Fourier phi_k(j) = zeta^j -> zeta^-j",
    "T6 Fourier kernel row 0 -> column 0",
    "T6 Fourier J = W - I -> W",
]


#: formula edits of conclusions whose proof scope is sized or numeric (no derivation for symbolic
#: sizes to refute them): rejected on drawn instances only
ORACLE_FORMULA_MUTANTS = [
    "T1 spectrum lambda_i mu_a -> lambda_i + mu_a",
    "T1 spectrum operator A (x) T -> A (x) T^2",
    "T2 gauge support P' > 0 -> P' >= 0",
    "T2 gauge support where B_ij != 0 -> where B_ij = 0",
    "T2 constant T_Sigma = sum_h T_h -> T_1",
    "T2 constant c_ij >= 0 -> c_ij <= 0",
    "T2 constant equal heads A^h = A^1 -> (A^1)^T",
    "T3 parallel x_i = O_ij x_j -> x_i = -O_ij x_j",
    "T3 parallel O_ij -> O_ij^T",
    "T3 flat matrix (I - P) (x) I -> (I - P^T) (x) I",
    "T3 flat matrix R (...) R^T -> R^T (...) R",
    "T3 flat dim ker Delta = d -> 2d",
    "T3 scaled transports O = sQ -> O = Q",
    "T3 scaled spec in [1 - s, 1 + s] -> [1 - s^2, 1 + s^2]",
    "T5 laplacian: Dirichlet 1/2 -> 1",
    "T5 laplacian: self-adjoint <Dx,y>_pi -> <Dx,y>",
    "T5 laplacian: Delta = I - A (x) T -> I - T (x) A",
    "T5 laplacian: walk O_ij = T -> -T",
    "T5 laplacian: walk P = A -> A^T",
    "T5 spectrum: Delta = I - A (x) T -> I + A (x) T",
    "T5 kernel space: 1 (x) Fix(T) -> 1 (x) Fix(-T)",
    "T5 kernel space: 1 (x) Fix(T) -> Fix(T) (x) 1",
    "T5 kernel: Delta = I - A (x) T -> I - T (x) A",
    "T4 causal mask -oo -> -1",
    "T4 causal mask dropped (mu = 0)",
    "T4 criterion only if: antisymmetric part M_a -> symmetric part",
    "T4 converse pi_i = A_0i / A_i0 -> A_i0 / A_0i",
    "T4 converse without its premise (balanced cycles)",
    "T4 collinear: antisymmetric part M_a -> symmetric part",
    "T4 collinear x_i = p + t_i v -> p + t_i v + t_i^2 w (w: v shifted)",
    "T4 criterion no mask mu = 0 -> mu_ij = -[j > i]",
    "T4 triangle no mask mu = 0 -> mu_ij = -[j > i]",
    "T4 causal size n >= 2 -> n >= 1",
    "T6 symbol zeta^m -> 2 zeta^m",
    "T6 symbol: sum over heads -> head 0 only",
    "T6 rotating e^{i theta} -> e^{-i theta}",
    "T6 rotating rho -> rho^2",
    "T6 growth shift 1 -> 0",
    "T6 eigenpair M(k) - I -> M(k)",
    "T6 eigenpair phi_k (x) v -> v (x) phi_k",
    "T6 eigenpair phi_k(j) = zeta^j -> zeta^(2j)",
    "T6 root e^(2 pi i k/n) -> e^(pi i k/n)",
    "T6 selection argmax -> argmin",
    "T6 abscissa Re sigma -> Im sigma",
    "T6 conjugate M(-k) = conj M(k) -> M(k)",
]


def _params(names):
    return [pytest.param(n, marks=pytest.mark.theorem(n.split()[0]), id=n) for n in names]


@pytest.mark.parametrize("name", _params(MUTANTS))
def test_statement_mutant_is_rejected(name):
    original, mutant = MUTANTS[name]()
    inst = counterexample(name, mutant)
    _, con = oracles.judge_theorem(mutant, inst)
    rejected = sorted(k for k, v in con.items() if not v.holds)
    assert rejected, name
    dropped = original.hypothesis_ids - mutant.hypothesis_ids
    if dropped:  # the instance is outside the original theorem: it violates the removed hypothesis
        for hid in dropped:
            h = original.hypothesis(hid)
            if h.predicate:
                assert not oracles.judge(h, inst).holds, (name, hid)
    else:  # same instance, original statement: accepted
        hyp, con0 = oracles.judge_theorem(original, inst)
        assert all(v.holds for v in hyp.values()) and all(v.holds for v in con0.values()), (name, con0)
    record(original.id, counterexample=f"statement mutant rejected: {name} (fails {', '.join(rejected)})")


@pytest.mark.parametrize(
    "name",
    _params(
        [
            "T3 upper bound 2 -> 1",
            "T6 Fourier sign reversed",
            "T1 token-major -> feature-major",
            "T5 without the involution hypothesis",
        ]
    ),
)
def test_property_test_reads_the_registry(monkeypatch, name):
    """The property test itself (``test_conclusions_hold_on_drawn_instances``) fails once the
    registry entry is the mutant: the test reads its numbers from the registry, not from a copy."""
    original, mutant = MUTANTS[name]()
    monkeypatch.setitem(registry._BY_ID, original.id, mutant)
    assert get(original.id) is mutant
    # the property test's own body, re-wrapped without the shrink phase (shrinking is wasted here)
    body = test_statements.test_conclusions_hold_on_drawn_instances.hypothesis.inner_test

    def fresh(tid, data):
        body(tid=tid, data=data)

    run = given(data=st.data())(SEARCH(fresh))
    with pytest.raises(AssertionError, match="conclusions rejected by the oracles"):
        run(tid=original.id)
    # (the unpatched entry passes the same test: tests/numerics/test_statements.py)


@pytest.mark.parametrize("name", sorted(WITNESSES))
def test_every_witness_rejects_its_mutant_alone(name):
    """A known witness is a counterexample by itself (not a leftover the search never reaches): the
    mutant fails on it, the original statement holds on it."""
    original, mutant = MUTANTS[name]()
    for inst in WITNESSES[name]:
        assert cases.failures(mutant, inst), name
        assert not cases.failures(original, inst), name


def test_the_search_draws_from_its_own_generator(tmp_path, monkeypatch):
    """The search's draws depend only on the mutant's name: the same instances whatever ran before —
    another search, or an import of further project modules (whose literals Hypothesis ≥ 6.131 would
    mix into its draws unless ``tests/conftest.py`` pinned that pool: this is what made two mutants'
    searches miss after an in-process paper-checks run) — and two names draw different instances."""
    import importlib

    def draws(name, k=40):
        _, mutant = MUTANTS[name]()
        seen = []

        def cond(inst):
            seen.append(repr(sorted((key, np.asarray(v).tolist()) for key, v in inst.items() if key != "kind")))
            return len(seen) >= k

        find(cases.instances(mutant), cond, settings=FIND, random=Random(search_seed(name)))
        return seen

    name = "T3 scaled transports O = sQ -> O = Q"
    first = draws(name)
    find(st.integers(0, 10**6), lambda v: v > 10**5, settings=FIND)  # another search in between
    assert draws(name) == first
    # a module outside site-packages with many literals in the ranges the T3 sampler draws from
    literals = ", ".join(f"{0.2 + k / 97:.6f}" for k in range(150)) + ", " + ", ".join(map(str, range(1, 5)))
    (tmp_path / "gate_literals_mod.py").write_text(f"VALUES = ({literals})\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.import_module("gate_literals_mod")
    monkeypatch.delitem(sys.modules, "gate_literals_mod")  # imported once is enough (and gone after)
    assert draws(name) == first
    assert draws("T3 upper bound 2 -> 1") != first


def test_every_theorem_has_at_least_one_mutant_here():
    ids = {n.split()[0] for n in MUTANTS}
    assert ids == {"T1", "T2", "T3", "T4", "T5", "T6"}


def test_every_theorem_has_three_formula_mutants():
    from collections import Counter

    counts = Counter(n.split()[0] for n in FORMULA_MUTANTS)
    assert all(counts[t] >= 3 for t in ("T1", "T2", "T3", "T4", "T5", "T6")), counts
    for name in FORMULA_MUTANTS:
        original, mutant = MUTANTS[name]()
        edited = [
            c.id
            for c, m in zip(original.conclusions, mutant.conclusions, strict=True)
            if any(m.params.get(k) != v for k, v in c.formulas.items())
        ]
        assert edited, f"{name}: no formula edited"


def test_every_formula_a_predicate_evaluates_has_a_mutant_here():
    """Each formula an oracle evaluates is edited by at least one formula mutant (so its evaluation
    is shown to matter); a formula a test evaluates instead (registry.EVALUATED_BY_TESTS) is mutated
    where that test runs."""
    edited = set()
    for name in FORMULA_MUTANTS + ORACLE_FORMULA_MUTANTS:
        original, mutant = MUTANTS[name]()
        for c, m in zip(original.conclusions, mutant.conclusions, strict=True):
            edited |= {(c.id, k) for k, v in c.formulas.items() if m.params.get(k) != v}
    evaluated = {
        (c.id, k)
        for t in registry.MAIN
        for c in t.conclusions
        if c.predicate
        for k in c.formulas
        if k not in registry.EVALUATED_BY_TESTS.get(c.id, {})
    }
    assert evaluated <= edited, sorted(evaluated - edited)
