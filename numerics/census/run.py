r"""The census: every attention class of the installed transformers checked as a connection walk.

:func:`run_census` (``connwalk census``) enumerates the attention classes **programmatically** —
for every model type of transformers' ``CONFIG_MAPPING_NAMES``, every ``modeling_*.py`` of its
package, every class *defined there* that :func:`numerics.conformance.hf_capture.is_attention_class`
accepts (an ``nn.Module`` subclass, not a ``PreTrainedModel``, whose name ends with ``Attention``:
``LlamaAttention``, ``BertSelfAttention``, ``WhisperAttention``, ``CLIPAttention`` …) — builds the
family's base model (``AutoModel``'s class for the model type, else the first model class of the
family's auto mappings) from a tiny random configuration (:mod:`numerics.census.config`: width 64,
4 heads of 16, 2 kv heads where the family has them, 2 layers, vocabulary 128, images of 32 px),
takes the first instance of the class inside it, and runs the conformance kit
(:func:`numerics.conformance.kit.check_attention`) on it through the attention-interface capture
(:class:`numerics.conformance.hf_capture.CaptureAdapter`; the model runs whole, so the class gets the
inputs its parent gives it), a few seeded draws, in float64 (the shadow precision: a defect of 1e-6
in a score scale is far above float64's rounding).

Each class gets one row (:class:`CensusRow`): ``conforms`` (T2 and its hypotheses: nonnegative,
row-stochastic rows), ``identity holds, hypothesis fails`` (which: e.g. an attention sink — rows over
the real keys sum to less than one), ``fails`` (the kit's counterexample), ``undecided`` (within the
rounding band), or ``declined`` with the reason (the class is not called through the attention
interface, its kernel is not softmax attention, its values or output are not linear maps of the
captured states, the model needs inputs the kit cannot draw, the tiny model cannot be built: the
exception type and its first line). Nothing escapes as a crash: every class runs under a timeout
and an exception guard. Per class, the row also says which of T3's and T5's hypotheses its heads
satisfy on the drawn inputs at random initialisation.
"""

from __future__ import annotations

import datetime as _dt
import gc
import importlib
import json
import math
import os
import signal
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from numerics.census.report import (
    CONFORMS,
    DECLINED,
    FAILS_,
    HYP_FAILS,
    HYPOTHESES,
    STATUSES,
    UNDECIDED_,
    render_markdown,
)
from numerics.errors import ConnwalkError, ParameterError

__all__ = [
    "CensusRow",
    "CensusResult",
    "STATUSES",
    "attention_classes",
    "run_census",
    "verdict_of",
    "check_class",
    "write_census",
]


@dataclass
class CensusRow:
    """One attention class: ``cls``, ``family`` (the model type it was built from), ``module`` (its
    Python module), ``status`` (:data:`STATUSES`), ``reason`` (one line), ``hypotheses`` (name →
    holds / fails / undecided / n/a), ``hypothesis_failures`` (T2's own: nonnegative /
    row-stochastic), ``decided_by``, ``t2_ratio`` (worst residual / bound), ``seconds``."""

    cls: str
    family: str
    module: str
    status: str
    reason: str = ""
    hypotheses: dict = field(default_factory=dict)
    hypothesis_failures: list = field(default_factory=list)
    decided_by: str = ""
    t2_ratio: float = math.nan
    seconds: float = 0.0

    def as_dict(self) -> dict:
        d = asdict(self)
        d["class"] = d.pop("cls")
        if not math.isfinite(d["t2_ratio"]):
            d["t2_ratio"] = None
        return d


@dataclass
class CensusResult:
    """All rows plus the run's facts (``transformers`` version, seed, examples, date, wall time, CPU
    time of this process and its workers, worker count)."""

    rows: list[CensusRow]
    transformers_version: str
    torch_version: str
    seed: int
    examples: int
    date: str
    wall_seconds: float
    cpu_seconds: float
    jobs: int = 1

    def counts(self) -> dict[str, int]:
        return {s: sum(r.status == s for r in self.rows) for s in STATUSES}

    def conforming_families(self) -> list[str]:
        return sorted({r.family for r in self.rows if r.status == CONFORMS})

    def as_dict(self) -> dict:
        meta = {k: v for k, v in asdict(self).items() if k != "rows"}
        return {**meta, "counts": self.counts(), "rows": [r.as_dict() for r in self.rows]}


