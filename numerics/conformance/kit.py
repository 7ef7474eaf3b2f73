r"""Conformance kit: is *this* attention module the connection walk it claims to be (THEOREMS.md T2)?

One call, on any attention ``nn.Module``::

    from numerics.conformance.kit import check_attention, assert_conforms

    report = check_attention(module)          # a ConformanceReport: .verdict, .conforms, .table(), .as_dict()
    print(report.table())
    assert_conforms(module)                   # in a test: AssertionError with the counterexample

**The contract.** The module is run in eval mode (``module.eval()`` for the call, its training flag
restored after): dropout is off, as at inference. *Claimed*: the factors (``W_O``, ``W_V``, biases,
``values``), verified through the identity. *Observed, never taken on the adapter's word*: where an
adapter reports the module's output and ``A`` (``connwalk_attention``, an ``Adapter`` of your own), the
kit runs the module's own forward on the same tokens under the torch capture
(:mod:`numerics.conformance.observed`) and judges *that* output; a reported output or ``A`` that
disagrees with it (another output, ``A`` heads last, a null key's column left in, another attention
than the kernel's) is an :class:`~numerics.errors.AdapterMismatchError` naming the field. What cannot be
observed (no forward the kit can call on the tokens: output and ``A``; no single attention kernel in
it: ``A``) is each row's ``trusted``, with why. *Verified*, on every draw: T2's hypotheses on ``A`` and
T2's identity between the module's own output and the walk the factors make — so a module that returns
one ``A`` and uses another, or claims one ``W_O`` and applies another, fails; a module that uses and
reports an ``A`` that is not a walk fails a hypothesis. A module that runs causal only declares it
(``connwalk_causal = True``, or ``causal=True``): every draw is causal.

What it does, per Hypothesis draw (seeded: ``seed``; ``examples`` draws, then one more that repeats
the last draw's shape with another seed, so that an ``A`` kept from the previous call is judged also
where the shapes agree; sizes ``B ≤ max_batch``, ``min_length ≤ n ≤ max_length``, right key padding
where the module takes a mask — a padded query is no token: its row and output are not judged — a
causal mask where it takes one, an input scale; the tokens themselves come from a seeded generator,
so a shrunk draw is a small, reproducible input):

1. **Extraction** by an adapter: the module's own output ``Y`` on the draw, the per-head attention
   ``A^h`` it used ``(B, H, n, m)``, the transport factors ``W_O^h`` ``(d_out, d_h)``, ``W_V^h``
   ``(d_h, d_v)`` and value / output biases it *claims*, and the value inputs ``X``. Whatever the
   module raises becomes an :class:`ExtractionError` naming it; an ``A`` that is not of this call's
   shape (kept from another call) is a T2 failure with its counterexample; a defect of the module's
   own kernel that the adapter observes while it runs (:class:`KernelDefect`) is a T2 failure too.
2. **T2's hypotheses**, per head, first: every ``A^h_ij ≥ 0`` (*nonnegative*) and every row sums to
   one over the keys that are not masked (*row-stochastic*), three-valued at the rounding of the
   module's dtype (or of a coarser precision its attention was computed in: the adapter's
   ``attention_dtype``, or the coarsest dtype that holds every reported weight exactly):
   :func:`numerics.conformance.checks.t2_hypotheses` states the bound.
3. **T2's identity** ``Y = W(X)·X + c``, i.e. ``y_i = Σ_h Σ_j A^h_ij W_O^h (W_V^h x_j + b_V^h) + b_O``
   (the affine term with the captured row sums, so that it is exact for any ``A``; it is the
   constant ``c = Σ_h W_O^h b_V^h + b_O`` when every row is stochastic). The reference is computed in
   float64; the tolerance is stated from the output's dtype: ``‖Y − Ŷ‖_F ≤ tol(dtype, k, scale=S,
   safety=2) + 2·e`` with ``k = d_v + m + H·d_h + 1``, ``S = ‖Ŷ_abs‖_F`` the same sum over absolute
   values and ``e = rounding_error(k, S)`` the float64 reference's own error — the classical
   first-order forward-error bound ``k·eps·Σ|terms|`` of the module's own products (Higham §3.1)
   with the slack :data:`theory.rounding.ROUNDING_SAFETY`; three-valued (:func:`theory.rounding.decide`).
4. **The float64 shadow.** Where the module can be copied to float64 (``copy.deepcopy`` and
   ``.double()``; :meth:`Adapter.shadow`), the copy runs on the same draws and decides T2 at float64
   precision (a relative defect of 1e-6 in a score scale, invisible at float32's ``~1e-5`` bound, is
   caught); the own-dtype run stays, and a failure only it sees (overflow, a low-precision path)
   stands. The twin runs its adapter class's own methods (a wrapper put on the adapter instance is
   not copied), and its extraction is verified on every draw: ``output``, ``A``, ``W_O``, ``W_V`` and
   ``values`` must be float64, else the shadow is dropped with that reason (each row's ``shadow``). Each row says which run decided; ``report.shadow`` says why there was no shadow (a float64
   module, a copy that raised, a module over :data:`~numerics.conformance.protocol.SHADOW_MAX_PARAMETERS`).
   The hypotheses keep the module's own dtype's rounding in both runs.
5. **The evidence** (:func:`numerics.conformance.protocol.identifies`): whether the draw determines
   ``A`` — a wrong row-stochastic ``A`` would give another output. Per batch row that is the full row
   rank ``H(m_r − 1)`` of the stacked ``Qᵀ (X W_V^hᵀ + b_V^h) W_O^hᵀ`` over the ``m_r`` real keys
   (``Q`` a basis of ``1^⊥``: a constant on every value moves stochastic rows alike), decided at the
   module's rounding (``σ_min`` against ``tol(dtype, d_v + d_h + m_r, scale=σ_max, safety=2)``); never
   where ``m_r − 1 > min(d_h, d_v)`` or ``H(m_r − 1) > d_out``. Each row records ``identifying`` (True /
   False / None = undecided) and why; a failure counts wherever it is seen, but *conforms* needs,
   for every layer, a draw that identifies (else *undecided*: the identity held only where it could
   not tell a wrong ``A``). The default sizes (``n ≤ 8``) identify for head dimension ≥ 7.
6. **T3's hypotheses** on the walk of the real (unpadded) tokens of the batch row holding the
   worst T2 token (self-attention with ``d_out = d_v`` only): (a) stochastic, (b) reversible with a
   positive ``π``, (c) metric-compatible; **T5's** per head (full support, reversible, ``T_h`` an
   orthogonal involution). Reported, never required: they are hypotheses of other theorems; not
   computed where T2's hypotheses fail (the attention is then no walk).

**The verdict** (``report.verdict``): *conforms* (every hypothesis and the identity hold), *hypothesis
fails* (the identity holds, a T2 hypothesis fails: ``report.hypothesis_failures`` names it), *fails*
(the identity fails), *undecided* (a decision within its rounding band, or no draw that determines
``A``: ``report.evidence`` says "k of N draws identifying" and why); ``report.decided_by`` is
``"float64 shadow"`` or the module's dtype. **Attention sinks** — a null / zero-attention key
(``torch.nn.MultiheadAttention(add_zero_attn=True)``), a learned sink logit, any module reporting the
attention over its real keys with rows summing to less than one — get one answer on every path:
the attention over the real keys is sub-stochastic, so the verdict is *hypothesis fails*
(``row-stochastic``); the identity is still checked (a zero-value sink adds nothing to it).

**A counterexample** (for *fails* and *hypothesis fails*) is the draw Hypothesis shrinks to, as first
observed (never re-run, so a history- or chance-dependent failure is not lost; when shrinking does
not reproduce it, the first failing draw of the sweep stands). Replay it with the snippet it prints::

    from numerics.conformance.kit import Draw, check_draw
    check_draw(module, Draw(batch=1, n=1, m=1, pad=(0,), causal=False, seed=123, scale=1.0))

Adapters (extraction) are built in for ``torch.nn.MultiheadAttention`` (packed or separate
``kdim``/``vdim`` projections, with or without biases; key padding and causal masks; ``add_zero_attn``),
Hugging Face models of the supported families (every attention layer of the model, through
:class:`numerics.models.adapters.HFModelHandle`; token ids drawn from the seed) and the stand-alone
Hugging Face attention modules of those families (:mod:`numerics.conformance.hf`). **Your own
module** joins through the adapter protocol: give it a method ::

    def connwalk_attention(self, X, key_padding_mask=None) -> Extraction | dict

that runs the module on ``X`` ``(B, n, d)`` (``key_padding_mask`` ``(B, n)`` bool, True = padding;
leave the parameter out if the module takes no mask) and returns the module's output together with
the ``A`` it used (over the real keys; a sink's column left out) and the factors it claims
(:class:`Extraction`'s fields), plus an attribute ``embed_dim`` (or ``d_model``); or pass
``adapter=`` any :class:`Adapter`. So that the kit can run the module itself, its ``forward`` takes ``X``
(and the mask as ``key_padding_mask``) and returns the output (first, where it returns a tuple); ``A`` is
laid out ``(B, H, n, m)``, heads before queries. ``connwalk_causal = True`` declares a causal-only module.
"""

