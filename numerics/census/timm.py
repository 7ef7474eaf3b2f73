r"""The timm census (``connwalk census --library timm``): every timm architecture's attention judged by the
conformance kit through the torch capture (:mod:`numerics.conformance.torch_capture`).

**Architectures** (:func:`timm_architectures`): ``timm.list_modules()``, each the module under
``timm.models`` that defines a group of ``timm.list_models(module=...)`` (``vision_transformer``,
``eva``, ``swin_transformer`` …). Per architecture, the **smallest variant** (:func:`smallest_variant`):
the names are ranked by their size words (``test`` < ``atto`` < … < ``tiny`` < ``small`` …), and the
first :data:`PROBE` of them are built on the ``meta`` device and their parameters counted; the fewest
wins. It is built with random initialisation (no download), seeded, shrunk where its ``create_model``
takes it: images of :data:`IMG` px (``img_size``), windows of 4 (``window_size``), and two blocks
(``depth``) for a variant over :data:`BIG` parameters (a hybrid's attention may be in its later blocks);
else at its own sizes. A weight its initialisation leaves all zero is drawn instead (:func:`_no_zero_weights`).

**Attention modules** (:func:`find_attention`): one forward pass of the whole model on a random image
under the torch capture's observer, with every module's first call recorded (its arguments); each
observed attention kernel (``F.scaled_dot_product_attention``, a softmax consumed by ``P @ V``,
``F.multi_head_attention_forward``) belongs to the innermost module holding parameters whose call
contains it. One instance per class is judged: the one whose recorded input has the fewest tokens.
An architecture where no kernel is observed is listed as ``no attention`` (not counted among the
judged).

**Judging** (:class:`CallAdapter`): the module is called alone, in float64, the way the model called
it — a token sequence ``(B, n, C)``, or a grid ``(B, H, W, C)`` / ``(B, C, H, W)`` whose ``H·W`` tokens
are the drawn sequence (the output read back as tokens); its other arguments as recorded (sizes kept,
tensors such as window masks left out: ``None``). Where the module runs only on the token count the
model gave it (windows, relative position tables, grids), the kit draws exactly that many tokens (at
most :data:`MAX_TOKENS`, else declined naming the count). The kit's verdict
(:func:`numerics.census.report.status_of`) is the row's status, as in the transformers census; the
budget, workers and file writing are :mod:`numerics.census.pool`'s.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import math
import re
import time
from typing import Any

import numerics.census.run as census_run
from numerics.census.judge import fill_row, one_line
from numerics.census.pool import Clock, Timeout, arm, disarm, run_tasks, timed_out
from numerics.census.report import DECLINED, TIMED_OUT
from numerics.census.timm_report import NO_ATTENTION, TimmCensusResult, TimmRow
from numerics.errors import ParameterError

__all__ = [
    "timm_architectures",
    "smallest_variant",
    "find_attention",
    "call_adapter",
    "CALL_ADAPTER",
    "run_timm_census",
]

#: images of this size where the variant's ``create_model`` takes ``img_size``
IMG = 64
#: parameters above which a variant is built with two blocks (``depth=2``) where it takes that
BIG = 50_000_000
#: variants probed on the meta device for the smallest (the first by the size words of their names)
PROBE = 4
#: the most tokens a module that runs only on its own token count is judged on
MAX_TOKENS = 256
_SIZES = "test atto femto pico nano xxtiny xxs xx xtiny xs x tiny ti t mini small s b0 m0 s0 t0".split()  # noqa: SIM905


# --------------------------------------------------------------------------- enumeration
def timm_architectures(names=None) -> list[tuple[str, list[str]]]:
    """``(architecture, its model names)`` for every ``timm.list_modules()`` entry (sorted), or for the
    architectures ``names`` (a list; unknown ones raise :class:`ParameterError` naming
    ``architectures``)."""
    import timm

    import numerics  # noqa: F401  (torchvision beside the CPU torch: numerics.vision_env)

    mods = sorted(timm.list_modules())
    if names is not None:
        unknown = sorted(set(names) - set(mods))
        if unknown:
            raise ParameterError(
                f"no timm architecture {', '.join(map(repr, unknown))} (timm {timm.__version__})",
                argument="architectures",
            )
        mods = [m for m in mods if m in set(names)]
    return [(m, sorted(timm.list_models(module=m))) for m in mods]


def _size_rank(name: str) -> tuple:
    toks = re.split(r"[_.\-]", name.lower())
    rank = min((_SIZES.index(t) for t in toks if t in _SIZES), default=len(_SIZES))
    return rank, len(name), name


def smallest_variant(names: list[str]) -> str:
    """The model of ``names`` with the fewest parameters among the first :data:`PROBE` by size words
    (each built on the ``meta`` device; one that does not build there is passed over)."""
    import timm
    import torch

    best: tuple[int, str] | None = None
    for nm in sorted(names, key=_size_rank)[:PROBE]:
        try:
            with torch.device("meta"):
                n = sum(p.numel() for p in timm.create_model(nm, pretrained=False).parameters())
        except Exception:
            continue
        if best is None or n < best[0]:
            best = (n, nm)
    return best[1] if best is not None else sorted(names, key=_size_rank)[0]


def _build(name: str, seed: int):
    """The variant with random weights, eval mode, and an input image: at :data:`IMG` px where
    ``create_model`` takes ``img_size`` and the model runs on it, else at its own input size."""
    import timm
    import torch

    last: Exception | None = None
    with torch.device("meta"):  # two blocks only for a large model: a hybrid's later blocks may be its attention
        big = sum(p.numel() for p in timm.create_model(name, pretrained=False).parameters()) > BIG
    depths = ({"depth": 2}, {}) if big else ({},)
    small: list[dict[str, Any]] = [{**d, **w} for d in depths for w in ({"window_size": 4}, {})]
    for kw in [{"img_size": IMG, **k} for k in small] + small:
        torch.manual_seed(seed)
        try:
            model = _no_zero_weights(timm.create_model(name, pretrained=False, **kw).eval(), seed)
            c, h, w = model.pretrained_cfg.get("input_size", (3, 224, 224))
            if "img_size" in kw:
                h = w = IMG
            x = torch.randn(1, c, h, w, generator=torch.Generator().manual_seed(seed))
            with torch.no_grad():
                model(x)
            return model, x
        except Exception as exc:
            last = exc
    assert last is not None
    raise last


def _no_zero_weights(model, seed: int):
    """``model`` with every weight that its initialisation leaves all zero (a residual branch's last norm or
    projection, zero-initialised so that a block starts as the identity: LeViT, …) drawn instead from
    ``N(0, 0.02)``: a zero output projection makes every module's output zero, and T2's identity vacuous."""
    import torch

    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("weight") and p.numel() and not p.any():
                p.copy_(0.02 * torch.randn(p.shape, generator=g, dtype=p.dtype))
    return model


# --------------------------------------------------------------------------- discovery
def _tokens(args) -> int:
    x = args[0] if args and hasattr(args[0], "ndim") else None
    if x is None or x.ndim not in (3, 4):
        return 1 << 30
    return int(x.shape[1]) if x.ndim == 3 else int(min(x.shape[1] * x.shape[2], x.shape[2] * x.shape[3]))


def find_attention(model, x) -> dict[str, tuple]:
    """``{class qualname: (module, args, kwargs)}``: the attention modules of one forward pass of
    ``model`` on ``x`` (module docstring), one per class (its instance whose first input has the fewest
    tokens), with the arguments of that instance's first call."""
    import torch

    from numerics.conformance.torch_capture import Observer

    class Finder(Observer):  # heads of any leading axis (windows, batch · heads): the kernels are only located
        def _heads(self, t):
            if t.ndim >= 4:
                return t.reshape(-1, *t.shape[-3:])
            return t[:, None] if t.ndim == 3 else t[None, None] if t.ndim == 2 else None

    obs = Finder(int(x.shape[0]))
    calls: dict[int, list] = {}

    def pre(mod, args, kwargs):
        if id(mod) not in calls:
            calls[id(mod)] = [mod, obs.tick(), -1, args, kwargs]

    def post(mod, args, kwargs, out):
        c = calls.get(id(mod))
        if c is not None and c[2] < 0:
            c[2] = obs.tick()

    handles = []
    for m in model.modules():
        handles += [m.register_forward_pre_hook(pre, with_kwargs=True), m.register_forward_hook(post, with_kwargs=True)]
    try:
        with obs, torch.no_grad():
            model(x)
    finally:
        for h in handles:
            h.remove()
    holders = [c for c in calls.values() if c[2] > 0 and next(c[0].parameters(), None) is not None]
    found: dict[str, tuple] = {}
    for k in obs.kernels:
        inner = max((c for c in holders if c[1] < k.seq < c[2]), key=lambda c: c[1], default=None)
        if inner is None:
            continue
        key = type(inner[0]).__qualname__
        if key not in found or _tokens(inner[3]) < _tokens(found[key][1]):
            found[key] = (inner[0], inner[3], inner[4])
    return found


