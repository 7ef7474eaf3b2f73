r"""``connwalk patterns``: dispersion relation, space–time diagram and phase diagram for given parameters.

Usage (all options have defaults; ``--example ex1`` reproduces THEOREMS.md T6 Ex1)::

    connwalk patterns --out DIR [--example ex1|ex3] [--n 64]
                      [--kernel CENTER:WIDTH ...] [--transport SPEC ...]
                      [--dynamics flow|sphere|postnorm|prenorm] [--t-final 30] [--dt 0.01]
                      [--eta 0.5] [--layers 60] [--content] [--seed 0] [--eps 1e-6]
                      [--phase-grid 9] [--phase-rho 1.5] [--observe] [--no-plots]

One Gaussian relative kernel per head (``--kernel 4:1.5`` = wrapped Gaussian centred at offset +4,
width 1.5, see :func:`numerics.patterns.symbols.gaussian_kernel`) and one transport per head:

* ``diag:1,-3``                 diagonal matrix;
* ``rot:RHO,THETA``             ``ρR(θ)`` (2×2, θ in degrees);
* ``blockrot:RHO,THETA``        ``blockdiag(1, ρR(θ))`` (3×3: base direction e1 + rotating plane);
* ``matrix:a,b;c,d``            any square matrix, rows separated by ``;``.

Writes to ``DIR``: ``dispersion.png`` (Re σ and Im σ of every branch vs signed k, k* marked),
``spacetime.png`` (one feature of the fluctuation ``x_i(t) − mean`` over tokens × time, from the
chosen dynamics), ``phase.png`` (predicted class over kernel centre × θ for one head
``blockrot:ρ,θ``; with ``--observe`` also the observed class from simulating each cell, and their
agreement fraction), and ``summary.json``. Prints the prediction, the discrete-stack selection
report (when a stack is simulated) and the observed class. Exit 0; bad input: 2 with a one-line
error (through ``connwalk``) — :func:`main` returns the same codes on its own.

This module is the parser and the option checks (standard library only: ``--help`` and argument
errors import no torch); the work is :mod:`connwalk.patterns_work`, imported once the options
are checked.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys

from connwalk.parser import FloatOption, IntOption, OptionTable, Parser, Progress, preserved_state, readdress
from numerics.errors import ConnwalkError, ParameterError

__all__ = ["add_parser", "build_parser", "main", "run", "check_options", "as_option_error"]


# ------------------------------------------------------------------ option contract
def _option_rules(a: dict) -> None:
    if a["--phase-grid"] == 1:
        raise ParameterError("must be 0 (skip) or >= 2, got 1", argument="--phase-grid")


#: the declared kinds of the numeric options (checked before any work and any heavy import; errors
#: name the option)
OPTIONS = OptionTable(
    "connwalk patterns",
    {
        "--n": IntOption(lo=2),
        "--t-final": FloatOption(lo=0.0),
        "--dt": FloatOption(lo=0.0),
        "--eta": FloatOption(lo=0.0),
        "--layers": IntOption(lo=1),
        "--seed": IntOption(lo=0, hi=2**63 - 1),
        "--eps": FloatOption(lo=0.0),
        "--phase-grid": IntOption(lo=0),
        "--phase-rho": FloatOption(nonzero=True),
    },
    after=_option_rules,
)

#: library argument names → the option the user typed (errors raised while simulating)
OPTION_NAMES = {
    "dt": "--dt",
    "t_final": "--t-final",
    "X0": "--eps",
    "X": "--eps",
    "eps": "--eps",
    "eta": "--eta",
    "layers": "--layers",
    "kernels": "--kernel",
    "width": "--kernel",
    "center": "--kernel",
    "transports": "--transport",
    "n": "--n",
    "x_star": "--transport",
    "pos_bias": "--kernel",
}

#: ``summary.json["schema"]``: an existing non-empty ``--out`` must carry it (files of others are never overwritten)
SCHEMA = "connwalk.patterns.summary/1"


def _check_out(out) -> None:
    from pathlib import Path

    from paper_checks.report import OutputPathError, check_out_dir

    if not isinstance(out, str) or not out.strip():
        raise OutputPathError(f"expected a directory path, got {out!r}", argument="--out")
    p = Path(out)
    if p.is_dir() and any(p.iterdir()):
        try:
            with open(p / "summary.json", encoding="utf-8") as fh:
                ours = json.load(fh).get("schema") == SCHEMA
        except (OSError, ValueError, AttributeError):
            ours = False
        if not ours:
            raise OutputPathError(
                f"{out!r} exists and holds files not written by connwalk patterns (no summary.json "
                f"with schema {SCHEMA!r}); choose a new or empty directory",
                argument="--out",
            )
        return
    check_out_dir(out)


def _specs(args) -> tuple[list[str], list[str]]:
    """The ``--kernel`` / ``--transport`` specs of the run (an ``--example``'s, or the defaults)."""
    ks, ts = EXAMPLES[args.example] if args.example else ([], [])
    return list(args.kernel or ks or ["4:1.5"]), list(args.transport or ts or ["diag:1,-3"])


def check_options(args) -> None:
    """Every option before any work; raises a :class:`ConnwalkError` naming the option as typed. The
    bounds, the time/step rules and ``--out`` need no torch (:func:`check_light_options`); the memory
    rule reads the budget (``numerics.contracts.validate``) and is checked last."""
    check_light_options(args)
    H = len(_specs(args)[0])
    # the dynamics form (H, n, n) attention scores (a few copies during an RK4 step)
    from numerics.contracts.validate import check_memory

    check_memory(
        "--n", 8 * H * args.n * args.n * 8, f"the (H, n, n) attention of the simulation (n={args.n})", "a smaller --n"
    )


def check_light_options(args) -> None:
    """The options that need no torch: bounds, ``--out``, the time/step rules."""
    OPTIONS.validate(OPTIONS.values(args))
    _check_out(args.out)
    if args.dynamics in ("flow", "sphere") and args.t_final < args.dt:
        raise ParameterError(f"must be at least one step of --dt={args.dt}, got {args.t_final}", argument="--t-final")
    # the observed class is read from the second half of the trajectory, which needs MIN_SAMPLES samples
    steps_needed = 2 * MIN_SAMPLES - 2
    if args.dynamics in ("flow", "sphere") and round(args.t_final / args.dt) < steps_needed:
        raise ParameterError(
            f"must cover at least {steps_needed} steps of --dt={args.dt} (the class is observed on the second "
            f"half of the trajectory, which needs {MIN_SAMPLES} samples), got {args.t_final}",
            argument="--t-final",
        )
    if args.dynamics not in ("flow", "sphere") and args.layers < steps_needed:
        raise ParameterError(
            f"must be at least {steps_needed} (the class is observed on the second half of the stack, which "
            f"needs {MIN_SAMPLES} layers), got {args.layers}",
            argument="--layers",
        )


#: ``numerics.patterns.classify.MIN_SAMPLES`` (samples the observed class needs), written out so that checking
#: the options imports no torch; a test holds the two equal
MIN_SAMPLES = 4


def as_option_error(exc: ConnwalkError) -> ConnwalkError:
    """``exc`` re-addressed to the option the user typed (same type and message); an environment
    variable keeps its name (:func:`connwalk.parser.readdress`)."""
    return readdress(exc, OPTION_NAMES)


def _example(centres, width, transports) -> tuple[list[str], list[str]]:
    """A reference case of :mod:`theory.cases` as ``--kernel`` / ``--transport`` specs (one home for
    its numbers: the registry's T6 notes render the same data)."""
    from fractions import Fraction

    w = float(Fraction(width))
    return [f"{c}:{w:g}" for c in centres], [
        "matrix:" + ";".join(",".join(str(x) for x in row) for row in T) for T in transports
    ]


def _examples() -> dict[str, tuple[list[str], list[str]]]:
    from theory.cases import T6_EX1, T6_EX3

    return {
        "ex1": _example([T6_EX1["centre"]], T6_EX1["width"], [T6_EX1["T"]]),
        "ex3": _example(T6_EX3["centres"], T6_EX3["width"], T6_EX3["T"]),
    }


EXAMPLES = _examples()


def build_parser(parser: argparse.ArgumentParser | None = None) -> argparse.ArgumentParser:
    if parser is None:
        parser = Parser(prog="connwalk patterns", description=__doc__.split("\n")[0])
    p = parser
    p.add_argument("--out", required=True, help="output directory (created if missing)")
    p.add_argument("--example", choices=sorted(EXAMPLES), default=None, help="THEOREMS.md T6 reference case")
    p.add_argument("--n", type=int, default=64, help="ring size (default 64)")
    p.add_argument("--kernel", action="append", default=None, help="CENTER:WIDTH, one per head")
    p.add_argument("--transport", action="append", default=None, help="transport spec, one per head")
    p.add_argument("--dynamics", choices=["flow", "sphere", "postnorm", "prenorm"], default="flow")
    p.add_argument("--t-final", type=float, default=30.0, help="flow time (flow/sphere)")
    p.add_argument("--dt", type=float, default=0.01, help="RK4 step (flow/sphere)")
    p.add_argument("--eta", type=float, default=0.5, help="layer step (stacks)")
    p.add_argument("--layers", type=int, default=60, help="layers (stacks)")
    p.add_argument("--content", action="store_true", help="random content attention W_Q, W_K (default: off)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--eps", type=float, default=1e-6, help="initial perturbation size")
    p.add_argument("--phase-grid", type=int, default=9, help="cells per axis of the phase diagram (0: skip)")
    p.add_argument("--phase-rho", type=float, default=1.5, help="ρ of blockrot:ρ,θ in the phase diagram")
    p.add_argument("--observe", action="store_true", help="simulate every phase-diagram cell (slower)")
    p.add_argument("--no-plots", action="store_true", help="write summary.json only")
    p.set_defaults(func=run)
    return p


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Register ``patterns`` on an ``argparse`` subparsers object (``connwalk patterns …``)."""
    p = subparsers.add_parser(
        "patterns",
        help="dispersion relation, space–time diagram, phase diagram (T6/E5)",
        description=__doc__.split("\n")[0],
    )
    return build_parser(p)


# ------------------------------------------------------------------ work
def run(args) -> int:
    """Execute ``connwalk patterns`` for parsed ``args``; raises :class:`ConnwalkError` (naming the
    option as typed) on bad input, before any work and before anything is written."""
    check_light_options(args)  # before anything heavy is imported
    progress = Progress("connwalk patterns")
    progress.status("loading torch and the toolkit")
    with contextlib.ExitStack() as stack:
        with progress.live():  # the status line ticks while torch loads
            stack.enter_context(preserved_state())
            check_options(args)
            from connwalk.patterns_work import execute

        kernels, transports = _specs(args)
        try:
            return execute(args, kernels, transports, SCHEMA, progress)
        except ConnwalkError as exc:
            raise as_option_error(exc) from exc


def __getattr__(name: str):
    """``parse_kernel`` / ``parse_transport`` live with the work (they build tensors): imported on use."""
    if name in ("parse_kernel", "parse_transport"):
        import connwalk.patterns_work as work

        return getattr(work, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def main(argv: list[str] | None = None) -> int:
    """Stand-alone entry point (``connwalk patterns ...`` or ``python -m connwalk patterns ...`` go through the dispatcher): 0 ok, 2 bad input."""
    args = build_parser().parse_args(argv)
    try:
        with preserved_state(imported_only=True):
            return run(args)
    except ConnwalkError as exc:
        print(f"connwalk patterns: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("connwalk patterns: interrupted (SIGINT)", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
