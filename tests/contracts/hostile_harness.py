"""Hostile bad-input harness (a script, not a test): perturbs one argument of each entry point's
valid example (tests/contracts/examples.py) per bad-input class, derived from the example's value
types only (independent of numerics/contracts/declarations.py), and counts outcomes per class.

    python -m tests.contracts.hostile_harness [--verbose]

Outcomes: ``typed`` (ConnwalkError whose message starts with "<arg>:"), ``typed-wrong-name``,
``generic`` (any other exception), ``silent-nan`` (returned NaN/inf where the valid call did not),
``coerced`` (a list input gave a float32/int result), ``accepted`` (returned; fine for classes that
are documented acceptances: numpy, list, non-contiguous, and often negative values).

Its output before the argument contracts existed (issue 11) is kept for comparison in
``tests/contracts/hostile_harness_outcomes_before_contracts.txt``.
"""

from __future__ import annotations

import collections
import dataclasses
import math
import os
import sys
import warnings

import numpy as np
import torch

from numerics.errors import ConnwalkError, MemoryBudgetError


def _has_nonfinite(x, depth=0) -> bool:
    if depth > 3:
        return False
    if isinstance(x, torch.Tensor):
        if x.is_floating_point() or x.is_complex():
            return not bool(torch.isfinite(x).all())
        return False
    if isinstance(x, np.ndarray):
        return x.dtype.kind in "fc" and not bool(np.isfinite(x).all())
    if isinstance(x, (float, complex)):
        return not (math.isfinite(x.real) and math.isfinite(x.imag))
    if isinstance(x, (tuple, list)):
        return any(_has_nonfinite(y, depth + 1) for y in x[:50])
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        return any(
            _has_nonfinite(getattr(x, f.name), depth + 1)
            for f in dataclasses.fields(x)
            if f.name not in ("cycles", "holonomies", "extra", "details", "frames", "tol")
        )
    return False


def _first_tensor(x):
    if isinstance(x, torch.Tensor):
        return x
    if isinstance(x, tuple) and x and isinstance(x[0], torch.Tensor):
        return x[0]
    return None


def tensor_classes(x: torch.Tensor):
    out = []
    fl = x.is_floating_point()
    if fl and x.numel():
        y = x.clone()
        y.view(-1)[0] = float("nan")
        out.append(("nan", y))
        y = x.clone()
        y.view(-1)[-1] = float("inf")
        out.append(("inf", y))
        out.append(("negative", -x.abs() - 0.1))
        out.append(("int64", (x * 3).round().to(torch.int64)))
        out.append(("bool", x > 0))
        out.append(("complex", x.to(torch.complex128)))
        out.append(("half", x.to(torch.float16)))
        out.append(("bfloat16", x.to(torch.bfloat16)))
        if x.dtype == torch.float64:
            out.append(("mixed-float32", x.to(torch.float32)))
        out.append(("list", x.tolist()))
        out.append(("numpy", x.numpy().copy()))
    if x.ndim >= 1:
        out.append(("rank-down", x[0].clone()))
        out.append(("rank-up", x[..., None].clone()))
        sz = list(x.shape)
        sz[-1] = 0
        out.append(("empty", x.new_zeros(sz)))
        out.append(("size-mismatch", torch.cat([x, x[..., :1]], -1)))
    if x.ndim >= 2 and fl:
        out.append(("non-contiguous", x.transpose(-1, -2).contiguous().transpose(-1, -2)))
    out.append(("string", "bogus"))
    return out


def scalar_classes(v):
    if isinstance(v, bool):
        return [("string", "bogus")]
    if isinstance(v, int):
        return [
            ("negative", -1),
            ("zero", 0),
            ("non-integer", 1.5),
            ("bool", True),
            ("nan", float("nan")),
            ("string", "bogus"),
        ]
    if isinstance(v, float):
        return [("nan", float("nan")), ("inf", float("inf")), ("negative", -1.0), ("zero", 0.0), ("string", "bogus")]
    if isinstance(v, str):
        return [("unknown-choice", "bogus"), ("non-string", 3)]
    return []


ACCEPTABLE = {"numpy", "list", "non-contiguous", "negative", "rank-up"}


