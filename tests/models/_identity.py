"""Shared identity check (T2 in the wild): per layer, the connection walk on the captured attention
input plus the bias offset reproduces the model's own attention output."""

from __future__ import annotations

import torch

from numerics.models.adapters import IDENTITY_RTOL
from numerics.tolerance import rel_err
from numerics.walk import ConnectionWalk
from theory.report import record


def identity_errors(handle, input_ids, attention_mask=None, *, fold_gain=False, record_as="T2"):
    """Per-layer ``(factored, dense-transport)`` relative errors; records each in the theorem table.

    Two independent evaluations of the walk: the factored form (``W_V``/``W_O``, the model's own
    operation order) and the explicit ``T_h = W_O^h W_V^h`` form (a different order of operations,
    so an exact-zero from reusing the model's arithmetic cannot hide a wrong transport)."""
    out = []
    for cap in handle.layers(input_ids, attention_mask, fold_gain=fold_gain):
        y_ref = cap.attn_output
        e_fact = rel_err(cap.walk().apply(cap.attn_input) + cap.offset, y_ref)
        e_dense = rel_err(ConnectionWalk.from_mha(cap.A, cap.transports).apply(cap.attn_input) + cap.offset, y_ref)
        if record_as:
            record(record_as, residual=max(e_fact, e_dense))
        out.append((cap.layer, e_fact, e_dense))
    return out


def assert_identity(handle, input_ids, attention_mask=None, *, fold_gain=False):
    bound = IDENTITY_RTOL[handle.dtype]
    errs = identity_errors(handle, input_ids, attention_mask, fold_gain=fold_gain)
    assert [l for l, _, _ in errs] == list(range(handle.n_layers)), "every layer must be captured once, in order"
    bad = [(l, a, b) for l, a, b in errs if not (a <= bound and b <= bound)]
    assert not bad, f"{handle.name} {handle.dtype}: layers over {bound:g}: {bad}"
    return errs


def head_permuted_error(cap) -> float:
    """Negative control: the same walk with the heads' attention matrices rotated by one head."""
    A = torch.roll(cap.A, 1, dims=1)
    return rel_err(ConnectionWalk.from_factors(A, cap.W_O, cap.W_V).apply(cap.attn_input) + cap.offset, cap.attn_output)


def transposed_transport_error(cap) -> float:
    """Negative control for THEOREMS.md (Conventions): using ``T_hᵀ`` (the row-vector / TransformerLens layout
    read as column-vector transports) instead of ``T_h``."""
    T = cap.transports.transpose(-1, -2)
    return rel_err(ConnectionWalk.from_mha(cap.A, T).apply(cap.attn_input) + cap.offset, cap.attn_output)
