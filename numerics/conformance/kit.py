r"""Conformance kit: is *this* attention module the connection walk it claims to be (THEOREMS.md T2)?

One call, on any attention ``nn.Module``::

    from numerics.conformance.kit import check_attention, assert_conforms

    report = check_attention(module)          # a ConformanceReport: .verdict, .conforms, .table(), .as_dict()
    print(report.table())
    assert_conforms(module)                   # in a test: AssertionError with the counterexample

**The contract.** The module is run in eval mode (``module.eval()`` for the call, its training flag
restored after): dropout is off, as at inference. *Trusted as given*: the attention ``A`` the module
(or its adapter) reports and the factors it claims (``W_O``, ``W_V``, biases, read from its
parameters). *Verified*, on every draw: T2's hypotheses on that ``A`` and T2's identity between the
module's own output and the walk those factors make — so a module that reports one ``A`` and uses
another, or claims one ``W_O`` and applies another, fails; a module that uses and reports an ``A``
that is not a walk fails a hypothesis.

What it does, per Hypothesis draw (seeded: ``seed``; ``examples`` draws; sizes ``B ≤ max_batch``,
``n ≤ max_length``, right key padding where the module takes a mask, a causal mask where it takes
one, an input scale; the tokens themselves come from a seeded generator, so a shrunk draw is a
small, reproducible input):

1. **Extraction** by an adapter: the module's own output ``Y`` on the draw, the per-head attention
   ``A^h`` it used ``(B, H, n, m)``, the transport factors ``W_O^h`` ``(d_out, d_h)``, ``W_V^h``
   ``(d_h, d_v)`` and value / output biases it *claims*, and the value inputs ``X``. Whatever the
   module raises becomes an :class:`ExtractionError` naming it; an ``A`` that is not of this call's
   shape (kept from another call) is a T2 failure with its counterexample.
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
   stands. Each row says which run decided; ``report.shadow`` says why there was no shadow (a float64
   module, a copy that raised, a module over :data:`~numerics.conformance.protocol.SHADOW_MAX_PARAMETERS`).
   The hypotheses keep the module's own dtype's rounding in both runs.
5. **T3's hypotheses** on the walk of the real (unpadded) tokens of the batch row holding the
   worst T2 token (self-attention with ``d_out = d_v`` only): (a) stochastic, (b) reversible with a
   positive ``π``, (c) metric-compatible; **T5's** per head (full support, reversible, ``T_h`` an
   orthogonal involution). Reported, never required: they are hypotheses of other theorems; not
   computed where T2's hypotheses fail (the attention is then no walk).

**The verdict** (``report.verdict``): *conforms* (every hypothesis and the identity hold), *hypothesis
fails* (the identity holds, a T2 hypothesis fails: ``report.hypothesis_failures`` names it), *fails*
(the identity fails), *undecided* (a decision within its rounding band); ``report.decided_by`` is
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
``adapter=`` any :class:`Adapter`.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, field

import torch

from numerics.conformance.adapters import (
    HFModelAdapter,
    NotAttentionError,
    adapter_for,
)
from numerics.conformance.bounds import (
    caller_signals,
    check_adapter,
    check_counts,
    check_draw_memory,
    check_module_data,
    validate_draw,
)
from numerics.conformance.checks import (
    HYPOTHESES,
    HYPOTHESIS_STATEMENTS,
    T2_STATEMENT,
    Verdict,
    coarser,
    merge,
    stale,
    stored_precision,
    t2_hypotheses,
    t2_identity,
    t3_t5,
)
from numerics.conformance.protocol import (
    Adapter,
    Draw,
    Extraction,
    ExtractionError,
    check_finite_parameters,
    draw_strategy,
    extract_checked,
)
from numerics.errors import ConnwalkError, ShapeError
from numerics.tolerance import FAILS, HOLDS, UNDECIDED

__all__ = [
    "Adapter",
    "Draw",
    "Extraction",
    "ExtractionError",
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

#: the report's verdicts: T2 and its hypotheses hold / the identity holds but a hypothesis fails /
#: the identity fails / some decision lies within its rounding band
VERDICTS = ("conforms", "hypothesis fails", "fails", "undecided")
#: ``decided_by`` of a verdict decided by the float64 shadow run
SHADOW = "float64 shadow"


class ConformanceError(AssertionError):
    """Raised by :func:`assert_conforms`; ``.report`` is the :class:`ConformanceReport`."""

    def __init__(self, message: str, report: ConformanceReport) -> None:
        super().__init__(message)
        self.report = report


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

    def replay(self) -> str:
        """A snippet that runs this draw again on ``module`` (the same adapter, seed and tokens)."""
        return f"from numerics.conformance.kit import Draw, check_draw\ncheck_draw(module, {self.draw!r})"

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
        return "undecided" if (UNDECIDED in seen or not self.results) else "conforms"

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
        return "T2 " + {"conforms": "HOLDS", "fails": "FAILS"}.get(v, "UNDECIDED")

    def table(self) -> str:
        shadow = "float64 shadow" if not self.shadow else f"no float64 shadow: {self.shadow}"
        head = (
            f"conformance of {self.module} [{self.adapter}, {self.dtype}]: {self.headline()}, decided by "
            f"{self.decided_by} ({len({r.index for r in self.results})} draws, seed {self.seed}, "
            f"{self.seconds:.1f} s; {shadow})"
        )
        cols = (
            f"{'#':>3} {'layer':>5}  {'input':<30} {'A≥0':<10}{'Σ_j A=1':<10}{'T2':<10}{'resid/bound':>11} "
            f"{'by':<8} {'T3 (a) stoch':<13}{'(b) rev':<10}{'(c) metric':<11}{'T5 softmax':<12}{'reversible':<12}"
            f"{'involution':<12}"
        )
        lines = [head, cols]
        for r in self.results:
            ratio = r.t2.residual / r.t2.bound if r.t2.bound > 0 else float("inf")
            inp = r.draw.describe().split(" seed=")[0]
            hyp = "".join(f"{r.hypotheses[k].status if k in r.hypotheses else '-':<10}" for k in HYPOTHESES)
            by = "f64" if r.decided_by == SHADOW else r.decided_by
            row = f"{r.index:>3} {r.layer or '-':>5}  {inp:<30} {hyp}{r.t2.status:<10}{ratio:>11.2e} {by:<8} "
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


# --------------------------------------------------------------------------- one draw, judged
@dataclass
class _Judged:
    ex: Extraction
    result: DrawResult
    loc: tuple[int, int]
    stale: bool


class _Judge:
    """Runs and judges draws: the module's own-dtype run, then (where there is one) its float64 shadow
    on the same draw; a shadow that raises is dropped, with the reason, for the rest of the check."""

    def __init__(self, ad: Adapter, name: str, shadow: bool) -> None:
        self.ad, self.name = ad, name
        self.dtype_name = str(ad.dtype).replace("torch.", "")
        self.twin, self.note = ad.shadow() if shadow else (None, "shadow=False")

    def _one(self, ex: Extraction, d: Draw, hdt: torch.dtype):
        v = stale(ex, d.batch, d.n, d.m)
        if v is not None:
            return v, {}, (0, 0), True
        ex.validate()
        try:  # judged on the CPU, whatever device the module ran on
            for f in ("output", "A", "W_O", "W_V", "values", "b_V", "b_O", "key_mask"):
                t = getattr(ex, f)
                if isinstance(t, torch.Tensor):
                    setattr(ex, f, t.detach().cpu())
            hyp = t2_hypotheses(ex, hdt)
            v, loc = t2_identity(ex)
        except ConnwalkError:
            raise
        except Exception as exc:  # e.g. a key_mask of another shape, a non-numeric tensor
            raise ShapeError(
                f"{self.name}'s extraction cannot be checked: {type(exc).__name__}: {exc} (on input {d.describe()})",
                argument="module",
            ) from exc
        return v, hyp, loc, False

    def __call__(self, d: Draw, index: int = 0) -> list[_Judged]:
        native = extract_checked(self.ad, d, self.name)
        hdts = [coarser(self.ad.dtype, ex.attention_dtype, _precision(ex)) for ex in native]
        judged = [self._one(ex, d, hdt) for ex, hdt in zip(native, hdts)]
        shadowed = None
        if self.twin is not None:
            try:
                twins = self.twin.extract(d)
                if not isinstance(twins, list) or len(twins) != len(native):
                    raise ShapeError("the float64 copy's extraction has another number of layers", argument="module")
                shadowed = [self._one(t, d, hdt) for t, hdt in zip(twins, hdts)]
            except Exception as exc:  # the copy, not the module: no shadow from here on, and why
                self.twin = None
                self.note = f"the float64 copy raised {type(exc).__name__}: {exc} (on input {d.describe()})"
        out = []
        for k, (ex, (v, hyp, loc, is_stale)) in enumerate(zip(native, judged)):
            by = self.dtype_name
            hyp_by = dict.fromkeys(hyp, by)
            if shadowed is not None:
                sv, shyp, sloc, s_stale = shadowed[k]
                v, by = merge(v, sv, self.dtype_name)
                loc = sloc if by == SHADOW else loc
                is_stale = is_stale or s_stale
                if hyp and shyp:
                    pairs = {h: merge(hyp[h], shyp[h], self.dtype_name) for h in hyp}
                    hyp, hyp_by = {h: p[0] for h, p in pairs.items()}, {h: p[1] for h, p in pairs.items()}
            r = DrawResult(index, d, ex.layer, v, cross=not ex.self_attention, hypotheses=hyp, decided_by=by)
            r.hypotheses_by = hyp_by
            out.append(_Judged(ex, r, loc, is_stale))
        return out


def _precision(ex: Extraction) -> torch.dtype | None:
    return stored_precision(ex.A.detach()) if isinstance(ex.A, torch.Tensor) else None


def check_draw(module, draw: Draw, *, adapter: Adapter | None = None, layers=None, shadow: bool = True):
    """Judge one :class:`Draw` (a counterexample's, to replay it): the :class:`DrawResult` of each
    extracted layer (T2's hypotheses and identity, which run decided; no T3/T5). A draw that is no
    input of the module (:func:`numerics.conformance.bounds.validate_draw`) raises a typed error naming
    its field (``draw.pad``, ``draw.scale``, ...) before the module runs."""
    check_adapter(adapter, layers)
    check_module_data(module)
    ad = adapter if adapter is not None else adapter_for(module, layers=layers)
    validate_draw(draw, ad)
    check_draw_memory(module, ad, draw.batch, draw.n, draw.m, argument="draw.n")
    name = module.name if isinstance(module, Adapter) else type(module).__name__
    with caller_signals():
        return [j.result for j in _Judge(ad, name, shadow)(draw)]


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
) -> ConformanceReport:
    """Check ``module`` against T2 — its hypotheses, then its identity — on ``examples`` seeded
    Hypothesis draws (module docstring); ``hypotheses``: also report T3/T5's hypotheses per draw;
    ``layers``: for a whole Hugging Face model, the layer indices to check (default all);
    ``shadow``: also run a float64 copy of the module on the same draws (default True). Returns a
    :class:`ConformanceReport`; bad arguments raise :class:`~numerics.errors.ParameterError` naming
    them, an unknown module :class:`NotAttentionError`, a module that raises while it is run
    :class:`ExtractionError` naming ``module``. ``examples`` is at most
    :data:`~numerics.conformance.bounds.MAX_EXAMPLES`; the largest draw's attention is held against the
    memory budget before anything is allocated (:class:`~numerics.errors.MemoryBudgetError` naming
    ``max_length``); a module on the meta device is refused naming ``module``; what a caller's signal
    handler raises while the check runs (a ``SIGALRM`` timeout) reaches the caller unchanged
    (:func:`~numerics.conformance.bounds.caller_signals`)."""
    check_counts(examples=examples, max_batch=max_batch, max_length=max_length, seed=seed)
    check_adapter(adapter, layers)
    check_module_data(module)
    check_finite_parameters(module)
    ad = adapter if adapter is not None else adapter_for(module, layers=layers)
    if ad.max_length is not None:
        max_length = min(max_length, int(ad.max_length))
    check_draw_memory(module, ad, max_batch, max_length, argument="max_length")
    with caller_signals():
        return _check(module, ad, examples, seed, max_batch, max_length, masks, hypotheses, shadow)


def _check(module, ad: Adapter, examples, seed, max_batch, max_length, masks, hypotheses, shadow) -> ConformanceReport:
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as hseed

    name = module.name if isinstance(module, Adapter) else type(module).__name__
    t0 = time.perf_counter()
    judge = _Judge(ad, name, shadow)
    results: list[DrawResult] = []
    errors: list[BaseException] = []
    strategy = draw_strategy(ad, max_batch, max_length, masks)
    common = dict(database=None, deadline=None, suppress_health_check=list(HealthCheck), derandomize=False)

    @hseed(seed)
    @settings(max_examples=examples, phases=[Phase.generate], report_multiple_bugs=False, **common)  # type: ignore[arg-type]
    @given(strategy)
    def sweep(d: Draw) -> None:
        if errors:  # the first error ends the check (below, outside Hypothesis: no replay, no Flaky)
            return
        k = len({r.index for r in results})
        try:
            for j in judge(d, k):
                if hypotheses and j.ex.self_attention and not j.stale and not j.result.failed_hypotheses():
                    try:
                        j.result.t3, j.result.t5 = t3_t5(j.ex, j.loc[0])
                    except Exception as exc:  # reported, never required: a check that cannot run says why
                        why = Verdict(UNDECIDED, float("nan"), float("nan"), 0.0, f"not computed: {exc}")
                        j.result.t3 = dict.fromkeys(("a stochastic", "b reversible", "c metric"), why)
                        j.result.t5 = dict.fromkeys(("softmax", "reversible", "involution"), why)
                results.append(j.result)
        except Exception as exc:
            errors.append(exc)

    sweep()
    if errors:
        raise errors[0]
    rep = ConformanceReport(name, ad.name, judge.dtype_name, results, None, 0.0, seed, judge.note)
    if rep.verdict in ("fails", "hypothesis fails"):
        target = None if rep.verdict == "fails" else rep.hypothesis_failures[0]
        rep.counterexample = _shrink(judge, strategy, target, results, max(examples, 50), seed, common)
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