# --------------------------------------------------------------------------- the adapter
def call_adapter(module, args: tuple, kwargs: dict, name: str):
    """A ``CallAdapter`` (:data:`CALL_ADAPTER`; its class is made on first use: this module imports no
    torch)."""
    return _adapter_class()(module, args, kwargs, name)


@functools.cache
def _adapter_class():
    from numerics.conformance.protocol import Adapter

    class CallAdapter(Adapter):
        __doc__ = CALL_ADAPTER
        __init__ = _init
        extract = _extract
        _grid_in = _grid_in
        _tokens_out = _tokens_out

    return CallAdapter


#: the adapter of :func:`call_adapter`
CALL_ADAPTER = """``module`` called alone as the model called it (module docstring): ``args`` / ``kwargs`` of its
    recorded call, the first a token sequence or a grid; ``name`` for messages. The layout and whether
    the token count is free are found by dry runs; a module that runs on none raises
    :class:`~numerics.conformance.torch_capture.TorchCaptureError` naming the input it needs."""


def _init(self, module, args: tuple, kwargs: dict, name: str) -> None:
    import torch

    from numerics.conformance.protocol import Draw, dtype_of
    from numerics.conformance.torch_capture import TorchCaptureError

    self.module, self.name, self.dtype = module, f"torch capture of {name}", dtype_of(module)
    x = args[0] if args and isinstance(args[0], torch.Tensor) else None
    if x is None or x.ndim not in (3, 4):
        got = tuple(x.shape) if x is not None else type(args[0]).__name__ if args else "no argument"
        raise TorchCaptureError(
            f"{name} is called on {got}: the kit draws token sequences (B, n, C) or grids of them",
            argument="module",
        )

    def given(keep: bool):  # its other arguments: sizes as recorded; tensors as recorded (keep) or None
        def one(a):
            if not isinstance(a, torch.Tensor):
                return a
            return (a.to(self.dtype) if a.is_floating_point() else a) if keep else None

        return tuple(one(a) for a in args[1:]), {k: one(v) for k, v in kwargs.items()}

    layouts: list[tuple[str, int, tuple[int, ...] | None]]
    if x.ndim == 3:
        layouts = [("tokens", int(x.shape[2]), None)]
    else:
        layouts = [("bhwc", int(x.shape[3]), tuple(x.shape[1:3])), ("bchw", int(x.shape[1]), tuple(x.shape[2:]))]
        b_, d1, d2, d3 = (int(v) for v in x.shape)
        square = d2 == d3 != d1 or (d1 != d2 and _in_width(module) == d1 != d3)  # a square (H, W) last, or
        if square and not (d1 == d2 != d3):  # its first layer reads channels first: (B, C, H, W) first
            layouts.reverse()
    fixed = int(x.shape[1])  # the token count of a sequence (a grid's is H·W)
    # (layout, width, grid, tokens, keep): with its recorded tensors (rotary tables, masks) on its own
    # token count and batch 1 first, then without them on a free length, then on its own token count
    tensors = any(isinstance(a, torch.Tensor) for a in (*args[1:], *kwargs.values()))
    tries = []
    for layout, width, grid in layouts:
        n = int(grid[0] * grid[1]) if grid else fixed
        if tensors and x.shape[0] == 1:
            tries.append((layout, width, grid, n, True))
        tries += [(layout, width, grid, t, False) for t in ([3, n] if layout == "tokens" and n != 3 else [n])]
    errors, ran = [], None
    for cand in tries:
        _set(self, cand, given)
        try:
            self.extract(Draw(batch=1, n=cand[3], m=cand[3], pad=(0, 0), causal=False, seed=0, scale=1.0))
            ran = None
            break
        except TorchCaptureError:  # it ran; the kit will say why it cannot be read
            ran = ran or cand
        except Exception as exc:
            errors.append(f"{cand[0]} {cand[3]} tokens: {one_line(exc)}")
    else:
        if ran is None:
            raise TorchCaptureError(
                f"{name} does not run alone on drawn {'grids' if x.ndim == 4 else 'tokens'} of the shape its model "
                f"gave it ({tuple(x.shape)}): {errors[-1] if errors else '?'}",
                argument="module",
            )
        _set(self, ran, given)
    if self.max_length is not None and self.max_length > MAX_TOKENS:
        raise TorchCaptureError(
            f"{name} runs only on the {self.max_length} tokens its model gave it ({tuple(x.shape)}), more than "
            f"the {MAX_TOKENS} the census judges",
            argument="module",
        )


