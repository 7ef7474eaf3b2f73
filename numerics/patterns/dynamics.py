r"""The attention dynamics of :mod:`numerics.patterns.simulate` as an object: :class:`MHADynamics` (scores,
attention, ``MHA(X)``, the flow's velocity and Jacobian; the formulas are in :mod:`numerics.patterns.simulate`'s
docstring) and the contract specs of a dynamics and of a state, :data:`DYNAMICS` and :data:`STATE`.
Below the simulators: :mod:`numerics.patterns.rk4_check`, :mod:`numerics.patterns.simulate_batched` and
:mod:`numerics.patterns.simulate` import it, it imports none of them. Documented and registered as
``numerics.patterns.simulate.MHADynamics``, where :mod:`numerics.patterns.simulate` re-exports it."""

from __future__ import annotations

import math

import torch

from numerics.contracts.declarations import Choice, Flag, Float, Instance, Passthrough, Tensor, contract
from numerics.contracts.validate import as_tensor, check_finite, check_memory, check_ndim, check_same
from numerics.errors import (
    DTypeError,
    NonFiniteError,
    ParameterError,
    ShapeError,
)
from numerics.patterns.symbols import validate_kernels, validate_transports
from numerics.threads import small_problem_threads

__all__ = ["MHADynamics", "DYNAMICS", "STATE"]

#: contract spec of an :class:`MHADynamics` argument (binds ``d``, and ``n`` when it has a ring)
DYNAMICS = Instance(
    lambda: MHADynamics,
    "an MHADynamics",
    bind=lambda dyn: {"d": dyn.d} | ({"n": dyn.n} if dyn.n is not None else {}),
    tensor=lambda dyn: dyn.T,
)
#: contract spec of a state ``X`` ``(..., n, d)``
STATE = Tensor("... n d")

_content_spec = Tensor("H k d")


def _content_env():
    from numerics.contracts.declarations import Env

    return Env({})


def _check_scores_memory(name: str, H: int, n: int, like: torch.Tensor) -> None:

    check_memory(
        name,
        4 * H * n * n * like.element_size(),
        f"the (H, n, n) attention scores (H={H}, n={n})",
        "a smaller ring (numerics.patterns.symbols.predict_pattern needs only the (H, n) kernels)",
    )


