r"""Connection walks: the operator view of (multi-head) attention (THEOREMS.md T1, T2).

A connection walk on ``n`` tokens in ``R^d`` is

.. math::  (W x)_i = \sum_j P_{ij} O_{ij} x_j, \qquad P \ge 0,\ O_{ij} \in R^{d\times d},

with token-major block ``(i, j)`` equal to ``B_ij = P_ij O_ij``. Multi-head attention with head
attention matrices ``A^h`` and head transports ``T_h`` (``T_h = W_O^h W_V^h`` for torch
``nn.Linear`` weights) has blocks ``B_ij = Σ_h A^h_ij T_h`` (T2); with ``P = mean_h A^h`` and
gates ``g^h_ij = A^h_ij / Σ_k A^k_ij`` the edge transport is ``O_ij = H Σ_h g^h_ij T_h``.

Three storage forms, never converted to the dense ``(n·d)²`` operator unless :meth:`to_dense` is
called:

* ``heads`` with full transports ``T`` of shape ``(H, d, d)``;
* ``heads`` with low-rank factors ``W_O`` ``(H, d, d_h)`` and ``W_V`` ``(H, d_h, d)`` so that
  ``apply`` costs what the attention layer costs (``O(H n² d_h + n d H d_h)``);
* ``edges``: an explicit walk matrix ``P`` ``(..., n, n)`` and per-edge transports ``O``
  ``(..., n, n, d, d)`` (small cases, counterexamples, gauge-transformed walks).

Shapes: leading batch dims ``...`` are allowed on attention (and broadcast against ``X``).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from numerics.contracts.declarations import (
    Flag,
    Float,
    FloatDType,
    Index,
    Passthrough,
    Tensor,
    Walk,
    batch_agree,
    contract,
)
from numerics.contracts.kinds import register_walk_type
from numerics.contracts.validate import (
    as_tensor,
    check_memory,
    check_ndim,
    check_same,
    check_stochastic,
)
from numerics.errors import OffSupportError, ShapeError, UndefinedError
from numerics.tolerance import tol

__all__ = [
    "ConnectionWalk",
    "ConstantTransport",
    "kron_token_major",
    "kron_feature_major",
    "as_walk",
    "generator_dense",
]


@contract(A=Tensor("... n n"), T=Tensor("... d d"), after=batch_agree(A=2, T=2))
def kron_token_major(A: torch.Tensor, T: torch.Tensor) -> torch.Tensor:
    """``kron(A, T)`` batched over A's leading dims: the token-major operator of SHA (T1)."""
    n, d = A.shape[-1], T.shape[-1]
    out = A[..., :, None, :, None] * T[..., None, :, None, :]
    return out.reshape(*out.shape[:-4], n * d, n * d)


@contract(A=Tensor("... n n"), T=Tensor("... d d"), after=batch_agree(A=2, T=2))
def kron_feature_major(A: torch.Tensor, T: torch.Tensor) -> torch.Tensor:
    """``kron(T, A)``: the same map written for feature-major stacking ``vec(X)``.

    It is *not* the token-major operator; tests show the two differ (the classic silent bug)."""
    n, d = A.shape[-1], T.shape[-1]
    out = T[..., :, None, :, None] * A[..., None, :, None, :]
    return out.reshape(*out.shape[:-4], n * d, n * d)


@dataclass
class ConstantTransport:
    """Result of the T2 constant-transport test.

    ``holds``: every block ``B_ij`` is a nonnegative multiple ``P_ij T`` of one transport ``T``
    (within tolerance). ``transport``: that ``T`` scaled so that ``P`` is row-stochastic when the
    row sums of ``B`` allow it (``T = T_Σ`` for row-stochastic heads), else the unit-Frobenius
    leading direction. ``walk_matrix``: the coefficients ``P_ij``. ``residual``: the Frobenius
    distance from ``B`` to the nearest Kronecker product ``P ⊗ T`` (Van Loan–Pitsianis), relative
    to ``‖B‖_F`` in ``relative_residual``. ``min_coefficient``: the most negative ``P_ij`` (a
    negative coefficient means a sign flip: not a walk). Batched: fields carry the batch dims.
    """

    holds: torch.Tensor
    transport: torch.Tensor
    walk_matrix: torch.Tensor
    residual: torch.Tensor
    relative_residual: torch.Tensor
    min_coefficient: torch.Tensor


