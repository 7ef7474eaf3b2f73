r"""``connwalk conform MODULE_OR_MODEL``: the conformance kit (:mod:`numerics.conformance`) as a command,
for a CI step in another repository. Prints the conformance table (one row per draw and layer: T2's
identity, T3's and T5's hypotheses) and exits

* 0 when the module is the walk it claims to be (no draw fails T2; undecided draws are reported),
* 1 when a draw fails T2 (the shrunk counterexample is printed under the table),
* 2 on bad input, with one line on stderr: a name that is no model, a module path that does not
  import, a factory that raises, an object that is not an attention module, a model that does not
  fit in memory, a bad option.

``MODULE_OR_MODEL`` is ``package.module:factory`` (a callable returning the module, called without
arguments; or ``package.module:attribute`` naming the module itself), or anything
:func:`numerics.models.registry.load` accepts: a model name (``minilm``, ``smollm2-135m``,
``tiny:llama``, ``random:minilm``), a local Hugging Face directory, a ``.gguf`` file.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import re
import sys

from numerics.errors import ConnwalkError, MemoryBudgetError, ModelError, ParameterError

_FACTORY = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")
_REGISTRY_PREFIXES = ("random", "tiny", "synthetic")


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Register ``conform`` on an ``argparse`` subparsers object (``connwalk conform …``)."""
    p = subparsers.add_parser(
        "conform",
        help="is this attention module / model the connection walk it claims (T2)? exit 1 if not",
        description=__doc__.split("\n\n")[0],
    )
    p.add_argument("target", metavar="MODULE_OR_MODEL", help="package.module:factory, a model name, HF dir or .gguf")
    p.add_argument("--examples", type=int, default=10, help="Hypothesis draws (default 10)")
    p.add_argument("--seed", type=int, default=0, help="seed of the draws (default 0)")
    p.add_argument("--max-length", type=int, default=8, help="longest drawn sequence (default 8)")
    p.add_argument("--max-batch", type=int, default=2, help="largest drawn batch (default 2)")
    p.add_argument("--layers", type=int, nargs="+", default=None, help="layers of a whole model (default all)")
    p.add_argument("--dtype", choices=("float32", "float64"), default="float32", help="dtype of a loaded model")
    p.add_argument("--no-hypotheses", action="store_true", help="T2 only (skip T3/T5 hypotheses)")
    p.add_argument("--json", default=None, metavar="PATH", help="also write the report as JSON")
    p.set_defaults(func=run)
    return p


def resolve(target: str, dtype: str = "float32"):
    """The object ``target`` names (module docstring); every failure is a :class:`ConnwalkError`
    naming ``MODULE_OR_MODEL``."""
    arg = "MODULE_OR_MODEL"
    head = target.split(":", 1)[0]
    if _FACTORY.match(target) and head not in _REGISTRY_PREFIXES and not os.path.exists(target):
        mod_name, attr = target.split(":")
        try:
            mod = importlib.import_module(mod_name)
        except Exception as exc:
            raise ModelError(
                f"{target}: module {mod_name!r} does not import ({type(exc).__name__}: {exc})", argument=arg
            ) from None
        if not hasattr(mod, attr):
            raise ModelError(f"{target}: module {mod_name!r} has no attribute {attr!r}", argument=arg)
        obj = getattr(mod, attr)
        if callable(obj) and not hasattr(obj, "forward") and not hasattr(obj, "connwalk_attention"):
            try:
                obj = obj()
            except MemoryError:
                raise MemoryBudgetError(f"{target}: the factory ran out of memory", argument=arg) from None
            except Exception as exc:
                raise ModelError(f"{target}: the factory raised {type(exc).__name__}: {exc}", argument=arg) from None
        return obj
    import torch

    from numerics.models.registry import load

    try:
        return load(target, dtype=getattr(torch, dtype), device="cpu")
    except ConnwalkError as exc:
        raise type(exc)(f"{target}: {str(exc).split(': ', 1)[-1]}", argument=arg) from None
    except MemoryError:
        raise MemoryBudgetError(f"{target}: the model does not fit in memory", argument=arg) from None


def run(args) -> int:
    from numerics.conformance import check_attention

    obj = resolve(args.target, args.dtype)
    try:
        rep = check_attention(
            obj,
            examples=args.examples,
            seed=args.seed,
            max_length=args.max_length,
            max_batch=args.max_batch,
            layers=args.layers,
            hypotheses=not args.no_hypotheses,
        )
    except ParameterError as exc:  # name the option as typed
        opt = "--" + str(exc.argument).replace("_", "-")
        raise ParameterError(str(exc).split(": ", 1)[-1], argument=opt) from None
    except MemoryError:
        raise MemoryBudgetError(f"{args.target}: out of memory while checking", argument="MODULE_OR_MODEL") from None
    print(rep.table())
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rep.as_dict(), f, indent=1, default=str)
    sys.stdout.flush()
    return 0 if rep.conforms else 1