class MHADynamics:
    """Token dynamics ``f(X) = Σ_h A^h(X) X T_hᵀ − X`` (see :mod:`numerics.patterns.simulate`'s docstring for the scores).

    Parameters: ``transports`` ``(H, d, d)``; at most one of ``kernels`` ``(H, n)`` (relative ring
    kernels, rows summing to 1) / ``pos_bias`` ``(H, n, n)``; ``content`` = ``(W_Q, W_K)`` each
    ``(H, d_k, d)`` or ``None``; ``beta`` content scale; ``abs_pe`` ``(n, d)``; ``rope`` ``None`` or a
    base (e.g. ``10000.0``); ``causal``; ``normalization`` ``"softmax"``/``"sigmoid"``."""

    @contract(
        transports=Tensor("H d d"),
        kernels=Tensor("H n", nonneg=True, optional=True),
        pos_bias=Tensor("H n n", neg_inf=True, optional=True),
        content=Passthrough(),
        beta=Float(),
        abs_pe=Tensor("n d", optional=True),
        rope=Float(lo=0.0, optional=True),
        causal=Flag(),
        normalization=Choice(("softmax", "sigmoid")),
        mins={"n": 2},
        name="numerics.patterns.simulate.MHADynamics.__init__",
    )
    def __init__(
        self,
        transports,
        *,
        kernels=None,
        pos_bias=None,
        content=None,
        beta: float = 1.0,
        abs_pe=None,
        rope: float | None = None,
        causal: bool = False,
        normalization: str = "softmax",
    ):
        T = validate_transports(transports)
        self.T = T
        H, d = T.shape[0], T.shape[-1]
        if kernels is not None and pos_bias is not None:
            raise ShapeError("give kernels or pos_bias, not both", argument="pos_bias")
        self.kernels = None
        self.bias = None
        if pos_bias is not None:
            _check_scores_memory("pos_bias", H, pos_bias.shape[-1], pos_bias)
        if kernels is not None:
            a = validate_kernels(kernels)
            if a.shape[0] != H:
                raise ShapeError(f"expected {H} kernels (one per head), got {a.shape[0]}", argument="kernels")
            check_same(["transports", "kernels"], [T, a])
            self.kernels = a
            n = a.shape[1]
            _check_scores_memory("kernels", H, n, a)
            idx = (torch.arange(n, device=a.device)[None, :] - torch.arange(n, device=a.device)[:, None]) % n
            self.bias = torch.log(a)[:, idx]  # (H, n, n); zeros -> -inf (masked offsets)
        elif pos_bias is not None:
            b = as_tensor("pos_bias", pos_bias)
            check_ndim("pos_bias", b, 3, "(H, n, n)", max_ndim=3)
            if b.shape[0] != H or b.shape[1] != b.shape[2]:
                raise ShapeError(f"expected ({H}, n, n), got {tuple(b.shape)}", argument="pos_bias")
            if bool(torch.isnan(b).any()) or bool((b == float("inf")).any()):
                raise NonFiniteError("must not contain NaN or +inf", argument="pos_bias")
            if not causal and not bool(torch.isfinite(b).any(-1).all()):
                raise ParameterError("a row is −inf at every key: its softmax is undefined (0/0)", argument="pos_bias")
            check_same(["transports", "pos_bias"], [T, b])
            self.bias = b
        self.Wq = self.Wk = None
        if content is not None:
            if not isinstance(content, (tuple, list)) or len(content) != 2:
                raise ShapeError(f"expected a pair (W_Q, W_K), got {type(content).__name__}", argument="content")
            Wq, Wk = (_content_spec.check("content", c, _content_env()) for c in content)
            for nm, W in (("W_Q", Wq), ("W_K", Wk)):
                if W.shape[0] != H or W.shape[2] != d:
                    raise ShapeError(f"{nm} expected ({H}, d_k, {d}), got {tuple(W.shape)}", argument="content")
            if Wq.shape != Wk.shape:
                raise ShapeError(f"W_Q {tuple(Wq.shape)} and W_K {tuple(Wk.shape)} differ", argument="content")
            check_same(["transports", "content"], [T, Wq])
            check_same(["transports", "content"], [T, Wk])
            self.Wq, self.Wk = Wq, Wk
        if not math.isfinite(beta):
            raise ShapeError(f"beta must be finite, got {beta}", argument="beta")
        self.beta = float(beta)
        self.abs_pe = None
        if abs_pe is not None:
            p = as_tensor("abs_pe", abs_pe)
            check_ndim("abs_pe", p, 2, "(n, d)", max_ndim=2)
            check_finite("abs_pe", p)
            if p.shape[1] != d:
                raise ShapeError(f"expected (n, {d}), got {tuple(p.shape)}", argument="abs_pe")
            check_same(["transports", "abs_pe"], [T, p])
            self.abs_pe = p
        if rope is not None:
            if self.Wq is None:
                raise ShapeError("RoPE rotates queries/keys: it needs content=(W_Q, W_K)", argument="rope")
            if self.Wq.shape[1] % 2:
                raise ShapeError(f"RoPE needs an even d_k, got {self.Wq.shape[1]}", argument="rope")
            if not (rope > 0 and math.isfinite(rope)):
                raise ShapeError(f"RoPE base must be positive, got {rope}", argument="rope")
        self.rope = rope
        self.causal = bool(causal)
        if normalization not in ("softmax", "sigmoid"):
            raise ShapeError(
                f"normalization must be 'softmax' or 'sigmoid', got {normalization!r}", argument="normalization"
            )
        self.normalization = normalization
        self.H, self.d = H, d
        self._A_const: torch.Tensor | None = None
        self.n = None if self.bias is None else self.bias.shape[-1]
        if self.abs_pe is not None:
            if self.n is not None and self.abs_pe.shape[0] != self.n:
                raise ShapeError(f"{self.abs_pe.shape[0]} positions but n={self.n}", argument="abs_pe")
            self.n = self.abs_pe.shape[0]

    # -------------------------------------------------------------- pieces
    @property
    def content_free(self) -> bool:
        """``M_h = 0``: attention does not depend on ``X`` (the flow is linear)."""
        return self.Wq is None

    def check_state(self, X, name: str = "X") -> torch.Tensor:
        """``X`` as a tensor of this dynamics' shape ``(..., n, d)``, dtype and device (errors name ``name``):
        the check a loop runs once before it calls the unchecked forms below."""
        X = as_tensor(name, X)
        check_ndim(name, X, 2, "(..., n, d)")
        if X.shape[-1] != self.d or (self.n is not None and X.shape[-2] != self.n):
            raise ShapeError(f"expected (..., {self.n or 'n'}, {self.d}), got {tuple(X.shape)}", argument=name)
        if X.dtype != self.T.dtype:
            raise DTypeError(
                f"dtype {X.dtype} differs from the dynamics' {self.T.dtype}; cast explicitly", argument=name
            )
        check_same(["transports", name], [self.T, X])
        return X

    @contract(self=DYNAMICS, X=STATE, name="numerics.patterns.simulate.MHADynamics.scores")
    def scores(self, X) -> torch.Tensor:
        """Attention scores ``S`` ``(..., H, n, n)`` (before softmax / sigmoid; masked = −inf)."""
        n = X.shape[-2]
        S = torch.zeros(*X.shape[:-2], self.H, n, n, dtype=X.dtype, device=X.device)
        if self.bias is not None:
            S = S + self.bias
        if self.Wq is not None:
            Z = X if self.abs_pe is None else X + self.abs_pe
            q = torch.einsum("hkd,...nd->...hnk", self.Wq, Z)
            k = torch.einsum("hkd,...nd->...hnk", self.Wk, Z)
            dk = q.shape[-1]
            if self.rope is not None:
                q, k = _rope(q, self.rope), _rope(k, self.rope)
            S = S + self.beta / math.sqrt(dk) * (q @ k.transpose(-1, -2))
        if self.causal:
            m = torch.ones(n, n, dtype=torch.bool, device=X.device).triu(1)
            S = S.masked_fill(m, float("-inf"))
        return S

    @contract(self=DYNAMICS, X=STATE, name="numerics.patterns.simulate.MHADynamics.attention")
    def attention(self, X) -> torch.Tensor:
        """``A^h(X)`` ``(..., H, n, n)``: softmax (row-stochastic) or sigmoid (unnormalised) of the scores."""
        X = self.check_state(X)
        if self.content_free and self.bias is not None:
            # constant attention: computed once (it does not depend on X)
            if self._A_const is None or self._A_const.dtype != X.dtype:
                S = self._scores(X[(0,) * (X.ndim - 2)])
                self._A_const = torch.softmax(S, -1) if self.normalization == "softmax" else torch.sigmoid(S)
            return self._A_const
        S = self._scores(X)
        if self.normalization == "softmax":
            return torch.softmax(S, dim=-1)
        return torch.sigmoid(S)

    @contract(self=DYNAMICS, X=STATE, name="numerics.patterns.simulate.MHADynamics.mha")
    def mha(self, X) -> torch.Tensor:
        """``MHA(X)_i = Σ_h Σ_j A^h_ij T_h x_j`` ``(..., n, d)``."""
        A = self._attention(X)
        AX = torch.matmul(A, X.unsqueeze(-3))  # (..., H, n, d)
        return torch.matmul(AX, self.T.transpose(-1, -2)).sum(-3)

    @contract(self=DYNAMICS, X=STATE, name="numerics.patterns.simulate.MHADynamics.velocity")
    def velocity(self, X) -> torch.Tensor:
        """``f(X) = MHA(X) − X``."""
        return self.mha_unchecked(X) - X

    __call__ = velocity

    @contract(self=DYNAMICS, X=STATE, name="numerics.patterns.simulate.MHADynamics.sphere_velocity")
    def sphere_velocity(self, X) -> torch.Tensor:
        """Tangent field ``P^⊥_{x_i} MHA(X)_i = m_i − (x_iᵀ m_i / ‖x_i‖²) x_i`` (the −x_i term drops out)."""
        m = self.mha_unchecked(X)
        return m - (m * X).sum(-1, keepdim=True) / (X * X).sum(-1, keepdim=True) * X

    # unchecked forms for the library's loops (numerics.patterns.simulate): a state checked once by
    # check_state, then stepped without a contract per call
    _scores = scores.__wrapped__
    _attention = attention.__wrapped__
    mha_unchecked = mha.__wrapped__
    velocity_unchecked = velocity.__wrapped__
    sphere_velocity_unchecked = sphere_velocity.__wrapped__

    @contract(self=DYNAMICS, X=Tensor("n d"), sphere=Flag(), name="numerics.patterns.simulate.MHADynamics.jacobian")
    def jacobian(self, X, *, sphere: bool = False) -> torch.Tensor:
        """Token-major Jacobian ``∂f(x)_{(i,a)} / ∂x_{(j,b)}`` ``(n·d, n·d)`` at one state ``X`` ``(n, d)``,
        by autograd on the actual (softmax / sigmoid) dynamics — the T6 reference."""
        X = self.check_state(X)
        check_ndim("X", X, 2, "(n, d)", max_ndim=2)
        n, d = X.shape

        check_memory(
            "X",
            4 * (n * d) ** 2 * X.element_size() * max(self.H, 1),
            f"the dense (nd)×(nd) autograd Jacobian (n={n}, d={d})",
            "numerics.patterns.symbols.predict_pattern (FFT) or a smaller n",
        )
        fn = self.sphere_velocity_unchecked if sphere else self.velocity_unchecked
        with small_problem_threads(X):
            Jt = torch.autograd.functional.jacobian(
                lambda v: fn(v.reshape(n, d)).reshape(-1), X.reshape(-1), vectorize=True
            )
        return Jt

    @contract(self=DYNAMICS, x_star=Tensor("d"), name="numerics.patterns.simulate.MHADynamics.base_attention")
    def base_attention(self, x_star) -> torch.Tensor:
        """``A0^h`` ``(H, n, n)`` at the homogeneous state ``1 ⊗ x*`` (needs ``n`` from kernels/bias/PE)."""
        if self.n is None:
            raise ShapeError("n is unknown (no kernels, pos_bias or abs_pe)", argument="x_star")
        x = as_tensor("x_star", x_star)
        if x.dtype != self.T.dtype:
            raise DTypeError(
                f"dtype {x.dtype} differs from the dynamics' {self.T.dtype}; cast explicitly", argument="x_star"
            )
        return self._attention(x.reshape(1, -1).expand(self.n, self.d).contiguous())

    def lipschitz_bound(self) -> float:
        """``1 + Σ_h ‖T_h‖₂``: bounds ‖J‖ for attention that does not depend on ``X`` (row-stochastic)."""
        return 1.0 + torch.linalg.matrix_norm(self.T, ord=2).sum().item()


def _rope(q: torch.Tensor, base: float) -> torch.Tensor:
    """Rotate consecutive pairs ``(2f, 2f+1)`` of ``q`` ``(..., n, d_k)`` by ``i·base^{−2f/d_k}``."""
    n, dk = q.shape[-2], q.shape[-1]
    f = torch.arange(dk // 2, dtype=q.dtype, device=q.device)
    theta = base ** (-2 * f / dk)
    ang = torch.arange(n, dtype=q.dtype, device=q.device)[:, None] * theta[None, :]  # (n, dk/2)
    c, s = torch.cos(ang), torch.sin(ang)
    q1, q2 = q[..., 0::2], q[..., 1::2]
    out = torch.stack([c * q1 - s * q2, s * q1 + c * q2], dim=-1)
    return out.reshape(q.shape)