def _set(self, cand, given) -> None:
    layout, self.d_model, self.grid, t, keep = cand
    self.layout, self.max_batch = layout, 1 if keep else 2
    self.max_length = None if (layout == "tokens" and t == 3 and not keep) else t
    self.rest, self.kw = given(keep)


def _in_width(module) -> int | None:
    """The input width of ``module``'s first layer with weights (a linear's, a convolution's), or None."""
    for m in module.modules():
        for attr in ("in_features", "in_channels"):
            if isinstance(getattr(m, attr, None), int):
                return int(getattr(m, attr))
    return None


def _grid_in(self, X):
    if self.layout == "tokens":
        return X
    h, w = self.grid
    g = X.reshape(X.shape[0], h, w, X.shape[2])
    return g if self.layout == "bhwc" else g.permute(0, 3, 1, 2).contiguous()


def _tokens_out(self, y):
    import torch

    if not isinstance(y, torch.Tensor) or y.ndim != 4 or self.layout == "tokens":
        return y
    if self.layout == "bchw":
        y = y.permute(0, 2, 3, 1)
    return y.reshape(y.shape[0], y.shape[1] * y.shape[2], y.shape[3])


def _extract(self, draw):
    import torch

    from numerics.conformance.protocol import EvalMode
    from numerics.conformance.torch_adapter import read_run
    from numerics.conformance.torch_capture import observe

    X = draw.randn(draw.batch, draw.n, self.d_model, dtype=self.dtype)
    with EvalMode(self.module), torch.no_grad():
        run = observe(self.module, self._grid_in(X), *self.rest, **self.kw)
    call = run.obs.calls.get(id(self.module))
    if call is not None:
        out = call.output
        call.output = (self._tokens_out(out[0]), *out[1:]) if isinstance(out, (tuple, list)) else self._tokens_out(out)
    # queries fewer than the tokens, keys all of them (class attention: the class token's query): read as
    # cross-attention of those queries over the drawn tokens
    ks = [k for k in run.obs.kernels if call is not None and call.start < k.seq < call.end]
    n = draw.n
    if len(ks) == 1 and ks[0].A.shape[0] == draw.batch and ks[0].A.shape[3] == n and ks[0].A.shape[2] < n:
        n = int(ks[0].A.shape[2])
    return [read_run(run, self.module, draw.batch, n, type(self.module).__name__)]


