"""E6(a): the cyclic-shift task on a ring, trained as a batched ensemble (see :mod:`paper_checks.e6`).

One attention layer, no residual: token embedding ``E`` (V×d), optional learned absolute PE ``P``
(n×d), optional relative bias ``b_h(m)`` (``S^h_ij += b_h((j−i) mod n)``), heads
``A^h = softmax(q kᵀ/√d_h + bias)``, output ``Σ_h A^h H W_V^h W_O^h``, readout ``U`` (d×V),
cross-entropy. The aligned prior's relative bias is ``log`` of the dispersion-chosen kernel
(:func:`paper_checks.e6.prior.choose_prior_kernel`)."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np
import torch

from numerics.device import default_device
from numerics.errors import ParameterError
from numerics.threads import torch_threads
from paper_checks.e6.prior import choose_prior_kernel, kernel_symbol, kernel_velocity
from paper_checks.e6.train import stack_members, steps_to_threshold

ARMS_A = {
    # name: (positional encoding, relative-bias init, abs-PE std, OV init)
    "aligned": ("rel", "aligned", 0.0, "identity"),
    "aligned_pe": ("rel", "aligned", 0.0, "standard"),
    "abs_pe_0.02": ("abs", "zero", 0.02, "standard"),
    "abs_pe_1": ("abs", "zero", 1.0, "standard"),
    "rel_zero": ("rel", "zero", 0.0, "standard"),
    "misaligned": ("rel", "misaligned", 0.0, "identity"),
}
BASELINES_A = ("aligned_pe", "abs_pe_0.02", "abs_pe_1", "rel_zero", "misaligned")


@dataclass(frozen=True)
class ShiftTaskConfig:
    """Configuration of E6(a). ``identity_embedding=True`` sets d = vocab, E = I and U = readout_gain·I
    (used by the known-answer test: with a sharp aligned prior the aligned arm *is* the solution)."""

    n: int = 16
    vocab: int = 8
    shift: int = 3
    d: int = 8
    heads: int = 1
    prior_width: float = 0.5
    qk_scale: float = 1.0  # multiplier of the standard W_Q, W_K init (0: no content attention at init)
    lr: float = 1e-2
    batch: int = 32
    max_steps: int = 200
    loss_threshold: float = 0.05
    eval_size: int = 128
    data_sizes: tuple = (2, 8, 32)
    data_steps: int = 120
    seeds: int = 5
    arms: tuple = tuple(ARMS_A)
    identity_embedding: bool = False
    readout_gain: float = 1.0


def _shift_member_init(cfg: ShiftTaskConfig, arm: str, seed: int) -> dict:
    pe, rel_init, abs_std, ov = ARMS_A[arm]
    V, n, H = cfg.vocab, cfg.n, cfg.heads
    d = V if cfg.identity_embedding else cfg.d
    if d % H:
        raise ParameterError(f"d={d} not divisible by heads={H}", argument="heads")
    dh = d // H
    g = torch.Generator().manual_seed(10_007 * (seed + 1))
    if cfg.identity_embedding:
        E = torch.eye(V)
        U = cfg.readout_gain * torch.eye(V)
    else:
        E = torch.randn(V, d, generator=g)
        U = torch.randn(d, V, generator=g) / math.sqrt(d)
    WQ = cfg.qk_scale * torch.randn(H, d, dh, generator=g) / math.sqrt(d)
    WK = cfg.qk_scale * torch.randn(H, d, dh, generator=g) / math.sqrt(d)
    WV = torch.randn(H, d, dh, generator=g) / math.sqrt(d)
    WO = torch.randn(H, dh, d, generator=g) / math.sqrt(d)
    if ov == "identity":
        I = torch.eye(d)
        WV = torch.stack([I[:, h * dh : (h + 1) * dh] for h in range(H)])
        WO = torch.stack([I[h * dh : (h + 1) * dh, :] for h in range(H)])
    g2 = torch.Generator().manual_seed(20_011 * (seed + 1))
    P = torch.randn(n, d, generator=g2) * abs_std if pe == "abs" else torch.zeros(n, d)
    b = torch.zeros(H, n)
    if rel_init in ("aligned", "misaligned"):
        vel = -cfg.shift if rel_init == "aligned" else cfg.shift
        _, a, _ = choose_prior_kernel(n, vel, cfg.prior_width)
        b = torch.as_tensor(np.log(np.maximum(a, 1e-300)), dtype=torch.float32).expand(H, n).clone()
        b = b - b.max()
        b = torch.clamp(b, min=-30.0)
    return dict(
        E=E,
        U=U,
        WQ=WQ,
        WK=WK,
        WV=WV,
        WO=WO,
        P=P,
        b=b,
        mask_abs=torch.tensor(1.0 if pe == "abs" else 0.0),
        mask_rel=torch.tensor(1.0 if pe == "rel" else 0.0),
    )


_TRAINABLE_A = ("E", "U", "WQ", "WK", "WV", "WO", "P", "b")


def _shift_logits(p: dict, x: torch.Tensor, n: int, V: int) -> torch.Tensor:
    """x: (G, B, n) int64 → logits (G, B, n, V)."""
    G, B, _ = x.shape
    onehot = torch.nn.functional.one_hot(x, V).to(p["E"].dtype)
    h = torch.einsum("gbnv,gvd->gbnd", onehot, p["E"]) + p["mask_abs"][:, None, None, None] * p["P"][:, None]
    WQ, WK, WV, WO = p["WQ"], p["WK"], p["WV"], p["WO"]
    dh = WQ.shape[-1]
    q = torch.einsum("gbnd,ghde->gbhne", h, WQ)
    k = torch.einsum("gbnd,ghde->gbhne", h, WK)
    v = torch.einsum("gbnd,ghde->gbhne", h, WV)
    idx = (torch.arange(n, device=x.device)[None, :] - torch.arange(n, device=x.device)[:, None]) % n  # (j−i) mod n
    bias = p["mask_rel"][:, None, None, None] * p["b"][:, :, idx]  # (G, H, n, n)
    s = q @ k.transpose(-1, -2) / math.sqrt(dh) + bias[:, None]
    A = torch.softmax(s, dim=-1)
    o = torch.einsum("gbhne,ghed->gbnd", A @ v, WO)
    return torch.einsum("gbnd,gdv->gbnv", o, p["U"])


def _ce_acc(logits: torch.Tensor, y: torch.Tensor, weights: torch.Tensor | None = None):
    """Per-member mean cross-entropy and accuracy. logits (G,B,n,V), y (G,B,n), weights (G,B) or None."""
    lp = torch.log_softmax(logits, dim=-1)
    nll = -lp.gather(-1, y[..., None])[..., 0].mean(-1)  # (G, B)
    acc = (logits.argmax(-1) == y).to(lp.dtype).mean(-1)
    if weights is None:
        return nll.mean(-1), acc.mean(-1)
    return (nll * weights).sum(-1), (acc * weights).sum(-1)


def _shift_data(gen: torch.Generator, count: int, cfg: ShiftTaskConfig):
    x = torch.randint(0, cfg.vocab, (count, cfg.n), generator=gen)
    return x, torch.roll(x, shifts=-cfg.shift, dims=-1)  # y_i = x_{(i+s) mod n}


def shift_work_units(cfg: ShiftTaskConfig) -> int:
    """The Adam steps :func:`train_shift_task` reports to its ``progress`` (at most; phase 1 may stop
    early): phase 1's ``max_steps + 1``, then ``data_steps`` per data size."""
    return cfg.max_steps + 1 + len(cfg.data_sizes) * cfg.data_steps


