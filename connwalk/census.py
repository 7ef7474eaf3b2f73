r"""``connwalk census [--library {transformers,timm}] [--out DIR] [--json PATH]``: every attention class of
the installed transformers checked as a connection walk (:func:`numerics.census.run.run_census`), or with
``--library timm`` every timm architecture's attention (:func:`numerics.census.timm.run_timm_census`).
Writes ``DIR/CENSUS.md`` (default the current directory) and, with ``--json``, the rows as JSON — for timm
``DIR/CENSUS-timm.md`` and ``DIR/census-timm.json`` (or ``--json``) —; prints the counts per status.

Exit status (:data:`EPILOG`): 0 when the census ran (whatever its rows say: it is a report, not a
gate); 2 on bad input, with one line on stderr naming the option, before any class runs (``--out`` or
``--json`` not writable — each output location is tried by writing a temporary file there and removing
it —, a number out of range, more ``--jobs`` than CPUs, unknown model types or classes); 130 / 143 when
stopped by SIGINT / SIGTERM (the workers killed, nothing written); 1 an unexpected failure.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile

from connwalk.parser import check_json_path, preserved_state, readdress
from numerics.errors import ParameterError

#: the library's parameters as the options that set them (errors of run_census name the option)
OPTION_OF = {
    "model_types": "--model-types",
    "classes": "--classes",
    "examples": "--examples",
    "seed": "--seed",
    "jobs": "--jobs",
    "timeout": "--timeout",
    "architectures": "--model-types",
}
#: the libraries a census surveys (``--library``)
LIBRARIES = ("transformers", "timm")

DESCRIPTION = """\
Every attention class of the installed transformers, checked as a connection
walk by the conformance kit: each class is built inside its family's model
from a tiny random configuration, run on seeded draws in float64, and judged
on T2's hypotheses (nonnegative, row-stochastic attention) and its identity.
Writes DIR/CENSUS.md (and, with --json, one JSON row per class: class, family,
status, reason, the T3/T5 hypotheses its heads satisfy) and prints the counts
per status. Takes 10-15 minutes on 2 cores (--jobs 2); --model-types and
--classes check a part.

--library timm: every timm architecture (timm.list_modules()), its smallest
variant with random weights; its attention modules (those holding a softmax
attention kernel the torch capture observes) judged the same way, one per
class. Writes DIR/CENSUS-timm.md and DIR/census-timm.json (or --json PATH);
--model-types then names timm architectures (vision_transformer, eva, ...)."""

EPILOG = """\
statuses: conforms; identity holds, hypothesis fails (which); fails (the
counterexample); undecided; timed out; declined (why: not softmax attention,
inputs the census cannot draw, no tiny model contains the class, ...).

timeout: each family build and each class has --timeout seconds of CPU time
(its process's, every thread's: a loaded machine does not change its row;
one that uses no CPU is stopped after 10 times that in wall time); a class
that runs out is retried once alone after the others, then "timed out".

exit status:
  0    the census ran (whatever its rows say: it is a report, not a gate)
  2    bad input, with one line on stderr naming the option, before any class
       runs: --out or --json not writable (tried by writing a temporary file
       in each output location), a number out of range, more --jobs than
       CPUs, unknown --model-types or --classes (named)
  130  stopped by SIGINT (Ctrl-C), 143 stopped by SIGTERM: the workers are
       killed within seconds and nothing is written (a file is written
       whole, through a temporary file, or not at all)
  1    an unexpected failure"""


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Register ``census`` on an ``argparse`` subparsers object (``connwalk census …``)."""
    p = subparsers.add_parser(
        "census",
        help="every attention class in transformers checked as a connection walk (writes CENSUS.md)",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--library",
        default="transformers",
        help="the library surveyed: transformers (CENSUS.md) or timm (CENSUS-timm.md); default transformers",
    )
    p.add_argument("--out", default=".", metavar="DIR", help="directory of CENSUS.md (default: .)")
    p.add_argument("--json", default=None, metavar="PATH", help="also write the rows as JSON")
    p.add_argument("--examples", type=int, default=2, help="draws per class (default 2)")
    p.add_argument("--seed", type=int, default=0, help="seed of the draws and of the tiny models (default 0)")
    p.add_argument(
        "--jobs", type=int, default=None, help="worker processes (default 2, or 1 on one CPU; at most the CPUs)"
    )
    p.add_argument(
        "--timeout", type=float, default=None, help="CPU seconds per model build and per class (default 20; timm 60)"
    )
    p.add_argument("--model-types", nargs="+", default=None, metavar="TYPE", help="only these model types")
    p.add_argument("--classes", nargs="+", default=None, metavar="CLASS", help="only these attention classes")
    p.add_argument("--quiet", action="store_true", help="no line per class")
    p.set_defaults(func=run)
    return p


