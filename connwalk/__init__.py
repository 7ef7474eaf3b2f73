r"""``connwalk`` command line.

* ``connwalk paper-checks --out DIR [--models M ...] [--claims E1 ...] [--seed S] [--quick]``:
  the main job (all checks, one report directory: report.md, results.json, PNG figures).
* ``connwalk analyze MODEL [--out DIR] [--claims E1 E2 | laplacian ...]``: checks on one model (default
  E1/E2; ``--claims laplacian`` runs the LAP check); prints the verdict table.
* ``connwalk patterns ...``: the toolkit's pattern-prediction command, :mod:`connwalk.patterns`.
* ``connwalk conform MODULE_OR_MODEL``: the attention conformance kit, :mod:`connwalk.conform`
  (exit 1 when the module is not the walk it claims).
* ``connwalk census [--out DIR] [--json PATH]``: every attention class of transformers checked as a walk,
  :mod:`connwalk.census` (writes CENSUS.md).
* ``connwalk theorems [--render PATH | --check ID]``: every registered statement with its origin, their
  THEOREMS.md section, the gate on one, :mod:`connwalk.theorems`.

The command-line front ends live together in this package, next to none of the work they drive: this
module (the ``connwalk`` dispatcher, ``paper-checks`` and ``analyze``; the job itself is
:mod:`paper_checks.main_job`), :mod:`connwalk.patterns`, :mod:`connwalk.conform` and :mod:`connwalk.census`
(each plugs in with ``add_parser(sub)``, which imports nothing heavy, and ``run(args)``), sharing the option
kinds and helpers of :mod:`connwalk.parser`. ``python -m connwalk`` is the same command.

``--help`` (of the command and of every subcommand), a misspelt option and every out-of-range value answer
without importing torch, SymPy or transformers: the parsers and the option bounds (:data:`OPTIONS`) are
standard library only, and so are the claim and model names they are checked against
(:mod:`paper_checks.names`, :mod:`numerics.models.names`: the lists the job and the registry import);
each command imports its work after those checks (on a terminal, a first line on stderr says what it is
loading). :func:`main` restores what it changes in the process (torch threads,
default dtype, RNG states, warning filters: :func:`connwalk.parser.preserved_state`).

Exit status: 0 success; 2 bad input (unknown claim / model, corpus too short, an ``--out`` that is a
file, an existing directory that is not a report of this suite, or a report holding files it did not
write, ...), with a one-line error on stderr naming the option as typed and nothing written; every
option is checked before any work (:data:`OPTIONS`); 130 / 143 when interrupted by SIGINT / SIGTERM (the temporary report directory is
removed); 1 unexpected failure.
"""

from __future__ import annotations

import argparse
import contextlib
import signal
import sys
import time

from connwalk import census as census_cli
from connwalk import conform as conform_cli
from connwalk import patterns as patterns_cli
from connwalk import theorems as theorems_cli
from connwalk.parser import IntOption, OptionTable, Parser, Progress, preserved_state, readdress
from numerics.errors import ConnwalkError
from paper_checks.names import CLAIMS, check_claims, check_model_name

#: the shortest ``--length``: on ``n ≤ 1/SINK_TAU`` tokens a uniform walk (what a random-init null model
#: nearly is) gives every key the mass ``1/n ≥ SINK_TAU``, so every position is a sink and the sink-aware
#: statistics have no tokens left. ``int(1 / paper_checks.stats.SINK_TAU) + 1``, written out so that the
#: parser imports no torch (a test holds the two equal).
MIN_LENGTH = 6

#: the claim names ``--claims`` lists in its help (:data:`paper_checks.names.CLAIMS`, the job's list)
CLAIM_NAMES = CLAIMS

#: the declared kinds of the numeric options of ``paper-checks`` and ``analyze`` (checked before any
#: heavy import; standard library only)
OPTIONS = OptionTable(
    "connwalk paper-checks",
    {
        "--seed": IntOption(lo=0, hi=2**32 - 1),
        "--prompts": IntOption(lo=2, optional=True),
        "--length": IntOption(lo=MIN_LENGTH, optional=True),
        "--null-seeds": IntOption(lo=1, optional=True),
        "--n-boot": IntOption(lo=1, optional=True),
        "--threads": IntOption(lo=1, hi=4096),
    },
)


class Terminated(SystemExit):
    """Raised by the SIGTERM handler so that cleanup (``finally`` / ``except BaseException``) runs."""


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--seed", type=int, default=0, help="seed of prompts, null models and bootstrap (default 0)")
    p.add_argument("--quick", action="store_true", help="small sizes (a first look; used by the tests)")
    p.add_argument("--prompts", type=int, default=None, help="number of prompts (default 16; quick 8)")
    p.add_argument("--length", type=int, default=None, help="tokens per prompt (default 64; quick 32)")
    p.add_argument("--null-seeds", type=int, default=None, help="random-init seeds per model (default 3; quick 2)")
    p.add_argument("--n-boot", type=int, default=None, help="bootstrap resamples (default 1000; quick 200)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument(
        "--threads",
        type=int,
        default=1,
        help="torch intra-op threads (default 1: the job is many small tensor operations, for which "
        "extra threads only add contention; measured 8x faster than 2 threads on a busy 2-core box)",
    )


