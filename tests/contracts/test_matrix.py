"""The bad-input matrix: every declared entry point × every bad-input class its declaration makes
applicable, generated from ``numerics.contracts.declarations.REGISTRY`` with Hypothesis (which argument, where the
NaN goes, which dimension disagrees, which bad number).

Each case must end in the typed error the class calls for, whose message starts with the argument's
name (the parameter name the caller used) — or, for the documented acceptances (numpy arrays, Python
lists, non-contiguous tensors), in the same result as the float64 tensor call, with lists kept in
float64.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from numerics.contracts.declarations import (
    REGISTRY,
    Choice,
    Flag,
    Float,
    FloatDType,
    Index,
    Instance,
    Int,
    Tensor,
    Walk,
)
from numerics.errors import (
    ConnwalkError,
    DTypeError,
    MemoryBudgetError,
    NegativeWeightError,
    NonFiniteError,
    NotStochasticError,
    ParameterError,
    ShapeError,
)
from tests.contracts.examples import EXAMPLES

MATRIX = settings(
    max_examples=4,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture],
)


def _contract(qual):
    return REGISTRY.get(qual) or REGISTRY[f"{qual}.__init__"]


def _pattern(spec: Tensor, x: torch.Tensor) -> list[str]:
    pats = spec.shape if isinstance(spec.shape, tuple) else (spec.shape,)
    for p in pats:
        toks = p.split()
        fixed = [t for t in toks if t != "..."]
        if ("..." in toks and x.ndim >= len(fixed)) or x.ndim == len(toks):
            lead = x.ndim - len(fixed)
            return ["."] * lead + fixed
    raise AssertionError(f"example does not match its own declaration {pats}: {tuple(x.shape)}")


def _symbols(c, kwargs) -> dict[str, list[tuple[str, int]]]:
    """symbol -> [(argument, axis)] over the example's tensor arguments."""
    out: dict[str, list[tuple[str, int]]] = {}
    for nm, spec in c.specs.items():
        v = kwargs.get(nm)
        if isinstance(spec, Tensor) and isinstance(v, torch.Tensor):
            for ax, t in enumerate(_pattern(spec, v)):
                if t not in (".", "*") and not t.isdigit():
                    out.setdefault(t, []).append((nm, ax))
    return out


def _tensor_args(c, kwargs, pred=lambda s, v: True):
    return [
        nm
        for nm, s in c.specs.items()
        if isinstance(s, Tensor) and isinstance(kwargs.get(nm), torch.Tensor) and pred(s, kwargs[nm])
    ]


# ----------------------------------------------------------------------------------------- classes
# each class: (applicable(c, kwargs) -> [args], make(draw, c, kwargs, arg) -> bad value, expected error type)
def _real(s, v):
    return v.is_floating_point() and s.dtype != "mask"


def _mk_nonfinite(value):
    def make(draw, c, kw, arg):
        x = kw[arg].clone()
        i = draw(st.integers(0, x.numel() - 1))
        x.view(-1)[i] = value
        return x

    return make


def _mk_dtype(dtype):
    def make(draw, c, kw, arg):
        return kw[arg].to(dtype) if dtype is not torch.int64 else (kw[arg] * 3).round().to(dtype)

    return make


def _rank_args(c, kw):
    out = []
    for nm in _tensor_args(c, kw):
        s = c.specs[nm]
        pats = s.shape if isinstance(s.shape, tuple) else (s.shape,)
        if kw[nm].ndim >= 1 and all("..." not in p or kw[nm].ndim - len(p.split()) + 1 == 0 for p in pats):
            out.append(nm)
    return out


def _mk_rank(draw, c, kw, arg):
    x = kw[arg]
    return x.reshape(-1)[: max(1, x.shape[-1])].clone() if x.ndim >= 2 else x[..., None, None].clone()


def _empty_args(c, kw):
    syms = _symbols(c, kw)
    return sorted({a for occ in syms.values() for a, _ in occ})


