r"""``connwalk conform MODULE_OR_MODEL``: the conformance kit (:mod:`numerics.conformance.kit`) as a command,
for a CI step in another repository. Prints the conformance table (one row per draw and layer: T2's
identity, T3's and T5's hypotheses) and exits 0 (conforms), 1 (a draw fails T2 or one of its
hypotheses; the shrunk counterexample under the table), 2 (bad input, one line on stderr) or 3 (no
draw fails, but one is undecided at the module's rounding): :data:`DESCRIPTION` and
:data:`EPILOG` are the ``--help`` text, written for the terminal.

This module imports only the standard library (and :mod:`numerics.errors`, :mod:`numerics.models.names`):
``conform --help`` and every option error answer without torch. :func:`run` checks every option first
(bounds, ``--json``'s location, a model name, directory or ``.gguf`` path as the registry would), then imports the kit, checks ``--max-length`` × ``--max-batch`` against the memory budget,
resolves the target and runs the kit, reporting each layer's progress on a terminal's stderr (through the
kit's ``progress`` hook: the adapter is never wrapped, so the float64 shadow runs the float64 copy).
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import json
import os
import re
import sys
import tempfile

from connwalk.parser import (
    IntOption,
    OptionTable,
    Progress,
    check_json_path,
    hypothesis_storage,
    preserved_state,
    readdress,
)
from numerics.errors import ConnwalkError, MemoryBudgetError, ModelError, ParameterError
from numerics.models.names import check_loadable

_FACTORY = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")
#: ``census:MODEL_TYPE:Class``: one census row, reproduced alone (the class in the census's tiny model)
_CENSUS = re.compile(r"^census:([\w.-]+):([A-Za-z_]\w*)$")
_REGISTRY_PREFIXES = ("random", "tiny", "synthetic")
TARGET = "MODULE_OR_MODEL"

#: the bounds of the numeric options, checked before any import of torch (``--max-length`` and
#: ``--max-batch`` are also checked against the memory budget once the kit is loaded); ``--examples``'
#: is the kit's own, :data:`numerics.conformance.bounds.MAX_EXAMPLES` (written out: no torch here)
MAX_EXAMPLES = 10_000
OPTIONS = OptionTable(
    "connwalk conform",
    {
        "--examples": IntOption(lo=1, hi=MAX_EXAMPLES),
        "--seed": IntOption(lo=0, hi=2**32 - 1),
        "--max-length": IntOption(lo=1, hi=1_000_000),
        "--min-length": IntOption(lo=1, hi=1_000_000),
        "--max-batch": IntOption(lo=1, hi=10_000),
    },
    after=lambda v: _min_not_over_max(v["--min-length"], v["--max-length"]),
)


def _min_not_over_max(lo: int, hi: int) -> None:
    if lo > hi:
        raise ParameterError(f"must be <= --max-length ({hi}), got {lo}", argument="--min-length")


#: the kit's parameter names → the options the user typed
OPTION_NAMES = {
    "examples": "--examples",
    "seed": "--seed",
    "max_length": "--max-length",
    "min_length": "--min-length",
    "max_batch": "--max-batch",
    "layers": "--layers",
    "hypotheses": "--no-hypotheses",
    "causal": "--causal",
}

#: the kit's fields of an extraction, in the words of the user whose module produced them
FIELDS = {
    "module": "the module",
    "A": "the attention the module reported",
    "W_O": "its output projection weight",
    "W_V": "its value projection weight",
    "b_O": "its output projection bias",
    "b_V": "its value projection bias",
    "values": "the value states the module reported",
    "output": "the module's output",
    "X": "the module's input",
}

DESCRIPTION = """\
Is this attention module (or every attention layer of this model) the
connection walk it claims to be? The kit runs the module on seeded random
inputs (batch sizes, lengths, key padding and causal masks, drawn by
Hypothesis) in eval mode (dropout off; the training flag is restored
afterwards) and checks, per draw and per layer, T2's identity: the module's
output equals the walk built from the attention the module reports for that
call and the weights it claims (value and output projections, biases),
recomputed in float64 against a rounding bound stated from the module's
dtype. It also reports which of T3's and T5's hypotheses the heads satisfy.