def train_shift_task(cfg: ShiftTaskConfig, *, seeds=None, device=None, threads: int | None = 1, progress=None) -> dict:
    """``progress(k, what)``, when given, is called after every Adam step (:func:`shift_work_units`)."""
    with torch_threads(threads):
        return _train_shift_task(cfg, seeds=seeds, device=device, progress=progress or (lambda k, what: None))


def _train_shift_task(cfg: ShiftTaskConfig, *, seeds=None, device=None, progress) -> dict:
    """Run E6(a). Returns a dict with

    * ``"steps"``: {arm: array (S,)} first step t with held-out CE < ``loss_threshold`` (online: each
      step draws ``batch`` fresh sequences; the CE on them before update t is a held-out estimate;
      ``inf`` if not reached within ``max_steps``),
    * ``"loss_curves"``: {arm: array (S, max_steps+1)} that held-out CE per step,
    * ``"accuracy"``: {arm: array (S, len(data_sizes))} held-out token accuracy after ``data_steps``
      full-batch Adam steps on the first N sequences of a per-seed pool,
    * ``"prior"``: the dispersion analysis of the aligned / misaligned kernels,
    * ``"seconds"``.
    """
    device = torch.device(device) if device is not None else default_device()
    seeds = list(range(cfg.seeds)) if seeds is None else list(seeds)
    arms = list(cfg.arms)
    A, S = len(arms), len(seeds)
    t0 = time.perf_counter()
    n, V = cfg.n, cfg.vocab

    # ---- phase 1: steps to threshold (online data) ------------------------------------------------
    p = stack_members([_shift_member_init(cfg, a, s) for a in arms for s in seeds], device, _TRAINABLE_A)
    seed_of = torch.tensor([j for _ in arms for j in range(S)], device=device)
    gens = [torch.Generator().manual_seed(30_011 * (s + 1)) for s in seeds]
    opt = torch.optim.Adam([p[k] for k in _TRAINABLE_A], lr=cfg.lr)
    curves = np.full((A * S, cfg.max_steps + 1), np.nan)
    # Online learning: every step draws fresh sequences, so the loss on the new batch *before* the
    # update is a held-out loss (no separate evaluation pass needed).
    for t in range(cfg.max_steps + 1):
        batch = [_shift_data(gens[j], cfg.batch, cfg) for j in range(S)]
        bx = torch.stack([b[0] for b in batch]).to(device)[seed_of]
        by = torch.stack([b[1] for b in batch]).to(device)[seed_of]
        opt.zero_grad(set_to_none=True)
        loss, _ = _ce_acc(_shift_logits(p, bx, n, V), by)
        curves[:, t] = loss.detach().cpu().numpy()
        if t == cfg.max_steps or (curves[:, t] < cfg.loss_threshold).all():
            break
        loss.sum().backward()
        opt.step()
        progress(1, "E6(a) steps to threshold")
    progress(cfg.max_steps + 1 - t, "E6(a) steps to threshold")  # the last step, and any an early stop skipped
    filled = curves.copy()
    for gi in range(A * S):  # freeze the curve after early stop (all members below threshold)
        nanpos = np.isnan(filled[gi])
        if nanpos.any():
            filled[gi, nanpos] = filled[gi, ~nanpos][-1]
    steps = steps_to_threshold(filled, cfg.loss_threshold).reshape(A, S)
    curves_by_arm = {a: filled.reshape(A, S, -1)[i] for i, a in enumerate(arms)}

    # ---- phase 2: accuracy vs number of training sequences (one ensemble per N: no padding) -------
    Ns = list(cfg.data_sizes)
    K = len(Ns)
    acc = np.zeros((A, S, K))
    pools = [_shift_data(torch.Generator().manual_seed(40_009 * (s + 1)), max(Ns), cfg) for s in seeds]
    tests = [_shift_data(torch.Generator().manual_seed(50_021 * (s + 1)), cfg.eval_size, cfg) for s in seeds]
    qx = torch.stack([t_[0] for t_ in tests]).to(device)[seed_of]
    qy = torch.stack([t_[1] for t_ in tests]).to(device)[seed_of]
    for kk, N in enumerate(Ns):
        p = stack_members([_shift_member_init(cfg, a, s) for a in arms for s in seeds], device, _TRAINABLE_A)
        tx = torch.stack([pl[0][:N] for pl in pools]).to(device)[seed_of]  # nested subsets: first N
        ty = torch.stack([pl[1][:N] for pl in pools]).to(device)[seed_of]
        opt = torch.optim.Adam([p[k] for k in _TRAINABLE_A], lr=cfg.lr)
        for _ in range(cfg.data_steps):
            opt.zero_grad(set_to_none=True)
            loss, _ = _ce_acc(_shift_logits(p, tx, n, V), ty)
            loss.sum().backward()
            opt.step()
            progress(1, f"E6(a) accuracy at N = {N}")
        with torch.no_grad():
            acc[:, :, kk] = _ce_acc(_shift_logits(p, qx, n, V), qy)[1].cpu().numpy().reshape(A, S)

    m0a, ka, ca = choose_prior_kernel(n, -cfg.shift, cfg.prior_width)
    m0m, km, cm = choose_prior_kernel(n, cfg.shift, cfg.prior_width)
    prior = {
        "task_velocity": -cfg.shift,
        "aligned_peak": m0a,
        "aligned_velocity_k1": ca,
        "aligned_velocity_all_k": [kernel_velocity(ka, k) for k in range(1, n // 2)],
        "aligned_damping_all_k": np.abs(kernel_symbol(ka))[1 : n // 2].tolist(),
        "misaligned_peak": m0m,
        "misaligned_velocity_k1": cm,
    }
    return {
        "arms": arms,
        "seeds": seeds,
        "steps": {a: steps[i] for i, a in enumerate(arms)},
        "loss_curves": curves_by_arm,
        "data_sizes": Ns,
        "accuracy": {a: acc[i] for i, a in enumerate(arms)},
        "prior": prior,
        "seconds": time.perf_counter() - t0,
        "config": cfg,
    }
