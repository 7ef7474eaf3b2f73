r"""The decisions of the conformance kit (:mod:`numerics.conformance.kit`) on one :class:`Extraction`:
T2's hypotheses on the reported attention (:func:`t2_hypotheses`), T2's identity
(:func:`t2_identity`), and the hypotheses of T3 / T5 reported per draw (:func:`t3_t5`). Every
decision is three-valued (:mod:`theory.rounding`) with its bound stated from a dtype."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch

from numerics.conformance.protocol import Draw, Extraction, identifies
from numerics.errors import MemoryBudgetError, UndecidedTruthError
from numerics.tolerance import (
    FAILS,
    HOLDS,
    ROUNDING_SAFETY,
    UNDECIDED,
    combine,
    decide,
    eps,
    rounding_error,
    status,
    tol,
)

__all__ = [
    "Verdict",
    "HYPOTHESES",
    "HYPOTHESIS_STATEMENTS",
    "T2_STATEMENT",
    "coarser",
    "stored_precision",
    "t2_hypotheses",
    "t2_identity",
    "identifies",
    "t3_t5",
    "stale",
    "merge",
    "VERDICTS",
    "SHADOW",
    "DrawResult",
    "Counterexample",
    "ConformanceReport",
]

F64 = torch.float64
T2_STATEMENT = "T2: module(X) = W(X)·X + c  (y_i = Σ_h Σ_j A^h_ij W_O^h (W_V^h x_j + b_V^h) + b_O)"
#: T2's hypotheses on the reported attention, in the order they are decided (before the identity)
HYPOTHESES = ("nonnegative", "row-stochastic")
HYPOTHESIS_STATEMENTS = {
    "nonnegative": "T2 hypothesis (nonnegative): every A^h_ij ≥ 0",
    "row-stochastic": "T2 hypothesis (row-stochastic): Σ_j A^h_ij = 1 over the keys that are not masked "
    "(an attention sink — a null / zero key, a learned sink logit — leaves the real keys less than 1)",
}


@dataclass
class Verdict:
    """One three-valued decision: ``status`` (holds / fails / undecided), ``residual``, ``bound``,
    ``error`` (the residual's own rounding error), ``detail`` (where, or which heads)."""

    status: str
    residual: float
    bound: float
    error: float = 0.0
    detail: str = ""
    scale: float = 1.0  # T2: the scale S the bound is relative to

    def as_dict(self) -> dict:
        return {k: getattr(self, k) for k in ("status", "residual", "bound", "error", "detail", "scale")}

    def __bool__(self) -> bool:
        """As :class:`numerics.laplacian.result.Check`'s: holds → True, fails → False; undecided raises
        :class:`~numerics.errors.UndecidedTruthError` (three values do not fit in a bool)."""
        if self.status == UNDECIDED:
            raise UndecidedTruthError(
                f"this decision is undecided ({self.residual:.3e} within {self.error:.3e} of its bound "
                f"{self.bound:.3e}): its truth value is not a bool; read .status"
            )
        return self.status == HOLDS


def coarser(*dtypes: torch.dtype | None) -> torch.dtype:
    """The floating dtype with the largest epsilon among ``dtypes`` (None ignored; float64 if none)."""
    real = [d for d in dtypes if d is not None and (d.is_floating_point or d.is_complex)]
    return max(real, key=eps) if real else F64


def stored_precision(A: torch.Tensor) -> torch.dtype:
    """The coarsest floating dtype (bfloat16, float16, float32 or ``A``'s own) that holds every entry
    of ``A`` exactly: the precision a softmax computed in float32 and cast to float64 (as many
    Hugging Face kernels do) was rounded to. Its rounding is what the hypotheses must allow."""
    if not A.is_floating_point():
        return F64
    for dt in (torch.bfloat16, torch.float16, torch.float32):
        if eps(dt) > eps(A.dtype) and torch.equal(A, A.to(dt).to(A.dtype)):
            return dt
    return A.dtype


# --------------------------------------------------------------------------- T2's hypotheses
def _real_rows(A: torch.Tensor, query_mask: torch.Tensor | None) -> torch.Tensor:
    """``A`` with the rows of padded queries (``query_mask`` ``(B, n)`` False) set to zero: a padded
    query is no token of the walk, so its row is judged by nothing (whatever it holds: zeros, NaN)."""
    if query_mask is None:
        return A
    return torch.where(query_mask.to(torch.bool)[:, None, :, None], A, torch.zeros((), dtype=A.dtype))


def t2_hypotheses(ex: Extraction, dtype: torch.dtype, query_mask: torch.Tensor | None = None) -> dict[str, Verdict]:
    r"""T2's hypotheses on the reported ``A`` ``(B, H, n, m)``, per head, at the rounding of ``dtype``
    (the module's own dtype, or the coarser precision its attention was computed in).

    Each weight ``A_ij = e_j / Σ_k e_k`` computed in precision ``ε`` is off by at most ``(m+2)·ε``
    relative (first order, Higham §3.1: ``m`` terms of the sum, the exponential, the quotient), so a row
    over ``m`` keys is off by at most ``tol(dtype, m + 2, scale=S, safety=ROUNDING_SAFETY)`` with ``S``
    the largest row ``Σ_j |A_ij|``; the float64 sum of the check is off by ``e = rounding_error(m + 1, S + 1)``
    and the threshold is ``θ`` = that bound ``+ 2·e`` (as for the identity: a float64 module is decided).

    * **nonnegative**: ``r = max(0, −min A^h_ij)`` over all entries: holds when ``r = 0`` (a masked
      weight is an exact zero), fails when ``r > θ``, undecided in between (or NaN: fails).
    * **row-stochastic**: ``max_i |Σ_{j real} A^h_ij − 1|`` over the keys ``key_mask`` keeps, decided
      against ``θ`` with the check's error (:func:`theory.rounding.decide`); a non-finite row fails.

    ``query_mask`` ``(B, n)`` (True = a real query): the rows of padded queries are not judged (a
    padded query of a sliding window may see no real key at all)."""
    A = _real_rows(ex.A.detach().to(F64), query_mask)
    B, H, n, m = A.shape
    real = torch.ones(B, m, dtype=torch.bool) if ex.key_mask is None else ex.key_mask.to(torch.bool)
    absrow = A.abs().nan_to_num(nan=0.0, posinf=0.0).sum(-1)
    S = max(float(absrow.max()) if absrow.numel() else 1.0, 1.0)
    err = rounding_error(m + 1, S + 1.0)  # the float64 row sums' own error
    # plus twice the check's error, so that the band (± err) lies inside the threshold for a float64 module too
    theta = tol(dtype, m + 2, scale=S, safety=ROUNDING_SAFETY) + 2 * err
    finite = torch.isfinite(A).all(-1).all(-1)  # (B, H)
    out: dict[str, Verdict] = {}
    # nonnegative
    neg = torch.where(torch.isfinite(A), (-A).clamp_min(0.0), torch.zeros_like(A)).amax((-1, -2))  # (B, H)
    holds = (neg == 0) & finite
    fails = (neg > theta) | ~finite
    out["nonnegative"] = Verdict(
        combine(status(bool(h), bool(f)) for h, f in zip(holds.reshape(-1).tolist(), fails.reshape(-1).tolist())),
        float(neg.max()),
        theta,
        0.0,
        _heads(holds, fails, A.amin(-1), "min_j A_ij"),
    )
    # row-stochastic over the real keys
    rows = torch.where(real[:, None, None, :], A, torch.zeros_like(A)).sum(-1)  # (B, H, n)
    dev = (rows - 1).abs()
    if query_mask is not None:
        dev = torch.where(query_mask.to(torch.bool)[:, None, :], dev, torch.zeros_like(dev))
    h, f = decide(dev.nan_to_num(nan=math.inf).amax(-1), theta, err)
    h, f = h & finite, f | ~finite
    out["row-stochastic"] = Verdict(
        combine(status(bool(a), bool(b)) for a, b in zip(h.reshape(-1).tolist(), f.reshape(-1).tolist())),
        float(dev.nan_to_num(nan=math.inf).max()),
        theta,
        err,
        _heads(h, f, rows, "Σ_j A_ij over real keys", deviation=True),
    )
    return out


def _heads(holds: torch.Tensor, fails: torch.Tensor, rowval: torch.Tensor, what: str, deviation=False) -> str:
    """``"k/H heads hold"`` over draws' batch rows, and the worst row: its head, batch row, query."""
    B, H = holds.shape
    ok = int(holds.all(0).sum())
    txt = f"{ok}/{H} heads hold"
    bad = fails.any(0)
    if bool(bad.any()):
        txt += f", {int(bad.sum())} fail"
    key = (rowval - 1).abs() if deviation else -rowval
    key = key.nan_to_num(nan=math.inf)
    b, h, i = (int(t) for t in torch.unravel_index(key.reshape(-1).argmax(), key.shape))
    return txt + f"; worst: head {h}, b={b}, row {i}: {what} = {float(rowval[b, h, i]):.6g}"


# --------------------------------------------------------------------------- T2's identity
def t2_identity(ex: Extraction, query_mask: torch.Tensor | None = None) -> tuple[Verdict, tuple[int, int]]:
    """The identity ``Y = W(X)·X + c`` in float64 against the bound from the output's dtype (or the
    attention's, when coarser), over
    the real queries (``query_mask`` ``(B, n)``, True = real; None: every query)."""
    A = _real_rows(ex.A.detach().to(F64), query_mask)
    Wo, Wv = ex.W_O.detach().to(F64), ex.W_V.detach().to(F64)
    Xv = ex.values.detach().to(F64)
    V = torch.einsum("bmd,hkd->bhmk", Xv, Wv)
    Va = torch.einsum("bmd,hkd->bhmk", Xv.abs(), Wv.abs())
    if ex.b_V is not None:
        bv = ex.b_V.detach().to(F64)
        V, Va = V + bv[None, :, None, :], Va + bv.abs()[None, :, None, :]
    Yh = torch.einsum("bhnm,bhmk,hok->bno", A, V, Wo)
    Sa = torch.einsum("bhnm,bhmk,hok->bno", A.abs(), Va, Wo.abs())
    if ex.b_O is not None:
        bo = ex.b_O.detach().to(F64)
        Yh, Sa = Yh + bo, Sa + bo.abs()
    diff = ex.output.detach().to(F64) - Yh
    if query_mask is not None:  # a padded query's output is no token's: not judged
        keep = query_mask.to(torch.bool)[:, :, None]
        diff, Sa = torch.where(keep, diff, torch.zeros_like(diff)), torch.where(keep, Sa, torch.zeros_like(Sa))
    H, dh, dv, m = Wv.shape[0], Wv.shape[1], Wv.shape[2], A.shape[-1]
    size = dv + m + H * dh + 1
    scale = torch.linalg.vector_norm(Sa).item()
    residual = torch.linalg.vector_norm(diff).item()
    err = rounding_error(size, scale)  # the float64 reference's own error bound
    # the classical first-order bound of the module's own products (Higham §3.1): k·eps·Σ|terms| with the
    # slack theory.rounding uses (ROUNDING_SAFETY; tol's default 64 on top of an absolute-value sum would let
    # a defect as large as the output pass at float32 and MiniLM size), plus twice the reference's error, so
    # that the decision band (± err) lies inside the threshold also when the module itself is float64
    # at the coarser of the output's precision and the one its attention was computed in (a float32
    # softmax inside a float64 module, as the kernel's own weights show): the accuracy the module delivers
    bound = tol(coarser(ex.output.dtype, ex.attention_dtype), size, scale=scale, safety=ROUNDING_SAFETY) + 2 * err
    h, f = decide(residual, bound, err)
    if not math.isfinite(residual):
        h, f = False, True
    per_tok = torch.linalg.vector_norm(diff, dim=-1)
    b, i = divmod(int(torch.nan_to_num(per_tok, nan=math.inf).reshape(-1).argmax()), per_tok.shape[1])
    ref = torch.linalg.vector_norm(Yh).item()
    detail = (
        f"worst token (b={b}, i={i}): ‖y_i − ŷ_i‖ = {per_tok[b, i].item():.3e}; ‖Y − Ŷ‖/‖Ŷ‖ = "
        f"{residual / max(ref, 1e-300):.3e}"
    )
    return Verdict(status(bool(h), bool(f)), residual, bound, err, detail, scale), (b, i)


def stale(ex: Extraction, batch: int, n: int, m: int) -> Verdict | None:
    """A failed T2 verdict when the reported ``A`` is not of this call's shape ``(batch, ·, n, m)``
    while the output is (attention kept from another call); None otherwise. The key axis may differ
    from the draw's ``m`` where the adapter draws its own keys (cross-attention's encoder states): then
    it must match the value states the extraction reports."""
    A, Y, V = ex.A, ex.output, ex.values
    if not (isinstance(A, torch.Tensor) and isinstance(Y, torch.Tensor)) or A.ndim != 4 or Y.ndim != 3:
        return None
    own_keys = isinstance(V, torch.Tensor) and V.ndim == 3 and V.shape[1] == A.shape[3] and V.shape[1] != n
    if tuple(Y.shape[:2]) != (batch, n) or ((A.shape[0], A.shape[2]) == (batch, n) and (A.shape[3] == m or own_keys)):
        return None
    why = (
        f"the reported A has shape {tuple(A.shape)} but this call's attention is ({batch}, H, {n}, {m}): "
        "it is not the attention of this call (kept from another call?)"
    )
    return Verdict(FAILS, math.inf, 0.0, 0.0, why, 1.0)


# --------------------------------------------------------------------------- T3 / T5 (reported)
def _count(holds: torch.Tensor, fails: torch.Tensor) -> str:
    H = holds.numel()
    u = int((~holds & ~fails).sum())
    return f"{int(holds.sum())}/{H}" + (f" ({u}?)" if u else "")


def _agg(holds: torch.Tensor, fails: torch.Tensor) -> str:
    return combine(status(bool(h), bool(f)) for h, f in zip(holds.reshape(-1).tolist(), fails.reshape(-1).tolist()))


def t3_t5(ex: Extraction, b: int) -> tuple[dict[str, Verdict], dict[str, Verdict]]:
    """T3's hypotheses on batch row ``b``'s walk over its real tokens, and T5's per head."""
    from numerics.laplacian import diagnose
    from numerics.laplacian.checks import check_detailed_balance, stationary
    from numerics.laplacian.result import make_check
    from numerics.walk import ConnectionWalk

    real = ex.key_mask[b] if ex.key_mask is not None else torch.ones(ex.A.shape[-1], dtype=torch.bool)
    idx = real.nonzero().reshape(-1)
    A = ex.A[b].detach().to(F64)[:, idx][:, :, idx]  # (H, L, L)
    Wo, Wv = ex.W_O.detach().to(F64), ex.W_V.detach().to(F64)
    adt = ex.attention_dtype or ex.A.dtype
    t3: dict[str, Verdict] = {}
    walk = ConnectionWalk.from_factors(A[None], Wo, Wv)
    try:  # the hypotheses only: no spectrum (max_dense=0); dense blocks are far faster than matrix-free here
        diag = diagnose(walk, method="dense", max_dense=0, probes=1, attention_dtype=adt)
    except MemoryBudgetError as exc:
        why = f"not computed: {exc}"
        t3 = {k: Verdict(UNDECIDED, math.nan, math.nan, 0.0, why) for k in ("a stochastic", "b reversible", "c metric")}
        diag = None
    if diag is not None:
        rev_h = diag.positive_stationary.holds & diag.detailed_balance.holds
        rev_f = diag.positive_stationary.fails | diag.detailed_balance.fails
        for key, c, hh, ff in (
            ("a stochastic", diag.stochastic, diag.stochastic.holds, diag.stochastic.fails),
            ("b reversible", diag.detailed_balance, rev_h, rev_f),
            ("c metric", diag.metric_compatible, diag.metric_compatible.holds, diag.metric_compatible.fails),
        ):
            t3[key] = Verdict(status(bool(hh[0]), bool(ff[0])), float(c.residual[0]), c.tol, c.error, c.reason or "")
    # T5 per head
    t5: dict[str, Verdict] = {}
    mn = A.amin((-1, -2))  # exact: a zero weight is a zero weight
    full = mn > 0
    t5["softmax"] = Verdict(_agg(full, ~full), float(mn.min()), 0.0, 0.0, _count(full, ~full) + " heads, min A")
    st_ = stationary(A, adt)
    db = check_detailed_balance(A, st_, adt)
    rh, rf = st_.check.holds & db.holds, st_.check.fails | db.fails
    worst = float(torch.nan_to_num(db.residual, nan=math.inf).max())
    t5["reversible"] = Verdict(_agg(rh, rf), worst, db.tol, db.error, _count(rh, rf) + " heads")
    T = Wo @ Wv  # (H, d, d)
    d = T.shape[-1]
    eye = torch.eye(d, dtype=F64)
    gram = torch.linalg.matrix_norm(T.transpose(-1, -2) @ T - eye)
    sym = torch.linalg.matrix_norm(T - T.transpose(-1, -2))
    tn = float(torch.linalg.matrix_norm(T).max()) ** 2
    ch = make_check(
        "involution",
        torch.maximum(gram, sym),
        tol(ex.W_V.dtype, d, scale=max(tn, float(d))),
        error=rounding_error(d, max(tn, float(d))),
    )
    t5["involution"] = Verdict(
        _agg(ch.holds, ch.fails), float(ch.residual.max()), ch.tol, ch.error, _count(ch.holds, ch.fails) + " heads"
    )
    return t3, t5


def merge(native: Verdict, shadow: Verdict | None, dtype_name: str) -> tuple[Verdict, str]:
    """One decision from the module's own-dtype run and its float64 shadow: the shadow decides
    (it resolves 1e-6 defects the own dtype cannot) unless it is undecided or only the own-dtype run
    fails (a dtype-specific failure: overflow, a low-precision path). Returns the verdict and the
    run that decided (``"float64 shadow"`` or ``dtype_name``)."""
    if shadow is None:
        return native, dtype_name
    if shadow.status == FAILS or (shadow.status == HOLDS and native.status != FAILS):
        return shadow, "float64 shadow"
    if native.status == FAILS:
        return native, dtype_name
    return shadow, "float64 shadow"


# --------------------------------------------------------------------------- the report
#: the report's verdicts: T2 and its hypotheses hold / the identity holds but a hypothesis fails /
#: the identity fails / some decision lies within its rounding band
VERDICTS = ("conforms", "hypothesis fails", "fails", "undecided")
#: ``decided_by`` of a verdict decided by the float64 shadow run
SHADOW = "float64 shadow"


@dataclass
class DrawResult:
    """One draw × one extracted layer: ``t2`` (the identity), ``hypotheses`` (T2's: nonnegative,
    row-stochastic; empty when the extraction is not of this call), ``decided_by`` (the run whose
    decision stands: ``"float64 shadow"`` or the module's dtype), ``t3`` / ``t5`` (reported
    hypotheses: name → :class:`Verdict`; empty for cross-attention, where the walk is not square)."""

    index: int
    draw: Draw
    layer: str
    t2: Verdict
    t3: dict[str, Verdict] = field(default_factory=dict)
    t5: dict[str, Verdict] = field(default_factory=dict)
    cross: bool = False
    hypotheses: dict[str, Verdict] = field(default_factory=dict)
    decided_by: str = ""
    hypotheses_by: dict[str, str] = field(default_factory=dict)  # the run that decided each hypothesis
    no_shadow: str = ""  # why no float64 shadow decided this row ("" when one did)
    identifying: bool | None = None  # whether the draw determines A (identifies): None = undecided / not weighed
    identifying_why: str = ""
    trusted: tuple[str, ...] = ()  # the fields taken as the adapter reported them (not observable), and why
    trusted_why: str = ""

    def failed(self, statement: str | None) -> bool:
        """Whether this result fails ``statement``: None = the identity, else a hypothesis name."""
        if statement is None:
            return self.t2.status == FAILS
        v = self.hypotheses.get(statement)
        return v is not None and v.status == FAILS

    def failed_hypotheses(self) -> list[str]:
        return [h for h in HYPOTHESES if self.failed(h)]

    def as_dict(self) -> dict:
        return {
            "draw": self.index,
            "input": self.draw.describe(),
            "layer": self.layer,
            "decided_by": self.decided_by,
            "shadow": self.no_shadow or "float64 shadow run",
            "identifying": self.identifying,
            "identifying_why": self.identifying_why,
            "trusted": list(self.trusted),
            "trusted_why": self.trusted_why,
            "hypotheses": {
                k: {**v.as_dict(), "decided_by": self.hypotheses_by.get(k, "")} for k, v in self.hypotheses.items()
            },
            "T2": self.t2.as_dict(),
            "T3": {k: v.as_dict() for k, v in self.t3.items()},
            "T5": {k: v.as_dict() for k, v in self.t5.items()},
        }


@dataclass
class Counterexample:
    """The failing input: ``draw``, ``layer``, the violated ``statement`` (T2's identity or one of its
    hypotheses), its ``verdict``; ``decided_by`` (the run that failed it), ``shrunk`` (False when the
    shrunk draw did not fail again and the first failing draw found stands)."""

    draw: Draw
    layer: str
    statement: str
    verdict: Verdict
    decided_by: str = ""
    shrunk: bool = True
    causal: bool = False  # the check was declared causal-only (causal=True): the replay says so too

    def replay(self) -> str:
        """A snippet that runs this draw again on ``module`` (the same adapter, seed and tokens)."""
        kw = ", causal=True" if self.causal else ""
        return f"from numerics.conformance.kit import Draw, check_draw\ncheck_draw(module, {self.draw!r}{kw})"

    def __str__(self) -> str:
        where = f" layer {self.layer}," if self.layer else ""
        how = "shrunk" if self.shrunk else "first found; its shrunk form did not fail again"
        what = "‖Y − Ŷ‖_F" if self.statement == T2_STATEMENT else "residual"
        by = f" [{self.decided_by}]" if self.decided_by else ""
        return (
            f"counterexample ({how}):{where} input {self.draw.describe()}\n  violates {self.statement}{by}\n"
            f"  {what} = {self.verdict.residual:.3e} > bound {self.verdict.bound:.3e}; {self.verdict.detail}\n"
            f"  replay: {self.replay().replace(chr(10), '; ')}"
        )


@dataclass
class ConformanceReport:
    """Result of :func:`check_attention`: ``results`` (one :class:`DrawResult` per draw and layer),
    ``counterexample`` (None unless the verdict is *fails* / *hypothesis fails*), ``seconds``,
    ``shadow`` (why there was no float64 shadow run; empty when there was one). The summary:
    ``verdict`` (one of :data:`VERDICTS`), ``hypothesis_failures``, ``decided_by``, ``conforms``
    (verdict is *conforms*) and ``status`` (holds / fails / undecided for T2 as stated)."""

    module: str
    adapter: str
    dtype: str
    results: list[DrawResult]
    counterexample: Counterexample | None
    seconds: float
    seed: int
    shadow: str = ""

    @property
    def hypothesis_failures(self) -> list[str]:
        return [h for h in HYPOTHESES if any(r.failed(h) for r in self.results)]

    @property
    def verdict(self) -> str:
        if any(r.failed(None) for r in self.results):
            return "fails"
        if self.hypothesis_failures:
            return "hypothesis fails"
        seen = [r.t2.status for r in self.results] + [v.status for r in self.results for v in r.hypotheses.values()]
        if UNDECIDED in seen or not self.results:
            return "undecided"
        # evidence: a draw that cannot tell a wrong A from the right one is none; each layer needs one that can
        return "conforms" if all(any(r.identifying for r in rs) for rs in self._layers().values()) else "undecided"

    def _layers(self) -> dict[str, list[DrawResult]]:
        out: dict[str, list[DrawResult]] = {}
        for r in self.results:
            out.setdefault(r.layer, []).append(r)
        return out

    @property
    def identifying(self) -> tuple[int, int]:
        """``(k, N)``: ``k`` of the ``N`` draws identifying (every layer's extraction determines ``A``)."""
        by: dict[int, list[DrawResult]] = {}
        for r in self.results:
            by.setdefault(r.index, []).append(r)
        return sum(all(r.identifying for r in rs) for rs in by.values()), len(by)

    @property
    def evidence(self) -> str:
        """``"k of N draws identifying"``, and, where a layer has none, why (its first draw's reason)."""
        k, n = self.identifying
        txt = f"{k} of {n} draws identifying"
        none = [rs[0] for rs in self._layers().values() if not any(r.identifying for r in rs)]
        if none:
            where = f" (layer {none[0].layer})" if none[0].layer else ""
            txt += f"; no draw determines A{where}: {none[0].identifying_why}"
        return txt

    @property
    def trusted(self) -> str:
        """What was taken as the adapter reported it (``""``: nothing): the fields, on how many rows, why."""
        rows = [r for r in self.results if r.trusted]
        if not rows:
            return ""
        fields = [f for f in ("output", "A") if any(f in r.trusted for r in rows)]
        return f"{' and '.join(fields)} as reported on {len(rows)} of {len(self.results)} rows ({rows[0].trusted_why})"

    @property
    def decided_by(self) -> str:
        if self.counterexample is not None and self.counterexample.decided_by:
            return self.counterexample.decided_by
        if self.results and all(r.decided_by == SHADOW for r in self.results):
            return SHADOW
        return self.dtype

    @property
    def conforms(self) -> bool:
        return self.verdict == "conforms"

    @property
    def status(self) -> str:
        return {"conforms": HOLDS, "undecided": UNDECIDED}.get(self.verdict, FAILS)

    def headline(self) -> str:
        v = self.verdict
        if v == "hypothesis fails":
            return f"T2 HYPOTHESIS FAILS ({', '.join(self.hypothesis_failures)}; the identity holds)"
        if v == "undecided" and self.results and all(r.t2.status == HOLDS for r in self.results):
            return "T2 UNDECIDED (the identity holds, but on no draw that determines A)"
        return "T2 " + {"conforms": "HOLDS", "fails": "FAILS"}.get(v, "UNDECIDED")

    def table(self) -> str:
        shadow = "float64 shadow" if not self.shadow else f"no float64 shadow: {self.shadow}"
        head = (
            f"conformance of {self.module} [{self.adapter}, {self.dtype}]: {self.headline()}, decided by "
            f"{self.decided_by} ({len({r.index for r in self.results})} draws, seed {self.seed}, "
            f"{self.seconds:.1f} s; {shadow}; {self.evidence}"
            + (f"; trusted: {self.trusted})" if self.trusted else ")")
        )
        cols = (
            f"{'#':>3} {'layer':>5}  {'input':<30} {'A≥0':<10}{'Σ_j A=1':<10}{'T2':<10}{'resid/bound':>11} "
            f"{'by':<8} {'det A':<6}{'trusted':<9}{'T3 (a) stoch':<13}{'(b) rev':<10}{'(c) metric':<11}{'T5 softmax':<12}{'reversible':<12}"
            f"{'involution':<12}"
        )
        lines = [head, cols]
        for r in self.results:
            ratio = r.t2.residual / r.t2.bound if r.t2.bound > 0 else float("inf")
            inp = r.draw.describe().split(" seed=")[0]
            hyp = "".join(f"{r.hypotheses[k].status if k in r.hypotheses else '-':<10}" for k in HYPOTHESES)
            by = "f64" if r.decided_by == SHADOW else r.decided_by
            det = "?" if r.identifying is None else ("yes" if r.identifying else "no")
            trust = ",".join(r.trusted) or "-"
            row = f"{r.index:>3} {r.layer or '-':>5}  {inp:<30} {hyp}{r.t2.status:<10}{ratio:>11.2e} {by:<8} {det:<6}"
            row += f"{trust:<9}"
            if r.t3:
                row += "".join(
                    f"{r.t3[k].status:<{w}}" for k, w in (("a stochastic", 13), ("b reversible", 10), ("c metric", 11))
                )
                row += "".join(f"{r.t5[k].detail.split(' ')[0]:<12}" for k in ("softmax", "reversible", "involution"))
            elif r.cross:
                row += "(cross-attention: the walk is not square; T3/T5 n/a)"
            elif r.failed_hypotheses():
                row += "(not a walk: T3/T5 n/a)"
            lines.append(row.rstrip())
        if self.counterexample is not None:
            lines.append(str(self.counterexample))
        return "\n".join(lines)

    def as_dict(self) -> dict:
        cx = self.counterexample
        return {
            "module": self.module,
            "adapter": self.adapter,
            "dtype": self.dtype,
            "verdict": self.verdict,
            "hypothesis_failures": self.hypothesis_failures,
            "decided_by": self.decided_by,
            "shadow": self.shadow or "float64 shadow run",
            "status": self.status,
            "conforms": self.conforms,
            "seed": self.seed,
            "seconds": self.seconds,
            "identifying_draws": self.identifying[0],
            "evidence": self.evidence,
            "trusted": self.trusted,
            "draws": [r.as_dict() for r in self.results],
            "counterexample": None
            if cx is None
            else {
                "input": cx.draw.describe(),
                "layer": cx.layer,
                "statement": cx.statement,
                "decided_by": cx.decided_by,
                "shrunk": cx.shrunk,
                "replay": cx.replay(),
                **cx.verdict.as_dict(),
            },
        }