from __future__ import annotations

import dataclasses
import random
import time
from dataclasses import dataclass

import torch

from numerics.conformance.adapters import (
    HFModelAdapter,
    NotAttentionError,
    adapter_for,
)
from numerics.conformance.bounds import (
    caller_signals,
    check_adapter,
    check_causal,
    check_counts,
    check_draw_memory,
    check_min_length,
    check_module_data,
    check_progress,
    validate_draw,
)
from numerics.conformance.checks import (
    HYPOTHESES,
    HYPOTHESIS_STATEMENTS,
    SHADOW,
    T2_STATEMENT,
    VERDICTS,
    ConformanceReport,
    Counterexample,
    DrawResult,
    Verdict,
    coarser,
    identifies,
    merge,
    stale,
    stored_precision,
    t2_hypotheses,
    t2_identity,
    t3_t5,
)
from numerics.conformance.observed import BOTH, Seen, extract_observed, module_path, reconcile, reports
from numerics.conformance.protocol import (
    Adapter,
    Draw,
    Extraction,
    ExtractionError,
    KernelDefect,
    check_finite_parameters,
    draw_strategy,
    extract_checked,
)
from numerics.errors import AdapterMismatchError, ConnwalkError, ShapeError
from numerics.tolerance import FAILS, UNDECIDED