def _mk_empty(draw, c, kw, arg):
    x = kw[arg]
    axes = [ax for occ in _symbols(c, kw).values() for a, ax in occ if a == arg]
    ax = draw(st.sampled_from(sorted(set(axes))))
    sz = list(x.shape)
    sz[ax] = 0
    return x.new_zeros(sz)


def _ref_symbols(c, kw) -> set[str]:
    """Sizes fixed by a reference object (a walk, weights, dynamics)."""
    out: set[str] = set()
    for nm, s in c.specs.items():
        obj = kw.get(nm) if nm != "self" else next((kw[k] for k in ("walk", "dyn", "w") if k in kw), None)
        if obj is None:
            continue
        if isinstance(s, Walk) and hasattr(obj, "apply"):
            out |= {"n", "d", "H"}
        elif isinstance(s, Instance) and s.bind is not None and not isinstance(obj, str):
            out |= set(s.bind(obj))
    return out


def _mismatch_choices(c, kw, arg):
    """Symbols of ``arg`` that a change makes ``arg`` unambiguously the odd one out: fixed by a reference
    object, or carried by more (weighted) dimensions of other arguments than of ``arg`` (the declared rule:
    optional arguments count half)."""
    refs = _ref_symbols(c, kw)
    w = {nm: (0.5 if getattr(s, "optional", False) else 1.0) for nm, s in c.specs.items()}
    out = []
    for sym, occ in _symbols(c, kw).items():
        mine = [ax for a, ax in occ if a == arg]
        others = sum(w[a] for a, _ in occ if a != arg)
        if mine and (sym in refs or others > len(mine) * w[arg]):
            out.append((sym, mine))
    return out


def _mismatch_args(c, kw):
    return [a for a in _tensor_args(c, kw) if _mismatch_choices(c, kw, a)]


def _mk_mismatch(c, kw, draw, arg):
    sym, mine = draw(st.sampled_from(_mismatch_choices(c, kw, arg)))
    x = kw[arg]
    grow = draw(st.integers(1, 2))
    # change every axis of this symbol in this argument (a square n×n stays square: one consistent wrong n)
    y = x
    for ax in mine:
        pad = [0] * (2 * y.ndim)
        pad[2 * (y.ndim - 1 - ax) + 1] = grow
        y = (
            torch.nn.functional.pad(y, pad, value=0.0)
            if y.is_floating_point()
            else torch.nn.functional.pad(y.to(torch.float64), pad).to(y.dtype)
        )
    if c.specs[arg].stochastic or (c.specs[arg].nonneg and y.is_floating_point()):
        y = y.abs() + 0.1
    return y


def _expect_mismatch(c, kw, arg):
    return ShapeError