# --------------------------------------------------------------------------- one architecture
def _budget(timeout: float):
    return arm(timeout, census_run.WALL_FACTOR)


def _judge_one(module, args, kwargs, row: TimmRow, *, examples: int, seed: int) -> None:
    from numerics.conformance.hf_capture import CaptureError
    from numerics.conformance.kit import check_attention

    try:
        ad = call_adapter(module, args, kwargs, f"{row.cls} in {row.variant}")
        ml = ad.max_length or 6
        rep = check_attention(
            module,
            adapter=ad,
            examples=examples,
            seed=seed,
            max_length=ml,
            min_length=1 if ad.max_length is None else ml,
            max_batch=ad.max_batch,
        )
        fill_row(row, rep)
    except CaptureError as exc:
        row.reason = str(exc).split(": ", 1)[-1]
    except Exception as exc:  # the kit judges; whatever escapes is stated, never raised
        row.reason = "the kit could not run it: " + one_line(exc)


def _arch_rows(task) -> list[TimmRow]:
    """The rows of one architecture (module docstring): its smallest variant built and run once, then
    each attention class judged, each step under the budget of ``timeout`` CPU seconds."""
    arch, names, examples, seed, timeout = task
    modname = f"timm.models.{arch}"
    t0 = time.perf_counter()
    variant, step = "", "build or run on a random image"
    armed = _budget(timeout)
    try:
        try:
            variant = smallest_variant(names)
            model, x = _build(variant, seed)
            step = "run under the torch capture"
            found = find_attention(model, x)
            model.double()
        finally:
            disarm(armed)
    except Timeout as exc:
        what = f" building and running {variant or 'its smallest variant'}"
        return [
            TimmRow(
                "", arch, modname, TIMED_OUT, timed_out(exc, timeout, census_run.WALL_FACTOR, what), variant=variant
            )
        ]
    except Exception as exc:
        why = f"{variant or 'its smallest variant'} does not {step}: {one_line(exc)}"
        return [TimmRow("", arch, modname, DECLINED, why, variant=variant, seconds=time.perf_counter() - t0)]
    build_s = time.perf_counter() - t0
    if not found:
        why = f"{variant}: no softmax attention kernel observed in a forward pass"
        return [TimmRow("", arch, modname, NO_ATTENTION, why, variant=variant, seconds=build_s)]
    rows = []
    for key, (mod, args, kwargs) in sorted(found.items()):
        t1 = time.perf_counter()
        row = TimmRow(key, arch, type(mod).__module__, DECLINED, variant=variant)
        armed = _budget(timeout)
        try:
            try:
                _judge_one(mod, args, kwargs, row, examples=examples, seed=seed)
            finally:
                disarm(armed)
        except Timeout as exc:
            row = TimmRow(
                key, arch, row.module, TIMED_OUT, timed_out(exc, timeout, census_run.WALL_FACTOR), variant=variant
            )
        row.seconds = time.perf_counter() - t1 + build_s / len(found)
        rows.append(row)
    del model
    gc.collect()
    return rows