__all__ = [
    "Adapter",
    "Draw",
    "Extraction",
    "ExtractionError",
    "KernelDefect",
    "AdapterMismatchError",
    "Counterexample",
    "DrawResult",
    "ConformanceReport",
    "ConformanceError",
    "NotAttentionError",
    "Verdict",
    "adapter_for",
    "check_attention",
    "check_draw",
    "assert_conforms",
    "T2_STATEMENT",
    "HYPOTHESES",
    "HYPOTHESIS_STATEMENTS",
    "VERDICTS",
    "SHADOW",
]


class ConformanceError(AssertionError):
    """Raised by :func:`assert_conforms`; ``.report`` is the :class:`ConformanceReport`."""

    def __init__(self, message: str, report: ConformanceReport) -> None:
        super().__init__(message)
        self.report = report


# --------------------------------------------------------------------------- one draw, judged
@dataclass
class _Judged:
    ex: Extraction
    result: DrawResult
    loc: tuple[int, int]
    stale: bool


class _Judge:
    """Runs and judges draws: the module's own-dtype run, then (where there is one) its float64 shadow
    on the same draw; a shadow that raises, or whose tensors are not float64, is dropped, with the
    reason, for the rest of the check. ``progress`` (a callable taking one line) hears where it is."""

    def __init__(self, ad: Adapter, name: str, shadow: bool, progress=None, examples: int = 0, module=None) -> None:
        self.ad, self.name, self.module = ad, name, module
        # an adapter that reports what the module computed is compared with the module itself (observed.py)
        self.observe, self.path = reports(ad), module_path(ad, module)
        self.dtype_name = str(ad.dtype).replace("torch.", "")
        self.twin, self.note = ad.shadow() if shadow else (None, "shadow=False")
        self.progress, self.examples, self.calls = progress, examples, 0
        self.previous: dict[int, torch.Tensor] = {}  # the last reported A of each layer

    def _say(self, what: str) -> None:
        if self.progress is not None:
            k, n = self.calls, self.examples
            where = (
                f"draw {k}/{n}" if k <= n else "the repeated shape" if k == n + 1 else f"shrinking (try {k - n - 1})"
            )
            self.progress(f"{where}: {what}")

    def _queries(self, d: Draw, ex: Extraction) -> torch.Tensor | None:
        """The real queries ``(B, n)`` of a self-attention draw with padding (query i is token i)."""
        if self.ad.cross or d.m != d.n or not any(d.pad) or tuple(ex.A.shape[-2:]) != (d.n, d.m):
            return None
        kpm = d.key_padding_mask()
        return None if kpm is None or ex.A.shape[0] != d.batch else ~kpm

    def _extract(self, ad: Adapter, d: Draw, native: bool) -> tuple[list[Extraction], Seen | None]:
        if not self.observe:  # connwalk's own adapters read the output and A from the module's own call
            return extract_checked(ad, d, self.name), None
        return extract_observed(ad, d, self.name, self.module, self.path, native)

    def _one(self, ex: Extraction, d: Draw, hdt: torch.dtype, seen: Seen | None = None):
        for f in ("output", "A", "W_O", "W_V", "values", "b_V", "b_O", "key_mask"):
            t = getattr(ex, f)  # judged on the CPU, whatever device the module ran on
            if isinstance(t, torch.Tensor):
                setattr(ex, f, t.detach().cpu())
        if seen is not None:  # compared with the module itself; the module's own output is judged
            reconcile(ex, seen, d, self.ad.cross)
        v = stale(ex, d.batch, d.n, d.m)
        if v is not None:
            return v, {}, (0, 0), True
        ex.validate()
        try:
            qm = self._queries(d, ex)
            hyp = t2_hypotheses(ex, hdt, qm)
            v, loc = t2_identity(ex, qm)
        except ConnwalkError:
            raise
        except Exception as exc:  # e.g. a key_mask of another shape, a non-numeric tensor
            raise ShapeError(
                f"{self.name}'s extraction cannot be checked: {type(exc).__name__}: {exc} (on input {d.describe()})",
                argument="module",
            ) from exc
        return v, hyp, loc, False

    def _shadow(self, d: Draw, hdts: list) -> list | KernelDefect | None:
        if self.twin is None:
            return None
        try:
            twins, seen = self._extract(self.twin, d, False)
            if not isinstance(twins, list) or len(twins) != len(hdts):
                raise ShapeError("the float64 copy's extraction has another number of layers", argument="module")
            for t in twins:  # verified, never assumed: a run that is not float64 decides nothing
                got = {f: getattr(getattr(t, f, None), "dtype", type(getattr(t, f, None))) for f in F64_FIELDS}
                bad = ", ".join(f"{f} {str(g).replace('torch.', '')}" for f, g in got.items() if g != torch.float64)
                if bad:
                    raise _NotFloat64(f"the float64 copy's extraction is not float64 ({bad}): its run decides nothing")
            return [(*self._one(t, d, hdt, seen), seen) for t, hdt in zip(twins, hdts)]
        except KernelDefect as exc:  # the module's own kernel, observed in the float64 copy: a verdict
            return exc
        except AdapterMismatchError:  # the adapter's report, against the float64 copy's own computation
            raise
        except Exception as exc:  # the copy, not the module: no shadow from here on, and why
            self.twin = None
            why = str(exc) if isinstance(exc, _NotFloat64) else f"the float64 copy raised {type(exc).__name__}: {exc}"
            self.note = f"{why} (on input {d.describe()})"
            return None

    def __call__(self, d: Draw, index: int = 0) -> list[_Judged]:
        self.calls += 1
        self._say("running the module")
        try:
            native, seen = self._extract(self.ad, d, True)
        except KernelDefect as exc:  # the module's own kernel, observed: a verdict, not bad input
            return _defect(exc, d, index, self.dtype_name)
        hdts = [coarser(self.ad.dtype, ex.attention_dtype, _precision(ex)) for ex in native]
        judged = []
        for k, (ex, hdt) in enumerate(zip(native, hdts)):
            self._say(f"layer {k + 1}/{len(native)}: T2")
            judged.append(self._one(ex, d, hdt, seen))
        shadowed = self._shadow(d, hdts)
        if isinstance(shadowed, KernelDefect):  # seen at float64 precision only: the shadow decides
            return _defect(shadowed, d, index, SHADOW)
        out = []
        for k, (ex, (v, hyp, loc, is_stale)) in enumerate(zip(native, judged)):
            by = self.dtype_name
            hyp_by = dict.fromkeys(hyp, by)
            seens = [seen]
            if shadowed is not None:
                sv, shyp, sloc, s_stale, sseen = shadowed[k]
                seens.append(sseen)
                v, by = merge(v, sv, self.dtype_name)
                loc = sloc if by == SHADOW else loc
                is_stale = is_stale or s_stale
                if hyp and shyp:
                    pairs = {h: merge(hyp[h], shyp[h], self.dtype_name) for h in hyp}
                    hyp, hyp_by = {h: p[0] for h, p in pairs.items()}, {h: p[1] for h, p in pairs.items()}
            prev, self.previous[k] = self.previous.get(k), ex.A
            same = isinstance(prev, torch.Tensor) and prev.shape == ex.A.shape and torch.equal(prev, ex.A)
            if v.status == FAILS and same:  # a shape repeated with another input, the same A reported
                v.detail += "; the reported A is the previous call's (kept from another call?)"
            r = DrawResult(index, d, ex.layer, v, cross=not ex.self_attention, hypotheses=hyp, decided_by=by)
            r.hypotheses_by, r.no_shadow = hyp_by, "" if shadowed is not None else self.note
            seen_by = [x for x in seens if x is not None and x.trusted]  # what no run could observe
            r.trusted = tuple(f for f in BOTH if any(f in x.trusted for x in seen_by))
            r.trusted_why = "; ".join(dict.fromkeys(x.why for x in seen_by))
            # evidence: whether this draw could tell a wrong A from the right one (at the module's rounding)
            r.identifying, r.identifying_why = (
                (None, "the reported A is not of this call") if is_stale else identifies(ex, ex.output.dtype)
            )
            out.append(_Judged(ex, r, loc, is_stale))
        if len(native) > 1:
            self._say(f"T3/T5 hypotheses of its {len(native)} layers")
        return out