# --------------------------------------------------------------------------- enumeration
def _modeling_modules(model_type: str) -> list[str]:
    from transformers.models.auto.configuration_auto import model_type_to_module_name

    pkg_name = f"transformers.models.{model_type_to_module_name(model_type)}"
    try:
        pkg = importlib.import_module(pkg_name)
    except Exception:
        return []
    d = os.path.dirname(getattr(pkg, "__file__", "") or "")
    if not d or not os.path.isdir(d):
        return []
    names = sorted(f[:-3] for f in os.listdir(d) if f.startswith("modeling_") and f.endswith(".py"))
    return [f"{pkg_name}.{n}" for n in names if not n.startswith(("modeling_tf_", "modeling_flax_"))]


def attention_classes(model_types=None) -> list[tuple[str, str, str]]:
    """``(model_type, module, class name)`` of every attention class (module docstring's rule), each
    class once (under the first model type whose package defines it); ``model_types`` restricts the
    walk. Modules that do not import give a row with class ``"<module>"`` (declined there)."""
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES

    from numerics.conformance.hf_capture import is_attention_class

    out, seen = [], set()
    for mt in model_types if model_types is not None else list(CONFIG_MAPPING_NAMES):
        for modname in _modeling_modules(mt):
            if modname in seen:
                continue
            seen.add(modname)
            try:
                mod = importlib.import_module(modname)
            except Exception as exc:
                out.append((mt, modname, f"<{modname.rsplit('.', 1)[-1]}: {type(exc).__name__}>"))
                continue
            for name, obj in vars(mod).items():
                if getattr(obj, "__module__", None) == modname and is_attention_class(obj):
                    out.append((mt, modname, name))
    return out


# --------------------------------------------------------------------------- verdicts
def verdict_of(report) -> tuple[str, list[str], str]:
    """``(verdict, hypothesis failures, decided by)`` of a :class:`~numerics.conformance.kit.ConformanceReport`:
    its ``verdict`` / ``hypothesis_failures`` / ``decided_by`` when it has them; otherwise derived
    from ``conforms`` / ``status`` and T3(a) on the drawn rows (a row-stochastic failure there is a
    failed hypothesis of T2)."""
    from numerics.tolerance import FAILS, UNDECIDED

    v = getattr(report, "verdict", None)
    hyp = list(getattr(report, "hypothesis_failures", None) or [])
    by = getattr(report, "decided_by", None) or str(getattr(report, "dtype", ""))
    if v is None:
        if not report.conforms:
            v = "fails"
        else:
            bad = [r for r in report.results if r.t3.get("a stochastic") is not None]
            if any(r.t3["a stochastic"].status == FAILS for r in bad):
                v, hyp = "hypothesis fails", ["row-stochastic"]
            elif report.status == UNDECIDED:
                v = "undecided"
            else:
                v = "conforms"
    return str(v), hyp, by


def _hypotheses(report) -> dict[str, str]:
    from numerics.tolerance import combine

    # T3/T5 are computed on self-attention draws whose T2 hypotheses hold: otherwise not applicable, and why
    why = "n/a (cross-attention)" if all(r.cross for r in report.results) else "n/a (T2's hypotheses fail)"
    out = {}
    for label, kind, key in HYPOTHESES:
        st = [getattr(r, kind)[key].status for r in report.results if key in getattr(r, kind)]
        out[label] = combine(st) if st else why
    return out


def _status_of(report) -> tuple[str, str, list[str], str]:
    v, hyp, by = verdict_of(report)
    ratio = max((r.t2.residual / r.t2.bound for r in report.results if r.t2.bound > 0), default=math.nan)
    if v == "conforms":
        return CONFORMS, f"T2 holds on every draw (worst residual/bound {ratio:.1e})", hyp, by
    if v == "hypothesis fails":
        return HYP_FAILS, f"T2's identity holds; its hypotheses fail: {', '.join(hyp) or '?'}", hyp, by
    if v == "undecided":
        return UNDECIDED_, "T2 undecided within the rounding band on some draw", hyp, by
    cx = getattr(report, "counterexample", None)
    first = str(cx).splitlines() if cx is not None else []
    return FAILS_, " ".join(s.strip() for s in first[:3]) or "T2 fails", hyp, by


# --------------------------------------------------------------------------- one class
class _Timeout(Exception):
    pass


def _alarm(signum, frame):
    raise _Timeout


def _one_line(exc: BaseException) -> str:
    msg = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {msg[0][:200] if msg else ''}".rstrip(": ")