CLASSES = {
    "nan": (
        lambda c, kw: _tensor_args(c, kw, lambda s, v: _real(s, v) and s.finite),
        _mk_nonfinite(math.nan),
        NonFiniteError,
    ),
    "inf": (
        lambda c, kw: _tensor_args(c, kw, lambda s, v: _real(s, v) and s.finite),
        _mk_nonfinite(math.inf),
        NonFiniteError,
    ),
    "negative": (
        lambda c, kw: _tensor_args(c, kw, lambda s, v: _real(s, v) and s.nonneg),
        lambda d, c, kw, a: kw[a] - 2 * kw[a].abs().max() - 0.5,
        NegativeWeightError,
    ),
    "not-stochastic": (
        lambda c, kw: _tensor_args(c, kw, lambda s, v: s.stochastic),
        lambda d, c, kw, a: kw[a] * d(st.sampled_from([0.5, 2.0])),
        NotStochasticError,
    ),
    "int64": (lambda c, kw: _tensor_args(c, kw, _real), _mk_dtype(torch.int64), DTypeError),
    "bool": (lambda c, kw: _tensor_args(c, kw, _real), lambda d, c, kw, a: kw[a] > 0, DTypeError),
    "complex": (
        lambda c, kw: _tensor_args(c, kw, lambda s, v: _real(s, v) and s.dtype == "real"),
        _mk_dtype(torch.complex128),
        DTypeError,
    ),
    "half": (lambda c, kw: _tensor_args(c, kw, _real), _mk_dtype(torch.float16), DTypeError),
    "bfloat16": (lambda c, kw: _tensor_args(c, kw, _real), _mk_dtype(torch.bfloat16), DTypeError),
    "float-for-mask": (
        lambda c, kw: _tensor_args(c, kw, lambda s, v: s.dtype == "mask"),
        lambda d, c, kw, a: kw[a].to(torch.float64),
        DTypeError,
    ),
    "mixed-dtype": (
        lambda c, kw: [
            a
            for a in _tensor_args(c, kw, _real)
            if c.specs[a].group is not None
            and (
                len(_tensor_args(c, kw, lambda s, v: _real(s, v) and s.group == c.specs[a].group)) >= 2
                or (
                    isinstance(c.specs.get("self"), (Walk, Instance))
                    and getattr(c.specs.get("self"), "tensor", 1) is not None
                )
                or any(
                    isinstance(s, Instance) and s.tensor is not None and kw.get(n) is not None
                    for n, s in c.specs.items()
                )
            )
        ],
        _mk_dtype(torch.float32),
        DTypeError,
    ),
    "wrong-rank": (_rank_args, _mk_rank, ShapeError),
    "empty-size": (_empty_args, _mk_empty, ShapeError),
    "size-mismatch": (_mismatch_args, lambda d, c, kw, a: _mk_mismatch(c, kw, d, a), ShapeError),
    "not-a-tensor": (
        lambda c, kw: _tensor_args(c, kw),
        lambda d, c, kw, a: d(st.sampled_from(["x", {"a": 1}])),
        DTypeError,
    ),
}


def _scalar_args(c, kw, kinds):
    return [nm for nm, s in c.specs.items() if isinstance(s, kinds) and nm in kw and kw[nm] is not None]


def _bad_int(d, c, kw, a):
    s = c.specs[a]
    opts = [1.5, True, math.nan, "3"]
    if isinstance(s, Int) and isinstance(s.lo, int):
        opts.append(s.lo - d(st.integers(1, 3)))
    if isinstance(s, Int) and isinstance(s.hi, int):
        opts.append(s.hi + 1)
    if isinstance(s, Index):
        opts.append(10**6)
        opts.append(-(10**6))
    return d(st.sampled_from(opts))


def _bad_float(d, c, kw, a):
    s = c.specs[a]
    opts = [math.nan, True, "0.5"]
    if not s.inf_ok:
        opts += [math.inf, -math.inf]
    if s.lo is not None:
        opts.append(s.lo if not s.closed else s.lo - d(st.floats(1e-3, 10.0)))
        opts.append(s.lo - d(st.floats(1e-3, 10.0)))
    if s.hi is not None:
        opts.append(s.hi + d(st.floats(1e-3, 10.0)))
    if s.nonzero:
        opts.append(0.0)
    return d(st.sampled_from(opts))


CLASSES.update(
    {
        "bad-int": (lambda c, kw: _scalar_args(c, kw, (Int, Index)), _bad_int, ParameterError),
        "bad-float": (lambda c, kw: _scalar_args(c, kw, (Float,)), _bad_float, ParameterError),
        "bad-choice": (
            lambda c, kw: _scalar_args(c, kw, (Choice,)),
            lambda d, c, kw, a: d(st.sampled_from(["bogus", 3, None])),
            ParameterError,
        ),
        "bad-flag": (
            lambda c, kw: _scalar_args(c, kw, (Flag,)),
            lambda d, c, kw, a: d(st.sampled_from(["yes", 1, None])),
            ParameterError,
        ),
        "int-dtype": (
            lambda c, kw: _scalar_args(c, kw, (FloatDType,)),
            lambda d, c, kw, a: d(st.sampled_from([torch.int64, torch.bool, torch.complex128, "float"])),
            DTypeError,
        ),
        "wrong-object": (
            lambda c, kw: [a for a in _scalar_args(c, kw, (Instance, Walk)) if a != "self"],
            lambda d, c, kw, a: d(st.sampled_from(["walk", 3.0])),
            DTypeError,
        ),
    }
)