def _defect(exc: KernelDefect, d: Draw, index: int, by: str) -> list[_Judged]:
    """The failed T2 row of a draw on which the module's own kernel was observed to be defective."""
    v = Verdict(FAILS, exc.residual, exc.bound, 0.0, str(exc).split(": ", 1)[-1], 1.0)
    r = DrawResult(index, d, "", v, decided_by=by, no_shadow="" if by == SHADOW else "the kernel's defect was observed")
    r.identifying_why = "the kernel's defect was observed: no extraction to weigh"
    return [_Judged(None, r, (0, 0), True)]  # type: ignore[arg-type]


class _NotFloat64(Exception):
    """The float64 copy's extraction holds a tensor of another dtype."""


#: the tensors of a shadow's extraction that must be float64 for its run to decide anything
F64_FIELDS = ("output", "A", "W_O", "W_V", "values")


def _precision(ex: Extraction) -> torch.dtype | None:
    return stored_precision(ex.A.detach()) if isinstance(ex.A, torch.Tensor) else None


def check_draw(module, draw: Draw, *, adapter: Adapter | None = None, layers=None, shadow: bool = True, causal=None):
    """Judge one :class:`Draw` (a counterexample's, to replay it): the :class:`DrawResult` of each
    extracted layer (T2's hypotheses and identity, which run decided; no T3/T5). A draw that is no
    input of the module (:func:`numerics.conformance.bounds.validate_draw`) raises a typed error naming
    its field (``draw.pad``, ``draw.scale``, ...) before the module runs."""
    check_adapter(adapter, layers)
    check_module_data(module)
    ad = adapter if adapter is not None else adapter_for(module, layers=layers)
    validate_draw(draw, ad, causal)
    check_draw_memory(module, ad, draw.batch, draw.n, draw.m, argument="draw.n")
    name = module.name if isinstance(module, Adapter) else type(module).__name__
    with caller_signals():
        return [j.result for j in _Judge(ad, name, shadow, module=module)(draw)]