MODULE_OR_MODEL is one of
  package.module:factory    a function returning the module (no arguments)
  package.module:Class      a class whose constructor takes no arguments
  package.module:attribute  the module object itself
  a model name              minilm, smollm2-135m, tiny:llama, random:minilm
  a Hugging Face directory or a .gguf file
  census:MODEL_TYPE:Class   one row of `connwalk census` reproduced alone:
                            the attention class inside the census's tiny
                            float64 model of that transformers model type,
                            judged as the census judges it (e.g.
                            census:llama:LlamaAttention --examples 2
                            --max-length 6 gives the census's verdict)

Replaying a failure: the counterexample printed under the table is the
failing draw shrunk to a minimal one (batch, length, masks, layer, worst
token). The same --seed and --examples draw the same inputs again, so the
same command reproduces it."""

# the command's exit status for each verdict of the kit (numerics.conformance.kit.ConformanceReport.verdict)
EXIT_CODES = {"conforms": 0, "fails": 1, "hypothesis fails": 1, "undecided": 3}

EPILOG = """\
exit status:
  0  the module conforms: every draw holds T2 and its hypotheses, and
     at least one draw per layer determines A
  1  a draw fails T2's identity (the shrunk counterexample is printed
     under the table; a defect of the module's own kernel seen while
     it runs is such a failure) or one of its hypotheses (nonnegative,
     row-stochastic attention: the table names it)
  2  bad input, with one line on stderr: an option out of range, a --json
     file that cannot be written, a target that does not import or is not
     an attention module, a factory or class that raises or needs
     arguments, a model or draw over the memory budget (environment
     variable CONNWALK_MEMORY_BUDGET, e.g. 8G), an adapter
     (connwalk_attention) whose reported output or A is not what the
     module itself computed on the same input (the field is named)
  3  undecided: no draw fails, but one is within the rounding error of
     its bound (neither holds nor fails at the module's precision), or
     no draw determines A (the table's header: "k of N draws identifying")

example (a CI step):
  connwalk conform mypkg.attention:build --examples 50 --json conform.json"""


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Register ``conform`` on an ``argparse`` subparsers object (``connwalk conform …``)."""
    p = subparsers.add_parser(
        "conform",
        help="is this attention module / model the connection walk it claims (T2)? exit 1 if not",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "target", metavar=TARGET, help="package.module:factory (or :Class, :attribute), a model name, HF dir or .gguf"
    )
    p.add_argument("--examples", type=int, default=10, help=f"Hypothesis draws, 1..{MAX_EXAMPLES} (default 10)")
    p.add_argument("--seed", type=int, default=0, help="seed of the draws (default 0)")
    p.add_argument(
        "--max-length", type=int, default=8, help="longest drawn sequence (default 8; capped at a model's context)"
    )
    p.add_argument(
        "--min-length", type=int, default=1, help="shortest drawn sequence (default 1; at most --max-length)"
    )
    p.add_argument("--max-batch", type=int, default=2, help="largest drawn batch (default 2)")
    p.add_argument(
        "--causal",
        action="store_true",
        help="the module runs causal only: every draw is causal (as its attribute connwalk_causal = True declares)",
    )
    p.add_argument(
        "--layers", type=int, nargs="+", default=None, metavar="I", help="layers of a whole model (default all)"
    )
    p.add_argument("--dtype", choices=("float32", "float64"), default="float32", help="dtype of a loaded model")
    p.add_argument("--no-hypotheses", action="store_true", help="T2 only (skip T3/T5 hypotheses)")
    p.add_argument(
        "--json", default=None, metavar="PATH", help="also write the report as JSON to this file (not a directory)"
    )
    p.add_argument("--no-progress", action="store_true", help="no progress lines on stderr")
    p.set_defaults(func=run)
    return p


# ------------------------------------------------------------------ option checks (standard library)
def check_options(args) -> None:
    """Every option that needs no torch, before anything heavy is imported (raises naming the option)."""
    OPTIONS.validate(OPTIONS.values(args))
    for i in args.layers or []:
        IntOption(lo=0).check("--layers", i)
    check_json_path(args.json, "conform.json")
    check_model_target(args.target)


# ------------------------------------------------------------------ memory (after the kit is loaded)
def draw_bytes(max_batch: int, max_length: int, heads: int = 1, layers: int = 1, itemsize: int = 4) -> int:
    """Bytes of the largest draw's attention: the kit's own estimate,
    :func:`numerics.conformance.bounds.draw_bytes` (imported here: the kit is loaded by then)."""
    from numerics.conformance.bounds import draw_bytes as kit_draw_bytes

    return kit_draw_bytes(max_batch, max_length, heads, layers, itemsize)


def _dims(obj) -> tuple[int, int, int | None, int]:
    """(heads, layers, context, itemsize) of ``obj`` where it says them; 1, 1, None, 4 otherwise."""
    h = getattr(obj, "n_heads", None) or getattr(obj, "num_heads", None)
    n_layers = getattr(obj, "n_layers", None)
    model = getattr(obj, "model", obj)
    cfg = getattr(model, "config", None)
    ctx = None
    if cfg is not None:
        h = h or getattr(cfg, "num_attention_heads", None) or getattr(cfg, "n_head", None)
        n_layers = n_layers or getattr(cfg, "num_hidden_layers", None) or getattr(cfg, "n_layer", None)
        ctx = getattr(cfg, "max_position_embeddings", None) or getattr(cfg, "n_positions", None)
    itemsize = 4
    try:
        p = next(iter(model.parameters()))
        itemsize = p.element_size()
    except (AttributeError, StopIteration, TypeError):
        pass
    ints = [v if isinstance(v, int) and v > 0 else None for v in (h, n_layers, ctx)]
    return ints[0] or 1, ints[1] or 1, ints[2], itemsize


def check_draw_memory(args, obj=None) -> None:
    """The largest draw against the memory budget (``CONNWALK_MEMORY_BUDGET``): before loading with one
    head and one layer (a lower bound), again once the target is resolved with its own sizes."""
    from numerics.contracts.validate import check_memory

    heads, layers, ctx, itemsize = _dims(obj) if obj is not None else (1, 1, None, 8 if args.dtype == "float64" else 4)
    if args.layers:
        layers = len(set(args.layers))
    n = min(args.max_length, ctx) if ctx else args.max_length
    what = f"the largest draw's attention (batch {args.max_batch}, tokens {n}, heads {heads}, layers {layers})"
    check_memory(
        "--max-length",
        draw_bytes(args.max_batch, n, heads, layers, itemsize),
        what,
        "a smaller --max-length or --max-batch",
    )


# ------------------------------------------------------------------ the target
def names_a_module(target: str) -> bool:
    """``package.module:attribute`` (not a model name with a ``random:`` / ``tiny:`` / ``synthetic:``
    prefix, not an existing path); anything else is a model name for the registry."""
    head = target.split(":", 1)[0]
    reserved = (*_REGISTRY_PREFIXES, "census")  # census:MODEL_TYPE:Class is a census row
    return bool(_FACTORY.match(target)) and head not in reserved and not os.path.exists(target)


def as_target_error(target: str, exc: ConnwalkError) -> ConnwalkError:
    """A registry error about ``target`` addressed to ``MODULE_OR_MODEL`` (same type, its message after
    the registry's parameter name)."""
    return type(exc)(f"{target}: {str(exc).split(': ', 1)[-1]}", argument=TARGET)


def check_model_target(target: str) -> None:
    """A model name, HF directory or ``.gguf`` path refused as the registry would refuse it, from the
    names alone (:func:`numerics.models.names.check_loadable`) and a ``.gguf`` file's header
    (:func:`numerics.models.files.check_gguf`): standard library only, before torch loads."""
    if names_a_module(target):
        return
    if target.startswith("census:"):
        if not _CENSUS.match(target):
            raise ParameterError(f"{target}: expected census:MODEL_TYPE:Class", argument=TARGET)
        return
    try:
        check_loadable(target)
        path = os.path.expanduser(target.removeprefix("random:"))
        if path.lower().endswith(".gguf") and os.path.isfile(path):
            # its header (magic, version, architecture), read without torch: a file of anything else is
            # refused in milliseconds, not after seconds of importing torch and transformers
            from numerics.models.files import check_gguf

            check_gguf(path)
    except ConnwalkError as exc:
        raise as_target_error(target, exc) from None


def resolve(target: str, dtype: str = "float32"):
    """The object ``target`` names (``--help``); every failure is a :class:`ConnwalkError` naming
    ``MODULE_OR_MODEL``. A class is instantiated when its constructor needs no arguments."""
    census = _CENSUS.match(target)
    if census:
        from numerics.census.judge import census_instance

        try:
            return CensusTarget(*census_instance(census.group(1), census.group(2)))
        except ConnwalkError as exc:
            raise as_target_error(target, exc) from None
    if names_a_module(target):
        mod_name, attr = target.split(":")
        try:
            mod = importlib.import_module(mod_name)
        except Exception as exc:
            raise ModelError(
                f"{target}: module {mod_name!r} does not import ({type(exc).__name__}: {exc})", argument=TARGET
            ) from None
        if not hasattr(mod, attr):
            raise ModelError(f"{target}: module {mod_name!r} has no attribute {attr!r}", argument=TARGET)
        obj = getattr(mod, attr)
        if isinstance(obj, type):
            _check_no_arguments(target, obj)
            return _call(target, obj, "the class")
        if callable(obj) and not hasattr(obj, "forward") and not hasattr(obj, "connwalk_attention"):
            return _call(target, obj, "the factory")
        return obj
    import torch

    from numerics.models.registry import load

    try:
        return load(target, dtype=getattr(torch, dtype), device="cpu")
    except ConnwalkError as exc:
        raise as_target_error(target, exc) from None
    except MemoryError:
        raise MemoryBudgetError(f"{target}: the model does not fit in memory", argument=TARGET) from None


def _check_no_arguments(target: str, cls: type) -> None:
    try:
        sig = inspect.signature(cls)
    except (TypeError, ValueError):  # no signature to read: calling it says
        return
    needed = [
        p.name
        for p in sig.parameters.values()
        if p.default is inspect.Parameter.empty
        and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
    ]
    if needed:
        raise ModelError(
            f"{target}: the class needs constructor arguments ({', '.join(needed)}); name a function that "
            f"builds the module instead (package.module:factory)",
            argument=TARGET,
        )


def _call(target: str, fn, what: str):
    try:
        return fn()
    except MemoryError:
        raise MemoryBudgetError(f"{target}: {what} ran out of memory", argument=TARGET) from None
    except Exception as exc:
        raise ModelError(f"{target}: {what} raised {type(exc).__name__}: {exc}", argument=TARGET) from None


# ------------------------------------------------------------------ run
def run(args) -> int:
    """``connwalk conform`` for parsed ``args``: 0 conforms, 1 fails T2 or a hypothesis of T2, 3
    undecided (:data:`EXIT_CODES`); bad input raises a
    :class:`ConnwalkError` naming the option, the environment variable or ``MODULE_OR_MODEL`` as the
    user typed it (never a field of the kit), before any work."""
    check_options(args)
    progress = Progress("connwalk conform", not args.no_progress)
    progress.status("loading torch and the conformance kit")
    with preserved_state(), hypothesis_storage(), progress.live():
        try:
            check_draw_memory(args)
            progress.status(f"loading {args.target}")
            obj = resolve(args.target, args.dtype)
            check_draw_memory(args, obj)
            rep = _check(args, obj, progress)
        except ConnwalkError as exc:
            raise readdress(exc, OPTION_NAMES, fallback=TARGET, prefix=f"{args.target}: ", fields=FIELDS) from None
        except MemoryError:
            raise MemoryBudgetError(f"{args.target}: out of memory while checking", argument=TARGET) from None
    print(rep.table())
    if args.json:
        _write_json(args.json, rep.as_dict())
    sys.stdout.flush()
    return EXIT_CODES[rep.verdict]


class CensusTarget:
    """A census row's class inside its tiny model (``census:MODEL_TYPE:Class``)."""

    def __init__(self, model, module) -> None:
        self.model, self.module = model, module


def _check(args, obj, progress):
    from numerics.conformance import kit as conformance

    if isinstance(obj, CensusTarget):  # judged as the census judges it (numerics.census.judge.report_of)
        from numerics.census.judge import report_of

        progress(f"checking {args.examples} draws of {type(obj.module).__name__} as the census does")
        rep, _ = report_of(
            obj.model,
            obj.module,
            examples=args.examples,
            seed=args.seed,
            max_length=args.max_length,
            progress=progress.status,
        )
        return rep

    # --layers chose the adapter's layers; the kit checks the adapter's. The adapter is handed over as
    # built: progress is reported through the kit's progress hook, never by wrapping the adapter (a
    # wrapper would be copied into the float64 shadow and run the float32 module there)
    adapter = conformance.adapter_for(obj, layers=args.layers)
    progress(f"checking {args.examples} draws of {adapter.name}")
    return conformance.check_attention(
        obj,
        examples=args.examples,
        seed=args.seed,
        max_length=args.max_length,
        min_length=args.min_length,
        max_batch=args.max_batch,
        hypotheses=not args.no_hypotheses,
        causal=True if args.causal else None,
        adapter=adapter,
        progress=progress.status,
    )


def _write_json(path: str, data: dict) -> None:
    """Write ``data`` to ``path`` through a temporary file in its directory (no half-written report)."""
    parent = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=parent, prefix=".connwalk-", suffix=".json")
    try:
        mask = os.umask(0)
        os.umask(mask)
        os.chmod(tmp, 0o666 & ~mask)  # a plain new file's mode, not mkstemp's 0600
        with os.fdopen(fd, "w") as f:
            json.dump(data, f, indent=1, default=str)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