def check_options(args) -> None:
    """Every option before any work (raises :class:`ParameterError` naming it); ``--jobs`` left out
    becomes 2 (1 on a single CPU)."""
    from numerics.census.run import max_jobs  # standard library only at import

    if args.library not in LIBRARIES:
        raise ParameterError(f"expected one of {', '.join(LIBRARIES)}, got {args.library!r}", argument="--library")
    if args.library == "timm" and args.classes is not None:
        raise ParameterError(
            "selects transformers' classes; with --library timm name architectures", argument="--classes"
        )
    if args.timeout is None:
        args.timeout = 60.0 if args.library == "timm" else 20.0
    if args.jobs is None:
        args.jobs = min(2, max_jobs())
    for opt, v, lo, hi in (
        ("--examples", args.examples, 1, 100),
        ("--seed", args.seed, 0, 2**31 - 1),
        ("--jobs", args.jobs, 1, max_jobs()),
    ):
        if not lo <= v <= hi:
            why = " (the CPUs this process may run on)" if opt == "--jobs" and v > hi else ""
            raise ParameterError(f"expected an integer in [{lo}, {hi}]{why}, got {v}", argument=opt)
    if not 0 < args.timeout <= 3600:
        raise ParameterError(f"expected CPU seconds in (0, 3600], got {args.timeout:g}", argument="--timeout")
    check_out_dir(args.out, "CENSUS-timm.md" if args.library == "timm" else "CENSUS.md")
    check_json_path(args.json, "census-timm.json" if args.library == "timm" else "census.json")


def check_out_dir(out: str, name: str = "CENSUS.md") -> None:
    """``--out DIR`` must take ``DIR/CENSUS.md``: DIR is a directory, or does not exist and its parent
    is one; a temporary file is written in the directory that will hold CENSUS.md (DIR, or the
    parent that DIR will be made in) and removed at once; an existing ``CENSUS.md`` is a file that can
    be opened for writing. Nothing is left behind."""
    if os.path.exists(out) and not os.path.isdir(out):
        raise ParameterError(f"{out} is a file, expected a directory", argument="--out")
    parent = os.path.dirname(os.path.abspath(out))
    if not os.path.isdir(out) and not os.path.isdir(parent):
        raise ParameterError(f"the parent directory {parent} does not exist", argument="--out")
    here = out if os.path.isdir(out) else parent
    target = os.path.join(out, name)
    if os.path.lexists(target) and not os.path.isfile(target):
        raise ParameterError(f"{target} exists and is not a file", argument="--out")
    try:
        fd, probe = tempfile.mkstemp(dir=here, prefix=".connwalk-probe-")
        os.close(fd)
        os.unlink(probe)
        if os.path.exists(target):
            with open(target, "a"):
                pass
    except OSError as exc:
        raise ParameterError(f"cannot write in {here}: {exc.strerror or exc}", argument="--out") from None


def run(args) -> int:
    check_options(args)
    with preserved_state():
        return _run(args)


def _run(args) -> int:
    if args.library == "timm":
        return _run_timm(args)
    if not args.quiet:  # something within a second: importing transformers and listing its classes takes ~10 s
        print(
            "connwalk census: loading transformers and listing its attention classes ...", file=sys.stderr, flush=True
        )
    import transformers

    from numerics.census.run import run_census, write_census

    transformers.logging.set_verbosity_error()

    def show(row) -> None:
        if not args.quiet:
            print(f"{row.family:<24} {row.cls:<40} {row.status:<32} {row.reason[:90]}", flush=True)

    try:
        res = run_census(
            model_types=args.model_types,
            classes=args.classes,
            examples=args.examples,
            seed=args.seed,
            timeout=args.timeout,
            jobs=args.jobs,
            progress=show,
        )
    except ParameterError as exc:  # unknown model types or classes: named as the options that gave them
        raise readdress(exc, OPTION_OF) from None
    paths = write_census(res, args.out, args.json)
    counts = ", ".join(f"{k}: {v}" for k, v in res.counts().items())
    print(
        f"census of {len(res.rows)} attention classes (transformers {res.transformers_version}): {counts}; "
        f"{len(res.conforming_families())} families conform; wall {res.wall_seconds:.0f} s, CPU {res.cpu_seconds:.0f} s"
    )
    print("written: " + ", ".join(str(p) for p in paths))
    sys.stdout.flush()
    return 0


def _run_timm(args) -> int:
    if not args.quiet:
        print("connwalk census: loading timm and listing its architectures ...", file=sys.stderr, flush=True)
    from numerics.census.timm import run_timm_census
    from numerics.census.timm_report import write_timm_census

    def show(row) -> None:
        if not args.quiet:
            print(f"{row.family:<26} {row.cls:<28} {row.status:<32} {row.reason[:90]}", flush=True)

    try:
        res = run_timm_census(
            architectures=args.model_types,
            examples=args.examples,
            seed=args.seed,
            timeout=args.timeout,
            jobs=args.jobs,
            progress=show,
        )
    except ParameterError as exc:
        raise readdress(exc, OPTION_OF) from None
    paths = write_timm_census(res, args.out, args.json)
    counts = ", ".join(f"{k}: {v}" for k, v in res.counts().items())
    arch = res.architectures()
    print(
        f"census of {arch['total']} timm architectures (timm {res.timm_version}): {arch['with attention']} with "
        f"attention, every class judged in {arch['judged']}; rows {counts}; "
        f"wall {res.wall_seconds:.0f} s, CPU {res.cpu_seconds:.0f} s"
    )
    print("written: " + ", ".join(str(p) for p in paths))
    sys.stdout.flush()
    return 0