def check_attention(
    module,
    *,
    examples: int = 10,
    seed: int = 0,
    max_batch: int = 2,
    max_length: int = 8,
    masks: bool = True,
    layers=None,
    hypotheses: bool = True,
    adapter: Adapter | None = None,
    shadow: bool = True,
    min_length: int = 1,
    causal: bool | None = None,
    progress=None,
) -> ConformanceReport:
    """Check ``module`` against T2 — its hypotheses, then its identity — on ``examples`` seeded
    Hypothesis draws (module docstring); ``hypotheses``: also report T3/T5's hypotheses per draw;
    ``layers``: for a whole Hugging Face model, the layer indices to check (default all);
    ``shadow``: also run a float64 copy of the module on the same draws (default True);
    ``min_length``: the smallest ``n`` drawn (default 1; at most ``max_length``, else
    :class:`~numerics.errors.ParameterError` naming it); ``causal``: True declares the module causal-only
    (every draw causal), False draws none, None (default) follows the module's ``connwalk_causal``
    (:func:`~numerics.conformance.bounds.check_causal`); ``progress``: a callable told, one line at a
    time, which draw and layer the check is at. The last draw repeats the shape of the one before with
    another seed (one draw more than ``examples``), so that attention kept from the previous call is caught also
    where the shapes agree. Returns a
    :class:`ConformanceReport`; bad arguments raise :class:`~numerics.errors.ParameterError` naming
    them, an unknown module :class:`NotAttentionError`, a module that raises while it is run
    :class:`ExtractionError` naming ``module``. ``examples`` is at most
    :data:`~numerics.conformance.bounds.MAX_EXAMPLES`; the largest draw's attention is held against the
    memory budget before anything is allocated (:class:`~numerics.errors.MemoryBudgetError` naming
    ``max_length``); a module on the meta device is refused naming ``module``; what a caller's signal
    handler raises while the check runs (a ``SIGALRM`` timeout) reaches the caller unchanged
    (:func:`~numerics.conformance.bounds.caller_signals`)."""
    check_counts(examples=examples, max_batch=max_batch, max_length=max_length, seed=seed, min_length=min_length)
    check_progress(progress)
    check_adapter(adapter, layers)
    check_module_data(module)
    check_finite_parameters(module)
    ad = adapter if adapter is not None else adapter_for(module, layers=layers)
    if ad.max_length is not None:
        max_length = min(max_length, int(ad.max_length))
    check_min_length(min_length, max_length)
    mode = check_causal(causal, ad)
    check_draw_memory(module, ad, max_batch, max_length, argument="max_length")
    sizes = (max_batch, min_length, max_length)
    with caller_signals():
        return _check(module, ad, examples, seed, sizes, (masks, mode), hypotheses, shadow, progress)


