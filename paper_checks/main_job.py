r"""The main job: every paper check on the chosen models, one report directory.

``run_job(JobConfig(...), out)``:

1. validates the claims, the output path and every model name, loads the trained models and draws
   the prompts (bad input fails here, before any work and before anything is written);
2. for each model measures E1/E2 statistics on the trained checkpoint and on ``random:<name>``
   for ``null_seeds`` seeds (:mod:`paper_checks.measure`), with a progress bar;
3. turns them into verdict rows (:mod:`paper_checks.claims`), calls the E5/E6 modules when present
   and requested, draws the figures and writes the report atomically (:mod:`paper_checks.report`).

Deterministic given ``seed``: prompts, null-model seeds (``seed·100 + k + 1``), baselines and bootstrap
streams all derive from it.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import torch

from numerics.errors import ConnwalkError, ModelError, ShapeError
from numerics.models import registry
from paper_checks import claims as C
from paper_checks import e5, e6, synthetic
from paper_checks import laplacian_check as LAP
from paper_checks.measure import measure
from paper_checks.names import (  # UnknownClaimError: re-exported, the job's claim error
    CLAIMS,
    UnknownClaimError,  # noqa: F401
    check_claims,
    check_model_name,
)
from paper_checks.progress import stage_bar, ticker
from paper_checks.report import check_out_dir, write_report
from paper_checks.verdict import StatResult

EMBEDDED = ("minilm", "smollm2-135m")
SCALE_SET = ("mpnet-base", "gemma3-270m")
EXTERNAL = {"E5": e5, "E6": e6}
#: the progress bar's name of each external stage
STAGE_NAMES = {"E5": "E5 phase sweep", "E6": "E6 training"}

#: library argument names → the option the user typed (errors raised while loading models / prompts)
OPTION_NAMES = {
    "name": "--models",
    "path": "--models",
    "length": "--length",
    "n_prompts": "--prompts",
    "input_ids": "--length",
    "texts": "--length",
    "handle_or_tokenizer": "--models",
}


def as_option_error(exc: ConnwalkError) -> ConnwalkError:
    """``exc`` re-addressed to the command-line option the user typed (same type, same message)."""
    opt = OPTION_NAMES.get(exc.argument or "")
    if opt is None:
        return exc
    msg = str(exc)
    if exc.argument and msg.startswith(f"{exc.argument}: "):
        msg = msg[len(exc.argument) + 2 :]
    return type(exc)(msg, argument=opt)


@dataclass
class JobConfig:
    """Settings of one run. ``quick`` shrinks every size (used by tests and for a first look)."""

    models: list[str] = field(default_factory=lambda: list(EMBEDDED))
    claims: list[str] = field(default_factory=lambda: list(CLAIMS))
    seed: int = 0
    quick: bool = False
    n_prompts: int | None = None
    length: int | None = None
    null_seeds: int | None = None
    n_boot: int | None = None
    edge_layers: int | None = None
    edge_prompts: int | None = None
    progress: bool = True

    def resolved(self) -> dict:
        q = self.quick
        return {
            "models": list(self.models),
            "claims": list(self.claims),
            "seed": self.seed,
            "quick": q,
            "n_prompts": self.n_prompts or (8 if q else 16),
            "length": self.length or (32 if q else 64),
            "null_seeds": self.null_seeds or (2 if q else 3),
            "n_boot": self.n_boot or (200 if q else 1000),
            "edge_layers": self.edge_layers or (3 if q else 6),
            "edge_prompts": self.edge_prompts or (2 if q else 4),
        }


def default_models() -> list[str]:
    """The embedded checkpoints plus every scale-set model whose packages are installed."""
    have = set(registry.available())
    return list(EMBEDDED) + [m for m in SCALE_SET if m in have]


def context_length(name: str) -> int | None:
    """``name``'s context from its metadata alone (no weights): :func:`registry.context_length`, or a
    synthetic config's ``max_length``; None where only loading tells."""
    if synthetic.is_synthetic(name):
        cfg = synthetic.CONFIGS.get(name.removeprefix("synthetic:"))
        return None if cfg is None else int(cfg.max_length)
    return registry.context_length(name)


#: above this ``--length`` the corpus is checked with the model's tokenizer before the weights load
#: (below it the shipped corpus, ~10k tokens for every shipped tokenizer, always has room; a shorter
#: corpus would still be caught, after the load)
CORPUS_CHECK_FROM = 1024


