"""Bottom of :mod:`numerics.laplacian`: what a diagnosis returns.

:class:`Check` (one condition decided three ways: holds / fails / undecided, by the rounding rules
of :mod:`theory.rounding`) and :func:`make_check`; :class:`LaplacianDiagnostics` (every T3 check of
one walk batch, with its summary table / dict forms), the check names ``CHECK_NAMES`` and
:func:`format_spectrum`; :func:`skipped` (a check not computed) and :func:`assemble` (the result from
the algebraic checks and the spectral / kernel ones). Imports nothing from the package."""

from __future__ import annotations

import operator
from dataclasses import dataclass, field

import torch

from numerics.contracts.declarations import Int, Tensor, contract
from numerics.errors import BatchIndexError, UndecidedTruthError
from numerics.tolerance import decide
from numerics.tolerance import status as decision_status

F64 = torch.float64

__all__ = [
    "Check",
    "batch_element",
    "make_check",
    "CHECK_NAMES",
    "LaplacianDiagnostics",
    "format_spectrum",
    "skipped",
    "assemble",
]


def batch_element(shape: tuple | torch.Size, index) -> tuple:
    """``index`` as the tuple that selects one element of a batch of shape ``shape`` (an int is a
    one-entry tuple; negative entries count from the end, as in numpy), or :class:`BatchIndexError`
    naming the index and the shape: missing on a batched result, of the wrong length, or out of range."""
    shape = tuple(shape)
    idx = index if isinstance(index, tuple) else (index,)
    try:
        if any(isinstance(i, bool) for i in idx):
            raise TypeError
        idx = tuple(operator.index(i) for i in idx)
    except TypeError:
        raise BatchIndexError(
            f"{index!r} is not an int or a tuple of ints (batch shape {shape})", argument="index"
        ) from None
    if len(idx) != len(shape):
        need = "no index (a single walk)" if not shape else f"an index of {len(shape)} int(s), e.g. {(0,) * len(shape)}"
        raise BatchIndexError(
            f"{idx!r} does not select one element of a result of batch shape {shape}: give {need}", argument="index"
        )
    bad = [k for k, (i, m) in enumerate(zip(idx, shape)) if not -m <= i < m]
    if bad:
        raise BatchIndexError(f"{idx!r} is out of range for batch shape {shape}", argument="index")
    return tuple(i % m for i, m in zip(idx, shape))