def _check(module, ad: Adapter, examples, seed, sizes, masks, hypotheses, shadow, progress) -> ConformanceReport:
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as hseed

    name = module.name if isinstance(module, Adapter) else type(module).__name__
    t0 = time.perf_counter()
    max_batch, min_length, max_length = sizes
    judge = _Judge(ad, name, shadow, progress, examples, module)
    results: list[DrawResult] = []
    errors: list[BaseException] = []
    (masks, mode) = masks
    strategy = draw_strategy(ad, max_batch, max_length, masks, min_length, mode)
    common = dict(database=None, deadline=None, suppress_health_check=list(HealthCheck), derandomize=False)

    def judge_one(d: Draw, t3_t5_too: bool = True) -> None:
        if errors:  # the first error ends the check (below, outside Hypothesis: no replay, no Flaky)
            return
        k = len({r.index for r in results})
        try:
            for j in judge(d, k):
                if (
                    hypotheses
                    and t3_t5_too
                    and not j.stale
                    and j.ex.self_attention
                    and not j.result.failed_hypotheses()
                ):
                    try:
                        j.result.t3, j.result.t5 = t3_t5(j.ex, j.loc[0])
                    except Exception as exc:  # reported, never required: a check that cannot run says why
                        why = Verdict(UNDECIDED, float("nan"), float("nan"), 0.0, f"not computed: {exc}")
                        j.result.t3 = dict.fromkeys(("a stochastic", "b reversible", "c metric"), why)
                        j.result.t5 = dict.fromkeys(("softmax", "reversible", "involution"), why)
                results.append(j.result)
        except Exception as exc:
            errors.append(exc)

    @hseed(seed)
    @settings(max_examples=examples, phases=[Phase.generate], report_multiple_bugs=False, **common)  # type: ignore[arg-type]
    @given(strategy)
    def sweep(d: Draw) -> None:
        judge_one(d)

    sweep()
    if results and not errors:
        # a shape seen again, with another input, right after it: an A kept from the previous call has
        # the right shape here and is judged as this call's (a stale A of another shape fails checks.stale)
        last = results[-1].draw
        # (T2 only: the T3/T5 report of the sweep's draws is not repeated for the staleness check)
        judge_one(dataclasses.replace(last, seed=(last.seed + 1) % 2**31), t3_t5_too=False)
    if errors:
        raise errors[0]
    rep = ConformanceReport(name, ad.name, judge.dtype_name, results, None, 0.0, seed, judge.note)
    if rep.verdict in ("fails", "hypothesis fails"):
        target = None if rep.verdict == "fails" else rep.hypothesis_failures[0]
        rep.counterexample = _shrink(judge, strategy, target, results, max(examples, 50), seed, common)
        rep.counterexample.causal = bool(mode) and not ad.causal_only  # declared by causal=True: replayed so
    if isinstance(ad, HFModelAdapter) and ad.handle is module:  # a loaded handle: its model name
        rep.module = str(ad.handle.name)
    rep.shadow = judge.note
    rep.seconds = time.perf_counter() - t0
    return rep