def check_length(name: str, length: int) -> None:
    """Refuse a ``--length`` longer than ``name``'s context, or than the shipped corpus can fill with its
    tokenizer, before its weights load (metadata and tokenizer only)."""
    from numerics.errors import SequenceTooLongError

    ctx = context_length(name)
    if ctx is not None and length > ctx:
        raise SequenceTooLongError(
            f"{length} tokens exceed {name}'s context of {ctx} tokens (max_length; refused, not truncated)",
            argument="--length",
        )
    if length > CORPUS_CHECK_FROM and not synthetic.is_synthetic(name):
        from numerics.models.corpus import check_corpus_length

        tok = registry.load_tokenizer(name)
        if tok is not None:
            check_corpus_length(tok, length)  # raises naming length (→ --length)


def load_model(name: str, *, seed: int = 0):
    """A model handle: ``synthetic:...`` names here, everything else via the registry (float32)."""
    if synthetic.is_synthetic(name):
        return synthetic.load(name, seed=seed)
    return registry.load(name, dtype=torch.float32, device="cpu", seed=seed)


def null_name(name: str) -> str:
    """The null model of ``name``: ``random:<name>``; ``tiny:*`` test configs are already random
    inits, so their null is the same config under other seeds."""
    return name if name.startswith("tiny:") else f"random:{name}"


def sample_ids(handle, n_prompts: int, length: int, seed: int) -> torch.Tensor:
    """``(n_prompts, length)`` token ids from the shipped corpus.

    Synthetic models and tokenizer-less ``tiny:*`` configs get seeded uniform random ids."""
    if isinstance(handle, synthetic.SyntheticHandle):
        return handle.sample_ids(n_prompts, length, seed)
    if getattr(handle, "tokenizer", None) is None and str(getattr(handle, "name", "")).startswith("tiny:"):
        if length > int(handle.max_length):
            from numerics.errors import SequenceTooLongError

            raise SequenceTooLongError(f"{length} > max_length={handle.max_length}", argument="--length")
        g = torch.Generator().manual_seed(int(seed))
        return torch.randint(0, int(handle.model.config.vocab_size), (n_prompts, length), generator=g)
    from numerics.models.corpus import sample_prompts

    return sample_prompts(handle, n_prompts, length, seed)


def _measure(h, ids, r: dict, seed: int, step, hooks, *, baselines: bool):
    """One model's measurement; a length its attention sinks leave too short for (known only from its
    own pass: the sinks depend on the attention) is addressed to ``--length``."""
    try:
        return measure(
            h,
            ids,
            baselines=baselines,
            edge_layers=r["edge_layers"],
            edge_prompts=r["edge_prompts"],
            seed=seed,
            progress=step,
            hooks=hooks,
        )
    except ShapeError as exc:
        if exc.argument == "length":
            raise as_option_error(exc) from exc
        raise


def _takes(fn, name: str) -> bool:
    """``fn`` accepts the keyword argument ``name`` (or any keyword)."""
    import inspect

    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False
    return name in params or any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())


def _bar(total: int, enabled: bool):
    if not enabled:
        return None
    from tqdm import tqdm

    return tqdm(total=total, desc="paper checks", unit="layer", file=sys.stderr, dynamic_ncols=True)


