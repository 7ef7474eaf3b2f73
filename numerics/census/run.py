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
inputs its parent gives it, and its own kernel runs, observed: the module's own output is judged against
the walk of the literal A of what the kernel received), a few seeded draws, in float64 (the shadow precision: a defect of 1e-6
in a score scale is far above float64's rounding).

Each class gets one row (:class:`CensusRow`): ``conforms`` (T2 and its hypotheses: nonnegative,
row-stochastic rows), ``identity holds, hypothesis fails`` (which: e.g. an attention sink — rows over
the real keys sum to less than one), ``fails`` (the kit's counterexample), ``undecided`` (within the
rounding band), or ``declined`` with the reason (the class is not called through the attention
interface, its kernel is not softmax attention, its values or output are not linear maps of the
captured states, the model needs inputs the kit cannot draw, the tiny model cannot be built: the
exception type and its first line), or ``timed out``. Nothing escapes as a crash: every class (and
every family build) runs under an exception guard and a budget of CPU time (``timeout`` seconds of the
process's CPU time, every thread's, so that a loaded machine does not change a row; a class blocked
without using CPU is stopped after :data:`WALL_FACTOR` times that in wall time); a class that uses up
its budget is retried once alone, after the others, before its row says ``timed out``. Per class, the
row also says which of T3's and T5's hypotheses its heads satisfy on the drawn inputs at random
initialisation.

Stopping: an exception in the caller's thread while workers run (``KeyboardInterrupt``, the
``SystemExit`` of a SIGTERM handler) kills the workers at once, and a worker dies with its parent
process (``PR_SET_PDEATHSIG`` on Linux, a watchdog thread elsewhere). :func:`write_census` writes each
file through a temporary file in the same directory (``os.replace``): a file is whole or not there.
"""

from __future__ import annotations

import contextlib
import gc
import json
import math
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from numerics.census.config import attention_classes, name_list
from numerics.census.judge import judge as _judge
from numerics.census.judge import one_line as _one_line
from numerics.census.pool import Clock, arm, max_jobs, run_tasks, timed_out, write_files
from numerics.census.pool import Timeout as _Timeout
from numerics.census.pool import disarm as _disarm
from numerics.census.report import (
    CONFORMS,
    DECLINED,
    STATUSES,
    TIMED_OUT,
    render_markdown,
    verdict_of,
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
    "max_jobs",
    "WALL_FACTOR",
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


# --------------------------------------------------------------------------- one class
#: a class (or a family build) that uses no CPU (blocked on a lock, asleep) is stopped after this many
#: times its CPU budget in wall time
WALL_FACTOR = 10


def _arm(seconds: float):
    """The budget of one class or build (:func:`numerics.census.pool.arm`), with this module's
    :data:`WALL_FACTOR`."""
    return arm(seconds, WALL_FACTOR)


def _timed_out(exc: _Timeout, timeout: float, what: str = "") -> str:
    return timed_out(exc, timeout, WALL_FACTOR, what)


def check_class(model, module, *, family: str, examples: int, seed: int, max_length: int, timeout: float) -> CensusRow:
    """The row of one attention ``module`` (an instance inside ``model``): the kit through the capture
    under an exception guard and a budget of ``timeout`` CPU seconds (:func:`_arm`; ``timed out``)."""
    t0 = time.perf_counter()
    row = CensusRow(type(module).__name__, family, type(module).__module__, DECLINED)
    armed = _arm(timeout)
    try:
        try:
            _judge(model, module, row, examples=examples, seed=seed, max_length=max_length)
        finally:
            _disarm(armed)
    except _Timeout as exc:
        row = CensusRow(row.cls, family, row.module, TIMED_OUT, _timed_out(exc, timeout))
    row.seconds = time.perf_counter() - t0
    return row


# --------------------------------------------------------------------------- the run
def _check_numbers(examples, seed, max_length, timeout, jobs) -> None:
    for nm, v, lo in (("examples", examples, 1), ("seed", seed, 0), ("max_length", max_length, 1), ("jobs", jobs, 1)):
        if isinstance(v, bool) or not isinstance(v, int) or v < lo:
            raise ParameterError(f"expected an integer ≥ {lo}, got {v!r}", argument=nm)
    if jobs > max_jobs():
        raise ParameterError(f"at most {max_jobs()} (the CPUs this process may run on), got {jobs}", argument="jobs")
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not (0 < timeout < math.inf):
        raise ParameterError(f"expected CPU seconds, a finite number > 0, got {timeout!r}", argument="timeout")


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
    """The census (module docstring). ``model_types``: restrict to these model types (a list of keys of
    ``CONFIG_MAPPING_NAMES``); ``classes``: restrict to these class names (a list; each an attention class
    of the model types walked); ``examples`` draws per class (seeded by ``seed``); ``timeout`` CPU seconds
    per family build and per class (a class that runs out is retried once alone, after the others);
    ``jobs`` worker processes (forked; 1: in this process; at most :func:`max_jobs`); ``progress``: a
    callable given each finished row (in completion order; the result's rows are sorted by family,
    module, class). Bad arguments raise :class:`ParameterError` naming them before any class runs."""
    _check_numbers(examples, seed, max_length, timeout, jobs)
    types_, want = name_list(model_types, "model_types"), name_list(classes, "classes")
    import torch
    import transformers

    clock = Clock()
    todo = attention_classes(types_)
    if want is not None:
        unknown = sorted(set(want) - {c[2] for c in todo})
        if unknown:
            where = f"model type(s) {', '.join(types_)}" if types_ else f"transformers {transformers.__version__}"
            raise ParameterError(f"no attention class {', '.join(map(repr, unknown))} in {where}", argument="classes")
        todo = [c for c in todo if c[2] in set(want)]
    rows: list[CensusRow] = []
    late: list[CensusRow] = []

    def take(got: list[CensusRow], final: bool) -> None:
        for row in got:
            if row.status == TIMED_OUT and not final:
                late.append(row)
                continue
            rows.append(row)
            if progress is not None:
                progress(row)

    with contextlib.closing(_run_tasks(_tasks(todo, examples, seed, max_length, timeout), jobs)) as done:
        for got in done:
            take(got, final=False)
    again = {(r.module, r.cls) for r in late}
    for task in _tasks([c for c in todo if (c[1], c[2]) in again], examples, seed, max_length, timeout):
        with contextlib.closing(_run_tasks([task], jobs)) as done:  # alone: one task, one process
            for got in done:
                for row in got:
                    if row.status == TIMED_OUT:
                        row.reason += " (and again when retried alone)"
                take(got, final=True)
    rows.sort(key=lambda r: (r.family, r.module, r.cls))
    return CensusResult(
        rows,
        transformers.__version__,
        torch.__version__.split("+")[0],
        seed,
        examples,
        *clock.facts(),
        jobs,
    )


def _tasks(todo: list, examples: int, seed: int, max_length: int, timeout: float) -> list:
    """One task per modeling module: ``(module, [(model type, module, class) ...], examples, ...)``."""
    by_module: dict[str, list[tuple[str, str, str]]] = {}
    for mt, modname, name in todo:
        by_module.setdefault(modname, []).append((mt, modname, name))
    return [(modname, items, examples, seed, max_length, timeout) for modname, items in by_module.items()]


def _run_tasks(tasks: list, jobs: int):
    """Rows of each task (one modeling module) in ``jobs`` forked workers
    (:func:`numerics.census.pool.run_tasks`); a task whose process dies is declined with that reason."""
    return run_tasks(tasks, jobs, _module_rows, _lost)


def _lost(task) -> list[CensusRow]:
    modname, items = task[0], task[1]
    return [
        CensusRow(name, mt, modname, DECLINED, "the process running it died (a crash inside a kernel)")
        for mt, _, name in items
    ]


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
    late = ""  # a build that ran out of its budget: the classes left are timed out, not declined
    attempts = [(fam, False) for fam in types] + [(types[0], True)]
    for fam, cross in attempts:
        if not pending:
            break
        t0 = time.perf_counter()
        armed = _arm(timeout)
        try:
            try:
                model = build_tiny(fam, dtype=torch.float64, cross=cross, seed=seed)
            finally:
                _disarm(armed)
        except _Timeout as exc:
            late = late or _timed_out(exc, timeout, f" building the tiny model of {fam}")
            continue
        except Exception as exc:
            if not cross:
                notes.append(
                    f"{fam}: " + (str(exc).split(": ", 1)[-1] if isinstance(exc, ConnwalkError) else _one_line(exc))
                )
            continue
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
            CensusRow(name, mt_, modname, TIMED_OUT, late)
            if late
            else CensusRow(name, mt_, modname, DECLINED, f"not instantiated by a tiny base model of its family ({why})")
        )
    return rows


def _model_types_of(modname: str, first: str) -> list[str]:
    """The model types whose package is ``modname``'s, ``first`` first (a package may serve several)."""
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES, model_type_to_module_name

    pkg = modname.split(".")[2]
    same = [mt for mt in CONFIG_MAPPING_NAMES if model_type_to_module_name(mt) == pkg and mt != first]
    return [first, *same][:4]


def write_census(result: CensusResult, out_dir: str | os.PathLike | None = None, json_path=None) -> list[Path]:
    """Write ``CENSUS.md`` into ``out_dir`` (default: the current directory; created if missing) and the
    JSON rows to ``json_path`` (when given). Each file goes through a temporary file in its own
    directory, renamed over the target when all are written (``os.replace``): an interruption leaves
    every file as it was, never half-written. Returns the paths written."""
    d = Path(out_dir) if out_dir is not None else Path.cwd()
    d.mkdir(parents=True, exist_ok=True)
    out = [(d / "CENSUS.md", render_markdown(result))]
    if json_path is not None:
        out.append((Path(json_path), json.dumps(result.as_dict(), indent=1, ensure_ascii=False) + "\n"))
    return write_files(out)