def _shrink(judge: _Judge, strategy, target: str | None, results: list[DrawResult], budget: int, seed: int, common):
    """The smallest draw Hypothesis finds failing ``target`` (None: the identity), as first observed:
    a draw is never re-run to build the counterexample, so a module whose failure depends on its
    history (stale attention) or on chance (dropout left on) keeps the failure found. When shrinking
    finds nothing (or Hypothesis gives up: Flaky, NoSuchExample), the first failing draw of the sweep
    stands."""
    from hypothesis import Phase, find, settings

    seen: dict[Draw, DrawResult] = {}

    def fails(d: Draw) -> bool:
        try:
            judged = judge(d)
        except Exception:  # a different outcome than the failure being shrunk
            return False
        for j in judged:
            if j.result.failed(target):
                seen.setdefault(d, j.result)
                return True
        return False

    first = next(r for r in results if r.failed(target))
    best, shrunk = first, False
    try:
        small = find(
            strategy,
            fails,
            settings=settings(max_examples=budget, phases=[Phase.generate, Phase.shrink], **common),
            random=random.Random(seed),
        )
        if small in seen:
            best, shrunk = seen[small], True
    except Exception:  # Hypothesis gave up (NoSuchExample, Flaky, …): the failure found stands
        pass
    if shrunk and (best.draw.batch, best.draw.n, best.draw.m) > (first.draw.batch, first.draw.n, first.draw.m):
        best = first  # never report a larger draw than the one the sweep found
    statement = T2_STATEMENT if target is None else HYPOTHESIS_STATEMENTS[target]
    verdict = best.t2 if target is None else best.hypotheses[target]
    by = best.decided_by if target is None else best.hypotheses_by.get(target, best.decided_by)
    return Counterexample(best.draw, best.layer, statement, verdict, by, best is not first or shrunk)


def assert_conforms(module, **kwargs) -> ConformanceReport:
    """:func:`check_attention`, raising :class:`ConformanceError` (an ``AssertionError``) with the
    table and the counterexample unless the verdict is *conforms*. A conforming module's relative T2
    residuals (``‖Y − Ŷ‖_F / S``) are recorded in the theorem table (``theory.report``) of a running
    pytest session."""
    rep = check_attention(module, **kwargs)
    if rep.conforms:  # a module that is not the walk is no evidence about T2: nothing is recorded then
        from theory.report import record

        for r in rep.results:
            record("T2", residual=r.t2.residual / max(r.t2.scale, 1e-300))
    if not rep.conforms:
        raise ConformanceError(
            f"{rep.module} is not the connection walk it claims to be ({rep.verdict})\n{rep.table()}", rep
        )
    return rep