def check_options(args) -> None:
    """Every option of ``paper-checks`` / ``analyze`` before any work (raises naming the option as
    typed): the numeric bounds, ``--out``, the claims and the model names (standard library and
    numpy: no torch is imported)."""
    from paper_checks.report import check_out_dir

    OPTIONS.validate(OPTIONS.values(args))
    if args.out is not None:
        check_out_dir(args.out)
    if args.claims is not None:
        check_claims(args.claims)
    if args.command == "paper-checks":
        for m in args.models or []:
            check_model_name(m)
    else:
        try:
            check_model_name(args.model)
        except ConnwalkError as exc:
            raise readdress(exc, {"--models": "model"}) from None


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="connwalk", description="connwalk: operator view of transformers")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    pc = sub.add_parser("paper-checks", help="run the paper checks (main job) and write a report directory")
    pc.add_argument("--out", required=True, help="report directory (created or replaced atomically)")
    pc.add_argument(
        "--models",
        nargs="+",
        default=None,
        help="model names (default: minilm smollm2-135m, plus the scale set when installed); "
        "also local HF directories, .gguf files, synthetic:* test models",
    )
    pc.add_argument(
        "--claims", nargs="+", default=None, help=f"claims to check (default: all of {' '.join(CLAIM_NAMES)})"
    )
    _common(pc)
    an = sub.add_parser("analyze", help="E1/E2 (or --claims ...) statistics and verdicts for one model")
    an.add_argument("model", help="model name (as for --models)")
    an.add_argument("--out", default=None, help="also write a report directory here")
    an.add_argument(
        "--claims",
        nargs="+",
        default=None,
        help="claims to check (default: E1 E2; e.g. `--claims laplacian` for the LAP check)",
    )
    _common(an)
    patterns_cli.add_parser(sub)
    conform_cli.add_parser(sub)
    census_cli.add_parser(sub)
    theorems_cli.add_parser(sub)
    return parser


def _config(args, models, claims):
    from paper_checks.main_job import JobConfig

    return JobConfig(
        models=models,
        claims=claims,
        seed=args.seed,
        quick=args.quick,
        n_prompts=args.prompts,
        length=args.length,
        null_seeds=args.null_seeds,
        n_boot=args.n_boot,
        progress=not args.no_progress,
    )


def _on_sigterm(signum, frame):
    raise Terminated(143)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        previous = signal.signal(signal.SIGTERM, _on_sigterm)
    except ValueError:  # not the main thread: leave signals alone
        previous = None
    try:
        with preserved_state(imported_only=True):  # what the caller had imported; the commands add the rest
            return _run(parser, args)
    except Terminated:
        print("connwalk: terminated (SIGTERM); nothing was written", file=sys.stderr)
        return 143
    except KeyboardInterrupt:
        print("connwalk: interrupted (SIGINT); nothing was written", file=sys.stderr)
        return 130
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _run(parser, args) -> int:
    try:
        if args.command in ("paper-checks", "analyze"):
            check_options(args)  # every option, before anything heavy is imported
            progress = Progress(f"connwalk {args.command}", not args.no_progress)
            with contextlib.ExitStack() as stack:
                progress.status("loading torch, the model registry and the job")
                with progress.live():  # the status line ticks while torch loads
                    stack.enter_context(preserved_state())
                    from paper_checks.main_job import run_job  # noqa: F401 (loaded under the status line)
                import torch

                torch.set_num_threads(args.threads)
                return _job(args)
        func = getattr(args, "func", None)
        if func is not None:  # subcommands registered by add_parser (patterns, conform, ...): each module's
            # add_parser imports nothing heavy; its run(args) imports its work after checking its options
            rc = func(args)
            return int(rc or 0)
        parser.error(f"unknown command {args.command!r}")
    except ConnwalkError as exc:
        print(f"connwalk: error: {exc}", file=sys.stderr)
        return 2
    return 0


def _job(args) -> int:
    from paper_checks.main_job import default_models, run_job
    from paper_checks.report import terminal_summary, verdict_table

    if args.command == "paper-checks":
        cfg = _config(args, args.models or default_models(), args.claims or list(CLAIMS))
        t0 = time.perf_counter()
        rows, _ = run_job(cfg, args.out)
        print(terminal_summary(rows, args.out))  # the full table goes only to report.md
        print(f"\nreport written to {args.out} ({time.perf_counter() - t0:.1f} s)")
        return 0
    cfg = _config(args, [args.model], args.claims or ["E1", "E2"])
    try:
        rows, _ = run_job(cfg, args.out)
    except ConnwalkError as exc:  # analyze has no --models: its model is the positional MODEL
        if exc.argument != "--models":
            raise
        raise readdress(exc, {"--models": "model"}) from None
    print(verdict_table(rows))
    return 0