def _batch_args(c, kw):
    """Arguments after the first of a ``batch_agree`` rule (the reference), when both are tensors here."""
    cores = getattr(c.after, "cores", None)
    if not cores:
        return []
    names = [n for n in cores if isinstance(kw.get(n), torch.Tensor)]
    return names[1:] if names and names[0] == next(iter(cores)) else []


def _mk_batch_mismatch(d, c, kw, a):
    """The reference gets a leading batch dim of 2, ``a`` one of 3: they cannot broadcast."""
    ref = next(iter(c.after.cores))
    kw[ref] = kw[ref].expand(2, *kw[ref].shape)
    return kw[a].expand(3, *kw[a].shape)


CLASSES["batch-mismatch"] = (_batch_args, _mk_batch_mismatch, ShapeError)

# Flag / Choice with None: None is the documented default for optional ones only
_NONE_OK = {"symmetric"}


def _cases():
    out = []
    for qual, (call, make) in EXAMPLES.items():
        c = _contract(qual)
        kw = make()
        for cls, (applicable, _, _) in CLASSES.items():
            args = [a for a in applicable(c, kw) if a in kw]
            if args:
                out.append((qual, cls))
    return out


CASES = _cases()


def test_matrix_size():
    """The matrix covers every example entry point; the closing note quotes these figures."""
    entries = {q for q, _ in CASES}
    # entry points without an argument besides the object they are called on (walk.to_dense(), ...)
    no_args = {q for q in EXAMPLES if not (set(_contract(q).specs) - {"self"})}
    assert entries == set(EXAMPLES) - no_args
    assert no_args == {
        f"numerics.walk.ConnectionWalk.{m}"
        for m in ("to_dense", "blocks", "gates", "edge_transports", "nearest_kronecker")
    }
    assert len(CASES) >= 600, len(CASES)


@pytest.mark.parametrize("qual, cls", CASES, ids=[f"{q.split('numerics.')[1]}-{c}" for q, c in CASES])
@MATRIX
@given(data=st.data())
def test_bad_input_is_a_typed_error_naming_the_argument(qual, cls, data):
    call, make = EXAMPLES[qual]
    c = _contract(qual)
    kw = make()
    applicable, mk, err = CLASSES[cls]
    arg = data.draw(st.sampled_from([a for a in applicable(c, kw) if a in kw]), label="argument")
    bad = mk(data.draw, c, kw, arg)
    if bad is None and arg in _NONE_OK:
        return
    kw[arg] = bad
    with pytest.raises(ConnwalkError) as exc:
        call(**kw)
    e = exc.value
    assert str(e).startswith(f"{arg}:"), f"{qual}({arg}={cls}): {type(e).__name__}: {e}"
    assert e.argument == arg
    assert isinstance(e, err), f"{qual}({arg}={cls}): expected {err.__name__}, got {type(e).__name__}: {e}"