@register_walk_type
class ConnectionWalk:
    """A connection walk; see the module docstring for the maths and storage forms.

    Build with :meth:`from_sha`, :meth:`from_mha`, :meth:`from_factors` or :meth:`from_edges`.
    """

    def __init__(self, *, kind: str, A=None, T=None, W_O=None, W_V=None, P=None, O=None):
        self.kind = kind
        self._A = A  # (..., H, n, n)
        self._T = T  # (H, d, d) or (..., H, d, d)
        self._W_O = W_O  # (H, d, d_h)
        self._W_V = W_V  # (H, d_h, d)
        self._P = P  # (..., n, n)   (edges)
        self._O = O  # (..., n, n, d, d)   (edges)

    # ------------------------------------------------------------------ constructors
    # Each constructor's @contract has already converted and checked its arguments (shapes with
    # shared symbols, n ≥ 1, finiteness, non-negativity, one dtype and device): the bodies only add
    # what the contract does not state (``stochastic=True``, the support of a given gauge ``P``).
    @classmethod
    @contract(A=Tensor("... n n", nonneg=True), T=Tensor("d d"), stochastic=Flag())
    def from_sha(cls, A, T, *, stochastic: bool = False) -> ConnectionWalk:
        """Single head (T1): ``A`` ``(..., n, n)``, ``T`` ``(d, d)``. ``W = kron(A, T)``.

        ``stochastic=True`` additionally requires rows of ``A`` to sum to 1."""
        if stochastic:
            check_stochastic("A", A)
        return cls(kind="heads", A=A.unsqueeze(-3), T=T.unsqueeze(0))

    @classmethod
    @contract(A=Tensor("... H n n", nonneg=True), T=Tensor("... H d d"), stochastic=Flag(), after=batch_agree(A=3, T=3))
    def from_mha(cls, A, T, *, stochastic: bool = False) -> ConnectionWalk:
        """Multi-head (T2): ``A`` ``(..., H, n, n)``, ``T`` ``(H, d, d)`` (or ``(..., H, d, d)``)."""
        if stochastic:
            check_stochastic("A", A)
        return cls(kind="heads", A=A, T=T)

    @classmethod
    @contract(A=Tensor("... H n n", nonneg=True), W_V=Tensor("H k d"), W_O=Tensor("H d k"), stochastic=Flag())
    def from_factors(cls, A, W_O, W_V, *, stochastic: bool = False) -> ConnectionWalk:
        """Multi-head with low-rank transports ``T_h = W_O[h] @ W_V[h]``.

        ``A`` ``(..., H, n, n)``, ``W_O`` ``(H, d, d_h)``, ``W_V`` ``(H, d_h, d)`` (torch ``nn.Linear``
        layout: ``W_V[h]`` maps the model dim to the head dim, ``W_O[h]`` maps back)."""
        if stochastic:
            check_stochastic("A", A)
        return cls(kind="heads", A=A, W_O=W_O, W_V=W_V)

    @classmethod
    @contract(
        P=Tensor("... n n", nonneg=True),
        O=Tensor(("d d", "... n n d d")),
        stochastic=Flag(),
        after=batch_agree(P=2, O=4),
    )
    def from_edges(cls, P, O, *, stochastic: bool = False) -> ConnectionWalk:
        """Explicit walk matrix ``P`` ``(..., n, n)`` and per-edge transports ``O`` ``(..., n, n, d, d)``.

        ``O`` may be ``(d, d)`` for a constant transport (broadcast to every edge)."""
        if stochastic:
            check_stochastic("P", P)
        if O.ndim == 2:
            O = O.expand(*P.shape, *O.shape)
        return cls(kind="edges", P=P, O=O)

    @classmethod
    @contract(B=Tensor("... n n d d"), P=Tensor("... n n", nonneg=True, optional=True), after=batch_agree(B=4, P=2))
    def from_blocks(cls, B, *, P=None) -> ConnectionWalk:
        """From blocks ``B`` ``(..., n, n, d, d)`` with a chosen gauge ``P`` (default: row sums of
        ``‖B_ij‖_F`` normalised; any row-stochastic ``P`` positive where ``B ≠ 0`` works, T2 gauge).
        A given ``P`` must be row-stochastic to ``tol(P.dtype, n)`` (:class:`NotStochasticError`).
        Without ``P``, all-zero blocks (in any batch element) have no gauge: the default one would be
        ``P = 0``, a walk with no edge (:class:`UndefinedError` naming ``B``)."""
        if P is not None:
            check_stochastic("P", P)
        if P is None:
            check_some_block("B", B)
            w = torch.linalg.matrix_norm(B)
            s = w.sum(-1, keepdim=True)
            P = torch.where(s > 0, w / torch.where(s > 0, s, torch.ones_like(s)), torch.zeros_like(w))
        else:
            off = (P == 0) & (torch.linalg.matrix_norm(B) > 0)
            if bool(off.any()):
                raise OffSupportError("is zero on an edge where B is nonzero: no transport reproduces it", argument="P")
        safe = torch.where(P > 0, P, torch.ones_like(P))
        O = torch.where((P > 0)[..., None, None], B / safe[..., None, None], torch.zeros_like(B))
        return cls(kind="edges", P=P, O=O)

    # ------------------------------------------------------------------ basic properties
    @property
    def attention(self) -> torch.Tensor:
        """Per-head attention ``(..., H, n, n)`` (heads form) or ``P`` as one head (edges form)."""
        return self._A if self.kind == "heads" else self._P.unsqueeze(-3)

    @property
    def n_heads(self) -> int:
        return self._A.shape[-3] if self.kind == "heads" else 1

    @property
    def n(self) -> int:
        return (self._A if self.kind == "heads" else self._P).shape[-1]

    @property
    def d(self) -> int:
        if self.kind == "edges":
            return self._O.shape[-1]
        return (self._T if self._T is not None else self._W_V).shape[-1]

    @property
    def dtype(self) -> torch.dtype:
        return (self._A if self.kind == "heads" else self._P).dtype

    @property
    def device(self) -> torch.device:
        return (self._A if self.kind == "heads" else self._P).device

    @property
    def batch_shape(self) -> torch.Size:
        return self._A.shape[:-3] if self.kind == "heads" else self._P.shape[:-2]

    @property
    def factored(self) -> bool:
        return self.kind == "heads" and self._T is None

    @property
    def head_transports(self) -> torch.Tensor:
        """``T_h`` ``(H, d, d)``; formed from the factors on demand (``H d² d_h`` work)."""
        if self.kind != "heads":
            raise ShapeError("an edges-form walk has no head transports; use edge_transports()", argument="walk")
        if self._T is not None:
            return self._T
        return self._W_O @ self._W_V

    @property
    def walk_matrix(self) -> torch.Tensor:
        """``P`` ``(..., n, n)``: the mean of the heads (T2 convention) or the explicit ``P``."""
        return self._A.mean(-3) if self.kind == "heads" else self._P

    @property
    def support(self) -> torch.Tensor:
        """Boolean ``(..., n, n)``: edges with ``P_ij > 0`` (where ``O_ij`` is defined)."""
        return self.walk_matrix > 0

    @contract(self=Walk(blame=False), device=Passthrough(), dtype=FloatDType(optional=True))
    def to(self, device=None, dtype=None) -> ConnectionWalk:
        f = lambda t: None if t is None else t.to(device=device, dtype=dtype)
        return ConnectionWalk(
            kind=self.kind, A=f(self._A), T=f(self._T), W_O=f(self._W_O), W_V=f(self._W_V), P=f(self._P), O=f(self._O)
        )

    # ------------------------------------------------------------------ action
    @contract(self=Walk(blame=False), X=Tensor("... n d"), after=batch_agree(self="walk", X=2))
    def apply(self, X) -> torch.Tensor:
        """``Y = W(X)``: ``y_i = Σ_j B_ij x_j``; ``X`` ``(..., n, d)`` → ``(..., n, d)``.

        Heads form: ``Σ_h A^h X T_hᵀ`` without forming any ``n²d²`` object; with factors this is
        ``concat_h(A^h X W_V[h]ᵀ) @ W_Oᵀ``, exactly the attention layer's own cost."""
        X = as_tensor("X", X)
        check_ndim("X", X, 2, "(..., n, d)")
        check_same(["walk", "X"], [self.attention, X])
        if X.shape[-2] != self.n or X.shape[-1] != self.d:
            raise ShapeError(f"expected (..., {self.n}, {self.d}), got {tuple(X.shape)}", argument="X")
        if self.kind == "edges":
            return torch.einsum("...ij,...ijab,...jb->...ia", self._P, self._O, X)
        A = self._A
        if self._T is not None:
            # (..., H, n, d): A^h X, then transport per head and sum
            AX = torch.matmul(A, X.unsqueeze(-3))
            return torch.einsum("...hia,...hba->...ib", AX, self._T)
        H, d, dh = self._W_O.shape
        V = torch.matmul(X.unsqueeze(-3), self._W_V.transpose(-1, -2))  # (..., H, n, d_h)
        Z = torch.matmul(A, V)  # (..., H, n, d_h)
        Zc = Z.transpose(-3, -2).reshape(*Z.shape[:-3], Z.shape[-2], H * dh)  # (..., n, H d_h)
        Wo = self._W_O.permute(1, 0, 2).reshape(d, H * dh)  # (d, H d_h)
        return Zc @ Wo.T

    __call__ = apply
    #: unchecked form for the library's own matvec loops (inputs it built itself)
    _apply = apply.__wrapped__

    def _dense_bytes(self, copies: int = 1) -> int:
        """Bytes of ``copies`` dense ``(..., n, n, d, d)`` objects in the walk's dtype."""
        batch = 1
        for s_ in self.batch_shape:
            batch *= int(s_)
        return copies * batch * (self.n * self.d) ** 2 * torch.empty((), dtype=self.dtype).element_size()

    def _check_dense(self, what: str, copies: int = 1, name: str = "walk", budget: int | None = None) -> None:
        """Refuse (:class:`~numerics.errors.MemoryBudgetError` naming ``name``) when ``copies`` dense
        ``n²d²`` objects exceed :func:`numerics.contracts.validate.memory_budget` (or ``budget`` bytes)."""
        check_memory(
            name,
            self._dense_bytes(copies),
            f"{what} (n={self.n}, d={self.d}, batch={tuple(self.batch_shape)})",
            "the factored walk.apply / numerics.spectra.extreme_eigenvalues / walk.edge_transport(i, j)",
            budget=budget,
        )

    def _check_unit_basis(self, what: str, copies: int, budget: int | None = None) -> None:
        """Refuse an edges-form walk written in the basis of the d² unit matrices ``E_ab`` (what
        :meth:`nearest_kronecker` and the factored diagnostics use): ``copies`` dense ``n²d²`` arrays
        and a ``d²×d²`` float64 identity, each checked against the memory budget."""
        self._check_dense(what, copies=copies, budget=budget)
        check_memory(
            "walk",
            self.d**4 * 8,
            f"a d²×d² identity (d={self.d})",
            "a heads-form walk (from_mha / from_factors)",
            budget=budget,
        )

    @contract(self=Walk(blame=False))
    def blocks(self) -> torch.Tensor:
        """``B`` ``(..., n, n, d, d)`` with ``B[..., i, j] = Σ_h A^h_ij T_h`` (materialises n²d²;
        refused above the memory budget)."""
        self._check_dense("the n²d² blocks B")
        if self.kind == "edges":
            return self._P[..., None, None] * self._O
        return torch.einsum("...hij,...hab->...ijab", self._A, self.head_transports)

    @contract(self=Walk(blame=False))
    def to_dense(self) -> torch.Tensor:
        """Token-major ``(..., n·d, n·d)`` operator: rows ``i·d:(i+1)·d``, cols ``j·d:(j+1)·d`` = ``B_ij``
        (refused above the memory budget: :class:`~numerics.errors.MemoryBudgetError`)."""
        self._check_dense("the dense (nd)×(nd) operator", copies=2)
        B = self.blocks()
        n, d = self.n, self.d
        return B.transpose(-3, -2).reshape(*B.shape[:-4], n * d, n * d)

    # ------------------------------------------------------------------ gates and edge transports
    @contract(self=Walk(blame=False))
    def gates(self) -> torch.Tensor:
        """``g^h_ij = A^h_ij / Σ_k A^k_ij`` ``(..., H, n, n)``; convex on the support.

        Off the support (all heads zero) the gate is 0/0: reported as NaN, never filled in."""
        A = self.attention
        s = A.sum(-3, keepdim=True)
        return torch.where(s > 0, A / torch.where(s > 0, s, torch.ones_like(s)), torch.full_like(A, float("nan")))

    @contract(self=Walk(blame=False), i=Index("n"), j=Index("n"))
    def edge_transport(self, i: int, j: int) -> torch.Tensor:
        """``O_ij = H Σ_h g^h_ij T_h = B_ij / P_ij`` ``(..., d, d)``.

        Raises :class:`OffSupportError` when ``P_ij = 0`` (in any batch element): there ``O_ij`` is
        arbitrary (T2, off support), so no value is returned."""
        n = self.n
        for name, k in (("i", i), ("j", j)):
            if not (-n <= int(k) < n):
                raise ShapeError(f"index {k} out of range for n={n}", argument=name)
        P = self.walk_matrix[..., i, j]
        if bool((P <= 0).any()):
            raise OffSupportError(
                f"edge ({i}, {j}) has P_ij = 0 in {int((P <= 0).sum())} batch element(s): O_ij is undefined (0/0)",
                argument="(i, j)",
            )
        if self.kind == "edges":
            return self._O[..., i, j, :, :]
        B = torch.einsum("...h,...hab->...ab", self._A[..., :, i, j], self.head_transports)
        return B / P[..., None, None]

    @contract(self=Walk(blame=False))
    def edge_transports(self) -> tuple[torch.Tensor, torch.Tensor]:
        """All ``O_ij`` ``(..., n, n, d, d)`` and the support mask; NaN off the support (refused above
        the memory budget)."""
        self._check_dense("the n²d² edge transports O", copies=2)
        P = self.walk_matrix
        sup = P > 0
        if self.kind == "edges":  # the stored transports, exactly (no B / P round trip)
            return torch.where(sup[..., None, None], self._O, torch.full_like(self._O, float("nan"))), sup
        B = self.blocks()
        safe = torch.where(sup, P, torch.ones_like(P))
        O = torch.where(sup[..., None, None], B / safe[..., None, None], torch.full_like(B, float("nan")))
        return O, sup

    # ------------------------------------------------------------------ constant transport (T2)
    def _kron_factors(self) -> tuple[torch.Tensor, torch.Tensor]:
        """``R = U Vᵀ`` with ``R[(i,j), (a,b)] = B_ij[a,b]`` (the Van Loan rearrangement of B).

        Heads form: ``U = vec(A^h)`` ``(..., n², H)`` and ``V = vec(T_h)`` ``(d², H)``: rank ≤ H,
        so the nearest Kronecker product costs two thin QRs and an H×H SVD."""
        n, d = self.n, self.d
        if self.kind == "heads":
            U = self._A.reshape(*self._A.shape[:-2], n * n).transpose(-1, -2)
            T = self.head_transports
            V = T.reshape(*T.shape[:-2], d * d).transpose(-1, -2)
            return U, V
        self._check_unit_basis("the n²d² blocks and a d²×d² identity", copies=2)
        B = self.blocks()
        R = B.reshape(*B.shape[:-4], n * n, d * d)
        eye = torch.eye(d * d, dtype=R.dtype, device=R.device)
        return R, eye.expand(*R.shape[:-2], d * d, d * d) if R.ndim > 2 else eye

    def _nearest_kronecker(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """``(P, T, gap, ‖B‖_F)`` from one factorisation of the rearranged ``R``."""
        U, V = self._kron_factors()
        Qu, Ru = torch.linalg.qr(U)
        Qv, Rv = torch.linalg.qr(V)
        core = Ru @ Rv.transpose(-1, -2)
        u, s, vh = torch.linalg.svd(core)
        p = Qu @ u[..., :, 0:1]  # (..., n², 1)
        t = Qv @ vh.transpose(-1, -2)[..., :, 0:1]  # (..., d², 1)
        s0 = s[..., 0]
        # sign: make the walk part nonnegative on average
        sign = torch.where(p.sum((-1, -2)) < 0, -1.0, 1.0).to(p.dtype)
        n, d = self.n, self.d
        P = (sign * s0)[..., None, None] * p.reshape(*p.shape[:-2], n, n)
        T = sign[..., None, None] * t.reshape(*t.shape[:-2], d, d)
        gap = torch.sqrt(torch.clamp((s[..., 1:] ** 2).sum(-1), min=0))
        normB = torch.linalg.vector_norm(s, dim=-1)  # ‖R‖_F = ‖B‖_F = ‖σ(R)‖₂
        return P, T, gap, normB

    def _zero_blocks(self, normB: torch.Tensor) -> torch.Tensor:
        """Where ``B = 0`` (for heads: ``‖B‖_F`` within the rounding of ``Σ_h A^h ⊗ T_h``, e.g.
        cancelling heads, ``tol(dtype, H)·‖vec A‖·‖vec T‖``)."""
        floor = torch.zeros_like(normB)
        if self.kind == "heads":
            U, V = self._kron_factors()
            floor = tol(self.dtype, self.n_heads) * torch.linalg.matrix_norm(U) * torch.linalg.matrix_norm(V)
        return normB <= floor

    @contract(self=Walk(blame=False))
    def nearest_kronecker(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """``(P, T, gap)`` minimising ``‖B − P ⊗ T‖_F`` over all ``P`` (n×n) and ``T`` (d×d).

        ``gap = sqrt(Σ_{k≥2} s_k²)`` with ``s`` the singular values of the rearranged ``R``. ``B = 0``
        (in any batch element, to rounding: :meth:`constant_transport`'s test) has no nearest factor:
        every ``0 ⊗ T`` is one (:class:`UndefinedError` naming ``walk``)."""
        P, T, gap, normB = self._nearest_kronecker()
        zero = self._zero_blocks(normB)
        if normB.device.type != "meta" and bool(zero.any()):  # (meta: shapes only, no values to test)
            raise UndefinedError(
                f"B = 0 in {int(zero.sum())} of {zero.numel()} walk(s): every P ⊗ T with P = 0 is nearest, none is "
                "singled out (constant_transport gives T = 0 on a walk with edges)",
                argument="walk",
            )
        return P, T, gap

    @contract(self=Walk(blame=False), rtol=Float(lo=0.0, closed=True, optional=True))
    def constant_transport(self, *, rtol: float | None = None) -> ConstantTransport:
        """T2 constant-transport test: is every ``B_ij = P_ij T`` with ``P ≥ 0``?

        Returns the transport when it exists (``T = Σ_j B_ij`` row sum direction, i.e. ``T_Σ`` for
        row-stochastic heads), with the nearest-Kronecker residual either way. All-zero blocks on a
        walk with edges (for heads: ``‖B‖_F`` within the rounding of ``Σ_h A^h ⊗ T_h``, e.g. cancelling
        heads): ``T = 0`` with the walk's ``P``; on a walk without any edge:
        :class:`UndefinedError` (no transport is singled out)."""
        P, T, gap, normB = self._nearest_kronecker()
        zero = self._zero_blocks(normB)  # heads that cancel (A^2 = A^1, T_2 = -T_1) leave B = 0 up to rounding
        if bool(zero.any()):
            # B = 0: on a walk with edges that is the constant transport T = 0 (B_ij = P_ij · 0); on a
            # walk with no edge at all (P = 0, e.g. from_blocks of zeros) every T "works": undefined
            Pw = self.walk_matrix
            no_edge = zero & ~(Pw > 0).flatten(-2).any(-1)
            if bool(no_edge.any()):
                raise UndefinedError(
                    "has no edge (P = 0 and every block B_ij = 0): a constant transport is undefined", argument="walk"
                )
            P = torch.where(zero[..., None, None], Pw.to(P.dtype), P)
            T = torch.where(zero[..., None, None], torch.zeros_like(T), T)
        # rescale so that rows of P sum to 1 where possible (T2: T = T_Σ when heads are stochastic)
        rs = P.sum(-1).mean(-1)
        scale = torch.where(rs.abs() > 0, rs, torch.ones_like(rs))
        P = P / scale[..., None, None]
        T = T * scale[..., None, None]
        rel = torch.where(zero, torch.zeros_like(gap), gap / torch.where(normB > 0, normB, torch.ones_like(normB)))
        n, d = self.n, self.d
        bound = rtol if rtol is not None else tol(self.dtype, n * d)
        minc = P.amin((-1, -2))
        holds = (rel <= bound) & (minc >= -bound * P.abs().amax((-1, -2)).clamp(min=1))
        return ConstantTransport(
            holds=holds, transport=T, walk_matrix=P, residual=gap, relative_residual=rel, min_coefficient=minc
        )

    def __repr__(self) -> str:
        extra = " factored" if self.factored else ""
        return (
            f"ConnectionWalk(kind={self.kind}{extra}, batch={tuple(self.batch_shape)}, H={self.n_heads}, "
            f"n={self.n}, d={self.d}, dtype={self.dtype}, device={self.device})"
        )


# ---------------------------------------------------------------------------------------------
# walk-level operators (registered under ``numerics.laplacian.<name>``, the package that re-exports them
# and whose diagnostics read every walk through them; graphs and spectra use them too)
@contract(walk=Walk(), name="numerics.laplacian.as_walk")
def as_walk(walk) -> ConnectionWalk:
    """A :class:`ConnectionWalk`, or blocks ``B`` ``(..., n, n, d, d)`` wrapped with the default
    gauge of :meth:`ConnectionWalk.from_blocks`. Complex / NaN / non-square input raises."""
    if isinstance(walk, ConnectionWalk):
        return walk
    # the contract (Walk()) has checked and converted the blocks: a real, finite (..., n, n, d, d)
    # tensor with square d×d blocks, errors naming ``walk``
    check_some_block("walk", walk)
    return ConnectionWalk.from_blocks(walk)


def check_some_block(name: str, B: torch.Tensor) -> None:
    """Blocks ``(..., n, n, d, d)`` with a nonzero block in every batch element; else
    :class:`UndefinedError` naming ``name`` (the default gauge of all-zero blocks is ``P = 0``)."""
    zero = ~(B != 0).flatten(-4).any(-1)
    if B.device.type != "meta" and bool(zero.any()):  # (meta: shapes only, no values to test)
        raise UndefinedError(
            f"every block is 0 in {int(zero.sum())} of {zero.numel()} walk(s): the default gauge (rows of ‖B_ij‖_F "
            "normalised) is P = 0, a walk with no edge; pass P= (from_blocks) for a walk whose transports are 0",
            argument=name,
        )


@contract(walk=Walk(), name="numerics.laplacian.generator_dense")
def generator_dense(walk) -> torch.Tensor:
    """Dense token-major ``Δ = I − W`` ``(..., nd, nd)`` in float64 (materialises ``(nd)²``)."""
    w = as_walk(walk)
    W = w.to_dense().to(torch.float64)
    eye = torch.eye(W.shape[-1], dtype=torch.float64, device=W.device)
    return eye - W