def _lost(task) -> list[TimmRow]:
    return [
        TimmRow(
            "", task[0], f"timm.models.{task[0]}", DECLINED, "the process running it died (a crash inside a kernel)"
        )
    ]


# --------------------------------------------------------------------------- the run
def run_timm_census(
    *, architectures=None, examples: int = 2, seed: int = 0, timeout: float = 60.0, jobs: int = 1, progress=None
) -> TimmCensusResult:
    """The timm census (module docstring). ``architectures``: only these (a list of ``timm.list_modules()``
    names); ``examples`` draws per class; ``timeout`` CPU seconds for an architecture's build and for
    each class (an architecture with a row that runs out is retried once alone, after the others);
    ``jobs`` forked worker processes (1: here); ``progress`` is given each row as it is final. Bad
    arguments raise :class:`ParameterError` naming them before any architecture is built."""
    _check_numbers(examples, seed, timeout, jobs)
    from numerics.census.config import name_list

    want = name_list(architectures, "architectures")
    import timm
    import torch

    clock = Clock()
    tasks = [(a, names, examples, seed, timeout) for a, names in timm_architectures(want)]
    rows: list[TimmRow] = []
    again = []

    def take(got, final: bool) -> None:
        if not final and any(r.status == TIMED_OUT for r in got):
            again.append(got[0].family)
            return
        for row in got:
            if final and row.status == TIMED_OUT:
                row.reason += " (and again when retried alone)"
            rows.append(row)
            if progress is not None:
                progress(row)

    with contextlib.closing(run_tasks(tasks, jobs, _arch_rows, _lost)) as done:
        for got in done:
            take(got, final=False)
    for task in [t for t in tasks if t[0] in set(again)]:
        with contextlib.closing(run_tasks([task], jobs, _arch_rows, _lost)) as done:
            for got in done:
                take(got, final=True)
    rows.sort(key=lambda r: (r.family, r.cls))
    return TimmCensusResult(
        rows,
        timm.__version__,
        torch.__version__.split("+")[0],
        seed,
        examples,
        *clock.facts(),
        jobs,
    )


def _check_numbers(examples, seed, timeout, jobs) -> None:
    for nm, v, lo in (("examples", examples, 1), ("seed", seed, 0), ("jobs", jobs, 1)):
        if isinstance(v, bool) or not isinstance(v, int) or v < lo:
            raise ParameterError(f"expected an integer ≥ {lo}, got {v!r}", argument=nm)
    if jobs > census_run.max_jobs():
        raise ParameterError(
            f"at most {census_run.max_jobs()} (the CPUs this process may run on), got {jobs}", argument="jobs"
        )
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not (0 < timeout < math.inf):
        raise ParameterError(f"expected CPU seconds, a finite number > 0, got {timeout!r}", argument="timeout")