# ----------------------------------------------------------------------------------------- acceptances
def _same(a, b, depth=0) -> bool:
    if depth > 4:
        return True
    if isinstance(a, torch.Tensor):
        return (
            isinstance(b, torch.Tensor)
            and a.dtype == b.dtype
            and a.shape == b.shape
            and bool(
                torch.equal(a, b)
                if not (a.is_floating_point() or a.is_complex())
                else torch.allclose(a, b, rtol=1e-12, atol=1e-12, equal_nan=True)
            )
        )
    if isinstance(a, np.ndarray):
        return np.allclose(a, b, rtol=1e-12, atol=1e-12, equal_nan=True)
    if isinstance(a, (float, complex)):
        return a == b or (a != a and b != b) or abs(a - b) <= 1e-12 * max(1.0, abs(a))
    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(_same(x, y, depth + 1) for x, y in zip(a, b))
    if dataclasses.is_dataclass(a) and not isinstance(a, type):
        return all(
            _same(getattr(a, f.name), getattr(b, f.name), depth + 1)
            for f in dataclasses.fields(a)
            if f.name not in ("cycles", "holonomies", "extra", "details")
        )
    if hasattr(a, "attention") and hasattr(a, "apply"):  # a ConnectionWalk
        return _same(a.attention, b.attention, depth + 1)
    return True


def _float64_tensor_args(c, kw):
    return _tensor_args(c, kw, lambda s, v: v.dtype == torch.float64)


ACCEPT = {
    "numpy": lambda t: t.numpy().copy(),
    "list": lambda t: t.tolist(),
    "non-contiguous": lambda t: t.transpose(-1, -2).contiguous().transpose(-1, -2) if t.ndim >= 2 else t[::1],
}
ACCEPT_CASES = [(q, k) for q in EXAMPLES for k in ACCEPT if _float64_tensor_args(_contract(q), EXAMPLES[q][1]())]


@pytest.mark.parametrize("qual, kind", ACCEPT_CASES, ids=[f"{q.split('numerics.')[1]}-{k}" for q, k in ACCEPT_CASES])
def test_documented_acceptances_give_the_float64_tensor_result(qual, kind):
    """numpy arrays keep their dtype, Python lists become float64 (never float32), non-contiguous
    tensors are accepted: each gives exactly the result of the float64 tensor call."""
    call, make = EXAMPLES[qual]
    c = _contract(qual)
    ref = call(**make())
    kw = make()
    for a in _float64_tensor_args(c, kw):
        kw[a] = ACCEPT[kind](kw[a])
    got = call(**kw)
    assert _same(ref, got), f"{qual} with {kind} inputs differs from the float64 tensor call"


# ----------------------------------------------------------------------------------------- memory
#: entry point -> argument named by the refusal (every path that forms an n²d² / (nd)² object)
MEMORY = {
    "numerics.walk.ConnectionWalk.to_dense": "walk",
    "numerics.walk.ConnectionWalk.blocks": "walk",
    "numerics.walk.ConnectionWalk.edge_transports": "walk",
    "numerics.graphs.to_networkx": "walk",
    "numerics.graphs.is_reversible": "walk",
    "numerics.graphs.holonomies": "walk",
    "numerics.spectra.dense_eigenvalues": "walk",
    "numerics.spectra.symmetrized_dense": "walk",
    "numerics.laplacian.generator_dense": "walk",
    "numerics.laplacian.diagnose": "walk",
    "numerics.patterns.symbols.linear_operator": "attention",
    "numerics.patterns.symbols.transient_growth": "times",
    "numerics.laplacian.parallel_constraints": "O",
    "numerics.patterns.simulate.MHADynamics": "kernels",
    "numerics.patterns.simulate.MHADynamics.jacobian": "X",
}


@pytest.mark.parametrize("qual", sorted(MEMORY))
def test_dense_paths_refuse_above_the_memory_budget(qual, monkeypatch):
    call, make = EXAMPLES[qual]
    kw = make()
    monkeypatch.setenv("CONNWALK_MEMORY_BUDGET", "64")  # bytes: below any dense object of the examples
    with pytest.raises(MemoryBudgetError) as exc:
        call(**kw)
    assert str(exc.value).startswith(f"{MEMORY[qual]}:")
    assert "instead" in str(exc.value) and "CONNWALK_MEMORY_BUDGET" in str(exc.value)
    monkeypatch.setenv("CONNWALK_MEMORY_BUDGET", "1G")
    call(**make())  # the same call within the budget works
