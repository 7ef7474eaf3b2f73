r"""Pattern formation: linear theory of MHA token dynamics on a ring (THEOREMS.md T6, Seed B).

Dynamics (continuous depth)::

    dx_i/dt = Σ_h Σ_j A^h_ij(X) T_h x_j − x_i ,     X ∈ R^{n×d}, T_h ∈ R^{d×d}.

At a homogeneous state ``X = 1 ⊗ x*`` with row-stochastic attention (H1, H2) the Jacobian is
exactly ``J = block(Σ_h A0^h_ij T_h) − I`` (token-major, ``nd × nd``). With a relative positional
kernel on a ring (H3), ``A0^h_ij = a_h((j − i) mod n)`` (``kernels[h, m] = a_h(m)``), ``J`` is
block-circulant and block-diagonalised by ``φ_k(i) = e^{+2πiki/n}``:

    J (φ_k ⊗ v) = φ_k ⊗ (M(k) − I) v,   M(k) = Σ_h â_h(k) T_h,   â_h(k) = Σ_m a_h(m) e^{+2πikm/n}

(``â = n · ifft(a)``; numpy/torch ``fft`` has the opposite sign and reverses the direction of
travel). The *dispersion relation* is the set of branches ``σ_b(k) = eig_b M(k) − 1``.

Selection: ``k* = argmax_k max_b Re σ_b(k)``, growth rate ``σ = σ(k*)``. For real kernels and
transports ``M(−k) = conj M(k)``: ``(k, σ, v)`` and ``(−k, σ̄, v̄)`` are the *same* real pattern
``Re(e^{σt} φ_k ⊗ v)``. The representative reported here has ``k* > 0`` (or, for ``k* ∈ {0, n/2}``,
``Im σ ≥ 0``); the phase velocity ``c = −n Im σ / (2π k*)`` (tokens per unit time) is invariant
under the conjugation. Distinct real patterns with the same growth (within ``tie_tol``) are
reported as a tie (``PatternPrediction.tie``), never as a guessed winner.

Rotation: the real pattern at token ``i`` is ``e^{Re σ t}(cos(ωt + ψ_i) u_1 + sin(ωt + ψ_i) u_2)``
with ``u_1 = Re v``, ``u_2 = −Im v``, ``ω = Im σ`` and ``ψ_i = 2πk*i/n``. When ``v`` is not real up
to a phase (polarisation ``|vᵀv| / vᴴv < 1``) every token rotates in the plane ``(u_1, u_2)`` at
angular frequency ``ω`` (``rotation_frequency``), from ``u_1`` towards ``u_2``; for ``T = ρR(θ)``
this is THEOREMS.md's ``ω = ρ(Re â sin θ + Im â cos θ)``.

Beyond the ring: absolute positional encodings, RoPE on a line and causal masks make ``A0`` non
circulant; use :func:`linear_operator` / the autograd Jacobian of :mod:`numerics.patterns.simulate` with
:func:`predict_from_operator` (dense eig) and, for non-normal operators (causal), report
:func:`transient_growth` ``‖e^{tJ}‖₂`` rather than only the spectrum.

Discrete layer stacks select with the per-layer factor, not with ``Re σ`` (see
:func:`discrete_selection`).

Layout: ring kernels and the symbol ``M(k)`` live in :mod:`numerics.patterns.kernels`, discrete stacks in
:mod:`numerics.patterns.stacks`; both are re-exported here under their old names.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch

from numerics.contracts.declarations import Complex, Float, Instance, Int, Tensor, contract
from numerics.contracts.validate import (
    as_tensor,
    check_finite,
    check_ndim,
    check_same,
    check_square,
)
from numerics.errors import (
    ConnwalkError,
    NotStochasticError,
    ShapeError,
    UndecidedTruthError,
    UndefinedError,
)
from numerics.patterns.kernels import (
    KT_SPECS,
    TIE_SPEC,
    circulant,
    gaussian_kernel,
    kernel_from_bias,
    kernel_hat,
    signed_wavenumbers,
    symbol,
    validate_kernels,
    validate_pair,
    validate_transports,
)
from numerics.patterns.stacks import (
    StackSelection,
    discrete_selection,
    effective_time,
    postnorm_layer_step,
    prenorm_layer_steps,
)
from numerics.threads import small_problem_threads
from numerics.tolerance import HOLDS, UNDECIDED, decide, eps, judge, rounding_error, status, tol

__all__ = [
    # vocabulary
    "CLUSTER",
    "ROTATING_CLUSTER",
    "STATIONARY",
    "TRAVELLING",
    "STANDING",
    "TRAVELLING_HELIX",
    "STANDING_HELIX",
    "COEXISTING",
    "INCOHERENT",
    "PATTERN_CLASSES",
    # kernels
    "gaussian_kernel",
    "kernel_from_bias",
    "circulant",
    "validate_kernels",
    "validate_transports",
    # linear theory
    "signed_wavenumbers",
    "kernel_hat",
    "symbol",
    "dispersion",
    "PatternPrediction",
    "predict_pattern",
    "linear_operator",
    "predict_from_operator",
    "polarisation",
    "naive_per_head_growth",
    # non-normal / discrete
    "TransientGrowth",
    "transient_growth",
    "StackSelection",
    "discrete_selection",
    "effective_time",
    "postnorm_layer_step",
    "prenorm_layer_steps",
    "canonical_pattern",
    "distinct_patterns",
]

# ----------------------------------------------------------------------------- pattern vocabulary
CLUSTER = "cluster"  # k* = 0, no rotation: tokens collapse to a common state
ROTATING_CLUSTER = "rotating cluster"  # k* = 0, Im σ ≠ 0: the common state rotates
STATIONARY = "stationary periodic"  # k* ≠ 0, σ real
TRAVELLING = "travelling wave"  # k* ≠ 0, σ complex, v real up to phase, one handedness
STANDING = "standing wave"  # tied (k, σ), (−k, σ) with v linearly polarised
TRAVELLING_HELIX = "travelling helix"  # rotating wave, one handedness (asymmetric kernel)
STANDING_HELIX = "standing helix"  # rotating wave, tied ±k helices (symmetric kernel)
COEXISTING = "coexisting modes"  # several distinct modes of (nearly) equal growth / power
INCOHERENT = "incoherent"  # no dominant mode (classifier only)
PATTERN_CLASSES = (
    CLUSTER,
    ROTATING_CLUSTER,
    STATIONARY,
    TRAVELLING,
    STANDING,
    TRAVELLING_HELIX,
    STANDING_HELIX,
    COEXISTING,
    INCOHERENT,
)

#: polarisation below ``1 − POLARISATION_TOL`` counts as rotating (tokens trace an ellipse)
POLARISATION_TOL = 1e-6


@contract(**KT_SPECS, mins={"n": 2})
def dispersion(kernels, transports, *, normalize: bool = False) -> torch.Tensor:
    """All branches ``σ_b(k) = eig_b M(k) − 1``: complex ``(n, d)``, row ``k`` = FFT index ``k``
    (signed value ``signed_wavenumbers(n)[k]``), branches sorted by decreasing real part.

    These are exactly the ``n·d`` eigenvalues of the Jacobian ``J = block(Σ_h A0^h_ij T_h) − I``."""
    M = symbol(kernels, transports, normalize=normalize)
    ev = torch.linalg.eigvals(M) - 1
    order = torch.argsort(ev.real, dim=-1, descending=True)
    return torch.gather(ev, -1, order)


@contract(v=Tensor("d", dtype="complex"))
def polarisation(v: torch.Tensor) -> float:
    """``|vᵀv| / vᴴv`` ∈ [0, 1]: 1 when ``v`` is real up to a phase (tokens oscillate on a line),
    0 for circular polarisation (tokens rotate on a circle)."""
    v = v.to(torch.complex128)
    num = torch.abs((v * v).sum()).item()
    den = (v.conj() * v).sum().real.item()
    if den == 0:
        raise UndefinedError("zero vector has no polarisation", argument="v")
    return num / den


@contract(**KT_SPECS, mins={"n": 2})
def naive_per_head_growth(kernels, transports, *, normalize: bool = False) -> torch.Tensor:
    r"""The *per-head guess* ``g_naive(k) = Σ_h max_b Re eig(â_h(k) T_h) − 1`` (real ``(n,)``).

    Exact only when the heads commute and share the dominant eigenvector; for non-commuting heads
    it is a wrong prediction (THEOREMS.md T6 Ex3), kept to demonstrate that."""
    a, T = validate_pair(kernels, transports, normalize)
    ah = kernel_hat(a)
    per = torch.linalg.eigvals(ah[:, :, None, None] * T[:, None].to(ah.dtype))  # (H, n, d)
    return per.real.max(-1).values.sum(0) - 1


@dataclass
class PatternPrediction:
    """What the linear theory predicts.

    ``k_star``            signed selected wavenumber in ``(−n/2, n/2]`` (representative of ±k*: > 0
                          or, at 0 / n/2, with ``Im σ ≥ 0``)
    ``growth_rate``       complex ``σ = λ_max(M(k*)) − 1`` (``Re σ``: growth, ``Im σ``: temporal frequency)
    ``phase_velocity``    ``c = −n Im σ / (2π k*)`` tokens per unit time (0 when ``k* = 0``)
    ``rotation_frequency``  ``ω = Im σ`` when tokens rotate (polarisation < 1), else 0.0
    ``frequency``         ``Im σ`` (temporal angular frequency of the mode, rotating or not)
    ``eigenvector``       ``v`` ``(d,)`` complex unit vector, ``M(k*) v = (σ + 1) v``
    ``mode``              ``φ_{k*} ⊗ v`` as ``(n, d)`` complex: ``mode[i] = e^{2πik*i/n} v``
    ``rotation_plane``    ``(2, d)`` real: ``(Re v, −Im v)``; tokens turn from row 0 towards row 1
    ``polarisation``      ``|vᵀv| / vᴴv``
    ``conjugate_pair``    the pattern also appears as ``(−k*, σ̄, v̄)`` (true unless ``k*∈{0,n/2}`` and σ real)
    ``tie``               another *distinct* real pattern has the same growth within ``tie_tol``
    ``ties``              list of ``(k, σ)`` representatives of all tied patterns (incl. the reported one)
    ``gap``               ``Re σ`` minus the best distinct pattern's growth (any k, any branch)
    ``gap_k``             ``Re σ`` minus the best growth at a different ``|k|``
    ``runner_up_k``       signed ``k`` of the best mode at a different ``|k|``
    ``pattern_class``     one of :data:`PATTERN_CLASSES`
    ``dispersion``        ``(n, d)`` complex branches (FFT order) — ``None`` for dense predictions
    ``method``            ``"fft"`` or ``"dense"``
    ``purity``            dense only: fraction of the mode's power in ``±k*``
    """

    n: int
    d: int
    k_star: int
    growth_rate: complex
    phase_velocity: float
    rotation_frequency: float
    frequency: float
    eigenvector: torch.Tensor
    mode: torch.Tensor
    rotation_plane: torch.Tensor
    polarisation: float
    conjugate_pair: bool
    tie: bool
    ties: list
    gap: float
    gap_k: float
    runner_up_k: int | None
    pattern_class: str
    tie_tol: float
    dispersion: torch.Tensor | None = None
    method: str = "fft"
    purity: float = 1.0
    extra: dict = field(default_factory=dict)

    @property
    def growth(self) -> str:
        """Does the mode grow, decided against 0 with the prediction's own ``tie_tol`` as the error of
        ``Re σ`` (:func:`numerics.tolerance.decide`): ``"holds"`` if ``Re σ > tie_tol``, ``"fails"`` if
        ``Re σ ≤ −tie_tol``, else ``"undecided"`` (as ``|Im σ| ≤ tie_tol`` counts as no rotation)."""
        not_growing, growing = decide(self.growth_rate.real, 0.0, self.tie_tol)
        return status(growing, not_growing)

    @property
    def growing(self) -> bool:
        """:attr:`growth` as a bool; :class:`UndecidedTruthError` when it is undecided."""
        if self.growth == UNDECIDED:
            raise UndecidedTruthError(
                f"Re σ = {self.growth_rate.real:.3e} is within tie_tol = {self.tie_tol:.1e} of 0: whether the mode "
                "grows is undecided; read .growth"
            )
        return self.growth == HOLDS


@contract(k=Int(), sigma=Complex(), n=Int(lo=1))
def canonical_pattern(k: int, sigma: complex, n: int) -> tuple[int, complex, bool]:
    """Representative of the real pattern ``{(k, σ), (−k, σ̄)}`` (``k`` an FFT index or a signed
    wavenumber): ``k > 0``, or at the self-conjugate ``k ∈ {0, n/2}`` ``Im σ ≥ 0``. Returns
    ``(k, σ, flipped)``. The one definition of the conjugate-pair canonicalisation."""
    ks = k if k <= n // 2 else k - n
    self_conj_k = ks == 0 or (n % 2 == 0 and abs(ks) == n // 2)
    if self_conj_k:
        if sigma.imag < 0:
            return ks, sigma.conjugate(), True
        return ks, sigma, False
    if ks < 0:
        return -ks, sigma.conjugate(), True
    return ks, sigma, False


def _canonical_arrays(sig: torch.Tensor, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Vectorised :func:`canonical_pattern` for ``sig`` ``(n, d)`` in FFT order: ``(k_c (n,), σ_c (n, d))``."""
    ks = signed_wavenumbers(n, device=sig.device)
    self_conj = (ks == 0) | ((n % 2 == 0) & (ks.abs() == n // 2))
    flip = torch.where(self_conj[:, None], sig.imag < 0, (ks < 0)[:, None].expand_as(sig.real))
    return ks.abs(), torch.where(flip, sig.conj(), sig)


def _classify_prediction(k_star: int, sigma: complex, pol: float, tie: bool, ties: list, n: int, tie_tol: float) -> str:
    rotating = pol < 1 - POLARISATION_TOL and abs(sigma.imag) > tie_tol
    if tie:
        ks = {abs(k) for k, _ in ties}
        # tied ±k with equal (non-conjugate) σ: standing; anything else: coexisting modes
        if len(ks) == 1 and len(ties) == 2 and k_star != 0:
            return STANDING_HELIX if rotating else STANDING
        return COEXISTING
    if k_star == 0:
        return ROTATING_CLUSTER if abs(sigma.imag) > tie_tol else CLUSTER
    if abs(sigma.imag) <= tie_tol:
        return STATIONARY
    return TRAVELLING_HELIX if rotating else TRAVELLING


@contract(
    ks=Instance((list, tuple), "a list of wavenumbers"),
    sig=Instance((list, tuple), "a list of growth rates"),
    n=Int(lo=1),
    tie_tol=Float(lo=0.0, closed=True),
)
def distinct_patterns(ks: list[int], sig: list[complex], n: int, tie_tol: float) -> list[tuple[int, complex]]:
    """Distinct real patterns among ``(k, σ)`` pairs: merge ``(k, σ)`` with ``(−k, σ̄)``."""
    reps: list[tuple[int, complex]] = []
    for k, s in zip(ks, sig):
        kc, sc, _ = canonical_pattern(k, s, n)
        if not any(kc == k2 and abs(sc - s2) <= tie_tol for k2, s2 in reps):
            reps.append((kc, sc))
    return reps


@contract(**KT_SPECS, tie_tol=TIE_SPEC, mins={"n": 2})
def predict_pattern(kernels, transports, *, normalize: bool = False, tie_tol: float | None = None) -> PatternPrediction:
    r"""Linear prediction for ring dynamics with relative kernels (THEOREMS.md T6), by FFT.

    ``kernels`` ``(H, n)`` with ``A0^h_ij = a_h((j − i) mod n)`` (nonnegative, rows summing to 1;
    ``normalize=True`` to normalise explicitly), ``transports`` ``(H, d, d)``. Cost
    ``O(H n log n + n d³)`` versus ``O((nd)³)`` for the dense Jacobian.

    ``tie_tol`` (default ``tol(dtype, n·d, scale=max(1, max|σ|))``): growth rates closer than this
    are ties. See :class:`PatternPrediction` for the fields and conventions."""
    a, T = validate_pair(kernels, transports, normalize)
    H, n = a.shape
    d = T.shape[-1]
    M = torch.einsum(
        "hk,hab->kab", kernel_hat(a), T.to(torch.complex128 if a.dtype == torch.float64 else torch.complex64)
    )
    sig = torch.linalg.eigvals(M) - 1  # (n, d): all branches (eigenvectors only at k*, below)
    scale = max(1.0, sig.abs().max().item())
    ttol = tie_tol if tie_tol is not None else tol(a.dtype, n * d, scale=scale)
    re = sig.real
    best = re.max().item()
    flat = torch.nonzero(re >= best - ttol, as_tuple=False).tolist()
    tied_ks = [k for k, b in flat]
    tied_sig = [complex(sig[k, b].item()) for k, b in flat]
    ties = distinct_patterns(tied_ks, tied_sig, n, ttol)
    # choose the reported representative: the first tied pair in FFT order with the best real part
    kb = max(flat, key=lambda kb_: (re[kb_[0], kb_[1]].item(), -kb_[0]))
    k_idx, b = kb
    sigma = complex(sig[k_idx, b].item())
    ev1, V1 = torch.linalg.eig(M[k_idx])
    v = V1[:, int(torch.argmin((ev1 - 1 - sigma).abs()).item())]
    k_star, sigma, flipped = canonical_pattern(k_idx, sigma, n)
    if flipped:
        v = v.conj()
    v = _normalise_phase(v)
    tie = len(ties) > 1
    # gaps to distinct patterns (vectorised canonical representatives of every (k, branch))
    kc, sc = _canonical_arrays(sig, n)
    same = (kc[:, None] == k_star) & ((sc - sigma).abs() <= ttol)
    re_c = sc.real.masked_fill(same, -math.inf)
    gap = best - re_c.max().item()
    diff_k = re_c.masked_fill((kc.abs() == abs(k_star))[:, None].expand_as(re_c), -math.inf)
    if bool(torch.isfinite(diff_k).any()):
        flat_i = int(torch.argmax(diff_k).item())
        gap_k, runner = best - diff_k.flatten()[flat_i].item(), int(kc[flat_i // d].item())
    else:
        gap_k, runner = math.inf, None
    return _finish(
        n=n,
        d=d,
        k_star=k_star,
        sigma=sigma,
        v=v,
        tie=tie,
        ties=ties,
        gap=gap,
        gap_k=gap_k,
        runner=runner,
        ttol=ttol,
        method="fft",
        disp=sig.gather(-1, torch.argsort(sig.real, -1, descending=True)),
        purity=1.0,
        device=a.device,
    )


def _normalise_phase(v: torch.Tensor) -> torch.Tensor:
    """Unit norm; phase fixed so that ``vᵀv`` is real ≥ 0 (then ``Re v ⟂ Im v`` are the ellipse axes)."""
    v = v / torch.linalg.vector_norm(v)
    s = (v * v).sum()
    if s.abs().item() > 0:
        v = v * torch.exp(-0.5j * torch.angle(s))
    return v


def _finish(
    *,
    n: int,
    d: int,
    k_star: int,
    sigma: complex,
    v: torch.Tensor,
    tie: bool,
    ties: list,
    gap: float,
    gap_k: float,
    runner: int | None,
    ttol: float,
    method: str,
    disp: torch.Tensor | None,
    purity: float,
    device,
) -> PatternPrediction:
    """Assemble a :class:`PatternPrediction` from the selected mode (keyword-only: the fields' names)."""
    pol = polarisation(v)
    rotating = pol < 1 - POLARISATION_TOL and abs(sigma.imag) > ttol
    freq = sigma.imag if abs(sigma.imag) > ttol else 0.0
    c = 0.0 if k_star == 0 else -n * freq / (2 * math.pi * k_star)
    i = torch.arange(n, device=device, dtype=torch.float64)
    phi = torch.exp(2j * math.pi * k_star * i / n).to(v.dtype)
    mode = phi[:, None] * v[None, :]
    plane = torch.stack([v.real, -v.imag]).to(torch.float64)
    cls = _classify_prediction(k_star, sigma, pol, tie, ties, n, ttol)
    return PatternPrediction(
        n=n,
        d=d,
        k_star=int(k_star),
        growth_rate=sigma,
        phase_velocity=float(c),
        rotation_frequency=float(freq) if rotating else 0.0,
        frequency=float(freq),
        eigenvector=v,
        mode=mode,
        rotation_plane=plane,
        polarisation=pol,
        conjugate_pair=not ((k_star == 0 or 2 * abs(k_star) == n) and abs(sigma.imag) <= ttol),
        tie=tie,
        ties=ties,
        gap=float(gap),
        gap_k=float(gap_k),
        runner_up_k=runner,
        pattern_class=cls,
        tie_tol=ttol,
        dispersion=disp,
        method=method,
        purity=purity,
    )


@contract(attention=Tensor(("H n", "H n n"), nonneg=True), transports=Tensor("H d d"), mins={"n": 2})
def linear_operator(attention, transports) -> torch.Tensor:
    """Dense token-major Jacobian ``J = block(Σ_h A0^h_ij T_h) − I`` ``(n·d, n·d)``.

    ``attention``: either kernels ``(H, n)`` (ring, circulant) or full base-state attention
    ``(H, n, n)`` (absolute PE, causal, RoPE on a line …), rows summing to 1 (a row that certainly
    does not, judged to rounding: :class:`NotStochasticError`). The float64 naive reference the
    FFT path is checked against."""
    A = as_tensor("attention", attention)
    if A.ndim == 2:
        try:
            A = circulant(validate_kernels(A))
        except ConnwalkError as exc:  # the caller's name for the kernels is ``attention``
            raise type(exc)(str(exc).split(": ", 1)[-1], argument="attention") from None
    check_ndim("attention", A, 3, "(H, n) kernels or (H, n, n) attention", max_ndim=3)
    check_square("attention", A, "(H, n, n)")
    T = validate_transports(transports, A.shape[0])
    check_same(["attention", "transports"], [A, T])
    n, d = A.shape[-1], T.shape[-1]
    rows = A.sum(-1)  # H1 + H2: J = walk − I needs row-stochastic heads (rows summing to 1, to rounding)
    r, err = (rows - 1).abs(), rounding_error(n, float(rows.max()) if rows.numel() else 1.0, eps(A.dtype))
    if bool(judge(r, A.dtype, n, error=err)[1].any()):
        raise NotStochasticError(
            f"rows must sum to 1 (max |sum − 1| = {r.max().item():.3e} > {tol(A.dtype, n):.1e})", argument="attention"
        )
    from numerics.contracts.validate import check_memory

    check_memory(
        "attention",
        3 * (n * d) ** 2 * A.element_size(),
        f"the dense (nd)×(nd) Jacobian (n={n}, d={d})",
        "predict_pattern (FFT, ring kernels) or numerics.spectra on a ConnectionWalk",
    )
    B = torch.einsum("hij,hab->iajb", A, T).reshape(n * d, n * d)
    return B - torch.eye(n * d, dtype=B.dtype, device=B.device)


@contract(J=Tensor("N N"), n=Int(lo=2), d=Int(lo=1), tie_tol=TIE_SPEC)
def predict_from_operator(J, n: int, d: int, *, tie_tol: float | None = None) -> PatternPrediction:
    """Dense prediction from any token-major ``(n·d, n·d)`` linearisation ``J`` (non-circulant cases).

    The leading eigenpair ``(σ, w)`` of ``J`` (largest real part) gives the growth rate; the mode
    ``w`` reshaped ``(n, d)`` is Fourier-analysed along tokens (``c_k = (1/n) Σ_i w_i e^{−2πiki/n}``)
    and ``k*`` is its dominant wavenumber (``purity`` = its share of the power, ±k together).
    For non-normal ``J`` (causal masks) the spectrum is only the asymptotic story; see
    :func:`transient_growth`.

    ``tie_tol`` (default ``tol(dtype, n·d, scale=max(1, max|λ|)) · √(n·d)``): eigenvalues whose real
    parts are this close to the largest one are ties."""
    J = as_tensor("J", J)
    check_square("J", J, "(n·d, n·d)")
    check_finite("J", J)
    if J.shape[-1] != n * d:
        raise ShapeError(f"expected ({n * d}, {n * d}) for n={n}, d={d}, got {tuple(J.shape)}", argument="J")
    with small_problem_threads(J):
        ev, W = torch.linalg.eig(J)
    scale = max(1.0, ev.abs().max().item())
    ttol = tie_tol if tie_tol is not None else tol(J.dtype, n * d, scale=scale) * math.sqrt(n * d)
    re = ev.real
    best = re.max().item()
    idx = torch.nonzero(re >= best - ttol).flatten().tolist()
    # dominant wavenumber of each tied eigenvector
    infos = []
    for j in idx:
        w = W[:, j].reshape(n, d)
        C = torch.fft.fft(w, dim=0) / n  # c_k, FFT index k
        p = (C.abs() ** 2).sum(-1)
        kk = int(torch.argmax(p).item())
        infos.append((kk, complex(ev[j].item()), w, p))
    reps = distinct_patterns([i[0] for i in infos], [i[1] for i in infos], n, ttol)
    kk, sigma, w, p = max(infos, key=lambda t: (t[1].real, -t[0]))
    k_star, sigma, flipped = canonical_pattern(kk, sigma, n)
    ks = signed_wavenumbers(n, device=J.device)
    pk = p.clone()
    mask = ks.abs() == abs(k_star)
    purity = (pk[mask].sum() / pk.sum()).item()
    C = torch.fft.fft(w, dim=0) / n
    v = C[kk]
    if flipped:
        v = v.conj()
    v = _normalise_phase(v)
    rest = re.clone()
    rest[idx] = -math.inf
    # the conjugate partner of a complex leading eigenvalue is the same real pattern
    conj_mask = (ev - complex(sigma).conjugate()).abs() <= ttol
    rest[conj_mask] = -math.inf
    gap = best - rest.max().item() if bool(torch.isfinite(rest).any()) else math.inf
    pred = _finish(
        n=n,
        d=d,
        k_star=k_star,
        sigma=sigma,
        v=v,
        tie=len(reps) > 1,
        ties=reps,
        gap=gap,
        gap_k=math.nan,
        runner=None,
        ttol=ttol,
        method="dense",
        disp=None,
        purity=purity,
        device=J.device,
    )
    pred.extra["eigenvalues"] = ev
    return pred


# ----------------------------------------------------------------------------- non-normal growth
@dataclass
class TransientGrowth:
    """``G(t) = ‖e^{tJ}‖₂`` on ``times``; ``spectral_abscissa = max Re λ(J)`` (the asymptotic rate) and
    ``numerical_abscissa = λ_max((J + Jᵀ)/2)`` (the initial rate ``dG/dt`` at ``t = 0⁺``).
    ``amplification = max_t G(t) · e^{−t·spectral_abscissa}``: > 1 means growth the spectrum misses."""

    times: torch.Tensor
    norms: torch.Tensor
    spectral_abscissa: float
    numerical_abscissa: float
    max_norm: float
    t_max: float
    amplification: float


@contract(J=Tensor("N N"), times=Tensor("T", group=None))
def transient_growth(J, times) -> TransientGrowth:
    """``‖e^{tJ}‖₂`` for each ``t`` in ``times`` (dense ``matrix_exp``; ``J`` ``(N, N)``)."""
    J = as_tensor("J", J)
    check_square("J", J, "(N, N)")
    check_finite("J", J)
    t = as_tensor("times", torch.as_tensor(times, dtype=J.dtype, device=J.device))
    check_ndim("times", t, 1, "(T,)", max_ndim=1)
    check_finite("times", t)
    from numerics.contracts.validate import check_memory

    check_memory(
        "times",
        3 * t.numel() * J.numel() * J.element_size(),
        f"{t.numel()} dense matrix exponentials of size {J.shape[0]}",
        "fewer times",
    )
    with small_problem_threads(J):
        E = torch.linalg.matrix_exp(t[:, None, None] * J[None])
        norms = torch.linalg.matrix_norm(E, ord=2)
        sa = torch.linalg.eigvals(J).real.max().item()
        na = torch.linalg.eigvalsh((J + J.T) / 2).max().item()
    i = int(torch.argmax(norms).item())
    amp = (norms * torch.exp(-t * sa)).max().item()
    return TransientGrowth(t, norms, sa, na, norms[i].item(), t[i].item(), amp)
