r"""networkx views of connection walks: irreducibility, periodicity, reversibility by Kolmogorov's
criterion on a cycle basis, holonomy (flatness), and the softmax triangle identity (T3, T4).

These are *independent* of the linear-algebra diagnostics in :mod:`numerics.laplacian` (they walk
the graph; no eigen-solves or null spaces), and the tests check that both give the same answers.

* :func:`to_networkx` — ``DiGraph`` on nodes ``0..n-1`` with an edge ``i → j`` for every
  ``P_ij > 0``, edge data ``weight = P_ij`` (float), ``transport = O_ij`` (``(d, d)`` numpy
  float64, ``x_i = O_ij x_j`` is "parallel along the edge") and ``block = B_ij = P_ij O_ij``.
* :func:`is_reversible` — Kolmogorov: a chain with positive ``π`` is reversible iff its support is
  symmetric and, for every cycle ``c_0 → c_1 → … → c_0`` of a cycle basis of the undirected support,
  ``Σ_k log P(c_k, c_{k+1}) − log P(c_{k+1}, c_k) = 0`` (the 1-form ``log P_ij − log P_ji`` is
  exact iff it integrates to zero on an integral cycle basis). ``π`` then comes from a spanning
  tree: ``π_j / π_i = P_ij / P_ji``.
* :func:`holonomies` / :func:`is_flat` — frames ``R`` from a spanning tree (``R_root = I``,
  ``R_i = O_ij R_j``) and, for every non-tree edge (each closes one basis cycle), the holonomy
  ``R_i^{-1} O_ij R_j``; flat (``O_ij = R_i R_j^{-1}`` on every edge) iff all are ``I``.
* :func:`softmax_triangle_identity` — T4: for every triangle,
  ``log[A_ij A_jk A_ki / (A_ik A_kj A_ji)] = 2·scale·(x_j − x_i)ᵀ M_a (x_k − x_i)``.

Tolerances come from :func:`numerics.tolerance.tol`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import networkx as nx
import numpy as np
import torch

from numerics.contracts.declarations import Float, Instance, Passthrough, Tensor, Walk, contract
from numerics.contracts.validate import batch_index
from numerics.errors import (
    DTypeError,
    NotStochasticError,
    ParameterError,
    ShapeError,
    UndecidedTruthError,
    UndefinedError,
)
from numerics.tolerance import decide, rounding_error, tol
from numerics.walk import ConnectionWalk, as_walk

__all__ = [
    "to_networkx",
    "is_irreducible",
    "is_aperiodic",
    "period",
    "closed_classes",
    "stationary_distribution",
    "Reversibility",
    "is_reversible",
    "kolmogorov_cycles",
    "Holonomy",
    "Flatness",
    "holonomies",
    "is_flat",
    "TriangleIdentity",
    "softmax_triangle_identity",
    "reversible_by_span",
]

F64 = torch.float64
EPS64 = float(np.finfo(np.float64).eps)


def _tol(size: int, scale: float = 1.0) -> float:
    return tol(F64, size, scale=scale)


# ---------------------------------------------------------------------------------------------
_W = dict(walk=Walk(matrix=True), index=Passthrough())


@contract(**_W)
def to_networkx(walk, *, index: tuple | int | None = None) -> nx.DiGraph:
    """``DiGraph`` of one walk (a :class:`ConnectionWalk`, blocks ``B`` ``(n, n, d, d)``, or a walk
    matrix ``P`` ``(n, n)``: then no ``transport`` data). Batched walks need ``index`` (the batch
    index of the element to view); otherwise :class:`ShapeError`.

    Graph data: ``G.graph["n"]``, ``G.graph["d"]``. Edge ``i → j`` iff ``P_ij > 0``, with
    ``weight`` ``P_ij``, ``transport`` ``O_ij`` and ``block`` ``B_ij`` (numpy float64)."""
    # the contract has checked and converted ``walk`` (a ConnectionWalk, or a finite tensor: blocks
    # (..., n, n, d, d) or a nonnegative P (..., n, n)); it also lets a DiGraph through, for the
    # queries below that take one, which this function does not
    if isinstance(walk, nx.DiGraph):
        raise DTypeError("expected a ConnectionWalk, blocks or a walk matrix, got DiGraph", argument="walk")
    if isinstance(walk, ConnectionWalk) or walk.ndim >= 4:
        w = as_walk(walk)
        w._check_dense("the graph's n²d² transports and blocks", copies=4)
        P = w.walk_matrix
        O, sup = w.edge_transports()
        B = w.blocks()
        batch = tuple(w.batch_shape)
    else:
        P = walk
        O = B = None
        batch = tuple(P.shape[:-2])
    if not batch and index is not None:
        raise ParameterError(f"the walk is not batched (one walk): index must be None, got {index!r}", argument="index")
    if batch:
        if index is None:
            raise ShapeError(f"batched walk (batch shape {batch}): pass index= to choose one element", argument="walk")
        idx = batch_index("index", index, batch)
        P = P[idx]
        O = None if O is None else O[idx]
        B = None if B is None else B[idx]
        if P.ndim != 2:
            raise ShapeError(f"index {index} does not select one walk of batch shape {batch}", argument="index")
    Pn = P.detach().to("cpu", F64).numpy()
    On = None if O is None else O.detach().to("cpu", F64).numpy()
    Bn = None if B is None else B.detach().to("cpu", F64).numpy()
    n = Pn.shape[0]
    # the precision P was computed in: row sums are judged with its tolerance (a float32 softmax's
    # rows sum to 1 only to ~1e-7), never with float64's after the copy
    G = nx.DiGraph(n=n, d=None if On is None else On.shape[-1], dtype=P.dtype)
    G.add_nodes_from(range(n))
    for i, j in zip(*np.nonzero(Pn > 0)):
        data = {"weight": float(Pn[i, j])}
        if On is not None and Bn is not None:
            data["transport"] = On[i, j].copy()
            data["block"] = Bn[i, j].copy()
        G.add_edge(int(i), int(j), **data)
    return G


def _graph(walk_or_graph, index=None) -> nx.DiGraph:
    if isinstance(walk_or_graph, nx.DiGraph):
        return walk_or_graph
    return to_networkx(walk_or_graph, index=index)


@contract(**_W)
def is_irreducible(walk, *, index=None) -> bool:
    """Strongly connected support (``nx.is_strongly_connected``)."""
    return bool(nx.is_strongly_connected(_graph(walk, index)))


@contract(**_W)
def period(walk, *, index=None) -> int:
    """Period of an irreducible walk: gcd of cycle lengths (1 = aperiodic). Raises
    :class:`UndefinedError` for a reducible walk (each class has its own period)."""
    G = _graph(walk, index)
    if not nx.is_strongly_connected(G):
        raise UndefinedError("the period is defined for irreducible walks; this one is reducible", argument="walk")
    # BFS levels: period = gcd over edges of (level(u) + 1 − level(v))
    root = next(iter(G.nodes))
    level = nx.single_source_shortest_path_length(G, root)
    g = 0
    for u, v in G.edges:
        g = math.gcd(g, level[u] + 1 - level[v])
    return abs(g) if g else 1


@contract(**_W)
def is_aperiodic(walk, *, index=None) -> bool:
    """``nx.is_aperiodic`` (for an irreducible walk: period 1)."""
    return bool(nx.is_aperiodic(_graph(walk, index)))


@contract(**_W)
def closed_classes(walk, *, index=None) -> list[set[int]]:
    """Closed communicating classes (``nx.attracting_components``): one per extreme stationary
    distribution of a stochastic walk."""
    return [set(c) for c in nx.attracting_components(_graph(walk, index))]


# ---------------------------------------------------------------------------------------------
@dataclass
class Reversibility:
    """Result of :func:`is_reversible`.

    ``holds``: reversible with a positive ``π`` (support symmetric, Kolmogorov on every basis cycle,
    and — for a walk that is not stochastic — nothing more is claimed than detailed balance).
    ``pi`` ``(n,)`` numpy float64 from spanning-tree ratios (NaN if the support is not symmetric);
    each connected component gets total mass ``1/k`` when there are ``k`` components (π is then not
    unique: ``unique`` False). ``residual``: max over basis cycles of the Kolmogorov log-ratio
    ``|Σ log P_fwd − Σ log P_bwd|`` (``inf`` when an edge has no reverse). ``balance_residual``:
    ``max |π_i P_ij − π_j P_ji|`` with that ``π``. ``cycles``: ``(cycle, log_ratio)`` pairs.
    ``reason``: why it fails (or notes), else ''. ``tol``: the bound of the cycle with the largest
    residual/tolerance ratio, ``tol(float64, 2L, scale=S/2)`` for a cycle of length ``L`` with
    ``S = Σ (|log P| + 1)`` over its ``2L`` weights (``tol(float64, 2)`` without cycles; each cycle is
    decided against its own bound); 0.0 when no comparison is made (an edge without reverse).
    ``error``: the rounding bound of ``residual`` (``2L`` logarithms of magnitude ``|log P|``,
    :mod:`theory.rounding`); ``undecided``: the residual lies within ``error`` of ``tol`` (then
    ``holds`` is False, ``fails`` is False and the reason says so).
    """

    holds: bool
    pi: np.ndarray
    residual: float
    balance_residual: float
    unique: bool
    cycles: list = field(default_factory=list)
    reason: str = ""
    tol: float = 0.0
    error: float = 0.0
    undecided: bool = False

    def __bool__(self) -> bool:
        if self.undecided:
            raise UndecidedTruthError(
                f"reversibility is undecided ({self.reason}): its truth value is not a bool; use .holds or .fails"
            )
        return self.holds

    @property
    def fails(self) -> bool:
        return not self.holds and not self.undecided


@contract(G=Instance(nx.DiGraph, "a networkx.DiGraph (from to_networkx)"))
def kolmogorov_cycles(G: nx.DiGraph) -> list[tuple[list[int], float]]:
    """``(cycle, log_ratio)`` for each cycle of ``nx.cycle_basis`` of the undirected support, with
    ``log_ratio = Σ_k log P(c_k, c_{k+1}) − log P(c_{k+1}, c_k)`` (needs a symmetric support)."""
    return [(c, lr) for c, lr, _ in _kolmogorov_terms(G)]


def _kolmogorov_terms(G: nx.DiGraph) -> list[tuple[list[int], float, float]]:
    """``(cycle, log-ratio, operand scale)`` for each cycle of the cycle basis of the undirected
    support of ``G`` (:func:`_cycle_logs`)."""
    U = nx.Graph()
    U.add_nodes_from(G.nodes)
    U.add_edges_from((u, v) for u, v in G.edges if u != v)
    return [(list(cyc), *_cycle_logs(G, cyc)) for cyc in nx.cycle_basis(U)]


def _cycle_logs(G: nx.DiGraph, cyc) -> tuple[float, float]:
    """``(Σ_k log P(c_k, c_{k+1}) − log P(c_{k+1}, c_k), Σ_k (|log P(c_k, c_{k+1})| + |log P(c_{k+1}, c_k)| + 2))``:
    the Kolmogorov log-ratio of a cycle and the operand scale of its ``2L`` logarithms (each off by
    ``ε·(|log P| + 1)``: the weight's own rounding and the log's)."""
    s, S = 0.0, 0.0
    L = len(cyc)
    for k in range(L):
        fwd, bwd = math.log(G[cyc[k]][cyc[(k + 1) % L]]["weight"]), math.log(G[cyc[(k + 1) % L]][cyc[k]]["weight"])
        s += fwd - bwd
        S += abs(fwd) + abs(bwd) + 2.0
    return s, S


def _tree_pi(G: nx.DiGraph) -> tuple[np.ndarray, int]:
    """π from spanning-tree ratios ``π_v = π_u P_uv / P_vu`` per weakly connected component,
    each component normalised to mass 1/k."""
    n = G.number_of_nodes()
    pi = np.zeros(n)
    comps = list(nx.weakly_connected_components(G))
    k = len(comps)
    for comp in comps:
        root = min(comp)
        logpi = {root: 0.0}
        U = G.subgraph(comp).to_undirected(as_view=True)
        for u, v in nx.bfs_edges(U, root):
            logpi[v] = logpi[u] + math.log(G[u][v]["weight"]) - math.log(G[v][u]["weight"])
        m = max(logpi.values())
        vals = {i: math.exp(lp - m) for i, lp in logpi.items()}
        tot = sum(vals.values())
        for i, val in vals.items():
            pi[i] = val / tot / k
    return pi, k


@contract(**_W)
def is_reversible(walk, *, index=None) -> Reversibility:
    """Reversibility by Kolmogorov's criterion on a cycle basis (see the module docstring).

    Accepts a walk (any kind), blocks, a walk matrix ``P`` or a ``DiGraph`` from
    :func:`to_networkx`. Undirected self-loops are irrelevant (they cancel in detailed balance)."""
    G = _graph(walk, index)
    n = G.number_of_nodes()
    one_way = [(u, v) for u, v in G.edges if u != v and not G.has_edge(v, u)]
    if one_way:
        u, v = one_way[0]
        return Reversibility(
            False,
            np.full(n, np.nan),
            math.inf,
            math.inf,
            False,
            [],
            f"edge {u}→{v} has no reverse edge: detailed balance needs π_{u} P_{u}{v} = 0",
            0.0,
        )
    if n and any(G.out_degree(i) == 0 for i in G.nodes):
        i = next(i for i in G.nodes if G.out_degree(i) == 0)
        # an isolated node with no edges at all: P row zero (not a walk); π_i is then free
        reason_zero = f"node {i} has no outgoing edge (zero row)"
    else:
        reason_zero = ""
    terms = _kolmogorov_terms(G)
    cycles = [(c, lr) for c, lr, _ in terms]
    # per cycle of length L: 2L logarithms, each off by ε·(|log P| + 1) (the weight's own rounding
    # and the log's), summed: the operand scale S = Σ (|log P| + 1) sets both the tolerance
    # tol(float64, 2L, scale=S/2) and the rounding bound of the residual (theory.rounding), so a
    # softmax walk with tiny weights (|log P| in the hundreds) is judged at its own precision
    res, bound, err, decided_ok, decided_bad, worst_ratio = 0.0, _tol(2), 0.0, True, False, -1.0
    for c, lr, S in terms:
        L = len(c)
        t_c, e_c = _tol(2 * L, scale=S / 2), rounding_error(2 * L, S)
        ok_c, bad_c = decide(abs(lr), t_c, e_c)
        decided_ok, decided_bad = decided_ok and ok_c, decided_bad or bad_c
        res = max(res, abs(lr))
        if abs(lr) / t_c > worst_ratio:
            worst_ratio, bound, err = abs(lr) / t_c, t_c, e_c
    pi, k = _tree_pi(G)
    bal = 0.0
    for u, v, data in G.edges(data=True):
        bal = max(bal, abs(pi[u] * data["weight"] - pi[v] * G[v][u]["weight"]))
    holds = decided_ok and not reason_zero
    bad = decided_bad
    undecided = not holds and not bad and not reason_zero
    notes = [reason_zero] if reason_zero else []
    if undecided:
        notes.append(
            f"undecided: Kolmogorov residual {res:.3e} within its rounding {err:.1e} of the tolerance {bound:.1e}"
        )
    if k > 1:
        notes.append(f"{k} components: π not unique, each component has mass 1/{k}")
    if bad and not reason_zero:
        worst = max(cycles, key=lambda cs: abs(cs[1]))
        notes.insert(0, f"Kolmogorov fails on cycle {worst[0]} (log-ratio {worst[1]:.3e})")
    return Reversibility(
        bool(holds), pi, float(res), float(bal), k == 1, cycles, "; ".join(notes), bound, err, bool(undecided)
    )


@contract(**_W)
def stationary_distribution(walk, *, index=None) -> np.ndarray:
    """Stationary ``π`` of a stochastic walk from the graph: spanning-tree ratios when the walk is
    reversible (no linear solve), otherwise a linear solve restricted to the unique closed class
    (transient states get 0). Needs row sums within ``tol(dtype, n)`` of 1, ``dtype`` the precision of
    the walk's ``P`` (float64 for a given ``DiGraph``; else
    :class:`NotStochasticError`). Raises :class:`UndefinedError` with several closed classes, and when
    that solve cannot resolve π: ``cond(I − P_C + 11ᵀ) · tol(float64, m) ≥ 1`` (a nearly
    decomposable class whose couplings are below roundoff; same criterion as
    :func:`numerics.laplacian.stationary_info`)."""
    G = _graph(walk, index)
    n = G.number_of_nodes()
    out = np.zeros(n)
    for u, _, wt in G.edges(data="weight"):
        out[u] += wt
    bad = np.abs(out - 1.0)
    row_tol = tol(G.graph.get("dtype") or F64, n)
    if n and bad.max() > row_tol:
        raise NotStochasticError(
            f"rows must sum to 1 for a stationary distribution (max |row sum − 1| = "
            f"{bad.max():.3e}); see numerics.laplacian.stationary_info for Perron vectors",
            argument="walk",
        )
    classes = list(nx.attracting_components(G))
    if len(classes) != 1:
        raise UndefinedError(f"{len(classes)} closed classes: several stationary distributions", argument="walk")
    rev = is_reversible(G)
    if rev.holds:
        return rev.pi
    cls = sorted(classes[0])
    Pc = nx.to_numpy_array(G, nodelist=cls, weight="weight")
    m = len(cls)
    M = (np.eye(m) - Pc + 1.0).T
    kappa = float(np.linalg.cond(M))
    if not math.isfinite(kappa) or kappa * _tol(m) >= 1:
        raise UndefinedError(
            f"π is ill-conditioned (cond(I − P_C + 11ᵀ) = {kappa:.1e}): a nearly decomposable "
            "walk whose couplings are below roundoff",
            argument="walk",
        )
    pc = np.linalg.solve(M, np.ones(m))
    pi = np.zeros(n)
    pi[cls] = pc / pc.sum()
    return pi


# ---------------------------------------------------------------------------------------------
@dataclass
class Holonomy:
    """Transport around one basis cycle closed by edge ``edge = (i, j)``: ``matrix`` =
    ``R_i^{-1} O_ij R_j`` and ``defect = ‖matrix − I‖_F``; ``cycle`` = the node sequence."""

    edge: tuple[int, int]
    cycle: list[int]
    matrix: np.ndarray
    defect: float


@dataclass
class Flatness:
    """``holds``: every holonomy is ``I`` within tolerance (``O_ij = R_i R_j^{-1}`` on all edges);
    ``residual``: max holonomy defect relative to the transports' scale; ``frames`` ``(n, d, d)``;
    ``reason``: e.g. a singular transport on a tree edge, or a frame with ``cond₂(R_v)·eps > 10⁻²``
    (flatness then fails). ``tol``: the bound on ``residual``,
    ``tol(float64, (n+1)·d, scale=S)``, ``S = max(1, max ‖O_ij‖₂) · max(1, max_v cond₂(R_v))``;
    ``error``: the rounding bound of ``residual`` (``rounding_error((n+1)·d, S)``,
    :mod:`theory.rounding`); ``undecided``: the residual lies within ``error`` of ``tol`` (then
    ``holds`` and ``fails`` are False, ``bool()`` raises and the reason says so)."""

    holds: bool
    residual: float
    holonomies: list[Holonomy]
    frames: np.ndarray | None
    reason: str = ""
    tol: float = 0.0
    error: float = 0.0
    undecided: bool = False

    def __bool__(self) -> bool:
        if self.undecided:
            raise UndecidedTruthError(f"flatness is undecided ({self.reason}): use .holds or .fails")
        return self.holds

    @property
    def fails(self) -> bool:
        return not self.holds and not self.undecided


@contract(**_W)
def holonomies(walk, *, index=None) -> Flatness:
    """Frames by BFS spanning tree per weakly connected component and holonomy of every non-tree
    edge (self-loops and two-way edges included: each closes a cycle of the multigraph)."""
    G = _graph(walk, index)
    n = G.number_of_nodes()
    d = G.graph.get("d")
    if d is None:
        raise ShapeError("graph has no transports (built from P alone)", argument="walk")
    R = np.zeros((n, d, d))
    Rinv = np.zeros((n, d, d))
    parent: dict[int, int | None] = {}
    tree = set()
    U = nx.Graph()
    U.add_nodes_from(G.nodes)
    U.add_edges_from((u, v) for u, v in G.edges if u != v)
    scale = max([np.linalg.norm(dat["transport"], 2) for _, _, dat in G.edges(data=True)] + [1.0])
    reason = ""
    for comp in nx.connected_components(U):
        root = min(comp)
        R[root] = np.eye(d)
        Rinv[root] = np.eye(d)
        parent[root] = None
        for u, v in nx.bfs_edges(U, root):
            parent[v] = u
            if G.has_edge(u, v):  # x_u = O_uv x_v  ->  R_v = O_uv^{-1} R_u
                Ouv = G[u][v]["transport"]
                tree.add((u, v))
                try:
                    R[v] = np.linalg.solve(Ouv, R[u])
                except np.linalg.LinAlgError:
                    R[v] = np.full((d, d), np.nan)
                    reason = reason or f"singular transport O_{u}{v} on a spanning-tree edge"
            else:  # x_v = O_vu x_u  ->  R_v = O_vu R_u
                tree.add((v, u))
                R[v] = G[v][u]["transport"] @ R[u]
            cond = np.linalg.cond(R[v]) if np.isfinite(R[v]).all() else np.inf
            if not np.isfinite(cond) or cond * EPS64 > 1e-2:
                reason = reason or f"frame at node {v} is (numerically) singular"
                Rinv[v] = np.full((d, d), np.nan)
            else:
                Rinv[v] = np.linalg.inv(R[v])
    hols: list[Holonomy] = []
    for i, j, dat in G.edges(data=True):
        if (i, j) in tree:
            continue
        Hm = Rinv[i] @ dat["transport"] @ R[j]
        defect = float(np.linalg.norm(Hm - np.eye(d))) if np.isfinite(Hm).all() else math.inf
        hols.append(Holonomy((i, j), _cycle_of(parent, i, j), Hm, defect))
    res = max((h.defect for h in hols), default=0.0)
    # rounding: products along tree paths of length <= n, amplified by the frames' conditioning
    # (of the frames kept: a singular one, cond₂ up to inf, is a reason and no scale)
    conds = [np.linalg.cond(R[v]) for v in range(n) if np.isfinite(Rinv[v]).all()]
    S = scale * max(conds + [1.0])
    bound, err = _tol((n + 1) * d, scale=S), rounding_error((n + 1) * d, S)
    ok, bad = decide(res, bound, err)
    undecided = not reason and not ok and not bad
    if undecided:
        reason = f"undecided: holonomy defect {res:.3e} within its rounding {err:.1e} of the tolerance {bound:.1e}"
    return Flatness(bool(ok and not reason), float(res), hols, R, reason, bound, err, undecided)


def _cycle_of(parent: dict, i: int, j: int) -> list[int]:
    """Node sequence of the fundamental cycle closed by edge ``i → j`` (tree path j … i, then j)."""

    def up(x):
        path = [x]
        while parent.get(x) is not None:
            x = parent[x]
            path.append(x)
        return path

    pi_, pj = up(i), up(j)
    common = set(pi_) & set(pj)
    a = next(x for x in pi_ if x in common)
    left = pi_[: pi_.index(a) + 1]
    right = pj[: pj.index(a)]
    return left + right[::-1]


is_flat = holonomies


# ---------------------------------------------------------------------------------------------
@dataclass
class TriangleIdentity:
    """T4 triangle identity. ``residual``: max over triangles ``(i < j < k)`` of
    ``|log-ratio − 2·scale·(x_j−x_i)ᵀ M_a (x_k−x_i)|``; ``max_log_ratio``: max ``|log-ratio|``
    (0 iff A is reversible, for full support and n ≥ 3); ``n_triangles``. ``holds``: ``residual <= tol``
    with ``tol = tol(float64, 6·d², scale=1 + |scale|·max|X|²·Σ|M|)`` (scale 1 when there is no
    triangle)."""

    holds: bool
    residual: float
    max_log_ratio: float
    n_triangles: int
    tol: float
    error: float = 0.0  # rounding bound of the residual (six logs and a d²-term right-hand side)
    undecided: bool = False  # the residual lies within ``error`` of ``tol``

    @property
    def fails(self) -> bool:
        return not self.holds and not self.undecided


@contract(A=Tensor("n n", nonneg=True), X=Tensor("n d"), M=Tensor("d d"), scale=Float())
def softmax_triangle_identity(A, X, M, *, scale: float) -> TriangleIdentity:
    r"""Check ``log[A_ij A_jk A_ki / (A_ik A_kj A_ji)] = 2·scale·(x_j−x_i)ᵀ M_a (x_k−x_i)`` on every
    triangle of the (complete) support graph of softmax attention ``A = softmax(scale·X M Xᵀ)``
    ``(n, n)`` with tokens ``X`` ``(n, d)``, form ``M`` ``(d, d)``, ``M_a = (M − Mᵀ)/2``.

    Triangles are enumerated from the networkx graph of ``A`` (3-cliques of its undirected
    support); edges with ``A_ij = 0`` (masks) take no part."""
    # the contract has checked A (n, n) ≥ 0, X (n, d), M (d, d): finite float tensors, sizes agreeing
    An = A.detach().to("cpu", F64).numpy()
    Xn = X.detach().to("cpu", F64).numpy()
    Mn = M.detach().to("cpu", F64).numpy()
    Ma = (Mn - Mn.T) / 2
    G = to_networkx(torch.as_tensor(An))
    U = nx.Graph()
    U.add_nodes_from(G.nodes)
    U.add_edges_from((u, v) for u, v in G.edges if u != v and G.has_edge(v, u))
    res = 0.0
    maxlr = 0.0
    count = 0
    mag = 0.0
    err = 0.0
    form = abs(scale) * float(np.abs(Xn).max()) ** 2 * float(np.abs(Mn).sum()) if Xn.size else 0.0  # |s|·max|X|²·Σ|M|
    for clique in nx.enumerate_all_cliques(U):
        if len(clique) < 3:
            continue
        if len(clique) > 3:
            break
        i, j, k = sorted(clique)
        lg = [math.log(An[a, b]) for a, b in ((i, j), (j, k), (k, i), (i, k), (k, j), (j, i))]
        lr = lg[0] + lg[1] + lg[2] - lg[3] - lg[4] - lg[5]
        rhs = 2 * scale * float((Xn[j] - Xn[i]) @ Ma @ (Xn[k] - Xn[i]))
        res = max(res, abs(lr - rhs))
        maxlr = max(maxlr, abs(lr))
        err = max(err, rounding_error(6 + 2 * Xn.shape[1] ** 2, sum(abs(v) for v in lg) + 8 * form + 6.0))
        mag = form + 1.0
        count += 1
    bound = _tol(6 * max(Xn.shape[1], 1) ** 2, scale=max(mag, 1.0))
    ok, bad = decide(res, bound, err)
    return TriangleIdentity(bool(ok), float(res), float(maxlr), count, bound, err, not (ok or bad))


@contract(X=Tensor("n d"), M=Tensor("d d"))
def reversible_by_span(X, M) -> tuple[bool, float]:
    """T4's exact criterion for full-support softmax: ``M_a = (M − Mᵀ)/2`` vanishes on
    ``span{x_j − x_1}``; returns ``(holds, ‖Uᵀ M_a U‖_F)`` with ``U`` an orthonormal basis of that
    span (from an SVD of the differences, singular values ``<= tol(float64, max(n−1, d), scale=max|X|)``
    dropped as round-off) and ``holds`` iff that norm is ``<= tol(float64, d², scale=max(1, max|M_a|))``."""
    X = X.detach().to("cpu", F64).numpy()  # checked by the contract: finite float (n, d), (d, d)
    M = M.detach().to("cpu", F64).numpy()
    Ma = (M - M.T) / 2
    D = X[1:] - X[:1]
    if D.shape[0] == 0:
        return True, 0.0
    u, s, vh = np.linalg.svd(D, full_matrices=False)
    # differences x_j − x_1 carry round-off relative to the tokens' magnitude, not to their own:
    # nearly coincident tokens far from the origin must not gain spurious rank (GPU-run finding)
    thr = _tol(max(D.shape), scale=max(float(np.abs(X).max()), 1e-300))
    Ub = vh[s > thr].T
    if Ub.shape[1] == 0:
        return True, 0.0
    r = float(np.linalg.norm(Ub.T @ Ma @ Ub))
    return r <= _tol(X.shape[1] ** 2, scale=max(float(np.abs(Ma).max()), 1.0)), r