def check_class(model, module, *, family: str, examples: int, seed: int, max_length: int, timeout: float) -> CensusRow:
    """The row of one attention ``module`` (an instance inside ``model``): the kit through the capture
    under a ``timeout`` (seconds) and an exception guard."""
    import torch

    from numerics.conformance.hf_capture import CaptureAdapter, CaptureError
    from numerics.conformance.kit import check_attention

    cls, modname = type(module).__name__, type(module).__module__
    t0 = time.perf_counter()
    row = CensusRow(cls, family, modname, DECLINED)
    old = _arm(timeout)
    try:
        ad = CaptureAdapter(model, [module], name=f"{cls} in {type(model).__name__}")
        try:
            rep = check_attention(module, adapter=ad, examples=examples, seed=seed, max_length=max_length, max_batch=2)
        except CaptureError as exc:
            if "did not run" not in str(exc) or ad.dtype != torch.float64:
                raise
            model.float()  # a kernel without float64 (some MoE / fused kernels): the module's float32 run
            try:
                ad = CaptureAdapter(model, [module], name=f"{cls} in {type(model).__name__}")
                rep = check_attention(
                    module, adapter=ad, examples=examples, seed=seed, max_length=max_length, max_batch=2
                )
            finally:
                model.double()
        row.status, row.reason, row.hypothesis_failures, row.decided_by = _status_of(rep)
        row.hypotheses = _hypotheses(rep)
        row.t2_ratio = max((r.t2.residual / r.t2.bound for r in rep.results if r.t2.bound > 0), default=math.nan)
    except _Timeout:
        row.reason = f"timed out after {timeout:g} s"
    except CaptureError as exc:
        row.reason = str(exc).split(": ", 1)[-1]
    except Exception as exc:  # the kit judges; whatever escapes is stated, never raised
        row.reason = "the kit could not run it: " + _one_line(exc)
    finally:
        _disarm(old)
    row.seconds = time.perf_counter() - t0
    return row


def _arm(seconds: float):
    try:
        old = signal.signal(signal.SIGALRM, _alarm)
    except ValueError:  # not the main thread: no timeout
        return None
    signal.setitimer(signal.ITIMER_REAL, seconds)
    return old


def _disarm(old) -> None:
    if old is None:
        return
    signal.setitimer(signal.ITIMER_REAL, 0)
    signal.signal(signal.SIGALRM, old)


# --------------------------------------------------------------------------- the run
def run_census(
    *,
    model_types=None,
    classes=None,
    examples: int = 2,
    seed: int = 0,
    max_length: int = 6,
    timeout: float = 20.0,
    jobs: int = 1,
    progress=None,
) -> CensusResult:
    """The census (module docstring). ``model_types``: restrict to these model types; ``classes``:
    restrict to these class names; ``examples`` draws per class (seeded by ``seed``); ``timeout``
    seconds per family build and per class; ``jobs`` worker processes (forked; 1: in this process);
    ``progress``: a callable given each finished row (in completion order; the result's rows are
    sorted by family, module, class)."""
    import torch
    import transformers

    for nm, v, lo in (("examples", examples, 1), ("seed", seed, 0), ("max_length", max_length, 1), ("jobs", jobs, 1)):
        if isinstance(v, bool) or not isinstance(v, int) or v < lo:
            raise ParameterError(f"expected an integer ≥ {lo}, got {v!r}", argument=nm)
    if not (isinstance(timeout, (int, float)) and timeout > 0):
        raise ParameterError(f"expected seconds > 0, got {timeout!r}", argument="timeout")
    wall0, cpu0 = time.perf_counter(), time.process_time()
    want = None if classes is None else set(classes)
    todo = [c for c in attention_classes(model_types) if want is None or c[2] in want]
    by_module: dict[str, list[tuple[str, str, str]]] = {}
    for mt, modname, name in todo:
        by_module.setdefault(modname, []).append((mt, modname, name))
    tasks = [(modname, items, examples, seed, max_length, timeout) for modname, items in by_module.items()]
    rows: list[CensusRow] = []
    child0 = _children_cpu()
    for got in _run_tasks(tasks, jobs):
        for row in got:
            rows.append(row)
            if progress is not None:
                progress(row)
    rows.sort(key=lambda r: (r.family, r.module, r.cls))
    return CensusResult(
        rows,
        transformers.__version__,
        torch.__version__.split("+")[0],
        seed,
        examples,
        _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        time.perf_counter() - wall0,
        time.process_time() - cpu0 + _children_cpu() - child0,
        jobs,
    )


def _children_cpu() -> float:
    import resource

    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def _run_tasks(tasks: list, jobs: int):
    """Rows of each task (one modeling module), in ``jobs`` forked worker processes (1: here). A
    worker that dies (a crash inside a kernel) loses nothing else: the tasks it had not finished are
    rerun one per fresh process, and the one that kills its process is declined with that reason."""
    if jobs <= 1:
        for t in tasks:
            yield _module_rows(t)
        return
    import concurrent.futures as cf
    import multiprocessing as mp
    from concurrent.futures.process import BrokenProcessPool

    ctx = mp.get_context("fork")
    left = list(tasks)
    with cf.ProcessPoolExecutor(jobs, mp_context=ctx, initializer=_worker_init) as ex:
        futs = {ex.submit(_module_rows, t): t for t in tasks}
        try:
            for f in cf.as_completed(futs):
                yield f.result()
                left.remove(futs[f])
        except BrokenProcessPool:
            pass
    for t in left:  # only after a worker died: one process per task
        with cf.ProcessPoolExecutor(1, mp_context=ctx, initializer=_worker_init) as ex:
            try:
                yield ex.submit(_module_rows, t).result()
            except BrokenProcessPool:
                modname, items = t[0], t[1]
                yield [
                    CensusRow(name, mt, modname, DECLINED, "the process running it died (a crash inside a kernel)")
                    for mt, _, name in items
                ]


