"""Naive float64 references shared by the numeric tests (loops over tokens; no vectorisation)."""

from __future__ import annotations

import math
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import torch


def naive_walk_apply(A_heads: torch.Tensor, T_heads: torch.Tensor, X: torch.Tensor) -> torch.Tensor:
    """``y_i = Σ_h Σ_j A^h_ij T_h x_j`` with explicit loops, float64, for one batch element.

    ``A_heads`` (H, n, n), ``T_heads`` (H, d, d), ``X`` (n, d)."""
    A = A_heads.detach().cpu().double().numpy()
    T = T_heads.detach().cpu().double().numpy()
    Xn = X.detach().cpu().double().numpy()
    H, n, _ = A.shape
    d = Xn.shape[1]
    Y = np.zeros((n, d))
    for h in range(H):
        for i in range(n):
            for j in range(n):
                Y[i] += A[h, i, j] * (T[h] @ Xn[j])
    return torch.from_numpy(Y)


def naive_token_major(A_heads: torch.Tensor, T_heads: torch.Tensor) -> torch.Tensor:
    """Dense ``nd × nd`` operator assembled block by block: block (i, j) = Σ_h A^h_ij T_h."""
    A = A_heads.detach().cpu().double().numpy()
    T = T_heads.detach().cpu().double().numpy()
    H, n, _ = A.shape
    d = T.shape[-1]
    W = np.zeros((n * d, n * d))
    for i in range(n):
        for j in range(n):
            W[i * d : (i + 1) * d, j * d : (j + 1) * d] = sum(A[h, i, j] * T[h] for h in range(H))
    return torch.from_numpy(W)


def eigvec_condition(M: torch.Tensor) -> float:
    """κ(V) of the eigenvector matrix (Bauer–Fike constant); inf for defective matrices."""
    Mn = M.detach().cpu().double().numpy()
    if Mn.size == 0:
        return 1.0
    _, V = np.linalg.eig(Mn)
    with np.errstate(all="ignore"):
        c = np.linalg.cond(V)
    return float(c) if np.isfinite(c) else float("inf")


def t(x) -> torch.Tensor:
    """A float64 tensor from nested lists / arrays (never float32)."""
    return torch.as_tensor(np.asarray(x, dtype=np.float64))


def raises_named(err, arg, call) -> str:
    """``call()`` raises exactly ``err`` (a ConnwalkError, not a subclass or base) whose message starts
    with ``"<arg>: "``, README's promise; returns the message."""
    import pytest

    from numerics.errors import ConnwalkError

    with pytest.raises(err) as exc:
        call()
    assert type(exc.value) is err, type(exc.value).__name__  # the exact type, not a base class
    assert isinstance(exc.value, ConnwalkError)
    assert str(exc.value).startswith(f"{arg}: "), str(exc.value)
    return str(exc.value)


def assert_bad_input(call, err: str, message: str) -> None:
    """A row of a ``BAD_INPUT`` table: ``call()`` raises the ConnwalkError named ``err`` whose message
    starts with ``message``, and the error's ``argument`` is the name before the message's colon."""
    import pytest

    from numerics.errors import ConnwalkError

    with pytest.raises(ConnwalkError) as exc:
        call()
    assert type(exc.value).__name__ == err
    assert str(exc.value).startswith(message), str(exc.value)
    assert exc.value.argument == message.split(":")[0]


def literal_constraints(P, O):
    """The parallel-section constraint matrix ``C`` (``n·n·d × n·d``), literally: block row ``(i, j)`` is
    ``e_iᵀ ⊗ I − e_jᵀ ⊗ O_ij`` on the edges ``P_ij > 0``, 0 elsewhere (float64 numpy)."""
    import numpy as np

    n, d = O.shape[0], O.shape[-1]
    C = np.zeros((n * n * d, n * d))
    for i in range(n):
        for j in range(n):
            if P[i, j] > 0:
                r = (i * n + j) * d
                C[r : r + d, i * d : (i + 1) * d] += np.eye(d)
                C[r : r + d, j * d : (j + 1) * d] -= O[i, j]
    return C


def host(x) -> torch.Tensor:
    """A float64 CPU tensor of ``x``."""
    return torch.as_tensor(np.asarray(x, dtype=np.float64))


def rot(theta: float) -> np.ndarray:
    c, s = math.cos(theta), math.sin(theta)
    return np.array([[c, -s], [s, c]])


def triangle(theta: float, lazy: float = 1 / 3):
    """n = 3, P_ii = lazy, P_ij = (1 − lazy)/2, O_ij = R(θ) (i < j), R(θ)ᵀ (i > j), I on the
    diagonal: metric-compatible, holonomy R(θ) around the triangle (no parallel section unless θ = 0)."""
    P = np.full((3, 3), (1 - lazy) / 2)
    np.fill_diagonal(P, lazy)
    O = np.empty((3, 3, 2, 2))
    for i in range(3):
        for j in range(3):
            O[i, j] = np.eye(2) if i == j else (rot(theta) if i < j else rot(theta).T)
    return P, O


def importable_module(tmp_path: Path, monkeypatch, name: str, source: str) -> Iterator[Path]:
    """A fixture body: ``source`` written as module ``name`` in ``tmp_path``, importable for the test
    (the folder on ``sys.path``), and forgotten by ``sys.modules`` before and after it."""
    (tmp_path / f"{name}.py").write_text(source)
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop(name, None)
    yield tmp_path
    sys.modules.pop(name, None)