@dataclass
class Check:
    """One condition, decided in three ways (:mod:`theory.rounding`): ``holds`` (bool, batch shape:
    certainly within tolerance), ``fails`` (bool: certainly not), and *undecided* where neither is
    true — the residual lies within its own rounding ``error`` of the tolerance, or it could not be
    computed (skipped, ambiguous rank: NaN residual, with the ``reason``). ``residual`` (float64,
    batch shape; NaN where undefined), ``tol`` the threshold, ``error`` the error bound of the
    residual's own computation. ``tol`` is reported as one number (the largest where a check has
    a bound per batch element). ``holds`` is False where undecided: read ``fails`` (or
    :meth:`status`) to tell "false" from "not decided". ``bool(check)`` is ``holds`` everywhere
    only where the check is decided everywhere; otherwise it raises :class:`UndecidedTruthError`
    (three values do not fit in a bool)."""

    name: str
    holds: torch.Tensor
    residual: torch.Tensor
    tol: float
    reason: str | None = None
    fails: torch.Tensor = None  # type: ignore[assignment]  # default: ~holds where the residual is defined
    error: float = 0.0

    def __post_init__(self) -> None:
        if self.fails is None:
            self.fails = ~self.holds & ~torch.isnan(self.residual)
        if self.holds.device.type != "meta" and bool((self.holds & self.fails).any()):
            raise ValueError(f"{self.name}: a decision cannot both hold and fail")

    def to(self, device) -> Check:
        """The same check with its tensors on ``device``."""
        return Check(
            self.name,
            self.holds.to(device),
            self.residual.to(device),
            self.tol,
            self.reason,
            fails=self.fails.to(device),
            error=self.error,
        )

    def __bool__(self) -> bool:
        undecided = self.undecided
        if bool(undecided.any()):
            where = "" if undecided.ndim == 0 else f" at {int(undecided.sum())} of {undecided.numel()} batch elements"
            why = f" ({self.reason})" if self.reason else ""
            raise UndecidedTruthError(
                f"{self.name} is undecided{where}{why}: its truth value is not a bool; "
                "use .holds (certainly true), .fails (certainly false) or .status(index)"
            )
        return bool(self.holds.all())

    @property
    def defined(self) -> torch.Tensor:
        return ~torch.isnan(self.residual)

    @property
    def undecided(self) -> torch.Tensor:
        """Where the check is neither certainly true nor certainly false."""
        return ~self.holds & ~self.fails

    def status(self, index: tuple | int = ()) -> str:
        """``"holds"``, ``"fails"`` or ``"undecided"`` for batch element ``index`` (``()`` for a single
        walk; :class:`BatchIndexError` for an index that does not select one element)."""
        i = batch_element(self.holds.shape, index)
        return decision_status(bool(self.holds[i]), bool(self.fails[i]))

    def __repr__(self) -> str:
        r = self.residual.detach().cpu()
        h = self.holds.detach().cpu()
        if r.ndim == 0:
            body = f"{self.status()}, residual={r.item():.3e}"
        else:
            u = int(self.undecided.sum())
            body = f"holds={int(h.sum())}/{h.numel()}" + (f" ({u} undecided)" if u else "")
            body += f", max residual={torch.nan_to_num(r, nan=-1).max().item():.3e}"
        why = f", reason={self.reason!r}" if self.reason else ""
        return f"Check({self.name}: {body}, tol={self.tol:.1e}, error={self.error:.1e}{why})"


def make_check(name: str, residual: torch.Tensor, bound, reason=None, *, error: float = 0.0, require=None) -> Check:
    """Decide "``residual ≤ bound``" with the residual known to ``± error`` (:func:`theory.rounding.decide`).

    ``require`` (bool, batch shape): a structural condition decided exactly (a one-way edge, no
    positive π, unequal ranks): where it is False the check fails whatever the residual. Where the
    residual is NaN and ``require`` holds, the check is undecided (it could not be computed)."""
    residual = residual.to(F64)
    thr = bound.to(F64) if isinstance(bound, torch.Tensor) else float(bound)  # a tensor: per element
    h, f = decide(residual, thr, float(error))
    if require is not None:
        h = h & require
        f = f | ~require
    shown = float(bound.max()) if isinstance(bound, torch.Tensor) and bound.numel() else float(bound)
    return Check(name, h, residual, shown, reason or None, fails=f, error=float(error))


CHECK_NAMES = (
    "stochastic",
    "positive_stationary",
    "detailed_balance",
    "block_detailed_balance",
    "orthogonal",
    "transpose_symmetric",
    "metric_compatible",
    "scaled_isometry",
    "self_adjoint",
    "spectrum_interval",
    "spectrum_disk",
    "spectrum_scaled",
    "dirichlet",
    "kernel_parallel",
    "flat",
)


