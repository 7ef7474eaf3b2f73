"""Driver for scripts/mutation.sh: mutmut per target module, score table, survivors file.

    python mutation/run.py [MODULE ...] [--max-children N] [--fresh] [--report-only]
                           [--mutants NAME ...] [--survivors]

MODULE is a table name of mutation/targets.toml (walk, attention, graphs, patterns, laplacian,
laplacian_forms, laplacian_result, derivations, laplacian_blocks, laplacian_checks, laplacian_dense,
markov, derivations_walks, derivations_spectral);
none = all, in the order the file lists them. Each module runs in its own work copy
mutation/work/<module>/ (git-ignored; mutmut keeps its results there, so a second run only tests
what is new: ``--fresh`` starts over). After each run the score is printed and the surviving
mutants (with their diffs) are written to mutation/survivors/<module>.txt.

Score = killed / (killed + survived), where "killed" includes timeouts and "survived" includes
mutants no owning test reaches ("no tests"); mutants listed in mutation/equivalent.txt (a line
``<mutant name>  <why it is equivalent>``) are taken out of the survivors first.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import shutil
import subprocess
import sys
import time
import tomllib
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HERE = ROOT / "mutation"


def order() -> list[str]:
    """Target names in the order mutation/targets.toml lists them."""
    return [k for k in load_targets() if k != "common"]


KILLED = {1: "killed", 3: "killed"}
TIMEOUT = {36, 24, -24, 152, 255}
SURVIVED = {0: "survived"}
NO_TESTS = {33, 5}


def load_targets() -> dict:
    return tomllib.loads((HERE / "targets.toml").read_text())


def load_equivalent() -> dict[str, str]:
    out = {}
    path = HERE / "equivalent.txt"
    if path.exists():
        for line in path.read_text().splitlines():
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            name, _, why = line.partition(" ")
            out[name] = why.strip()
    return out


def expand_tests(patterns: list[str]) -> list[str]:
    files: list[str] = []
    for p in patterns:
        hits = sorted(glob.glob(str(ROOT / p)))
        if not hits:
            raise SystemExit(f"mutation/targets.toml: no test file matches {p!r}")
        files += [os.path.relpath(h, ROOT) for h in hits if os.path.relpath(h, ROOT) not in files]
    return files


def toml_list(xs: list[str]) -> str:
    return "[" + ", ".join(json.dumps(x) for x in xs) + "]"


def prepare(name: str, spec: dict, common: dict, fresh: bool) -> Path:
    work = HERE / "work" / name
    if fresh and work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True, exist_ok=True)
    ignore = shutil.ignore_patterns("__pycache__", ".hypothesis", "*.pyc", "mutants")
    for item in common["copy"]:
        src, dst = ROOT / item, work / item
        if dst.is_dir():
            shutil.rmtree(dst)
        if src.is_dir():
            shutil.copytree(src, dst, ignore=ignore)
        else:
            shutil.copy2(src, dst)
    tests = expand_tests(spec["tests"])
    packages = [f"{p}/" for p in common["copy"] if (ROOT / p).is_dir() and p != "tests"]
    text = (work / "pyproject.toml").read_text()
    if "[tool.mutmut]" in text:
        raise SystemExit("pyproject.toml already has [tool.mutmut]; mutation/targets.toml is the configuration")
    text += (
        "\n[tool.mutmut]\n"
        f"source_paths = {toml_list(packages)}\n"
        f"only_mutate = {toml_list([spec['source']])}\n"
        f"pytest_add_cli_args_test_selection = {toml_list(tests)}\n"
        f"pytest_add_cli_args = {toml_list(common['pytest_args'])}\n"
    )
    (work / "pyproject.toml").write_text(text)
    return work


def env() -> dict:
    e = dict(os.environ)
    # forked test processes deadlock inside torch's SVD with more than one OpenMP thread
    e.update(OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", HYPOTHESIS_PROFILE="mutation")
    e.pop("CI", None)
    return e


def run_mutmut(work: Path, max_children: int, mutants: list[str]) -> float:
    t0 = time.time()
    cmd = [sys.executable, str(HERE / "mutmut_entry.py"), "run", "--max-children", str(max_children), *mutants]
    print("+ (cd", os.path.relpath(work, ROOT), "&&", " ".join(cmd[1:]) + ")", flush=True)
    proc = subprocess.run(cmd, cwd=work, env=env())
    if proc.returncode:
        print(f"mutmut exited with {proc.returncode}", file=sys.stderr)
    return time.time() - t0


def results(work: Path, source: str) -> dict[str, int | None]:
    meta = work / "mutants" / (source + ".meta")
    if not meta.exists():
        if (work / "mutants" / source).exists():
            return {}  # mutmut ran and found nothing to mutate in this file (e.g. re-exports only)
        raise SystemExit(f"{meta}: no mutmut results (run without --report-only first)")
    return json.loads(meta.read_text())["exit_code_by_key"]


def diffs(work: Path, names: list[str]) -> dict[str, str]:
    if not names:
        return {}
    code = (
        "import json, sys\n"
        f"sys.path.insert(0, {str(HERE)!r})\n"
        "import mutmut_entry  # same mutation rules as the run\n"
        "from mutmut.mutation.diff_apply import get_diff_for_mutant\n"
        "names = json.load(sys.stdin)\n"
        "out = {}\n"
        "for n in names:\n"
        "    try:\n"
        "        out[n] = get_diff_for_mutant(n)\n"
        "    except Exception as e:  # e.g. mutmut rewriting its index while it runs\n"
        "        out[n] = f'(diff unavailable: {e!r}; mutmut show {n})'\n"
        "print(json.dumps(out))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=work,
        env=env(),
        input=json.dumps(names),
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout)


def score(name: str, spec: dict, work: Path, equivalent: dict[str, str]) -> dict:
    codes = results(work, spec["source"])
    tally = Counter()
    survivors, _no_tests, wrong_equiv = [], [], []
    for key, code in sorted(codes.items()):
        if key in equivalent:
            tally["equivalent"] += 1
            if code is not None and code not in SURVIVED and code not in NO_TESTS:
                wrong_equiv.append(key)  # listed as equivalent, but a test kills it: not equivalent
            continue
        if code in KILLED:
            tally["killed"] += 1
        elif code in TIMEOUT:
            tally["timeout"] += 1
        elif code in SURVIVED:
            tally["survived"] += 1
            survivors.append(key)
        elif code in NO_TESTS:
            tally["no_tests"] += 1
            survivors.append(key)
        elif code is None:
            tally["not_checked"] += 1
        else:
            tally["other"] += 1
            survivors.append(key)
    prefix = spec["source"][:-3].replace("/", ".") + "."
    stale = [k for k in equivalent if k.startswith(prefix) and k not in codes]
    k = tally["killed"] + tally["timeout"]
    s = tally["survived"] + tally["no_tests"] + tally["other"]
    row = dict(
        module=spec["source"],
        total=len(codes),
        killed=tally["killed"],
        timeout=tally["timeout"],
        survived=tally["survived"],
        no_tests=tally["no_tests"],
        other=tally["other"],
        not_checked=tally["not_checked"],
        equivalent=tally["equivalent"],
        score=(k / (k + s)) if k + s else float("nan"),
    )
    out = HERE / "survivors" / f"{name}.txt"
    out.parent.mkdir(exist_ok=True)
    d = diffs(work, survivors)
    status = dict.fromkeys(SURVIVED, "survived") | dict.fromkeys(NO_TESTS, "no tests")
    with out.open("w") as f:
        f.write(
            f"# {spec['source']}: {len(survivors)} surviving mutants "
            f"(score {row['score']:.1%}, {tally['equivalent']} equivalent excluded)\n"
        )
        for key in survivors:
            f.write(f"\n## {key} ({status.get(codes[key], f'exit {codes[key]}')})\n{d.get(key, '')}\n")
    if wrong_equiv:
        print(f"WARNING: listed in mutation/equivalent.txt but killed: {wrong_equiv}", file=sys.stderr)
    if stale:
        print(f"WARNING: mutation/equivalent.txt names mutants that no longer exist: {stale}", file=sys.stderr)
    return row


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("modules", nargs="*", help=f"targets (default: all): {', '.join(order())}")
    ap.add_argument("--max-children", type=int, default=2)
    ap.add_argument("--fresh", action="store_true", help="discard earlier results of these modules")
    ap.add_argument("--report-only", action="store_true", help="print the table from the last run")
    ap.add_argument("--mutants", nargs="+", default=[], help="rerun only these mutants (names or globs)")
    ap.add_argument(
        "--survivors",
        action="store_true",
        help="rerun only the mutants that survived the last run and are not listed as equivalent (after adding tests)",
    )
    a = ap.parse_args(argv)
    targets = load_targets()
    common = targets["common"]
    mods = a.modules or order()
    bad = [m for m in mods if m not in targets or m == "common"]
    if bad:
        ap.error(f"unknown module(s) {bad}; known: {', '.join(order())}")
    equivalent = load_equivalent()
    rows = []
    for m in mods:
        spec = targets[m]
        work = HERE / "work" / m
        elapsed = None
        if not a.report_only:
            names = list(a.mutants)
            if a.survivors and (work / "mutants" / (spec["source"] + ".meta")).exists():
                codes = results(work, spec["source"])
                # listed equivalents survive by definition: rerunning them (every owning test, since
                # nothing fails) is the slowest part of a rerun; a full run still checks them
                names += [
                    k
                    for k, c in codes.items()
                    if c not in KILLED and c not in TIMEOUT and c is not None and k not in equivalent
                ]
                if not names:
                    print(f"{m}: no survivors to rerun")
            work = prepare(m, spec, common, a.fresh)
            if names or not a.survivors:
                elapsed = run_mutmut(work, a.max_children, names)
        row = score(m, spec, work, equivalent)
        row["minutes"] = None if elapsed is None else elapsed / 60
        rows.append(row)
        print_table([row])
    if len(rows) > 1:
        print_table(rows)
    path = HERE / "survivors" / "scores.json"
    table = json.loads(path.read_text()) if path.exists() else {}
    table = table if isinstance(table, dict) else {}
    table.update({r["module"]: r for r in rows})
    path.write_text(json.dumps(table, indent=1) + "\n")
    return 0 if all(r["not_checked"] == 0 for r in rows) else 1


def print_table(rows: list[dict]) -> None:
    cols = [
        "module",
        "total",
        "killed",
        "timeout",
        "survived",
        "no_tests",
        "equivalent",
        "not_checked",
        "score",
        "minutes",
    ]
    fmt = lambda c, v: f"{v:.1%}" if c == "score" else ("-" if v is None else f"{v:.1f}") if c == "minutes" else str(v)
    table = [cols] + [[fmt(c, r[c]) for c in cols] for r in rows]
    widths = [max(len(r[i]) for r in table) for i in range(len(cols))]
    print()
    for r in table:
        print("  ".join(v.rjust(w) for v, w in zip(r, widths)))
    print("(score = (killed + timeout) / (killed + timeout + survived + no_tests); equivalent excluded)", flush=True)


if __name__ == "__main__":
    sys.exit(main())