def run(verbose=False):
    from tests.contracts.examples import EXAMPLES

    counts = collections.defaultdict(collections.Counter)
    rows = []
    for name, (call, make) in EXAMPLES.items():
        base = make()
        try:
            ref = call(**make())
            ref_bad = _has_nonfinite(ref)
        except Exception as exc:  # pragma: no cover
            print("VALID CALL FAILS", name, exc)
            continue
        from numerics.walk import ConnectionWalk as _CW

        n_tensors = sum(
            isinstance(v, (torch.Tensor, _CW)) or hasattr(v, "W_Q") or hasattr(v, "T") for v in base.values()
        )
        for arg, val in base.items():
            if isinstance(val, torch.Tensor):
                classes = tensor_classes(val)
            else:
                classes = scalar_classes(val)
            for cls, bad in classes:
                kw = make()
                kw[arg] = bad
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    try:
                        res = call(**kw)
                    except ConnwalkError as exc:
                        out = "typed" if str(exc).startswith(f"{arg}:") else "typed-wrong-name"
                        msg = f"{type(exc).__name__}: {exc}"
                    except Exception as exc:
                        out, msg = "generic", f"{type(exc).__name__}: {str(exc)[:120]}"
                    else:
                        msg = ""
                        if _has_nonfinite(res) and not ref_bad:
                            out = "silent-nan"
                        elif (
                            cls == "list"
                            and _first_tensor(res) is not None
                            and _first_tensor(res).dtype
                            not in (torch.float64, torch.complex128, torch.bool, torch.int64)
                        ):
                            out = "coerced"
                        else:
                            single = n_tensors < 2 and cls in ("mixed-float32", "size-mismatch")
                            out = "accepted" if cls in ACCEPTABLE or single else "accepted?"
                counts[cls][out] += 1
                rows.append((name, arg, cls, out, msg))
    # memory: dense paths on a walk of n=64, d=8 under a 1 MiB budget
    from numerics import graphs, laplacian, spectra
    from numerics.patterns import symbols as patterns
    from numerics.walk import ConnectionWalk

    os.environ["CONNWALK_MEMORY_BUDGET"] = "1M"
    n, d = 64, 8
    A = torch.rand(2, n, n, dtype=torch.float64) + 0.1
    A = A / A.sum(-1, keepdim=True)
    w = ConnectionWalk.from_mha(A, torch.randn(2, d, d, dtype=torch.float64))
    ker = torch.full((2, n), 1.0 / n, dtype=torch.float64)
    mem = {
        "to_dense": lambda: w.to_dense(),
        "blocks": lambda: w.blocks(),
        "edge_transports": lambda: w.edge_transports(),
        "to_networkx": lambda: graphs.to_networkx(w),
        "is_reversible": lambda: graphs.is_reversible(w),
        "holonomies": lambda: graphs.holonomies(w),
        "dense_eigenvalues": lambda: spectra.dense_eigenvalues(w),
        "generator_dense": lambda: laplacian.generator_dense(w),
        "diagnose": lambda: laplacian.diagnose(w),
        "linear_operator": lambda: patterns.linear_operator(ker, torch.randn(2, d, d, dtype=torch.float64)),
        "symmetrized_dense": lambda: spectra.symmetrized_dense(w, torch.full((n,), 1 / n, dtype=torch.float64)),
        "nearest_kronecker(edges)": lambda: ConnectionWalk.from_edges(
            A[0], torch.randn(n, n, d, d, dtype=torch.float64)
        ).nearest_kronecker(),
    }
    for nm, f in mem.items():
        try:
            f()
            out, msg = "accepted?", ""
        except MemoryBudgetError as exc:
            out, msg = "typed", str(exc)[:100]
        except Exception as exc:
            out, msg = "generic", f"{type(exc).__name__}: {str(exc)[:100]}"
        counts["memory"][out] += 1
        rows.append((nm, "walk", "memory", out, msg))
    del os.environ["CONNWALK_MEMORY_BUDGET"]
    outcomes = ["typed", "typed-wrong-name", "generic", "silent-nan", "coerced", "accepted?", "accepted"]
    print(f"{'class':16s} " + " ".join(f"{o:>16s}" for o in outcomes))
    tot = collections.Counter()
    for cls, c in sorted(counts.items()):
        print(f"{cls:16s} " + " ".join(f"{c[o]:16d}" for o in outcomes))
        tot.update(c)
    print(
        f"{'TOTAL':16s} " + " ".join(f"{tot[o]:16d}" for o in outcomes),
        f"  cases={sum(tot.values())}",
        f"entry points={len(EXAMPLES)}",
    )
    if verbose:
        for r in rows:
            if r[3] not in ("typed", "accepted"):
                print(" | ".join(map(str, r)))
    return counts


if __name__ == "__main__":
    run(verbose="--verbose" in sys.argv)