@dataclass
class LaplacianDiagnostics:
    r"""All T3 conditions of one walk (batch). See the module docstring for the definitions.

    Fields that are :class:`Check`: ``stochastic``, ``positive_stationary``, ``detailed_balance``,
    ``block_detailed_balance``, ``orthogonal``, ``transpose_symmetric``, ``metric_compatible``,
    ``scaled_isometry``, ``self_adjoint``, ``spectrum_interval`` (real, in ``[0, 2]``),
    ``spectrum_disk`` (``|z − 1| ≤ 1``), ``spectrum_scaled`` (real, in ``[1 − s, 1 + s]`` with the
    gauge-free scale ``s``; fails when ``scaled_isometry`` fails), ``dirichlet``, ``kernel_parallel``,
    ``flat``. Data: ``pi`` ``(..., n)`` (walk gauge), ``pi_unique``,
    ``block_pi`` ``(..., n)`` (gauge-free), ``rho`` (Perron root of P), ``scale`` (gauge-free
    scaled-isometry scale ``s``), ``transport_scale`` (common ``‖O_ij‖_F/√d`` in the walk gauge,
    NaN if not common), ``spectrum`` ``(..., nd)`` complex eigenvalues of Δ (None if skipped),
    ``kernel_dim``, ``parallel_dim``, ``n_components`` (weakly connected components of the support).
    """

    stochastic: Check
    positive_stationary: Check
    detailed_balance: Check
    block_detailed_balance: Check
    orthogonal: Check
    transpose_symmetric: Check
    metric_compatible: Check
    scaled_isometry: Check
    self_adjoint: Check
    spectrum_interval: Check
    spectrum_disk: Check
    spectrum_scaled: Check
    dirichlet: Check
    kernel_parallel: Check
    flat: Check
    pi: torch.Tensor
    pi_unique: torch.Tensor
    block_pi: torch.Tensor
    rho: torch.Tensor
    scale: torch.Tensor
    transport_scale: torch.Tensor
    spectrum: torch.Tensor | None
    kernel_dim: torch.Tensor | None
    parallel_dim: torch.Tensor | None
    n_components: torch.Tensor
    n: int
    d: int
    extra: dict = field(default_factory=dict)

    def to(self, device) -> LaplacianDiagnostics:
        """The same diagnostics with every tensor (checks included) on ``device``."""
        from dataclasses import fields, replace

        moved: dict = {}
        for f in fields(self):
            v = getattr(self, f.name)
            if isinstance(v, (Check, torch.Tensor)):
                moved[f.name] = v.to(device)
        return replace(self, **moved)

    def checks(self) -> dict[str, Check]:
        return {name: getattr(self, name) for name in CHECK_NAMES}

    def hypotheses_t3(self) -> torch.Tensor:
        """(a) ∧ (b) ∧ (c): stochastic, reversible with a positive π, metric-compatible."""
        return (
            self.stochastic.holds
            & self.positive_stationary.holds
            & self.detailed_balance.holds
            & self.metric_compatible.holds
        )

    def conclusions_t3(self) -> torch.Tensor:
        """Items 1–4 of T3: π-self-adjoint, real spectrum in [0, 2], Dirichlet, ker = parallel.

        (The Dirichlet identity is the walk-gauge one with the scaled-isometry correction.)"""
        return (
            self.self_adjoint.holds & self.spectrum_interval.holds & self.dirichlet.holds & self.kernel_parallel.holds
        )

    def is_connection_laplacian(self) -> torch.Tensor:
        """Gauge-free T3 form: ``B_ij = p_ij Q_ij`` with ``Σ_j p_ij = 1``, ``Q`` orthogonal and
        ``π_i B_ij = π_j B_jiᵀ`` for some ``π > 0`` (scale 1)."""
        one = (self.scale - 1).abs() <= self.scaled_isometry.tol * 4
        return self.scaled_isometry.holds & one & self.block_detailed_balance.holds

    def _element(self, index) -> tuple:
        return batch_element(self.stochastic.holds.shape, index)

    def failing(self, index: tuple | int = ()) -> list[str]:
        """Names of the checks that certainly fail (for batch element ``index``)."""
        index = self._element(index)
        return [k for k, c in self.checks().items() if bool(c.fails[index])]

    def undecided(self, index: tuple | int = ()) -> list[str]:
        """Names of the checks that are neither certainly true nor certainly false (within their
        rounding error of the tolerance, skipped, or ambiguous): each has its ``reason``."""
        index = self._element(index)
        return [k for k, c in self.checks().items() if bool(c.undecided[index])]

    def summary(self, index: tuple | int = ()) -> str:
        """A fixed-width table for batch element ``index`` (status: holds / fails / undecided)."""
        index = self._element(index)
        lines = [f"{'condition':<24}{'status':<10}{'residual':>12}  {'tol':>9}  {'error':>9}  reason"]
        for k, c in self.checks().items():
            r = c.residual[index].item()
            lines.append(f"{k:<24}{c.status(index):<10}{r:>12.3e}  {c.tol:>9.1e}  {c.error:>9.1e}  {c.reason or ''}")
        s = self.scale[index].item()
        lines.append(
            f"scale s = {s:.6g}; rho = {self.rho[index].item():.6g}; pi unique = {bool(self.pi_unique[index])}"
        )
        if self.spectrum is not None:
            ev = self.spectrum[index]
            lines.append("spectrum of Δ: " + format_spectrum(ev))
        return "\n".join(lines)

    def as_dict(self, index: tuple | int = ()) -> dict:
        index = self._element(index)
        out = {}
        for k, c in self.checks().items():
            out[k] = {
                "status": c.status(index),
                "holds": bool(c.holds[index]),
                "residual": float(c.residual[index]),
                "tol": c.tol,
                "error": c.error,
                "reason": c.reason,
            }
        out["scale"] = float(self.scale[index])  # type: ignore[assignment]
        out["pi"] = self.pi[index].detach().cpu().tolist()  # type: ignore[assignment]
        return out


