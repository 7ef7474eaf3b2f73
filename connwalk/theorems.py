"""``connwalk theorems``: every registered statement (connwalk's own and those installed packages or a
conftest register, :mod:`theory.api`), with where each comes from.

* ``connwalk theorems`` — one line per statement: id, title, origin;
* ``--render PATH`` — write the THEOREMS.md section of the statements registered outside connwalk
  (:func:`theory.gate.render.render_registered`);
* ``--check ID`` — run the gate (:func:`theory.gate.gate`) on one and print its summary (``--json PATH``:
  its report as JSON). Exit codes as ``connwalk conform``'s: 0 passes, 1 fails, 2 bad input (an unknown
  id, a registration that does not load, an unwritable path), 3 undecided.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

DESCRIPTION = __doc__.split("\n\n", 1)[1] if __doc__ else ""


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Register ``theorems`` on an ``argparse`` subparsers object (imports nothing heavy)."""
    p = subparsers.add_parser(
        "theorems",
        help="list every registered statement with its origin; --render PATH, --check ID (the gate)",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    g = p.add_mutually_exclusive_group()
    g.add_argument("--render", default=None, metavar="PATH", help="write the registered statements' section")
    g.add_argument("--check", default=None, metavar="ID", help="run the gate on the statement ID")
    p.add_argument("--json", default=None, metavar="PATH", help="with --check: write the gate's report as JSON")
    p.set_defaults(func=run)
    return p


def _writable(option: str, path: str) -> Path:
    from numerics.errors import ParameterError

    out = Path(path)
    if not out.parent.is_dir():
        raise ParameterError(f"{option} {path}: the directory {str(out.parent)!r} does not exist")
    if out.is_dir():
        raise ParameterError(f"{option} {path}: is a directory, not a file")
    return out


def _records():
    from numerics.errors import ParameterError
    from theory.errors import StatementError
    from theory.registry.external import all_statements

    try:
        return all_statements()
    except StatementError as exc:
        raise ParameterError(f"registered statements: {exc}") from None


def run(args) -> int:
    from numerics.errors import ParameterError

    if args.json is not None and args.check is None:
        raise ParameterError("--json: only with --check ID (the gate's report)")
    if args.check is not None:
        from theory.gate import gate

        json_path = _writable("--json", args.json) if args.json else None
        known = {r.id: r for r in _records()}
        if args.check not in known:
            raise ParameterError(f"--check {args.check!r}: no such registered statement; known ids: {', '.join(known)}")
        rep = gate(args.check)
        print(rep.summary())
        if json_path is not None:
            json_path.write_text(json.dumps(rep.as_dict(), indent=2, ensure_ascii=False), encoding="utf-8")
        return rep.exit_code
    records = _records()
    if args.render is not None:
        from theory.gate.render import render_registered
        from theory.registry import ids

        out = _writable("--render", args.render)
        own = set(ids())
        out.write_text(render_registered(r for r in records if r.id not in own), encoding="utf-8")
        print(f"wrote {out}")
        return 0
    width = max((len(r.id) for r in records), default=2)
    for r in records:
        sys.stdout.write(f"{r.id:<{width}}  {r.theorem.title} — {r.origin}\n")
    return 0