def run_job(cfg: JobConfig, out: str | Path | None, *, log=print) -> tuple[list[StatResult], list]:
    """Run the job; write the report to ``out`` (None: no report). Returns ``(rows, runs)``."""
    claims = check_claims(cfg.claims)
    cfg.claims = claims
    if out is not None:
        check_out_dir(out)
    r = cfg.resolved()
    if not cfg.models:
        raise ModelError("no models requested", argument="--models")
    want_models = any(c in claims for c in ("E1", "E2", "E3", "E4", LAP.CLAIM))
    handles, ids = {}, {}
    if want_models:
        for name in cfg.models:
            check_model_name(name)
        try:
            for name in cfg.models:  # options that depend on the model, from its metadata: before any weights
                check_length(name, r["length"])
            for name in cfg.models:
                if name in handles:
                    continue
                handles[name] = load_model(name, seed=cfg.seed)
                ids[name] = sample_ids(handles[name], r["n_prompts"], r["length"], cfg.seed)
        except ConnwalkError as exc:
            raise as_option_error(exc) from exc
    notes = []
    timings: dict[str, float] = {}
    runs: list[C.ModelRun] = []
    total = sum((1 + r["null_seeds"]) * int(h.n_layers) for h in handles.values())
    bar = _bar(total, cfg.progress and total > 0)
    step = (lambda k: bar.update(k)) if bar is not None else None
    try:
        for name, h in handles.items():
            t0 = time.perf_counter()
            m = _measure(h, ids[name], r, cfg.seed, step, LAP.hooks_for(claims, h, r, cfg.seed), baselines=True)
            nulls = []
            for k in range(r["null_seeds"]):
                hn = load_model(null_name(name), seed=cfg.seed * 100 + k + 1)
                hooks = LAP.hooks_for(claims, hn, r, cfg.seed)
                nulls.append(_measure(hn, ids[name], r, cfg.seed * 100 + k, step, hooks, baselines=False))
                del hn
            runs.append(C.ModelRun(trained=m, nulls=nulls))
            timings[name] = time.perf_counter() - t0
    finally:
        if bar is not None:
            bar.close()
    rows: list[StatResult] = []
    t0 = time.perf_counter()
    with stage_bar("verdicts", cfg.progress and bool(runs)) as progress:
        tick = ticker(2 * len(runs), progress)
        per_model = []
        for run in runs:
            per_model += C.model_rows(run, n_boot=r["n_boot"], seed=cfg.seed)
            tick(1, f"{run.trained.name}: bootstrap intervals")
        rows += [x for x in per_model if x.claim in claims]
        if "E3" in claims:
            rows += C.e3_rows(runs, seed=cfg.seed)
        if "E4" in claims:
            rows += C.e4_rows(runs)
        for run in runs:
            rows += LAP.rows([run], claims, n_boot=r["n_boot"], seed=cfg.seed)
            tick(1, f"{run.trained.name}: LAP" if LAP.CLAIM in claims else "")
    if runs:
        timings["verdicts"] = time.perf_counter() - t0
    models_info = {
        run.trained.name: {
            k: getattr(run.trained, k)
            for k in ("kind", "family", "n_params", "n_layers", "n_heads", "d_model", "d_head")
        }
        | {"sink_positions": run.trained.sinks, "edge_layers": run.trained.edge_layers}
        for run in runs
    }
    config = dict(r) | {"models": cfg.models, "claims": claims}

    def build(tmp: Path) -> list[str]:
        figs = []
        if runs:
            from paper_checks.figures import draw_all

            t0 = time.perf_counter()
            with stage_bar("figures", cfg.progress, unit="figure") as progress:
                figs += draw_all(
                    runs, tmp, n_boot=min(r["n_boot"], 300), seed=cfg.seed, claims=set(claims), progress=progress
                )
            timings["figures"] = time.perf_counter() - t0
        for c in ("E5", "E6"):
            if c not in claims:
                continue
            mod = EXTERNAL[c]
            if not hasattr(mod, "run"):
                msg = f"{c}: {getattr(mod, '__name__', mod)} is not available in this installation (no run()); {c} was skipped"
                notes.append(msg)
                log(f"warning: {msg}", file=sys.stderr)
                continue
            before = {p.name for p in tmp.iterdir()}
            t0 = time.perf_counter()
            with stage_bar(STAGE_NAMES[c], cfg.progress) as progress:
                # the hook's contract is run(out_dir, *, quick, seed); progress only where it takes one
                more = {"progress": progress} if _takes(mod.run, "progress") else {}
                ext_rows = mod.run(tmp, quick=cfg.quick, seed=cfg.seed, **more)
            timings[c] = time.perf_counter() - t0
            for row in ext_rows:  # wall-clock stays out of results.json (same seed, same bytes)
                secs = row.extra.pop("seconds", None)
                if secs is not None:
                    timings[f"{c} {row.model}"] = secs
            rows.extend(ext_rows)
            figs += sorted(p.name for p in tmp.iterdir() if p.suffix == ".png" and p.name not in before)
        return figs

    if out is not None:
        write_report(out, rows, config, figures=build, notes=notes, extra_json={"models": models_info}, timings=timings)
    if timings:  # wall-clock per stage: on stderr and in timings.json, never in results.json / report.md
        stages = {k: v for k, v in timings.items() if k in handles or k in EXTERNAL or k in ("verdicts", "figures")}
        log("timings: " + ", ".join(f"{k} {v:.1f} s" for k, v in stages.items()), file=sys.stderr)
    else:
        for c in ("E5", "E6"):
            if c in claims:
                notes.append(f"{c} not run without an output directory")
    return rows, runs