#: address-space limit of a census worker: a family whose tiny model still allocates more fails that
#: allocation (a row saying so) instead of swapping the machine
WORKER_MEMORY = 6 * 2**30


def _worker_init() -> None:
    import resource
    import warnings

    import torch

    try:
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        lim = WORKER_MEMORY if hard == resource.RLIM_INFINITY else min(WORKER_MEMORY, hard)
        resource.setrlimit(resource.RLIMIT_AS, (lim, hard))
    except (ValueError, OSError):  # pragma: no cover - a platform without the limit
        pass

    torch.set_num_threads(1)
    warnings.filterwarnings("ignore")
    try:
        import transformers

        transformers.logging.set_verbosity_error()
    except Exception:  # pragma: no cover
        pass


def _module_rows(task) -> list[CensusRow]:
    """The rows of one modeling module's attention classes: build the tiny model of each model type
    of its package (then as a decoder with cross-attention) until every class has an instance."""
    import torch

    from numerics.census.config import build_tiny

    modname, items, examples, seed, max_length, timeout = task
    rows: list[CensusRow] = []
    mt = items[0][0]
    if items[0][2].startswith("<"):
        return [CensusRow(items[0][2], mt, modname, DECLINED, f"the module does not import ({items[0][2][1:-1]})")]
    types = _model_types_of(modname, mt)
    pending = list(items)
    notes: list[str] = []
    attempts = [(fam, False) for fam in types] + [(types[0], True)]
    for fam, cross in attempts:
        if not pending:
            break
        t0 = time.perf_counter()
        old = _arm(timeout)
        try:
            model = build_tiny(fam, dtype=torch.float64, cross=cross, seed=seed)
        except _Timeout:
            notes.append(f"{fam}: building the tiny model timed out after {timeout:g} s")
            continue
        except Exception as exc:
            if not cross:
                notes.append(
                    f"{fam}: " + (str(exc).split(": ", 1)[-1] if isinstance(exc, ConnwalkError) else _one_line(exc))
                )
            continue
        finally:
            _disarm(old)
        build_s = time.perf_counter() - t0
        left = []
        for mt_, _, name in pending:
            inst = next(
                (m for m in model.modules() if type(m).__name__ == name and type(m).__module__ == modname), None
            )
            if inst is None:
                left.append((mt_, modname, name))
                continue
            row = check_class(
                model, inst, family=fam, examples=examples, seed=seed, max_length=max_length, timeout=timeout
            )
            row.seconds += build_s / max(len(pending), 1)
            rows.append(row)
        if len(left) == len(pending) and not cross:
            notes.append(f"{fam}: {type(model).__name__} holds no instance")
        pending = left
        del model
        gc.collect()
    for mt_, _, name in pending:
        why = "; ".join(notes[:2]) or "no model type of the package builds it"
        rows.append(
            CensusRow(name, mt_, modname, DECLINED, f"not instantiated by a tiny base model of its family ({why})")
        )
    return rows


def _model_types_of(modname: str, first: str) -> list[str]:
    """The model types whose package is ``modname``'s, ``first`` first (a package may serve several)."""
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES, model_type_to_module_name

    pkg = modname.split(".")[2]
    same = [mt for mt in CONFIG_MAPPING_NAMES if model_type_to_module_name(mt) == pkg and mt != first]
    return [first, *same][:4]


def write_census(result: CensusResult, out_dir: str | os.PathLike | None = None, json_path=None) -> list[Path]:
    """Write ``CENSUS.md`` into ``out_dir`` (default: the current directory) and the JSON rows to
    ``json_path`` (when given). Returns the paths written."""
    paths = []
    d = Path(out_dir) if out_dir is not None else Path.cwd()
    d.mkdir(parents=True, exist_ok=True)
    md = d / "CENSUS.md"
    md.write_text(render_markdown(result))
    paths.append(md)
    if json_path is not None:
        p = Path(json_path)
        p.write_text(json.dumps(result.as_dict(), indent=1, ensure_ascii=False) + "\n")
        paths.append(p)
    return paths