@contract(
    ev=Tensor("...", dtype="complex", group=None),
    digits=Int(lo=0),
    max_items=Int(lo=1),
    name="numerics.laplacian.format_spectrum",
)
def format_spectrum(ev: torch.Tensor, digits: int = 4, max_items: int = 12) -> str:
    """``{a, b±ci, ...}``: eigenvalues rounded, conjugate pairs merged, sorted by real part."""
    ev = ev.detach().cpu().to(torch.complex128).reshape(-1)
    items: list[str] = []
    q = 10.0 ** (-digits)
    vals = sorted(ev.tolist(), key=lambda z: (round(z.real / q) * q, round(z.imag / q) * q))
    for z in vals:
        re, im = round(z.real, digits) + 0.0, round(z.imag, digits) + 0.0
        if abs(im) < q:
            items.append(f"{re:g}")
        elif im > 0:
            items.append(f"{re:g}±{im:g}i")
    # collapse repeats
    out: list[str] = []
    for it in items:
        if out and out[-1].split("×")[0] == it:
            base, _, cnt = out[-1].partition("×")
            out[-1] = f"{base}×{int(cnt or 1) + 1}"
        else:
            out.append(it)
    if len(out) > max_items:
        out = out[:max_items] + ["…"]
    return "{" + ", ".join(out) + "}"


def skipped(name: str, batch, device, why: str) -> Check:
    """A check that was not computed: undecided (neither holds nor fails), with the reason."""
    no = torch.zeros(batch, dtype=torch.bool, device=device)
    return Check(name, no, torch.full(batch, float("nan"), dtype=F64, device=device), float("nan"), why, fails=no)


def assemble(
    hyp: dict, s_int, s_disk, s_sc, kp, flat, spectrum, kernel_dim, parallel_dim, n_comp, n, d, extra: dict
) -> LaplacianDiagnostics:
    """The :class:`LaplacianDiagnostics` from the algebraic checks and the spectral / kernel ones."""
    st = hyp["_st"]
    checks = {k: v for k, v in hyp.items() if not k.startswith("_")}
    return LaplacianDiagnostics(
        **checks,
        spectrum_interval=s_int,
        spectrum_disk=s_disk,
        spectrum_scaled=s_sc,
        kernel_parallel=kp,
        flat=flat,
        pi=st.pi,
        pi_unique=st.info.unique,
        block_pi=hyp["_bpi"],
        rho=st.info.rho,
        scale=hyp["_scale"],
        transport_scale=hyp["_transport_scale"],
        spectrum=spectrum,
        kernel_dim=kernel_dim,
        parallel_dim=parallel_dim,
        n_components=n_comp,
        n=n,
        d=d,
        extra=extra,
    )
